package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/internal/progtest"
)

func TestNoFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	// No flags means no --allow-saturated: a loaded machine may skew the
	// burst past the saturation gate (exit 3), which is not what this
	// test is about, so that one error is accepted.
	if err := run(context.Background(), nil, &stdout, &stderr); err != nil && !errors.Is(err, cli.ErrClientSaturated) {
		t.Fatalf("run() = %v; stderr:\n%s", err, stderr.String())
	}
	first, _, _ := strings.Cut(stderr.String(), "\n")
	if !strings.Contains(first, "embedded simulated engine") {
		t.Errorf("first stderr line %q does not name the embedded simulated engine", first)
	}
	if !strings.Contains(stdout.String(), "Output throughput:") || !strings.Contains(stdout.String(), "(simulated)") {
		t.Errorf("stdout lacks a simulated output throughput:\n%s", stdout.String())
	}
	progtest.Fits(t, "stdout", stdout.String())
	progtest.Fits(t, "stderr", stderr.String())
}

// TestThroughput recomputes the output throughput from the rows:
// Σ completion tokens / (end of the last response − release), and checks
// that every reply had exactly its drawn length within the ranges.
func TestThroughput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "o.json")
	// --allow-saturated: the throughput's arithmetic is under test, not
	// the burst's skew, which a loaded machine may push past the gate.
	args := []string{"--allow-saturated", "--num-seqs", "12", "--min-input-len", "40", "--max-input-len", "90", "--min-output-len", "5", "--max-output-len", "20", "--seed", "7", "--json-out", out}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run = %v; stderr:\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	doc := newLoadDocument()
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Requests) != 12 {
		t.Fatalf("%d rows; want 12", len(doc.Requests))
	}
	tokens, wall := 0, 0.0
	for _, r := range doc.Requests {
		if r.PPTokens != r.PPTarget || r.PPTarget < 40 || r.PPTarget > 90 {
			t.Errorf("request %d: pp_tokens %d for a target of %d; want equal and within [40, 90]", r.Index, r.PPTokens, r.PPTarget)
		}
		if r.Tokens() != r.TGTarget || r.TGTarget < 5 || r.TGTarget > 20 {
			t.Errorf("request %d: %d tokens for %d asked; want equal and within [5, 20]", r.Index, r.Tokens(), r.TGTarget)
		}
		if r.IntendedSendS != 0 {
			t.Errorf("request %d intended at %g s; every request is submitted at the start", r.Index, r.IntendedSendS)
		}
		tokens += r.Tokens()
		wall = math.Max(wall, r.DoneS)
	}
	got := *doc.Summary.OutputThroughput
	if want := float64(tokens) / wall; math.Abs(got-want) > 1e-9*want {
		t.Errorf("output throughput %g; want Σ tokens / wall = %d / %g = %g", got, tokens, wall, want)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--num-seqs", "0"},
		{"--min-input-len", "600"},
		{"--min-output-len", "0"},
		{"--max-output-len", "-1"},
		{"--bogus"},
		{"--min-input-len", "2", "--max-input-len", "3"}, // below the template's overhead: found while building, before sending
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, &stdout, &stderr)
		if code := cli.ExitCode(err); code != cli.ExitUsage {
			t.Errorf("run(%q) = %v (exit %d); want a usage error (exit 2)", args, err, code)
		}
	}
}
