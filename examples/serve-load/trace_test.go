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

// TestShortTraceRowsSkipped: a trace row shorter than the chat template's
// own tokens (and, for a row of a length only, its salt's) cannot be
// built; it is skipped, as a row over --max-input-tokens is, counted and
// named by line on stderr and in the results' warnings, and the other
// rows run (exit 0) — for a trace of hash ids and one of lengths.
func TestShortTraceRowsSkipped(t *testing.T) {
	for _, c := range []struct{ name, lines, text string }{
		{"short.jsonl", "lines 2, 4)", `{"timestamp": 0, "input_length": 600, "output_length": 3, "hash_ids": [0, 1]}` + "\n" +
			`{"timestamp": 5, "input_length": 4, "output_length": 3, "hash_ids": [2]}` + "\n" +
			`{"timestamp": 9, "input_length": 700, "output_length": 3, "hash_ids": [0, 3]}` + "\n" +
			`{"timestamp": 12, "input_length": 1, "output_length": 3, "hash_ids": [4]}` + "\n"},
		{"short.csv", "lines 3, 5)", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n" +
			"0,GPT-4,300,3,303,API log\n" +
			"1,GPT-4,9,3,12,API log\n" +
			"2,GPT-4,250,3,253,API log\n" +
			"3,GPT-4,2,3,5,API log\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			trace, out := filepath.Join(dir, c.name), filepath.Join(dir, "r.json")
			if err := os.WriteFile(trace, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{"--trace", trace, "--trace-speedup", "100", "--json-out", out, "--allow-saturated"}, &stdout, &stderr)
			if err != nil {
				t.Fatalf("run: %v\n%s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), "skipped 2 shorter than") || !strings.Contains(stderr.String(), c.lines) {
				t.Errorf("stderr does not name the two short rows:\n%s", stderr.String())
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var doc benchkit.LoadDocument
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			if len(doc.Requests) != 2 || doc.Summary.Completed != 2 {
				t.Errorf("%d requests, %d completed; want the 2 long rows", len(doc.Requests), doc.Summary.Completed)
			}
			if len(doc.Meta.Warnings) == 0 || !strings.Contains(strings.Join(doc.Meta.Warnings, "\n"), "skipped 2 shorter than") {
				t.Errorf("the results' warnings do not say which rows were skipped: %q", doc.Meta.Warnings)
			}
		})
	}
}
