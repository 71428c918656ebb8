package benchkit

import (
	"context"
	"os"
	"testing"

	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
	"github.com/inferbench/inferbench/workload"
)

// bailianSample reads the first n rows of the synthetic Bailian sample,
// replayed 50 times faster than recorded.
func bailianSample(t *testing.T, n int) ([]workload.Row, int) {
	t.Helper()
	f, err := os.Open("../workload/testdata/synthetic_bailian_1k.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := workload.NewReader(f, f.Name(), &workload.Options{Limit: n, Speedup: 50})
	if err != nil {
		t.Fatal(err)
	}
	var rows []workload.Row
	for r.Next() {
		rows = append(rows, r.Row())
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return rows, r.BlockSize()
}

// TestTraceReplay replays Bailian-format rows against the embedded engine,
// as token ids on completions and as chat messages: every prompt's count
// is the server's, every request goes at its row's instant, and the
// server's measured hit rate stays within the trace's theoretical one
// (and comes close to it on a cache that evicts nothing).
func TestTraceReplay(t *testing.T) {
	rows, bs := bailianSample(t, 60)
	tb, err := promptsize.NewTokenBlocks(sim.Counter{}, promptsize.BlockOptions{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	for _, completions := range []bool{true, false} {
		srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
		c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
		if err != nil {
			t.Fatal(err)
		}
		l := &Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}}
		tr := Trace{Name: "sample", Rows: rows, BlockSize: bs, Blocks: tb, Completions: completions}
		run, err := l.Run(context.Background(), tr, Traffic{Replay: true}, timing.SLO{})
		c.CloseIdleConnections()
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(run.Requests) != len(rows) || run.Summary.Failed != 0 {
			t.Fatalf("completions %t: %d requests, %d failed; want %d, none", completions, len(run.Requests), run.Summary.Failed, len(rows))
		}
		for _, r := range run.Requests {
			row := rows[r.Index]
			if r.ServerPromptTokens == nil || *r.ServerPromptTokens != row.Input || r.PPTokens != row.Input || r.HasWarning(WarnPromptMismatch) {
				t.Errorf("completions %t: request %d: server %v, client %d, trace %d", completions, r.Index, r.ServerPromptTokens, r.PPTokens, row.Input)
			}
			if want := row.At.Seconds(); r.IntendedSendS != want {
				t.Errorf("request %d meant for %g s, the row says %g s", r.Index, r.IntendedSendS, want)
			}
		}
		s := run.Summary
		if s.Traffic != "replay" || s.TheoreticalHitRate == nil || s.PrefixHitRate == nil {
			t.Fatalf("completions %t: summary %+v", completions, s)
		}
		t.Logf("completions %t: %d rows, hit rate measured %.4f, theoretical %.4f, schedule lag p99 %.3f ms", completions, len(rows),
			*s.PrefixHitRate, *s.TheoreticalHitRate, *s.ScheduleLag.P99*1e3)
		// The server caches whole 16-token blocks and never the last
		// prompt token, so it can reach the trace's rate only to within
		// a block a request; with chat the template's prefix adds hits.
		if !completions {
			continue
		}
		if *s.PrefixHitRate > *s.TheoreticalHitRate+1e-9 || *s.PrefixHitRate < *s.TheoreticalHitRate-0.1 {
			t.Errorf("measured hit rate %.4f, theoretical %.4f", *s.PrefixHitRate, *s.TheoreticalHitRate)
		}
	}
}

// TestTraceRefusesBadRows: a replay of rows without timing, or of more
// requests than rows, is refused before anything is sent.
func TestTraceRefusesBadRows(t *testing.T) {
	rows, bs := bailianSample(t, 3)
	fe := &fakeEngine{}
	l := &Load{Engine: fe, Model: "m", Builder: &promptsize.Builder{Counter: wordCounter}}
	untimed := []workload.Row{{Input: 40, At: workload.Untimed}}
	for name, c := range map[string]struct {
		w  Workload
		tr Traffic
	}{
		"untimed replay":     {Trace{Rows: untimed}, Traffic{Replay: true}},
		"more than the rows": {Trace{Rows: rows, BlockSize: bs}, Traffic{Rate: 10, NumRequests: 5}},
		"no blocks":          {Trace{Rows: rows, BlockSize: bs}, Traffic{Replay: true}},
	} {
		if _, err := l.Run(context.Background(), c.w, c.tr, timing.SLO{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if fe.calls.Load() != 0 {
		t.Errorf("%d requests sent", fe.calls.Load())
	}
}

// TestSharedPrefixAblation is the seed chapter's ablation through the
// whole path (a generated shared-prefix load, exact token blocks, token
// ids on completions, the embedded engine's prefix cache): 16 requests
// sharing a 400-token prefix plus 16 tokens each prefill 6,656 tokens
// with the naive cache and 656 with the radix one.
func TestSharedPrefixAblation(t *testing.T) {
	rows, bs, err := workload.SharedPrefix{Groups: 1, PerGroup: 16, System: 400, Question: 16, Output: 4}.Rows()
	if err != nil {
		t.Fatal(err)
	}
	tb, err := promptsize.NewTokenBlocks(sim.Counter{}, promptsize.BlockOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for mode, want := range map[sim.PrefixCacheMode]int64{sim.PrefixCacheNaive: 6656, sim.PrefixCacheRadix: 656} {
		srv := sim.NewServer(sim.Options{Preset: sim.Fast(), PrefixCache: mode})
		c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
		if err != nil {
			t.Fatal(err)
		}
		l := &Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}}
		run, err := l.Run(context.Background(), Trace{Rows: rows, BlockSize: bs, Blocks: tb, Completions: true}, Traffic{Users: 1, NumRequests: 16}, timing.SLO{})
		st := srv.CacheStats()
		c.CloseIdleConnections()
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if st.PrefilledTokens != want || run.Summary.TotalInputTokens != 16*416 {
			t.Errorf("%s: %d tokens prefilled of %d sent; want %d of 6656", mode, st.PrefilledTokens, run.Summary.TotalInputTokens, want)
		}
		t.Logf("%s: %d prompt tokens, %d cached, %d prefilled; hit rate measured %v, theoretical %v", mode, st.PromptTokens, st.CachedTokens, st.PrefilledTokens,
			deref(run.Summary.PrefixHitRate), deref(run.Summary.TheoreticalHitRate))
	}
}

// TestTraceSegments: a trace replayed as two segments sends, between
// them, every row once, each with the prompt and the intended instant the
// whole replay gives it.
func TestTraceSegments(t *testing.T) {
	rows, bs := bailianSample(t, 20)
	tb, err := promptsize.NewTokenBlocks(sim.Counter{}, promptsize.BlockOptions{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	tr := Trace{Rows: rows, BlockSize: bs, Blocks: tb, Completions: true}
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer srv.Close()
	runOf := func(seg Segment) []Request {
		c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseIdleConnections()
		l := &Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}, Nonce: "shared", Segment: seg}
		run, err := l.Run(context.Background(), tr, Traffic{Replay: true}, timing.SLO{})
		if err != nil {
			t.Fatal(err)
		}
		return run.Requests
	}
	whole := map[int]Request{}
	for _, r := range runOf(Segment{}) {
		whole[r.Index] = r
	}
	seen := 0
	for i := range 2 {
		for _, r := range runOf(Segment{Index: i, Count: 2}) {
			w := whole[r.Index]
			if r.Index%2 != i || r.PromptSHA256 != w.PromptSHA256 || r.IntendedSendS != w.IntendedSendS || r.PlanHash != w.PlanHash {
				t.Errorf("segment %d, request %d: prompt %s, intended %g, plan %s; the whole replay's %s, %g, %s",
					i, r.Index, r.PromptSHA256[:8], r.IntendedSendS, r.PlanHash[:8], w.PromptSHA256[:8], w.IntendedSendS, w.PlanHash[:8])
			}
			seen++
		}
	}
	if seen != len(rows) {
		t.Errorf("the segments sent %d requests, the trace has %d rows", seen, len(rows))
	}
}
