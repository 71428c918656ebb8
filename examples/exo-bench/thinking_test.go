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

	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/engine"
)

// TestThinkingCells measures every cell under thinking off, then on: the
// requests carry the setting, the exo document labels every row and cell
// with it, and the table has a line per cell and setting.
func TestThinkingCells(t *testing.T) {
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
	args := []string{"--thinking", "off,on", "--pp", "64", "--tg", "4", "--concurrency", "1,2", "--repeat", "1",
		"--allow-saturated", "--json-out", out, "--format", "md"}
	if err := runWith(context.Background(), args, &o, &e, hooks{wrap: wrap}); err != nil {
		t.Fatalf("run: %v\n%s", err, e.String())
	}
	mu.Lock()
	if len(sent) != 6 {
		t.Errorf("%d requests sent; want (1 + 2) × 2 settings = 6", len(sent))
	}
	for i, th := range sent {
		if th == nil || th.Enabled == nil {
			t.Errorf("request %d sent without its thinking control", i)
		}
	}
	mu.Unlock()
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs    []struct{ Thinking string } `json:"runs"`
		Summary []struct {
			Thinking    string `json:"thinking"`
			Concurrency int    `json:"concurrency"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, r := range doc.Runs {
		count[r.Thinking]++
	}
	if count["off"] != 3 || count["on"] != 3 || len(doc.Runs) != 6 {
		t.Errorf("rows by thinking %v of %d; want 3 off and 3 on", count, len(doc.Runs))
	}
	var cells []string
	for _, s := range doc.Summary {
		cells = append(cells, s.Thinking)
	}
	if strings.Join(cells, " ") != "off on off on" {
		t.Errorf("cells labelled %q; want off, on for each concurrency", cells)
	}
	if !strings.Contains(o.String(), "| thinking |") || strings.Count(o.String(), "| off |") != 2 || strings.Count(o.String(), "| on |") != 2 {
		t.Errorf("table:\n%s\nwant a thinking column and a line per cell and setting", o.String())
	}
}

// engineFunc adapts a function to engine.Engine.
type engineFunc func(ctx context.Context, req engine.Request) (engine.Result, error)

func (f engineFunc) Complete(ctx context.Context, req engine.Request) (engine.Result, error) {
	return f(ctx, req)
}

func TestThinkingBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--thinking", "sometimes"}, {"--reasoning-effort", "low,low"}, {"--thinking-budget", "-1"}} {
		var o, e bytes.Buffer
		err := run(context.Background(), append(args, "--json-out", filepath.Join(t.TempDir(), "x.json")), &o, &e)
		var ue *cli.UsageError
		if !errors.As(err, &ue) {
			t.Errorf("run(%q) = %v; want a usage error", args, err)
		}
	}
}
