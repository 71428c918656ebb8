package benchkit

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
	"github.com/inferbench/inferbench/workload"
)

// streamedRow is a completed streamed request sent at send, whose tokens
// arrive every gap from send + gap on: tokens of them, the last at
// send + tokens × gap, when it ends. Every value is a binary fraction, so
// that the instants add up exactly.
func streamedRow(send, gap float64, tokens int) Request {
	ttft, e2e := gap, gap*float64(tokens)
	itl := make([]float64, tokens-1)
	for i := range itl {
		itl[i] = gap
	}
	n := tokens
	return Request{SendOffsetS: send, IntendedSendS: send, DoneS: send + e2e, TTFTS: &ttft, E2ES: &e2e,
		ITLS: itl, CompletionTokens: &n, PPTokens: 100, Stream: true}
}

// closedLoopRows are 4 users, user u starting at u/4 s, each sending 6
// requests back to back of 1 s and 8 tokens (one every 1/8 s).
func closedLoopRows() []Request {
	var rows []Request
	for u := range 4 {
		for k := range 6 {
			rows = append(rows, streamedRow(float64(u)/4+float64(k), 0.125, 8))
		}
	}
	return rows
}

// TestSteadyPlateau: a closed loop of 4 users holds 4 in flight from the
// last user's start (0.75 s) to the first user's end (6 s). Counted by
// hand: 21 requests start in [0.75, 6); 20 end in it; of the 192 tokens,
// 9 arrive before 0.75 s (5 + 3 + 1 of the users' first requests) and 16
// at or after 6 s (1 + 3 + 5 + 7 of their last), so 167 in it; a whole
// second holds 8 tokens of each user, 32.
func TestSteadyPlateau(t *testing.T) {
	rows := closedLoopRows()
	s := summarize(rows, ByRun, timing.SLO{TTFT: 1e9})
	s.setSteady(rows, timing.SLO{TTFT: 1e9}, Traffic{Users: 4, NumRequests: 24}, 0)
	st := s.Steady
	if st == nil {
		t.Fatalf("no steady window: %v", s.DriverWarnings)
	}
	if *st.WindowStartS != 0.75 || *st.WindowEndS != 6 || st.SteadyRule != rulePlateau || st.SteadyThreshold != 4 || st.SteadyRatio != 0.95 {
		t.Errorf("window [%v, %v) rule %s threshold %d ratio %v; want [0.75, 6) plateau 4 0.95", *st.WindowStartS, *st.WindowEndS, st.SteadyRule, st.SteadyThreshold, st.SteadyRatio)
	}
	near := func(name string, got *float64, want float64) {
		t.Helper()
		if got == nil || math.Abs(*got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, deref(got), want)
		}
	}
	if st.Requests != 21 || st.TotalOutputTokens != 167 || st.DurationS != 5.25 || st.PeakInFlight != 4 {
		t.Errorf("requests %d, output tokens %d, duration %v, peak %d; want 21, 167, 5.25, 4", st.Requests, st.TotalOutputTokens, st.DurationS, st.PeakInFlight)
	}
	near("steady output throughput", st.OutputThroughput, 167/5.25)
	near("steady total throughput", st.TotalThroughput, (21*100+167)/5.25)
	near("steady request throughput", st.RequestThroughput, 20/5.25)
	near("steady achieved rate", st.AchievedRate, 21/5.25)
	near("steady peak output", st.PeakOutputThroughput, 32)
	near("run peak output", s.PeakOutputThroughput, 32)
	near("run achieved rate", s.AchievedRate, 23/5.75)
	near("steady goodput rate", st.Goodput.RateRPS, 21/5.25)
	// The whole run counts the ramp and the drain: 192 tokens over 6.75 s.
	near("run output throughput", s.OutputThroughput, 192/6.75)
	if st.TTFT.N != 21 || st.Goodput.Total != 21 {
		t.Errorf("steady TTFT over %d requests, goodput over %d; want the 21 that started in the window", st.TTFT.N, st.Goodput.Total)
	}

	// Summarised again with one more token each, the window stays and
	// its figures follow the rows.
	run := LoadRun{Summary: s, Requests: slices.Clone(rows)}
	for i := range run.Requests {
		n := 16
		run.Requests[i].CompletionTokens = &n
	}
	run.Resummarize(timing.SLO{})
	if st2 := run.Summary.Steady; st2 == nil || *st2.WindowStartS != 0.75 || *st2.WindowEndS != 6 || st2.TotalOutputTokens != 334 || st2.SteadyRule != rulePlateau {
		t.Errorf("resummarised steady: %+v; want the same window, 334 tokens (twice the weight per instant)", st2)
	}
}

// TestSteadyOpenLoop: an open loop sending every 1/4 s, each request
// lasting 1/2 s, holds 2 in flight (its median) from its second send to
// past its last; the window runs from the ramp's end, when the first
// request has run its course (0.5 s, the p90 of the lives), to the last
// send (9.75 s), the drain left out, and the 37 requests sent in between
// are its own. It holds 8 × 4 tokens a second, as the run does between
// its ramp and its drain.
func TestSteadyOpenLoop(t *testing.T) {
	var rows []Request
	for i := range 40 {
		rows = append(rows, streamedRow(float64(i)/4, 0.0625, 8))
	}
	for _, tr := range []Traffic{{Rate: 4, NumRequests: 40}, {Rate: 4, NumRequests: 40, MaxConcurrency: 8}, {Replay: true}} {
		s := summarize(rows, ByRun, timing.SLO{})
		s.setSteady(rows, timing.SLO{}, tr, 0)
		st := s.Steady
		if st == nil {
			t.Fatalf("%+v: no steady window: %v", tr, s.DriverWarnings)
		}
		if *st.WindowStartS != 0.5 || *st.WindowEndS != 9.75 || st.SteadyRule != ruleOpen || st.SteadyThreshold != 2 || st.Requests != 37 {
			t.Errorf("%+v: window [%v, %v) rule %s threshold %d, %d requests; want [0.5, 9.75) %s 2, 37", tr, *st.WindowStartS, *st.WindowEndS, st.SteadyRule, st.SteadyThreshold, st.Requests, ruleOpen)
		}
		if st.OutputThroughput == nil || *st.OutputThroughput != 32 {
			t.Errorf("%+v: steady output throughput %v, want 32 tokens/s", tr, deref(st.OutputThroughput))
		}
	}
}

// TestSteadyNone: a burst, an uncapped all-at-once run and a run of
// fewer than 10 requests have no steady figures and need not say so; a
// run of more whose window sees fewer than 10 requests start says why.
func TestSteadyNone(t *testing.T) {
	var burst []Request
	for range 12 {
		burst = append(burst, streamedRow(0, 0.125, 8))
	}
	// A user's 6 requests of 1 s, another's 2, and 3 more beside the
	// first user's fourth: 4 in flight over [3, 3.5) only, where 4
	// requests start.
	short := closedLoopRows()[:8]
	for range 3 {
		short = append(short, streamedRow(3, 0.0625, 8))
	}
	for _, c := range []struct {
		name string
		rows []Request
		tr   Traffic
		why  string
	}{
		{"burst", burst, Traffic{Burst: 12}, ""},
		{"all at once", burst, Traffic{Rate: math.Inf(1), NumRequests: 12}, ""},
		{"few", closedLoopRows()[:6], Traffic{Users: 1, NumRequests: 6}, ""},
		{"none", nil, Traffic{Rate: 1, NumRequests: 1}, ""},
		{"short", short, Traffic{Users: 4, NumRequests: 11}, "[3.000 s, 3.500 s) saw 4 requests start, fewer than 10"},
	} {
		s := summarize(c.rows, ByRun, timing.SLO{})
		s.setSteady(c.rows, timing.SLO{}, c.tr, 0)
		warned := len(s.DriverWarnings) == 1 && c.why != "" && strings.Contains(s.DriverWarnings[0], c.why)
		if s.Steady != nil || (c.why == "") != (len(s.DriverWarnings) == 0) || (c.why != "" && !warned) {
			t.Errorf("%s: steady %v, warnings %q; want none, saying %q", c.name, s.Steady, s.DriverWarnings, c.why)
		}
	}
}

// TestSteadyUnstreamed: an unstreamed row's tokens arrive at its end,
// all at once.
func TestSteadyUnstreamed(t *testing.T) {
	var got []float64
	n := 5
	tokenInstants(Request{SendOffsetS: 1, DoneS: 2, CompletionTokens: &n}, func(at, w float64) { got = append(got, at, w) })
	if !slices.Equal(got, []float64{2, 5}) {
		t.Errorf("instants and weights %v, want [2 5]", got)
	}
}

// steadyLoad is a Load of the embedded engine's fast preset.
func steadyLoad(t *testing.T) (*Load, *sim.Server) {
	t.Helper()
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	t.Cleanup(srv.Close)
	c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return &Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}, Simulated: true}, srv
}

// checkSteady checks a real run's steady figures against its rows and
// its whole-run figures, and prints the table.
func checkSteady(t *testing.T, run LoadRun, rule string) {
	t.Helper()
	s, st := run.Summary, run.Summary.Steady
	if st == nil {
		t.Fatalf("no steady figures: %v", s.Warnings)
	}
	lo, hi := *st.WindowStartS, *st.WindowEndS
	in, peak := 0, 0
	for _, r := range run.Requests {
		if r.SendOffsetS >= lo && r.SendOffsetS < hi {
			in++
		}
	}
	for _, x := range inFlight(run.Requests) {
		peak = max(peak, x.n)
	}
	if st.SteadyRule != rule || lo < 0 || hi <= lo || hi > s.DurationS || st.Requests != in || in < minSteadyRequests {
		t.Errorf("window [%v, %v) by %s with %d requests (%d sent in it); want %s inside the run's %v s", lo, hi, st.SteadyRule, st.Requests, in, rule, s.DurationS)
	}
	if st.TotalOutputTokens > s.TotalOutputTokens || st.OutputThroughput == nil || st.TTFT.P99 == nil || st.TPOT.P50 == nil || st.E2E.P99 == nil ||
		st.AchievedRate == nil || s.AchievedRate == nil {
		t.Errorf("steady figures missing or larger than the run's: %+v", st)
	}
	// A peak per second needs a whole second.
	if (st.PeakOutputThroughput != nil) != (hi-lo >= 1) {
		t.Errorf("steady peak output %v over a window of %v s", deref(st.PeakOutputThroughput), hi-lo)
	}
	// The sender's peak in flight counts from before the send instant
	// (a dial), so it is at least the rows' own.
	if s.PeakInFlight < peak || st.PeakInFlight > peak {
		t.Errorf("peak in flight: run %d, steady %d, rows' %d", s.PeakInFlight, st.PeakInFlight, peak)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, []Summary{s}, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	table := b.String()
	// The steady line is no wider than the run's.
	if lines := strings.Split(table, "\n"); len([]rune(lines[2])) > len([]rune(lines[1])) {
		t.Errorf("the steady line is wider than the run's:\n%s", table)
	}
	if !strings.Contains(table, "↳ steady") || !strings.Contains(table, "steady window [") {
		t.Errorf("the table shows no steady line:\n%s", table)
	}
	t.Logf("\n%s", table)
}

// TestSteadyPoissonEmbedded: a Poisson run against the embedded engine
// reports its steady figures beside the whole run's, its window from the
// ramp's end to the last send, its achieved rate near the offered one.
func TestSteadyPoissonEmbedded(t *testing.T) {
	l, _ := steadyLoad(t)
	run, err := l.Run(context.Background(), Lengths{Input: 64, Output: 32}, Traffic{Rate: 100, NumRequests: 100, Seed: 1}, timing.SLO{TTFT: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	checkSteady(t, run, ruleOpen)
	last := 0.0
	for _, r := range run.Requests {
		last = max(last, r.SendOffsetS)
	}
	st := run.Summary.Steady
	if *st.WindowEndS != last {
		t.Errorf("window ends at %v, want the last send %v", *st.WindowEndS, last)
	}
	if a := *st.AchievedRate; a < 50 || a > 200 {
		t.Errorf("steady achieved rate %.1f req/s, offered 100", a)
	}
	// Between the ramp and the drain, tokens arrive as fast as requests
	// are sent times the tokens of each (32), when the server keeps up.
	// On a machine too busy to run the embedded engine at its own pace
	// (the race detector beside other packages' tests) its queue grows
	// through the run instead: the backlog at the window's end then
	// holds the tokens missing, and they are what the test checks.
	want := *st.AchievedRate * 32
	if keptUp(run) {
		if math.Abs(*st.OutputThroughput-want) > 0.2*want {
			t.Errorf("steady output throughput %.0f tokens/s, want about %.0f (achieved rate × 32)", *st.OutputThroughput, want)
		}
	} else if *st.OutputThroughput > 1.2*want {
		t.Errorf("steady output throughput %.0f tokens/s above what was sent, %.0f (achieved rate × 32)", *st.OutputThroughput, want)
	} else {
		t.Logf("the engine fell behind (TTFT p50 %v s): steady output %.0f tokens/s below the %.0f sent", deref(run.Summary.TTFT.P50), *st.OutputThroughput, want)
	}
}

// keptUp says whether the embedded engine kept up with a light run: its
// median TTFT stayed near an unqueued prefill (within 50 ms), so no
// queue built up.
func keptUp(run LoadRun) bool {
	p := run.Summary.TTFT.P50
	return p != nil && *p < 0.05
}

// TestSteadyReplayEmbedded: a replay whose rows come faster than a cap
// of 4 lets them holds 4 in flight: its window is that plateau.
func TestSteadyReplayEmbedded(t *testing.T) {
	var trace strings.Builder
	for i := range 40 {
		fmt.Fprintf(&trace, `{"timestamp": %d, "input_length": 600, "output_length": 24, "hash_ids": [%d, %d]}`+"\n", i*5, 2*i, 2*i+1)
	}
	rd, err := workload.NewReader(strings.NewReader(trace.String()), "mooncake.jsonl", nil)
	if err != nil {
		t.Fatal(err)
	}
	var rows []workload.Row
	for rd.Next() {
		rows = append(rows, rd.Row())
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	blocks, err := promptsize.NewTokenBlocks(sim.Counter{}, promptsize.BlockOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := steadyLoad(t)
	tr := Trace{Name: "mooncake.jsonl", Rows: rows, BlockSize: rd.BlockSize(), Blocks: blocks}
	run, err := l.Run(context.Background(), tr, Traffic{Replay: true, MaxConcurrency: 4}, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	checkSteady(t, run, rulePlateau)
	if st := run.Summary.Steady; st.SteadyThreshold != 4 || st.PeakInFlight != 4 {
		t.Errorf("threshold %d, peak %d in the window; want the cap, 4", st.SteadyThreshold, st.PeakInFlight)
	}
}

// TestLoadWarmup: warm-up requests reach the server, and no row, figure
// or sink holds them.
func TestLoadWarmup(t *testing.T) {
	l, srv := steadyLoad(t)
	l.Warmup = 5
	var sunk []Request
	l.Sinks = []Sink{SinkFunc(func(r Request) error { sunk = append(sunk, r); return nil })}
	run, err := l.Run(context.Background(), Lengths{Input: 64, Output: 4}, Traffic{Rate: 200, NumRequests: 12, MaxConcurrency: 2}, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	s := run.Summary
	if len(run.Requests) != 12 || len(sunk) != 12 || s.Requests != 12 || s.Warmup != 5 || s.TotalInputTokens != 12*64 {
		t.Errorf("%d rows, %d in the sink, summary of %d requests and %d input tokens, %d warm-ups; want 12, 12, 12, 768, 5",
			len(run.Requests), len(sunk), s.Requests, s.TotalInputTokens, s.Warmup)
	}
	if got := srv.CacheStats().PromptTokens; got != 17*64 {
		t.Errorf("the server saw %d prompt tokens, want %d (12 measured and 5 warm-up requests of 64)", got, 17*64)
	}
	// A warm-up shares no prefix with a measured request: the measured
	// ones find no more cached than without one.
	l2, _ := steadyLoad(t)
	cold, err := l2.Run(context.Background(), Lengths{Input: 64, Output: 4}, Traffic{Rate: 200, NumRequests: 12, MaxConcurrency: 2}, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	if s.CachedTokens > cold.Summary.CachedTokens+64 {
		t.Errorf("measured requests after warm-ups found %d cached tokens, %d without: a warm-up shared a prefix", s.CachedTokens, cold.Summary.CachedTokens)
	}
	// A failed warm-up is a warning, not the end of the run.
	srv.Close()
	run, err = l.Run(context.Background(), Lengths{Input: 64, Output: 4}, Traffic{Rate: 200, NumRequests: 12}, timing.SLO{})
	if err != nil || !slices.ContainsFunc(run.Summary.Warnings, func(w string) bool { return strings.Contains(w, "warm-up: 5 of 5 requests failed") }) {
		t.Errorf("a server gone: err %v, warnings %q; want a warm-up warning and the run's rows", err, run.Summary.Warnings)
	}
}

// TestSteadyClosedLoopEmbedded: a closed loop of 4 users holds 4 in
// flight between its ramp and its drain (vllm-bench's case): its window
// is that plateau.
func TestSteadyClosedLoopEmbedded(t *testing.T) {
	l, _ := steadyLoad(t)
	run, err := l.Run(context.Background(), Lengths{Input: 64, Output: 16}, Traffic{Users: 4, NumRequests: 40}, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	checkSteady(t, run, rulePlateau)
	if st := run.Summary.Steady; st.SteadyThreshold != 4 {
		t.Errorf("threshold %d; want the users, 4", st.SteadyThreshold)
	}
}
