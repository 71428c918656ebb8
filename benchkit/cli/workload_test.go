package cli

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine/sim"
)

// parseWorkload registers the workload flags (the shared-prefix ones
// too), parses args and loads.
func parseWorkload(t *testing.T, rated bool, args ...string) (*WorkloadFlags, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var wf WorkloadFlags
	wf.AddFlags(fs)
	wf.AddSharedPrefixFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &wf, wf.Load(rated)
}

// TestSharedPrefixFlags: any --gsp-* flag makes the load, SGLang's
// defaults filling the others; its rows go on the traffic's schedule, one
// request each; none of them leaves the workload alone; a bad value or a
// file beside them is a usage error.
func TestSharedPrefixFlags(t *testing.T) {
	wf, err := parseWorkload(t, false, "--gsp-prompts-per-group", "2", "--gsp-output-len", "3")
	if err != nil {
		t.Fatal(err)
	}
	if !wf.Set() || !wf.Generated() || wf.Len() != gspGroups*2 {
		t.Fatalf("set %v, generated %v, %d rows; want SGLang's %d groups of 2", wf.Set(), wf.Generated(), wf.Len(), gspGroups)
	}
	w, tr, err := wf.Workload(context.Background(), benchkit.Lengths{}, benchkit.Traffic{Rate: 4, Seed: 1}, sim.Counter{})
	if err != nil {
		t.Fatal(err)
	}
	trace := w.(benchkit.Trace)
	if tr.Replay || tr.NumRequests != gspGroups*2 || trace.Rows[0].Input != gspSystem+gspQuestion || trace.Rows[0].Output != 3 {
		t.Errorf("traffic %+v, first row %+v", tr, trace.Rows[0])
	}
	if rate, ok := trace.TheoreticalHitRate([]int{0, 1, 2, 3}); !ok || rate != 0 {
		t.Errorf("the first prompt of each of 4 groups: hit rate %v, %v; want 0", rate, ok)
	}
	if wf, err := parseWorkload(t, false); err != nil || wf.Set() {
		t.Errorf("no flags: set %v, %v", wf.Set(), err)
	}
	for _, args := range [][]string{
		{"--gsp-num-groups", "0"},
		{"--gsp-question-len", "0"},
		{"--gsp-zipf-alpha", "1"},
		{"--gsp-num-groups", "2", "--dataset", "x.json"},
	} {
		if _, err := parseWorkload(t, false, args...); ExitCode(err) != ExitUsage {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

// TestShortRowsDropped: rows shorter than their request's own tokens (the
// chat template's; a length row's salt's too) are dropped by Workload,
// counted and named by line, and a burst sized by the file is cut to the
// rows left; when none is left the workload is refused.
func TestShortRowsDropped(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.jsonl")
	rows := `{"timestamp": 0, "input_length": 600, "output_length": 3, "hash_ids": [0, 1]}` + "\n" +
		`{"timestamp": 5, "input_length": 7, "output_length": 3, "hash_ids": [2]}` + "\n" +
		`{"timestamp": 9, "input_length": 8, "output_length": 3, "hash_ids": [3]}` + "\n"
	if err := os.WriteFile(trace, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	wf, err := parseWorkload(t, true, "--trace", trace)
	if err != nil {
		t.Fatal(err)
	}
	if wf.Skipped() != "" {
		t.Errorf("before Workload: %q", wf.Skipped())
	}
	// The embedded engine's template costs 8 tokens with empty content.
	w, tr, err := wf.Workload(context.Background(), benchkit.Lengths{}, benchkit.Traffic{Burst: 3}, sim.Counter{})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(w.(benchkit.Trace).Rows); got != 2 || tr.Burst != 2 || wf.Len() != 2 {
		t.Errorf("%d rows, burst %d, Len %d; want line 2 dropped and 2 left", got, tr.Burst, wf.Len())
	}
	note := wf.Skipped()
	for _, want := range []string{trace + ": 2 rows", "skipped 1 shorter than 8 tokens", "lines 2)"} {
		if !strings.Contains(note, want) {
			t.Errorf("Skipped() = %q, want %q in it", note, want)
		}
	}

	csv := filepath.Join(dir, "t.csv")
	text := "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n0,GPT-4,9,3,12,API log\n1,GPT-4,2,3,5,API log\n"
	if err := os.WriteFile(csv, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	wf, err = parseWorkload(t, true, "--trace", csv)
	if err != nil {
		t.Fatal(err)
	}
	wf.Nonce = "k3f9x2ab" // its salt puts a length row's floor above 9
	if _, _, err := wf.Workload(context.Background(), benchkit.Lengths{}, benchkit.Traffic{Rate: 1}, sim.Counter{}); ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "every row") {
		t.Errorf("no row long enough: %v, want a usage error", err)
	}
}
