package benchkit

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

func TestLengthsDraw(t *testing.T) {
	l := Lengths{Input: 100, Output: 10, RangeRatio: 0.5, Seed: 9}
	if lo, hi := l.InputRange(); lo != 50 || hi != 150 {
		t.Errorf("InputRange = %d, %d; want 50, 150", lo, hi)
	}
	if lo, hi := l.OutputRange(); lo != 5 || hi != 15 {
		t.Errorf("OutputRange = %d, %d; want 5, 15", lo, hi)
	}
	in, out := l.Draw(500)
	in2, out2 := l.Draw(20)
	if diff := cmp.Diff(in[:20], in2); diff != "" {
		t.Errorf("the first 20 draws depend on n (-n=500 +n=20):\n%s", diff)
	}
	if diff := cmp.Diff(out[:20], out2); diff != "" {
		t.Errorf("output draws depend on n:\n%s", diff)
	}
	seenLo, seenHi := false, false
	for i := range in {
		if in[i] < 50 || in[i] > 150 || out[i] < 5 || out[i] > 15 {
			t.Fatalf("draw %d = (%d, %d) outside [50,150]×[5,15]", i, in[i], out[i])
		}
		seenLo = seenLo || in[i] == 50
		seenHi = seenHi || in[i] == 150
	}
	if !seenLo || !seenHi {
		t.Errorf("500 draws never reached an end of [50, 150] (lo %v, hi %v): the range is not inclusive", seenLo, seenHi)
	}
	fixed := Lengths{Input: 64, Output: 8}
	in, out = fixed.Draw(3)
	if diff := cmp.Diff([]int{64, 64, 64}, in); diff != "" {
		t.Errorf("range ratio 0 inputs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{8, 8, 8}, out); diff != "" {
		t.Errorf("range ratio 0 outputs (-want +got):\n%s", diff)
	}
	explicit := Lengths{InputMin: 100, InputMax: 120, OutputMin: 3, OutputMax: 3}
	if err := explicit.Validate(); err != nil {
		t.Fatal(err)
	}
	in, out = explicit.Draw(50)
	for i := range in {
		if in[i] < 100 || in[i] > 120 || out[i] != 3 {
			t.Fatalf("explicit draw %d = (%d, %d)", i, in[i], out[i])
		}
	}
	for _, bad := range []Lengths{{Input: 0, Output: 1}, {Input: 1, Output: 0}, {Input: 9, Output: 9, RangeRatio: 1},
		{Input: 9, Output: 1, RangeRatio: 0.5}, {InputMin: 5, InputMax: 4, OutputMax: 2, OutputMin: 1}} {
		if err := bad.Validate(); !errors.Is(err, ErrBadLoad) {
			t.Errorf("%+v.Validate() = %v; want ErrBadLoad", bad, err)
		}
	}
}

func TestTrafficValidateAndSchedule(t *testing.T) {
	for _, bad := range []Traffic{{Rate: 0, NumRequests: 1}, {Rate: math.NaN(), NumRequests: 1}, {Rate: math.Inf(1)},
		{Rate: 1}, {Rate: 1, NumRequests: 1, Burstiness: -1}, {Burst: -1}, {Rate: 1, NumRequests: -1}} {
		if err := bad.Validate(); !errors.Is(err, ErrBadLoad) {
			t.Errorf("%+v.Validate() = %v; want ErrBadLoad", bad, err)
		}
	}
	if got := (Traffic{Burst: 3}).Schedule(); len(got) != 3 || got[2] != 0 {
		t.Errorf("burst schedule = %v; want three zeros", got)
	}
	if got := (Traffic{Rate: math.Inf(1), NumRequests: 4}).Schedule(); len(got) != 4 || got[3] != 0 {
		t.Errorf("infinite-rate schedule = %v; want four zeros", got)
	}
	// The same seed at twice the rate is the same schedule at half the
	// offsets.
	a := Traffic{Rate: 5, NumRequests: 30, Seed: 4}.Schedule()
	b := Traffic{Rate: 10, NumRequests: 30, Seed: 4}.Schedule()
	for i := range a {
		// Each gap is rounded to the nanosecond: allow 2 ns per gap.
		if d, tol := a[i]-2*b[i], time.Duration(2*(i+1)); d < -tol || d > tol {
			t.Fatalf("offset %d: %v at 5/s, %v at 10/s; want exactly half", i, a[i], b[i])
		}
	}
	if got := (Traffic{Rate: 5, Duration: 2 * time.Second}).Schedule(); len(got) == 0 || got[len(got)-1] >= 2*time.Second {
		t.Errorf("a 2 s schedule ends at %v", got)
	}
	for tr, want := range map[Traffic]string{
		{Burst: 8}:                 "burst(n=8)",
		{Rate: math.Inf(1)}:        "all at once",
		{Rate: 4}:                  "poisson(rate=4/s)",
		{Rate: 4, Burstiness: 0.5}: "gamma(rate=4/s, burstiness=0.5)",
	} {
		if got := tr.String(); got != want {
			t.Errorf("%+v.String() = %q; want %q", tr, got, want)
		}
	}
}

func lfp(v float64) *float64 { return &v }

// TestSummarizeByRun checks the summary of three hand-made rows against
// figures computed by hand.
func TestSummarizeByRun(t *testing.T) {
	srv10 := 10
	rows := []Request{
		{Index: 0, PPTokens: 10, ServerPromptTokens: &srv10, TGTarget: 3, CompletionTokens: ip(3), IntendedSendS: 0, SendOffsetS: 0.001, DoneS: 1.0,
			TTFTS: lfp(0.1), TPOTS: lfp(0.05), E2ES: lfp(0.2), ITLS: []float64{0.05, 0.05}, Stream: true},
		{Index: 1, PPTokens: 20, TGTarget: 3, CompletionTokens: ip(2), IntendedSendS: 0.5, SendOffsetS: 0.504, DoneS: 2.0,
			TTFTS: lfp(0.3), TPOTS: lfp(0.1), E2ES: lfp(0.4), ITLS: []float64{0.1}, Stream: true,
			Warnings: []Warning{{WarnShortGeneration, "2 tokens generated, 3 asked for"}, {WarnPromptMismatch, "server counted 21 prompt tokens, the client 20"}}},
		{Index: 2, PPTokens: 30, TGTarget: 3, IntendedSendS: 1, SendOffsetS: 1.002, DoneS: 1.5, Error: "boom", ErrorKind: "reset", Stream: true},
	}
	s := summarize(rows, ByRun, timing.SLO{TTFT: 200 * time.Millisecond})
	if s.Requests != 3 || s.Completed != 2 || s.Failed != 1 || s.DurationS != 2 {
		t.Errorf("counts %d/%d/%d over %g s; want 3 requests, 2 completed, 1 failed over 2 s", s.Requests, s.Completed, s.Failed, s.DurationS)
	}
	// Output: (3 + 2) / 2 s; total: (10 + 20 + 3 + 2) / 2 s; requests: 2 / 2 s.
	for name, c := range map[string]struct{ got *float64 }{"output": {s.OutputThroughput}, "total": {s.TotalThroughput}, "request": {s.RequestThroughput}} {
		want := map[string]float64{"output": 2.5, "total": 17.5, "request": 1}[name]
		if c.got == nil || math.Abs(*c.got-want) > 1e-12 {
			t.Errorf("%s throughput = %v; want %g", name, c.got, want)
		}
	}
	// TTFT {0.1, 0.3}: mean 0.2, p50 0.2, p99 0.1 + 0.99·0.2 = 0.298.
	if *s.TTFT.Mean != 0.2 || math.Abs(*s.TTFT.P50-0.2) > 1e-12 || math.Abs(*s.TTFT.P99-0.298) > 1e-12 {
		t.Errorf("TTFT mean/p50/p99 = %g/%g/%g; want 0.2/0.2/0.298", *s.TTFT.Mean, *s.TTFT.P50, *s.TTFT.P99)
	}
	// ITL pools the three gaps {0.05, 0.05, 0.1}.
	if s.ITL.N != 3 || math.Abs(*s.ITL.Mean-0.2/3) > 1e-12 {
		t.Errorf("ITL n=%d mean=%g; want 3 gaps of mean 0.0667", s.ITL.N, *s.ITL.Mean)
	}
	// Lags of the completed requests: 0.001 and 0.004; skew 0 and 0.003.
	if math.Abs(*s.ScheduleLag.Max-0.004) > 1e-12 || math.Abs(*s.DispatchSkew.Max-0.003) > 1e-12 || math.Abs(*s.DispatchSkew.P50-0.0015) > 1e-12 {
		t.Errorf("lag max %g, skew max %g p50 %g; want 0.004, 0.003, 0.0015", *s.ScheduleLag.Max, *s.DispatchSkew.Max, *s.DispatchSkew.P50)
	}
	// Goodput: only row 0 meets TTFT ≤ 200 ms; the failed row counts in
	// the total. 1/3 < 0.9: the SLO is missed.
	if s.Goodput == nil || s.Goodput.Good != 1 || s.Goodput.Total != 3 || *s.MeetsSLO || s.Meets(0.3) != true {
		t.Errorf("goodput %+v, meets %v; want 1 of 3, not met at 0.9, met at 0.3", s.Goodput, s.MeetsSLO)
	}
	if len(s.Warnings) != 3 {
		t.Errorf("warnings %q; want the failure, the prompt mismatch and the short generation", s.Warnings)
	}
}

// TestLoadClosedLoop: a closed loop of two users sends its six requests
// two at a time at most, each a Request like any driver's, with no rate
// and no saturation gate; it refuses what makes no sense for it.
func TestLoadClosedLoop(t *testing.T) {
	fe := &fakeEngine{}
	l := &Load{Engine: fe, Model: "m", Builder: &promptsize.Builder{Counter: wordCounter}}
	tr := Traffic{Users: 2, NumRequests: 6, Think: time.Millisecond}
	run, err := l.Run(context.Background(), Lengths{Input: 20, Output: 3}, tr, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	s := run.Summary
	if len(run.Requests) != 6 || s.Completed != 6 || s.PeakInFlight > 2 || s.PeakInFlight < 1 || s.RequestRate != nil ||
		s.Traffic != "closed(users=2, think=1ms)" || s.Client == nil || !s.Client.Capped || s.Client.Saturated {
		t.Errorf("closed loop: %d requests, summary %+v", len(run.Requests), s)
	}
	seen := map[int]bool{}
	for _, r := range run.Requests {
		seen[r.Index] = true
		if r.Tokens() != 3 || r.TTFTS == nil || r.Rate != nil {
			t.Errorf("request %d: %+v", r.Index, r)
		}
	}
	if len(seen) != 6 {
		t.Errorf("indices %v, want 0…5 once each", seen)
	}
	for _, bad := range []Traffic{{Users: 2}, {Users: 2, Burst: 2, NumRequests: 2}, {Users: -1, NumRequests: 2}} {
		if _, err := l.Run(context.Background(), Lengths{Input: 20, Output: 3}, bad, timing.SLO{}); !errors.Is(err, ErrBadLoad) {
			t.Errorf("%+v: %v, want ErrBadLoad", bad, err)
		}
	}
	if _, err := l.Sweep(context.Background(), Lengths{Input: 20, Output: 3}, tr, []float64{1, 2}, timing.SLO{}); !errors.Is(err, ErrBadLoad) {
		t.Errorf("a swept closed loop: %v, want ErrBadLoad", err)
	}
}

// TestLoadPrefixHitRate: requests that share a prefix, sent one after
// another to the embedded engine's vLLM API, report cached tokens, and the
// summary's hit rate is Σ cached / Σ prompt tokens; with the cache off
// nothing is cached.
func TestLoadPrefixHitRate(t *testing.T) {
	for _, mode := range []sim.PrefixCacheMode{sim.PrefixCacheRadix, sim.PrefixCacheNaive} {
		srv := sim.NewServer(sim.Options{Preset: sim.Fast(), PrefixCache: mode})
		c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
		if err != nil {
			t.Fatal(err)
		}
		l := &Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}, SharedPrefix: 160}
		run, err := l.Run(context.Background(), Lengths{Input: 240, Output: 2}, Traffic{Users: 1, NumRequests: 6}, timing.SLO{})
		c.CloseIdleConnections()
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		s := run.Summary
		cached, prompt := 0, 0
		for _, r := range run.Requests {
			if r.ServerPromptTokens == nil {
				t.Fatalf("%s: request %d reports no prompt tokens", mode, r.Index)
			}
			if r.CachedTokens != nil { // vLLM's chat API says it only when positive
				cached += *r.CachedTokens
			}
			prompt += *r.ServerPromptTokens
		}
		// With nothing cached the chat API never says so: no rate.
		if mode == sim.PrefixCacheNaive && (cached != 0 || s.PrefixHitRate != nil) {
			t.Errorf("naive: %d cached, hit rate %v; want none", cached, s.PrefixHitRate)
			continue
		}
		if mode == sim.PrefixCacheNaive {
			continue
		}
		if s.CachedTokens != cached || s.PrefixHitRate == nil || *s.PrefixHitRate != float64(cached)/float64(prompt) {
			t.Errorf("%s: summary cached %d, hit rate %v; want %d and %d/%d", mode, s.CachedTokens, s.PrefixHitRate, cached, cached, prompt)
		}
		if cached < 5*128 {
			t.Errorf("%s: %d cached tokens over 6 requests sharing about 160 tokens", mode, cached)
		}
	}
}
