package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
)

// TestThinking: --thinking labels every turn's row (each turn carries the
// control), and a list is a usage error: multi-turn measures one setting.
func TestThinking(t *testing.T) {
	dir := t.TempDir()
	rows := filepath.Join(dir, "rows.jsonl")
	var out, errb bytes.Buffer
	args := []string{"--thinking", "off", "--sessions", "2", "--turns", "2", "--user-tokens", "32", "--output-len", "4",
		"--prefix-cache", "radix", "--jsonl", rows, "--json-out", "", "--plot", ""}
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errb.String())
	}
	f, err := os.Open(rows)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r benchkit.Request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		n++
		if r.Thinking != "off" || r.Failed() {
			t.Errorf("%s turn %d labelled %q, error %q; want off and no error", r.Session, r.Turn, r.Thinking, r.Error)
		}
	}
	if n != 4 {
		t.Errorf("%d rows; want 2 sessions × 2 turns", n)
	}
	err = run(context.Background(), []string{"--thinking", "off,on", "--base-url", "http://127.0.0.1:1", "--model", "m", "--json-out", "", "--plot", ""}, &out, &errb)
	var ue *cli.UsageError
	if !errors.As(err, &ue) {
		t.Errorf("--thinking off,on: %v; want a usage error (one setting per run)", err)
	}
}
