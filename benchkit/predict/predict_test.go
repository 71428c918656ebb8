package predict

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/precision"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
	"github.com/inferbench/inferbench/workload"
)

// A live row's TTFT and E2E differ from its prediction by the live
// path's own time: the send lag behind the schedule, the handler's
// parsing and counting before the request reaches the scheduler's queue
// (more for a longer prompt), the loopback and the reads, a millisecond
// or a few on a loaded two-core machine. A request that reaches the queue
// after a step's end instead of before it is admitted a step later, and
// the queue is FIFO: two requests the live path reorders trade places in
// it, and their followers move by a step or two; on a machine busy with
// other work all of it grows. So a typical request agrees within two
// steps and 2 ms, three in four within four steps and 4 ms, and the
// summary's quantiles within a tenth or two steps and 2 ms.
//
// Under the race detector the live handler and scheduler run many times
// slower than the schedule they serve, and the live rows measure the
// detector: the timing is then logged, not checked (the scheduler's own
// agreement, instant for instant, is engine/sim's
// TestPredictMatchesLiveSchedule, race detector or not).
const slack = 2 * time.Millisecond

// slowSteps is the fast preset with a step overhead of 4 ms: steps of
// about 5 ms, long beside the live path's own time even under the race
// detector, so that a queue forms at a rate the machine sends easily.
func slowSteps() sim.Options {
	p := sim.Fast()
	p.Name = "fast-4ms-steps"
	p.Hardware.StepOverhead = 4 * time.Millisecond
	return sim.Options{Preset: p}
}

// live runs w with traffic through a Load against a live embedded
// engine, and returns the run and the Load (its Nonce set).
func live(t *testing.T, opts sim.Options, w benchkit.Workload, traffic benchkit.Traffic) (benchkit.LoadRun, *benchkit.Load) {
	t.Helper()
	return liveWith(t, opts, w, traffic, nil)
}

// liveWith is live with the Load set by set (when not nil) before it runs.
func liveWith(t *testing.T, opts sim.Options, w benchkit.Workload, traffic benchkit.Traffic, set func(*benchkit.Load)) (benchkit.LoadRun, *benchkit.Load) {
	t.Helper()
	srv := sim.NewServer(opts)
	defer srv.Close()
	c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	l := &benchkit.Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}, Simulated: true, RequestTimeout: 30 * time.Second}
	if set != nil {
		set(l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := l.Run(ctx, w, traffic, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	if run.Summary.Failed > 0 {
		t.Fatalf("%d live requests failed", run.Summary.Failed)
	}
	return run, l
}

// agree checks the predicted run against the live one, request by
// request and quantile by quantile.
func agree(t *testing.T, got, want benchkit.LoadRun, step time.Duration) {
	t.Helper()
	if len(got.Requests) != len(want.Requests) {
		t.Fatalf("%d predicted rows, %d live", len(got.Requests), len(want.Requests))
	}
	byIndex := map[int]benchkit.Request{}
	for _, r := range want.Requests {
		byIndex[r.Index] = r
	}
	diffs := map[string][]time.Duration{}
	for _, p := range got.Requests {
		l, ok := byIndex[p.Index]
		switch {
		case !ok:
			t.Fatalf("predicted request %d has no live row", p.Index)
		case !p.Predicted || l.Predicted:
			t.Fatalf("request %d: Predicted %v, live %v", p.Index, p.Predicted, l.Predicted)
		case p.Error != "" || p.TTFTS == nil || p.E2ES == nil || l.TTFTS == nil || l.E2ES == nil || p.ServerPromptTokens == nil || l.ServerPromptTokens == nil:
			t.Fatalf("request %d: predicted %+v, live %+v: want TTFT, E2E and usage in both", p.Index, p, l)
		case p.Tokens() != l.Tokens() || *p.ServerPromptTokens != *l.ServerPromptTokens:
			t.Errorf("request %d: predicted %d prompt and %d completion tokens, live %d and %d",
				p.Index, *p.ServerPromptTokens, p.Tokens(), *l.ServerPromptTokens, l.Tokens())
		}
		if os.Getenv("PREDICT_DEBUG") != "" {
			t.Logf("request %d at %.1f ms: predicted TTFT %.2f E2E %.2f; live TTFT %.2f E2E %.2f, sent at %.2f", p.Index, p.IntendedSendS*1e3,
				*p.TTFTS*1e3, *p.E2ES*1e3, *l.TTFTS*1e3, *l.E2ES*1e3, l.SendOffsetS*1e3)
		}
		diffs["TTFT"] = append(diffs["TTFT"], time.Duration(math.Abs(*p.TTFTS-*l.TTFTS)*1e9))
		diffs["E2E"] = append(diffs["E2E"], time.Duration(math.Abs(*p.E2ES-*l.E2ES)*1e9))
	}
	typical, mostly := 2*step+slack, 4*step+2*slack
	check := t.Errorf
	if raceEnabled {
		check = t.Logf
	}
	for name, ds := range diffs {
		slices.Sort(ds)
		med, q3 := ds[len(ds)/2], ds[len(ds)*3/4]
		if med > typical || q3 > mostly {
			check("%s: predicted and live differ by %v at the median and %v at the third quartile (want at most %v and %v)", name, med, q3, typical, mostly)
		}
		t.Logf("%s: |predicted − live| median %v, third quartile %v, largest %v", name, med, q3, ds[len(ds)-1])
	}
	// ITL's quantiles are the gaps' one by one, which the live path's
	// late reads spread (a chunk read late, the next one early): only
	// their mean, which the spread leaves, is compared.
	type pair struct{ p, l *float64 }
	for name, pl := range map[string]pair{
		"TTFT p50": {got.Summary.TTFT.P50, want.Summary.TTFT.P50}, "TTFT p90": {got.Summary.TTFT.P90, want.Summary.TTFT.P90},
		"TTFT mean": {got.Summary.TTFT.Mean, want.Summary.TTFT.Mean},
		"E2E p50":   {got.Summary.E2E.P50, want.Summary.E2E.P50}, "E2E p90": {got.Summary.E2E.P90, want.Summary.E2E.P90},
		"E2E mean": {got.Summary.E2E.Mean, want.Summary.E2E.Mean},
		"TPOT p50": {got.Summary.TPOT.P50, want.Summary.TPOT.P50}, "TPOT p90": {got.Summary.TPOT.P90, want.Summary.TPOT.P90},
		"ITL mean": {got.Summary.ITL.Mean, want.Summary.ITL.Mean},
	} {
		if pl.p == nil || pl.l == nil {
			t.Fatalf("%s: predicted %v, live %v: want both", name, pl.p, pl.l)
		}
		if d := math.Abs(*pl.p - *pl.l); d > max(0.1**pl.l, typical.Seconds()) {
			check("%s: predicted %.3f ms, live %.3f ms", name, *pl.p*1e3, *pl.l*1e3)
		}
	}
	t.Logf("live TTFT p50 %.2f ms (predicted %.2f), E2E p50 %.2f ms (predicted %.2f)", *want.Summary.TTFT.P50*1e3, *got.Summary.TTFT.P50*1e3,
		*want.Summary.E2E.P50*1e3, *got.Summary.E2E.P50*1e3)
}

// TestPredictAgreesWithLiveLoad: a Poisson schedule of 80 requests at
// a rate that queues (more than the 8 the engine runs at once), fixed
// lengths and then mixed ones, sent live through a Load to the embedded
// engine and predicted with the same plan: each request's TTFT and E2E
// agree within tolerance, and the summary's quantiles agree.
func TestPredictAgreesWithLiveLoad(t *testing.T) {
	opts := slowSteps()
	traffic := benchkit.Traffic{Rate: 60, NumRequests: 80, Seed: 3}
	for name, w := range map[string]benchkit.Lengths{
		"fixed": {Input: 200, Output: 24},
		"mixed": {Input: 400, Output: 24, RangeRatio: 0.8, Seed: 5},
	} {
		t.Run(name, func(t *testing.T) {
			want, l := live(t, opts, w, traffic)
			start := time.Now()
			got, err := (&Predictor{Load: l, Options: opts}).Run(context.Background(), w, traffic, timing.SLO{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("predicted %d requests in %v; peak in flight predicted %d, live %d", len(got.Requests), time.Since(start),
				got.Summary.PeakInFlight, want.Summary.PeakInFlight)
			if got.Summary.PeakInFlight <= sim.DefaultMaxRunning {
				t.Errorf("peak in flight %d: the schedule should queue beyond the %d running", got.Summary.PeakInFlight, sim.DefaultMaxRunning)
			}
			agree(t, got, want, opts.Preset.DecodeStep([]int{1024}))
		})
	}
}

// TestPredictAgreesOnRepliedLoops: loops whose sending waits on replies,
// sent live and predicted: a closed loop of 4 users thinking 5 ms, and an
// open loop at 60/s capped at 4 in flight, more than the engine serves at
// that cap (so requests wait for slots and their lag grows). Besides
// agree's checks, each request's lag agrees within two steps and 2 ms at
// the median, and so does its send instant, plus, in the closed loop, 2 ms
// a turn: each live turn starts after the client's own time on the
// previous one (reading the reply's end, writing the next request), which
// the prediction does not have, so a user's live sends drift later turn
// by turn.
func TestPredictAgreesOnRepliedLoops(t *testing.T) {
	opts := slowSteps()
	step := opts.Preset.DecodeStep([]int{1024})
	w := benchkit.Lengths{Input: 200, Output: 24}
	for name, traffic := range map[string]benchkit.Traffic{
		"closed": {Users: 4, Think: 5 * time.Millisecond, NumRequests: 40},
		"capped": {Rate: 60, NumRequests: 60, Seed: 3, MaxConcurrency: 4},
	} {
		t.Run(name, func(t *testing.T) {
			want, l := live(t, opts, w, traffic)
			start := time.Now()
			got, err := (&Predictor{Load: l, Options: opts}).Run(context.Background(), w, traffic, timing.SLO{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("predicted %d requests in %v; peak in flight predicted %d, live %d", len(got.Requests), time.Since(start),
				got.Summary.PeakInFlight, want.Summary.PeakInFlight)
			if got.Summary.PeakInFlight != 4 {
				t.Errorf("peak in flight %d predicted, want the 4 the loop allows", got.Summary.PeakInFlight)
			}
			agree(t, got, want, step)
			live := map[int]benchkit.Request{}
			for _, r := range want.Requests {
				live[r.Index] = r
			}
			var sent, lag []time.Duration
			var maxLag float64
			for _, p := range got.Requests {
				l := live[p.Index]
				sent = append(sent, time.Duration(math.Abs(p.SendOffsetS-l.SendOffsetS)*1e9))
				lag = append(lag, time.Duration(math.Abs((p.SendOffsetS-p.IntendedSendS)-(l.SendOffsetS-l.IntendedSendS))*1e9))
				maxLag = max(maxLag, p.SendOffsetS-p.IntendedSendS)
			}
			slices.Sort(sent)
			slices.Sort(lag)
			check := t.Errorf
			if raceEnabled {
				check = t.Logf
			}
			within := 2*step + slack
			if traffic.Users > 0 {
				within += time.Duration(traffic.NumRequests/traffic.Users) * slack
			}
			if med := sent[len(sent)/2]; med > within {
				check("send instants differ by %v at the median, want at most %v", med, within)
			}
			if med := lag[len(lag)/2]; med > 2*step+slack {
				check("lags differ by %v at the median, want at most %v", med, 2*step+slack)
			}
			if name == "capped" && maxLag < 0.1 {
				t.Errorf("largest predicted lag %.3f s: the cap should hold requests back", maxLag)
			}
			t.Logf("|Δ send| median %v, |Δ lag| median %v, largest predicted lag %.1f ms; wall: live %.2f s", sent[len(sent)/2], lag[len(lag)/2],
				maxLag*1e3, want.Summary.DurationS)
		})
	}
}

// TestPredictAgreesOnMooncakeReplay replays the repository's synthetic
// Mooncake-format trace (shared 512-token blocks, long prompts) as token
// ids, its rows 40 ms apart and their outputs capped at 48 tokens, live and
// predicted: the prefix cache's hits and every request's TTFT and E2E
// agree.
func TestPredictAgreesOnMooncakeReplay(t *testing.T) {
	f, err := os.Open("../../workload/testdata/synthetic_mooncake.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, _, err := workload.ReadAll(f, "synthetic_mooncake.jsonl", &workload.Options{MaxOutput: 48})
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		rows[i].At = time.Duration(i) * 40 * time.Millisecond
	}
	blocks, err := promptsize.NewTokenBlocks(sim.Counter{}, promptsize.BlockOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	w := benchkit.Trace{Name: "synthetic_mooncake.jsonl", Rows: rows, BlockSize: 512, Blocks: blocks, Completions: true}
	opts := slowSteps()
	want, l := live(t, opts, w, benchkit.Traffic{Replay: true})
	got, err := (&Predictor{Load: l, Options: opts}).Run(context.Background(), w, benchkit.Traffic{Replay: true}, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	cached := func(run benchkit.LoadRun) (n int) {
		for _, r := range run.Requests {
			if r.CachedTokens != nil {
				n += *r.CachedTokens
			}
		}
		return n
	}
	if c, lc := cached(got), cached(want); c != lc || c == 0 {
		t.Errorf("predicted %d cached prompt tokens, live %d: want the same, and some", c, lc)
	}
	agree(t, got, want, opts.Preset.DecodeStep([]int{1024}))
}

// TestPredictRefuses: plans this package does not model are refused.
func TestPredictRefuses(t *testing.T) {
	l := &benchkit.Load{Model: "sim/tiny-1b-8bit", Builder: &promptsize.Builder{Counter: sim.Counter{}}}
	w := benchkit.Lengths{Input: 50, Output: 4}
	if _, err := (&Predictor{Load: &benchkit.Load{Model: "m", Builder: l.Builder, Segment: benchkit.Segment{Index: 0, Count: 2}}, Options: sim.Options{Preset: sim.Fast()}}).Run(context.Background(), w, benchkit.Traffic{Rate: 10, NumRequests: 4}, timing.SLO{}); !errors.Is(err, ErrUnpredictable) {
		t.Errorf("a split segment: error %v, want ErrUnpredictable", err)
	}
	for name, plan := range map[string]benchkit.Plan{
		"targets":               {PP: []int{50}, TG: []int{4}, Until: []precision.Target{{Figure: "gen_tps", Stat: "mean", Margin: 0.05}}, MaxRepeat: 4},
		"thinking":              {PP: []int{50}, TG: []int{4}, Thinking: []engine.Thinking{{Effort: "low"}}},
		"unsalted prefix cache": {PP: []int{50}, TG: []int{4}, UsePrefixCache: true},
	} {
		if _, err := (&Predictor{Load: l, Options: sim.Options{Preset: sim.Fast()}, API: sim.PredictExoBench}).Cells(context.Background(), plan, "", benchkit.Placement{}); !errors.Is(err, ErrUnpredictable) {
			t.Errorf("cells, %s: error %v, want ErrUnpredictable", name, err)
		}
	}
}

// mooncake1k is a synthetic Mooncake-format trace of 1,000 rows (integer
// ms, 512-token blocks), paced and sized like the public arxiv trace
// (about 6.5 requests a second; inputs lognormal around 7,600 tokens,
// outputs around 180): half the requests extend an earlier one's prefix
// by its first blocks, as the trace's conversations do.
func mooncake1k(b *testing.B) []byte {
	src := rand.New(rand.NewPCG(1000, 512))
	var buf bytes.Buffer
	var earlier [][]int64
	next := int64(0)
	ms := 0.0
	for range 1000 {
		ms += src.ExpFloat64() / 6.5 * 1e3
		in := min(max(int(math.Exp(8.7+0.7*src.NormFloat64())), 64), 30000)
		out := min(max(int(math.Exp(5.0+0.6*src.NormFloat64())), 1), 1024)
		n := (in + 511) / 512
		var ids []int64
		if len(earlier) > 0 && src.IntN(2) == 0 {
			p := earlier[src.IntN(len(earlier))]
			ids = append(ids, p[:min(len(p), 1+src.IntN(n))]...)
		}
		for len(ids) < n {
			ids = append(ids, next)
			next++
		}
		earlier = append(earlier, ids)
		fmt.Fprintf(&buf, `{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [`, int(ms), in, out)
		for k, id := range ids {
			if k > 0 {
				buf.WriteString(", ")
			}
			fmt.Fprint(&buf, id)
		}
		buf.WriteString("]}\n")
	}
	return buf.Bytes()
}

// BenchmarkPredictMooncake1000 predicts a 1,000-row Mooncake-format
// replay on the fast preset through Predictor.Run: the prompts built as
// token ids by the Load's Builder, the scheduler on its virtual clock,
// the rows built and summarised. It reports the wall time of the whole
// prediction and of building the prompts alone (the rest is the
// scheduler's and the rows'), the simulated span it covers and the
// predicted E2E p50.
func BenchmarkPredictMooncake1000(b *testing.B) {
	rows, _, err := workload.ReadAll(bytes.NewReader(mooncake1k(b)), "mooncake1k.jsonl", nil)
	if err != nil {
		b.Fatal(err)
	}
	blocks, err := promptsize.NewTokenBlocks(sim.Counter{}, promptsize.BlockOptions{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	w := benchkit.Trace{Name: "mooncake1k.jsonl", Rows: rows, BlockSize: 512, Blocks: blocks, Completions: true}
	ctx := context.Background()
	// What building the prompts alone takes, to tell it from the
	// scheduler's time.
	start := time.Now()
	own := make([]int, len(rows))
	for i := range own {
		own[i] = i
	}
	if _, err := w.Requests(ctx, &promptsize.Builder{Counter: sim.Counter{}}, len(rows), own, func(i int) string { return promptsize.RunSalt("bench", 0, i) }); err != nil {
		b.Fatal(err)
	}
	build := time.Since(start)
	var run benchkit.LoadRun
	var wall time.Duration
	for b.Loop() {
		l := &benchkit.Load{Model: sim.Fast().Model.ID, Builder: &promptsize.Builder{Counter: sim.Counter{}}, Nonce: "bench"}
		start := time.Now()
		run, err = (&Predictor{Load: l, Options: sim.Options{Preset: sim.Fast()}}).Run(ctx, w, benchkit.Traffic{Replay: true}, timing.SLO{})
		wall = time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
	}
	if len(run.Requests) != 1000 || run.Summary.Failed > 0 {
		b.Fatalf("%d rows, %d failed", len(run.Requests), run.Summary.Failed)
	}
	span := 0.0
	for _, r := range run.Requests {
		span = max(span, r.DoneS)
	}
	b.ReportMetric(wall.Seconds()*1e3, "wall-ms")
	b.ReportMetric(build.Seconds()*1e3, "build-ms")
	b.ReportMetric(span, "simulated-s")
	b.ReportMetric(*run.Summary.E2E.P50, "e2e-p50-s")
}
