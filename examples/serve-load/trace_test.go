package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
)

// TestTraceReplayed: --trace replays a Bailian-format trace's rows at
// their instants against the embedded engine, on chat and on completions:
// one request per row, every prompt the row's length by the server's
// count, and the trace's theoretical hit rate beside the measured one.
func TestTraceReplayed(t *testing.T) {
	for _, endpoint := range []string{"chat", "completions"} {
		out := filepath.Join(t.TempDir(), "r.json")
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{"--trace", "../../workload/testdata/synthetic_bailian_1k.jsonl", "--trace-rows", "40",
			"--trace-speedup", "50", "--endpoint", endpoint, "--json-out", out, "--allow-saturated"}, &stdout, &stderr)
		if err != nil {
			t.Fatalf("%s: %v\n%s", endpoint, err, stderr.String())
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var doc benchkit.LoadDocument
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Requests) != 40 || doc.Summary == nil || doc.Summary.Traffic != "replay" || doc.Summary.TheoreticalHitRate == nil ||
			doc.Summary.PrefixHitRate == nil || !strings.Contains(string(b), `"trace": "../../workload/testdata/synthetic_bailian_1k.jsonl"`) {
			t.Fatalf("%s: %d requests, summary %+v", endpoint, len(doc.Requests), doc.Summary)
		}
		for _, r := range doc.Requests {
			if r.ServerPromptTokens == nil || *r.ServerPromptTokens != r.PPTarget || r.PPTokens != r.PPTarget || r.HasWarning(benchkit.WarnPromptMismatch) {
				t.Errorf("%s: request %d: trace %d, client %d, server %v", endpoint, r.Index, r.PPTarget, r.PPTokens, r.ServerPromptTokens)
			}
		}
		if !strings.Contains(stdout.String(), "replay of") || !strings.Contains(stdout.String(), "cache hit %") {
			t.Errorf("%s: the table does not show the replay and its hit rates:\n%s", endpoint, stdout.String())
		}
	}
}

// TestBadTraceSendsNothing: a trace row that breaks its format's rule
// refuses the run (exit 2), naming the file, the line and the rule.
func TestBadTraceSendsNothing(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	rows := `{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}` + "\n" +
		`{"timestamp": 5, "input_length": 6758, "output_length": 5, "hash_ids": [0, 1, 2]}` + "\n"
	if err := os.WriteFile(bad, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"--trace", bad}, &stdout, &stderr)
	if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), "bad.jsonl line 2") || !strings.Contains(err.Error(), "want 14") {
		t.Errorf("run = %v; want a usage error naming line 2 and its rule", err)
	}
	if strings.Contains(stderr.String(), "measuring") {
		t.Errorf("the engine started for a bad trace:\n%s", stderr.String())
	}
}
