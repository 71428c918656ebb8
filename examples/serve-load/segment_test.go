package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/timing"
)

// readSegmentRows reads the rows of a --jsonl file, skipping its run header.
func readSegmentRows(t *testing.T, path string) (rows []benchkit.Request, header benchkit.RunHeader) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		if h, ok := benchkit.ParseRunHeader(sc.Bytes()); ok {
			header = h
			continue
		}
		var r benchkit.Request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows, header
}

// TestSegmentsAsProcesses runs one plan as one serve-load and as four
// (--segment i/4, one --start-at) against one embedded engine, then
// `serve-load merge`s the four rows files: the union of the schedules is
// the single schedule request for request (intended instants, lengths,
// prompt hashes), and the merged summary is the summary of the union of
// rows. Merging three of the four, or one twice, exits 2 naming the
// segment.
func TestSegmentsAsProcesses(t *testing.T) {
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	slo := timing.SLO{TTFT: time.Minute}
	plan := []string{"--base-url", srv.VLLMURL, "--model", srv.Model(), "--input-len", "80", "--output-len", "5", "--range-ratio", "0.5",
		"--rate", "300", "--burstiness", "0.7", "--num-requests", "20", "--seed", "5", "--slo-ttft", "60000", "--allow-saturated", "--format", "json"}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	single := filepath.Join(dir, "single.jsonl")
	var stderr bytes.Buffer
	if err := run(ctx, append(append([]string{}, plan...), "--jsonl", single), &bytes.Buffer{}, &stderr); err != nil {
		t.Fatalf("single: %v\n%s", err, stderr.String())
	}
	start := time.Now().Add(100 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	paths := make([]string, 4)
	errs := make([]error, 4)
	logs := make([]bytes.Buffer, 4)
	var wg sync.WaitGroup
	for i := range 4 {
		paths[i] = filepath.Join(dir, fmt.Sprintf("rows-%d.jsonl", i))
		args := append(append([]string{}, plan...), "--segment", fmt.Sprintf("%d/4", i), "--start-at", start, "--jsonl", paths[i])
		wg.Go(func() { errs[i] = run(ctx, args, &bytes.Buffer{}, &logs[i]) })
	}
	testkit.WaitWithin(t, &wg, testkit.Patience)
	var union []benchkit.Request
	for i := range 4 {
		if errs[i] != nil {
			t.Fatalf("segment %d: %v\n%s", i, errs[i], logs[i].String())
		}
		rows, h := readSegmentRows(t, paths[i])
		if h.Segment == nil || h.Segment.Segment != (benchkit.Segment{Index: i, Count: 4}) || h.Segment.StartAt == "" || h.Segment.Clock.Monotonic == "" || h.Host == "" {
			t.Errorf("segment %d's run header: host %q, segment %+v", i, h.Host, h.Segment)
		}
		union = append(union, rows...)
	}
	singleRows, _ := readSegmentRows(t, single)
	type planned struct {
		Intended   float64
		PP, TG     int
		Prompt     string
		Plan       string
		Segment    int
		IntendedAt bool
	}
	key := func(rows []benchkit.Request, split bool) map[int]planned {
		m := map[int]planned{}
		for _, r := range rows {
			p := planned{Intended: r.IntendedSendS, PP: r.PPTarget, TG: r.TGTarget, Prompt: r.PromptSHA256, Plan: r.PlanHash, IntendedAt: r.IntendedAt != ""}
			if split {
				p.Segment, p.IntendedAt = r.Segment.Index-r.Index%4, !p.IntendedAt // 0 and false when right
			}
			m[r.Index] = p
		}
		return m
	}
	if len(singleRows) != 20 || len(union) != 20 {
		t.Fatalf("%d single rows, %d segment rows; want 20 each", len(singleRows), len(union))
	}
	if diff := cmp.Diff(key(singleRows, false), key(union, true)); diff != "" {
		t.Errorf("the union of the segments is not the single schedule (-single +segments):\n%s", diff)
	}

	var out bytes.Buffer
	mergedPath := filepath.Join(dir, "merged.json")
	if err := run(ctx, append([]string{"merge", "--slo-ttft", "60000", "--allow-saturated", "--format", "json", "--json-out", mergedPath}, paths...), &out, &stderr); err != nil {
		t.Fatalf("merge: %v\n%s", err, stderr.String())
	}
	var m benchkit.MergedLoad
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	want := benchkit.Summarize(union, benchkit.ByRun, slo)[0]
	want.PeakInFlight = peakInFlight(union)
	want.Scheduled, want.Traffic = 20, "gamma(rate=300/s, burstiness=0.7)"
	// The merged summary comes back from JSON, which keeps neither the
	// summary's grouping (its key, labels and cell) nor its zero-length
	// slices: read the union's back the same way.
	wantJSON, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var wantBack benchkit.Summary
	if err := json.Unmarshal(wantJSON, &wantBack); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantBack, m.Summary); diff != "" {
		t.Errorf("merged summary differs from the union's (-union +merged):\n%s", diff)
	}
	if b, err := os.ReadFile(mergedPath); err != nil || !bytes.Equal(b, out.Bytes()) {
		t.Errorf("--json-out differs from stdout's JSON (%v)", err)
	}

	for name, c := range map[string]struct {
		files []string
		want  string
	}{
		"missing":    {[]string{paths[0], paths[1], paths[3]}, "segment 2/4"},
		"duplicated": {[]string{paths[0], paths[1], paths[2], paths[3], paths[1]}, "segment 1/4 appears twice"},
		"other plan": {[]string{paths[0], paths[1], paths[2], single}, "single.jsonl"},
	} {
		err := run(ctx, append([]string{"merge"}, c.files...), &bytes.Buffer{}, &bytes.Buffer{})
		if code := cli.ExitCode(err); code != cli.ExitUsage || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("merge %s: %v (exit %d); want exit 2 naming %q", name, err, code, c.want)
		}
	}
}

// TestSegmentFlagsRefused checks the split flags' usage errors: no seed,
// a sweep, a bad start or segment.
func TestSegmentFlagsRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--segment", "1/2"}, "--seed"},
		{[]string{"--segment", "1/2", "--seed", "1", "--rate", "1,2"}, "one --rate"},
		{[]string{"--segment", "2/2", "--seed", "1"}, "segment 2/2"},
		{[]string{"--start-at", "tomorrow"}, "RFC 3339"},
		{[]string{"--segments", "3", "--seed", "1"}, "JOB_COMPLETION_INDEX"},
	} {
		_, _, _, err := parse(c.args, &bytes.Buffer{})
		if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("parse(%q) = %v; want a usage error naming %q", c.args, err, c.want)
		}
	}
}

// peakInFlight is the most rows whose [send_offset_s, done_s] intervals
// overlap, a request ending at the instant another starts not overlapping
// it: what a merge fills in for the runner that sent no union.
func peakInFlight(rows []benchkit.Request) int {
	type ev struct {
		t float64
		d int
	}
	var evs []ev
	for _, r := range rows {
		evs = append(evs, ev{r.SendOffsetS, +1}, ev{max(r.DoneS, r.SendOffsetS), -1})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		switch {
		case a.t < b.t:
			return -1
		case a.t > b.t:
			return 1
		}
		return a.d - b.d // ends before starts at one instant
	})
	peak, cur := 0, 0
	for _, e := range evs {
		cur += e.d
		peak = max(peak, cur)
	}
	return peak
}
