package main

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/internal/progtest"
)

// TestTablesFitATerminal: the default (text) output with the columns a
// table gains (the cache hit rate of a shared prefix, the reasoning
// model's thinking figures, the server's view) stays within a terminal's
// 120 columns, on stdout and stderr; the Markdown may be wider.
func TestTablesFitATerminal(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"--rate", "50", "--num-requests", "24", "--shared-prefix", "64", "--sim-reasoning", "16-32", "--seed", "1"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil && !errors.Is(err, cli.ErrClientSaturated) {
		t.Fatalf("run() = %v; stderr:\n%s", err, stderr.String())
	}
	for _, want := range []string{"cache hit %", "ttfa ms", "think/answer tok", "The server's own view", "24/24"} {
		if !bytes.Contains(stdout.Bytes(), []byte(want)) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	progtest.Fits(t, "stdout", stdout.String())
	progtest.Fits(t, "stderr", stderr.String())
}
