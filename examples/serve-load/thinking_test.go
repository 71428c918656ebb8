package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/hf"
)

// recordEngine keeps every request it passes on.
type recordEngine struct {
	e    engine.Engine
	mu   sync.Mutex
	reqs []engine.Request
}

func (r *recordEngine) Complete(ctx context.Context, req engine.Request) (engine.Result, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.e.Complete(ctx, req)
}

func qwen3Dir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "models", "qwen3")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		testkit.MissingData(t, "the Qwen3 tokenizer is missing: run scripts/testdata.sh")
	}
	return dir
}

// TestThinkingSweep sweeps two rates under thinking off, then on, with
// the real Qwen3 tokenizer: four runs, one table line each, every request
// sent with its setting, and every prompt exact as Qwen3's template
// renders it under the setting (with thinking off, the template's empty
// think block takes 4 of the tokens).
func TestThinkingSweep(t *testing.T) {
	dir := qwen3Dir(t)
	tok, err := hf.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	const pp = 64
	args := []string{"--tokenizer", dir, "--thinking", "off,on", "--rate", "200,400", "--num-requests", "3",
		"--input-len", "64", "--output-len", "3", "--seed", "7", "--allow-saturated"}
	rec := &recordEngine{}
	wrap := func(e engine.Engine) engine.Engine { rec.e = e; return rec }
	var stdout, stderr bytes.Buffer
	if err := runWith(t.Context(), append(args, "--format", "json"), &stdout, &stderr, hooks{wrap: wrap}); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	var doc benchkit.LoadDocument
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	want := []string{"off", "off", "on", "on"}
	if len(doc.Runs) != len(want) || strings.Join(doc.Meta.Thinking, ",") != "off,on" {
		t.Fatalf("%d runs, meta thinking %q; want 4 runs (2 rates × off, on)", len(doc.Runs), doc.Meta.Thinking)
	}
	for i, run := range doc.Runs {
		if run.Summary.Thinking != want[i] || len(run.Requests) != 3 {
			t.Errorf("run %d: thinking %q, %d requests; want %q, 3", i, run.Summary.Thinking, len(run.Requests), want[i])
		}
		for _, r := range run.Requests {
			if r.Thinking != want[i] || r.Run != i || r.PPTokens != pp || r.Failed() {
				t.Errorf("run %d: row of run %d labelled %q, pp %d, error %q; want %q, %d", i, r.Run, r.Thinking, r.PPTokens, r.Error, want[i], pp)
			}
		}
	}
	rec.mu.Lock()
	reqs := append([]engine.Request(nil), rec.reqs...)
	rec.mu.Unlock()
	if len(reqs) != 12 {
		t.Fatalf("%d requests sent; want 12", len(reqs))
	}
	off := map[string]any{"enable_thinking": false, "thinking": false}
	for i, req := range reqs {
		isOff := i < 6
		if req.Thinking == nil || req.Thinking.Enabled == nil || *req.Thinking.Enabled == isOff {
			t.Fatalf("request %d sent with thinking %+v; want enabled %v", i, req.Thinking, !isOff)
		}
		msgs := make([]promptsize.Message, len(req.Messages))
		for j, m := range req.Messages {
			msgs[j] = promptsize.Message(m)
		}
		plain, err := tok.Count(t.Context(), msgs)
		if err != nil {
			t.Fatal(err)
		}
		withOff, err := tok.WithTemplateVars(off).Count(t.Context(), msgs)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case isOff && (withOff != pp || plain != pp-4):
			t.Errorf("request %d (off): %d tokens as the server renders it, %d without the switch; want %d and %d", i, withOff, plain, pp, pp-4)
		case !isOff && plain != pp:
			t.Errorf("request %d (on): %d tokens; want %d", i, plain, pp)
		}
	}

	// The table: a thinking column, one line per setting and rate, and
	// the settings in the title.
	stdout.Reset()
	stderr.Reset()
	if err := run(t.Context(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	lines := strings.Split(stdout.String(), "\n")
	if !strings.Contains(lines[0], "thinking off / on") {
		t.Errorf("title %q; want the settings in it", lines[0])
	}
	head := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "thinking") {
			head = i
			break
		}
	}
	if head < 0 || len(lines) < head+5 {
		t.Fatalf("no table with a thinking column:\n%s", stdout.String())
	}
	for i, w := range want {
		if f := strings.Fields(lines[head+1+i]); len(f) == 0 || f[0] != w {
			t.Errorf("table line %d %q; want it to start with %q", i, lines[head+1+i], w)
		}
	}
}

// TestThinkingBadFlags: a bad thinking flag, or a sweep of settings where
// one run is all there is, is a usage error before anything is sent.
func TestThinkingBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--thinking", "maybe"},
		{"--reasoning-effort", "max"},
		{"--thinking-budget", "-5"},
		{"--thinking", "off,on", "--find-max-rate", "--slo-ttft", "100"},
		{"--thinking", "off,on", "--segment", "0/2", "--seed", "1"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"--base-url", "http://127.0.0.1:1", "--model", "m"}, args...), &stdout, &stderr)
			var ue *cli.UsageError
			if !errors.As(err, &ue) {
				t.Errorf("run(%q) = %v; want a usage error", args, err)
			}
		})
	}
}
