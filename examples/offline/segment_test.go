package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/timing"
)

// TestSegmentsMerge runs one burst as a single process and as three
// segments (--segment i/3, a shared --start-at), each with its own
// embedded engine, and merges the segments' results files: request k is
// sent by segment k mod 3 with the prompt and lengths the single process
// gave it, and the merged summary is that of the union of rows.
func TestSegmentsMerge(t *testing.T) {
	dir := t.TempDir()
	// --allow-saturated: a segment released after --start-at has passed
	// lags by that much, and the merge, not the client's health, is under
	// test here.
	common := []string{"--allow-saturated", "--num-seqs", "9", "--min-input-len", "40", "--max-input-len", "90", "--min-output-len", "3", "--max-output-len", "8", "--seed", "11"}
	read := func(path string) benchkit.LoadDocument {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc := newLoadDocument()
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	single := filepath.Join(dir, "single.json")
	var stderr bytes.Buffer
	if err := run(context.Background(), append(common, "--json-out", single), &bytes.Buffer{}, &stderr); err != nil {
		t.Fatalf("single run: %v\n%s", err, stderr.String())
	}
	start := time.Now().UTC().Format(time.RFC3339)
	var in []benchkit.SegmentFile
	var union []benchkit.Request
	for i := range 3 {
		out := filepath.Join(dir, fmt.Sprintf("seg-%d.json", i))
		args := append(append([]string{}, common...), "--segment", fmt.Sprintf("%d/3", i), "--start-at", start, "--json-out", out)
		if err := run(context.Background(), args, &bytes.Buffer{}, &stderr); err != nil {
			t.Fatalf("segment %d: %v\n%s", i, err, stderr.String())
		}
		doc := read(out)
		if doc.Meta.Segment == nil || doc.Meta.Segment.Segment != (benchkit.Segment{Index: i, Count: 3}) || doc.Meta.Segment.Clock.Monotonic == "" {
			t.Errorf("segment %d's meta: %+v", i, doc.Meta.Segment)
		}
		union = append(union, doc.Requests...)
		b, _ := os.ReadFile(out)
		in = append(in, benchkit.SegmentFile{Name: out, R: bytes.NewReader(b)})
	}
	want := map[int]benchkit.Request{}
	for _, r := range read(single).Requests {
		want[r.Index] = r
	}
	if len(union) != len(want) {
		t.Fatalf("segments sent %d requests; the single run %d", len(union), len(want))
	}
	for _, r := range union {
		w := want[r.Index]
		if r.PromptSHA256 != w.PromptSHA256 || r.PPTarget != w.PPTarget || r.TGTarget != w.TGTarget || r.PlanHash != w.PlanHash || r.Segment.Index != r.Index%3 {
			t.Errorf("request %d: segment %v, prompt %s, pp %d, tg %d, plan %s; the single run: prompt %s, pp %d, tg %d, plan %s",
				r.Index, r.Segment, r.PromptSHA256[:8], r.PPTarget, r.TGTarget, r.PlanHash[:8], w.PromptSHA256[:8], w.PPTarget, w.TGTarget, w.PlanHash[:8])
		}
	}
	m, err := benchkit.MergeSegments(in, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Summary, benchkit.Summarize(m.Requests, benchkit.ByRun, timing.SLO{})[0]; got.TotalOutputTokens != want.TotalOutputTokens || *got.OutputThroughput != *want.OutputThroughput || got.Requests != 9 {
		t.Errorf("merged summary: %d requests, %d tokens; the union's: %d tokens", got.Requests, got.TotalOutputTokens, want.TotalOutputTokens)
	}
}

// TestSegmentNeedsSeed checks that a segment without --seed is refused
// before anything runs: each segment would draw other prompts.
func TestSegmentNeedsSeed(t *testing.T) {
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"--segment", "0/2"}, &bytes.Buffer{}, &stderr)
	if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(fmt.Sprint(err), "--seed") {
		t.Errorf("run = %v (exit %d); want exit 2 naming --seed", err, cli.ExitCode(err))
	}
}
