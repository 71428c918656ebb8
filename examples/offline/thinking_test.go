package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/engine"
)

// engineFunc adapts a function to engine.Engine.
type engineFunc func(ctx context.Context, req engine.Request) (engine.Result, error)

func (f engineFunc) Complete(ctx context.Context, req engine.Request) (engine.Result, error) {
	return f(ctx, req)
}

// TestThinking: --thinking and --reasoning-effort go on every request and
// label every row; a list is a usage error, offline measuring one setting.
func TestThinking(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.json")
	var mu sync.Mutex
	var sent []*engine.Thinking
	wrap := func(e engine.Engine) engine.Engine {
		return engineFunc(func(ctx context.Context, req engine.Request) (engine.Result, error) {
			mu.Lock()
			sent = append(sent, req.Thinking)
			mu.Unlock()
			return e.Complete(ctx, req)
		})
	}
	var o, e bytes.Buffer
	args := []string{"--thinking", "off", "--reasoning-effort", "low", "--num-seqs", "3", "--max-input-len", "200", "--max-output-len", "8", "--min-output-len", "4",
		"--allow-saturated", "--json-out", out}
	if err := runWith(context.Background(), args, &o, &e, hooks{wrap: wrap}); err != nil {
		t.Fatalf("run: %v\n%s", err, e.String())
	}
	mu.Lock()
	if len(sent) != 3 {
		t.Errorf("%d requests sent; want 3", len(sent))
	}
	for i, th := range sent {
		if th == nil || th.Enabled == nil || *th.Enabled || th.Effort != "low" {
			t.Errorf("request %d sent with thinking %+v; want off at effort low", i, th)
		}
	}
	mu.Unlock()
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc benchkit.LoadDocument
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range doc.AllRuns()[0].Requests {
		if r.Thinking != "off,effort=low" {
			t.Errorf("row labelled %q; want off,effort=low", r.Thinking)
		}
	}
	e.Reset()
	err = run(context.Background(), []string{"--thinking", "off,on", "--base-url", "http://127.0.0.1:1", "--model", "m"}, &o, &e)
	var ue *cli.UsageError
	if !errors.As(err, &ue) {
		t.Errorf("--thinking off,on: %v; want a usage error (offline measures one setting)", err)
	}
}
