package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWarmupAndSteady: --warmup sends requests that are in no row, the
// summary counts them, and the run's steady-state figures are in the
// JSON and on a line of their own in the table.
func TestWarmupAndSteady(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	args := []string{"--allow-saturated", "--num-requests", "40", "--rate", "100", "--input-len", "64", "--output-len", "16",
		"--warmup", "3", "--json-out", out, "--seed", "3"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run = %v; stderr:\n%s", err, stderr.String())
	}
	file, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Summary struct {
			Warmup int `json:"warmup"`
			Steady *struct {
				Start    *float64 `json:"window_start_s"`
				End      *float64 `json:"window_end_s"`
				Requests int      `json:"requests"`
				Out      *float64 `json:"output_throughput_tok_s"`
			} `json:"steady_state"`
			Achieved *float64 `json:"achieved_rate_rps"`
		} `json:"summary"`
		Requests []json.RawMessage `json:"requests"`
	}
	if err := json.Unmarshal(file, &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Summary
	if len(doc.Requests) != 40 || s.Warmup != 3 || s.Achieved == nil {
		t.Errorf("%d rows, %d warm-ups, achieved rate %v; want 40 rows, 3 warm-ups and a rate", len(doc.Requests), s.Warmup, s.Achieved)
	}
	if st := s.Steady; st == nil || st.Start == nil || st.End == nil || *st.End <= *st.Start || st.Requests < 10 || st.Out == nil {
		t.Errorf("steady_state %+v; want a window and its figures", st)
	}
	if !strings.Contains(stdout.String(), "↳ steady") {
		t.Errorf("the table has no steady line:\n%s", stdout.String())
	}
}
