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
)

// TestTraceAllAtOnce: --trace sends a Mooncake-format trace's rows all at
// once, one request per row, each prompt the row's length by the
// server's count, as token ids with --endpoint completions.
func TestTraceAllAtOnce(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"--trace", "../../workload/testdata/synthetic_mooncake.jsonl", "--endpoint", "completions",
		"--max-output-tokens", "8", "--json-out", out, "--allow-saturated"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc benchkit.LoadDocument
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Requests) != 24 || doc.Summary == nil || doc.Summary.TheoreticalHitRate == nil {
		t.Fatalf("%d requests, summary %+v; want the sample's 24 rows", len(doc.Requests), doc.Summary)
	}
	for _, r := range doc.Requests {
		if r.ServerPromptTokens == nil || *r.ServerPromptTokens != r.PPTarget || r.Tokens() > 8 {
			t.Errorf("request %d: trace %d, server %v, %d tokens out of at most 8", r.Index, r.PPTarget, r.ServerPromptTokens, r.Tokens())
		}
	}
}

// TestGeneratedSharedPrefix: the --gsp-* flags send a generated
// shared-prefix load all at once: groups × prompts per group requests,
// and the embedded engine's cache serves each group's later prompts
// exactly their shared system tokens, so the measured hit rate equals the
// theoretical one.
func TestGeneratedSharedPrefix(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"--gsp-num-groups", "3", "--gsp-prompts-per-group", "4", "--gsp-system-prompt-len", "64",
		"--gsp-question-len", "30", "--gsp-output-len", "2", "--json-out", out, "--allow-saturated"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc benchkit.LoadDocument
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Summary
	want := float64(3*3*64) / float64(12*(64+30))
	if len(doc.Requests) != 12 || s == nil || s.TheoreticalHitRate == nil || *s.TheoreticalHitRate != want ||
		s.PrefixHitRate == nil || *s.PrefixHitRate != want {
		t.Fatalf("%d requests, summary %+v; want 12 and the hit rate %v measured and theoretical", len(doc.Requests), s, want)
	}
	if !strings.Contains(stdout.String(), "12 requests at once, the first rows of generated-shared-prefix(groups=3") {
		t.Errorf("stdout does not name the load:\n%s", stdout.String())
	}
}
