package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit/cli"
)

// TestPredictFlag: --predict computes a two-rate sweep of 600 requests
// whose schedule spans about 15 s in a small part of that, labels the
// table and every row predicted, and writes no figure of a client.
func TestPredictFlag(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err := run(context.Background(), []string{"--predict", "--rate", "30,200", "--num-requests", "300", "--input-len", "300",
		"--output-len", "32", "--range-ratio", "0.5", "--seed", "1", "--json-out", out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v; stderr:\n%s", err, stderr.String())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the prediction of a 15 s schedule took %v", d)
	}
	if !strings.Contains(stdout.String(), "PREDICTED") || !strings.Contains(stdout.String(), "300/300") {
		t.Errorf("stdout lacks the PREDICTED label or 300/300 requests:\n%s", stdout.String())
	}
	doc := readDoc(t, out)
	if !doc.Meta.Predicted || len(doc.Runs) != 2 {
		t.Fatalf("meta predicted %v, %d runs; want true and 2", doc.Meta.Predicted, len(doc.Runs))
	}
	for k, r := range doc.Runs {
		for _, row := range r.Requests {
			if !row.Predicted || row.Run != k || row.TTFTS == nil {
				t.Fatalf("run %d: row %+v: want predicted, run %d, a TTFT", k, row, k)
			}
		}
	}
	if lo, hi := *doc.Runs[0].Summary.TTFT.P90, *doc.Runs[1].Summary.TTFT.P90; hi <= lo {
		t.Errorf("TTFT p90 %.4f s at 200/s, %.4f s at 30/s: the higher rate should queue", hi, lo)
	}
}

// TestPredictFlagRefuses: --predict with what it cannot predict is a
// usage error.
func TestPredictFlagRefuses(t *testing.T) {
	for _, args := range [][]string{
		{"--predict", "--base-url", "http://127.0.0.1:1"},
		{"--predict", "--users", "2"},
		{"--predict", "--max-concurrency", "2", "--rate", "5"},
		{"--predict", "--find-max-rate", "--slo-ttft", "100"},
		{"--predict", "--sim-profile", "llamacpp"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, &stdout, &stderr)
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--predict") {
			t.Errorf("%v: error %v, want a usage error about --predict", args, err)
		}
	}
}
