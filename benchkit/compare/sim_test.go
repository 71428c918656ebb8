package compare_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/compare"
	"github.com/inferbench/inferbench/benchkit/predict"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// The runs of the embedded engine the tests compare: an open loop far
// below the preset's capacity and light enough for the race detector's
// client (25 requests per second), 100 requests each in the program's
// default 10 batches to tell a 10 % change (worseLoad), 50 in 5 batches
// where only false alarms are counted (sameLoad, sameOptions: a test's
// false-alarm rate does not depend on its number of units). The
// benchmark's runs are the program's defaults: 100 requests at 50 per
// second, 10 batches.
const (
	simInput  = 64
	simOutput = 16
)

var sameOptions = compare.Options{Batches: 5}

// A load is one side's run: its rate and size.
type simLoad struct {
	rate     float64
	requests int
}

var (
	worseLoad = simLoad{rate: 25, requests: 100}
	sameLoad  = simLoad{rate: 25, requests: 50}
	benchLoad = simLoad{rate: 50, requests: 100}
)

// slowDecode is the fast preset with its decode steps made about 10 %
// longer: its memory efficiency lowered so that the bandwidth term of
// every step grows by the step's 10 % (the step overhead included), and
// a name of its own, as a changed preset would have.
func slowDecode() sim.Preset {
	p := simPreset()
	p.Name = "slow-decode"
	p.Hardware.MemoryEfficiency = 1 / 1.10125
	return p
}

// simPreset is the fast preset with a memory bandwidth of 500 GB/s: a
// decode step of about 2 ms, long beside what the client and the
// server spend on each token (under the race detector too), so that the
// TPOT measured is the preset's.
func simPreset() sim.Preset {
	p := sim.Fast()
	p.Name = "fast-250gbs"
	p.Hardware.MemoryBandwidth = 250e9
	return p
}

// simRun measures one open-loop run of the embedded engine under preset
// p with the given seed and writes it as serve-load's results document,
// returning its path.
func simRun(t testing.TB, dir string, p sim.Preset, ld simLoad, seed uint64, name string) string {
	t.Helper()
	srv := sim.NewServer(sim.Options{Preset: p})
	defer srv.Close()
	c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	l := &benchkit.Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}}
	lengths := benchkit.Lengths{Input: simInput, Output: simOutput, Seed: seed}
	traffic := benchkit.Traffic{Rate: ld.rate, NumRequests: ld.requests, Seed: seed}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A benchmark measures the engine live. A test predicts the same run
	// on the engine's own scheduler and virtual clock (benchkit/predict):
	// under the race detector, with other packages' tests on the same
	// cores, the live client's own delays (several ms a token) would
	// bury a 10 % change in the server, and what is tested here is the
	// comparison, not the machine.
	var res benchkit.LoadRun
	if _, live := t.(*testing.B); live {
		res, err = l.Run(ctx, lengths, traffic, timing.SLO{})
	} else {
		res, err = (&predict.Predictor{Load: l, Options: sim.Options{Preset: p}}).Run(ctx, lengths, traffic, timing.SLO{})
	}
	if err != nil {
		t.Error(err)
		return ""
	}
	meta := benchkit.LoadMeta{
		RunInfo:  benchkit.RunInfo{Tool: "inferbench", Engine: "openai", Simulated: true, Preset: p.Name, Model: srv.Model()},
		Workload: lengths, Traffic: traffic, Rates: []string{strconv.FormatFloat(ld.rate, 'g', -1, 64)}, Stream: true,
	}
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := benchkit.WriteJSON(f, benchkit.NewLoadDocument(meta, []benchkit.LoadRun{res}, nil)); err != nil {
		t.Fatal(err)
	}
	return path
}

func load(t testing.TB, path string, o compare.Options) *compare.Side {
	t.Helper()
	s, err := compare.Load(path, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// pair measures A under preset a and B under preset b at the same time,
// each on its own embedded engine, so that whatever else the machine
// does slows both alike, and returns their files.
func pair(t testing.TB, dir string, a, b sim.Preset, ld simLoad, seed uint64) (string, string) {
	t.Helper()
	var pa, pb string
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pa = simRun(t, dir, a, ld, seed, "a.json") }()
	go func() { defer wg.Done(); pb = simRun(t, dir, b, ld, seed+1, "b.json") }()
	wg.Wait() // bounded: each run's context ends within 60 s
	if t.Failed() {
		t.FailNow()
	}
	return pa, pb
}

func rowOf(t testing.TB, res *compare.Result, figure string) compare.Row {
	t.Helper()
	for _, r := range res.Rows {
		if r.Figure.Name == figure {
			return r
		}
	}
	t.Fatalf("no row %s", figure)
	return compare.Row{}
}

// TestTPOTTenPercentWorse: B's preset makes every decode step 10 %
// longer. Compared with A, TPOT is "worse" with an interval above zero
// around +10 %, the presets' names are a difference refused until
// allowed, and a 5 % gate on TPOT trips. Other work on the machine (the
// race detector, other packages' tests) can leave a pair's batches too
// noisy to tell a 10 % change: "no change detected" is then the right
// answer, so a pair that gives it is measured again, up to three pairs;
// an implementation that never says "worse" fails all three.
func TestTPOTTenPercentWorse(t *testing.T) {
	fast, slow := simPreset(), slowDecode()
	ctxs := []int{simInput + 8, simInput + 8}
	if r := float64(slow.DecodeStep(ctxs)) / float64(fast.DecodeStep(ctxs)); r < 1.095 || r > 1.105 {
		t.Fatalf("the presets' decode steps differ by %.3f, want 1.10", r)
	}
	var res *compare.Result
	var tp compare.Row
	for attempt := range 3 {
		pa, pb := pair(t, t.TempDir(), fast, slow, worseLoad, uint64(1+2*attempt))
		a, b := load(t, pa, compare.Options{}), load(t, pb, compare.Options{})
		_, err := compare.Compare(a, b, compare.Config{})
		if err == nil || !strings.Contains(err.Error(), "preset:") {
			t.Fatalf("two presets compared without --allow: %v, want the preset named", err)
		}
		res, err = compare.Compare(a, b, compare.Config{Allow: []string{"preset"}, Threshold: 0.05, GateFigures: []string{"tpot_mean"}})
		if err != nil {
			t.Fatal(err)
		}
		tp = rowOf(t, res, "tpot_mean")
		t.Logf("pair %d: tpot_mean %.3g → %.3g ms: %+.1f %% [%+.1f, %+.1f], p %.2g of %d tests, %s", attempt, 1e3*tp.MeanA, 1e3*tp.MeanB,
			100*tp.Rel, 100*tp.RelLo, 100*tp.RelHi, tp.P, res.Tests, tp.Verdict)
		if tp.Verdict != compare.NoChange {
			break
		}
	}
	if tp.Verdict != compare.Worse || !(tp.RelLo > 0) || tp.Rel < 0.05 || tp.Rel > 0.2 {
		t.Errorf("tpot_mean: %s %+.3f [%+.3f, %+.3f]; want worse, about +0.10, its interval above 0", tp.Verdict, tp.Rel, tp.RelLo, tp.RelHi)
	}
	if !tp.Regression || len(res.Regressions()) != 1 {
		t.Errorf("gate of 5 %% on tpot_mean: regressions %d, want tpot_mean alone", len(res.Regressions()))
	}
}

// TestSameNoChange: two runs of the same preset, in five seeded trials,
// find no change in any figure in at least four (the 20-trial figure is
// BenchmarkSameNoChange's).
func TestSameNoChange(t *testing.T) {
	dir := t.TempDir()
	alarms := 0
	for i := range 5 {
		pa, pb := pair(t, dir, simPreset(), simPreset(), sameLoad, uint64(10+2*i))
		res, err := compare.Compare(load(t, pa, sameOptions), load(t, pb, sameOptions), compare.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Tests < 10 {
			t.Fatalf("%d figures tested, want the latencies and throughputs", res.Tests)
		}
		for _, r := range res.Rows {
			if r.Verdict != compare.NoChange {
				t.Logf("trial %d: %s %s %+.1f %% (p %.2g)", i, r.Figure.Name, r.Verdict, 100*r.Rel, r.P)
				alarms++
				break
			}
		}
	}
	if alarms > 1 {
		t.Errorf("%d of 5 trials found a change between two runs of the same preset, want at most 1", alarms)
	}
}

// BenchmarkSameNoChange runs twenty seeded trials of two runs of the
// same preset one after the other at the program's defaults (100
// requests at 50 per second each, 10 batches), and one trial of the
// 10 %-slower preset, and reports the trials that found any change
// (false_alarms, of 20, at the default α; false_alarms_at_5% at α =
// 5 %), the slower preset's TPOT change (tpot_change_%)
// and what one side cost (requests/side, s/side).
func BenchmarkSameNoChange(b *testing.B) {
	for range b.N {
		dir := b.TempDir()
		alarms, alarms5, seconds := 0, 0, 0.0
		for i := range 20 {
			start := time.Now()
			pa := simRun(b, dir, simPreset(), benchLoad, uint64(100+2*i), "a.json")
			seconds += time.Since(start).Seconds()
			pb := simRun(b, dir, simPreset(), benchLoad, uint64(101+2*i), "b.json")
			for _, alpha := range []float64{0, 0.05} {
				res, err := compare.Compare(load(b, pa, compare.Options{}), load(b, pb, compare.Options{}), compare.Config{Alpha: alpha})
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range res.Rows {
					if r.Verdict != compare.NoChange {
						b.Logf("trial %d, alpha %g: %s %s %+.1f %% (p %.2g)", i, res.Alpha, r.Figure.Name, r.Verdict, 100*r.Rel, r.P)
						if alpha == 0 {
							alarms++
						} else {
							alarms5++
						}
						break
					}
				}
			}
		}
		pa := simRun(b, dir, simPreset(), benchLoad, 1, "a.json")
		pb := simRun(b, dir, slowDecode(), benchLoad, 2, "b.json")
		res, err := compare.Compare(load(b, pa, compare.Options{}), load(b, pb, compare.Options{}), compare.Config{Allow: []string{"preset"}})
		if err != nil {
			b.Fatal(err)
		}
		tp := rowOf(b, res, "tpot_mean")
		if tp.Verdict != compare.Worse {
			b.Errorf("10 %% slower decode: tpot_mean %s", tp.Verdict)
		}
		b.ReportMetric(float64(alarms), "false_alarms")
		b.ReportMetric(float64(alarms5), "false_alarms_at_5%")
		b.ReportMetric(100*tp.Rel, "tpot_change_%")
		b.ReportMetric(float64(benchLoad.requests), "requests/side")
		b.ReportMetric(seconds/20, "s/side")
	}
}
