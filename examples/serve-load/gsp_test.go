package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit/cli"
)

// TestGeneratedSharedPrefix: the --gsp-* flags send SGLang's generated
// shared-prefix load against the embedded engine: groups × prompts per
// group requests, each group's prompts sharing exactly the system tokens
// after the chat template. The engine's cache (blocks of 16 tokens, which
// the 128 system tokens fill exactly) then serves every prompt but each
// group's first its system tokens and nothing more, so the measured hit
// rate — from the replies' cached tokens and from the server's /metrics —
// equals the workload's theoretical one:
//
//	groups·(per group − 1)·system / (groups·per group·(system + question))
func TestGeneratedSharedPrefix(t *testing.T) {
	const groups, perGroup, system, question = 4, 3, 128, 40
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"--format", "json", "--allow-saturated", "--gsp-num-groups", "4", "--gsp-prompts-per-group", "3",
		"--gsp-system-prompt-len", "128", "--gsp-question-len", "40", "--gsp-output-len", "2"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if name := "generated-shared-prefix(groups=4, per-group=3, system=128, question=40, output=2)"; !strings.Contains(stdout.String(), name) {
		t.Errorf("the results do not name the load %s", name)
	}
	doc := newLoadDocument()
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	res := doc.AllRuns()[0]
	s := res.Summary
	if s.Requests != groups*perGroup || s.Completed != groups*perGroup {
		t.Fatalf("%d requests, %d completed; want %d", s.Requests, s.Completed, groups*perGroup)
	}
	for _, r := range res.Requests {
		if r.PPTokens != system+question || r.ServerPromptTokens == nil || *r.ServerPromptTokens != system+question {
			t.Errorf("request %d: %d prompt tokens, the server's %v; want %d", r.Index, r.PPTokens, r.ServerPromptTokens, system+question)
		}
	}
	want := float64(groups*(perGroup-1)*system) / float64(groups*perGroup*(system+question))
	switch {
	case s.TheoreticalHitRate == nil || *s.TheoreticalHitRate != want:
		t.Errorf("theoretical hit rate %v, want %v", s.TheoreticalHitRate, want)
	case s.PrefixHitRate == nil || *s.PrefixHitRate != *s.TheoreticalHitRate:
		t.Errorf("measured hit rate (cached tokens) %v, theoretical %v; want them equal", s.PrefixHitRate, *s.TheoreticalHitRate)
	case s.CachedTokens != groups*(perGroup-1)*system:
		t.Errorf("%d cached tokens, want %d", s.CachedTokens, groups*(perGroup-1)*system)
	case s.Server == nil || s.Server.PrefixHitRate == nil || *s.Server.PrefixHitRate != want:
		t.Errorf("the server view's hit rate %v, want %v", s.Server, want)
	}
}

// TestGeneratedSharedPrefixBadFlags: the load's flags are checked before
// anything starts.
func TestGeneratedSharedPrefixBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--gsp-num-groups", "0"},
		{"--gsp-question-len", "-1"},
		{"--gsp-zipf-alpha", "0.5"},
		{"--gsp-num-groups", "2", "--trace", "../../workload/testdata/synthetic_bailian.jsonl"},
		{"--gsp-num-groups", "2", "--shared-prefix", "16"},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, &stdout, &stderr); cli.ExitCode(err) != cli.ExitUsage {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}
