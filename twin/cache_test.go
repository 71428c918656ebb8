package twin_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/predict"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
	"github.com/inferbench/inferbench/twin"
)

// slowCache is a server whose prefill reads its cached KV at a
// thirtieth of the bandwidth its decode does (as an engine whose prefill
// gathers the paged cache into place, layer by layer, where its decode
// kernel reads it in place): its
// coefficients are the roofline's of the fast preset at 80 % of its
// bandwidth and 10 % of its compute, derived from its Hardware and
// Model, with prefill_per_cached_token thirty times decode's. A short
// prompt's prefill on a cached prefix is then bound by memory, a long
// one's by compute.
func slowCache() (sim.Preset, sim.Coefficients) {
	p := sim.Fast()
	p.Name = "hidden-cache"
	p.Hardware.MemoryEfficiency = 0.8
	p.Hardware.ComputeEfficiency = 0.1
	p.Hardware.StepOverhead = 150 * time.Microsecond
	c := implied(p)
	c.PrefillPerCachedToken *= 30
	p.Fitted = &c
	return p, c
}

// cachedOf is the server's count of r's cached prompt tokens.
func cachedOf(r benchkit.Request) int {
	switch {
	case r.CachedTokens != nil:
		return *r.CachedTokens
	case r.Stats != nil && r.Stats.CachedTokens != nil:
		return *r.Stats.CachedTokens
	}
	return 0
}

// metricMAPE is f's MAPE on metric, in percent.
func metricMAPE(t testing.TB, f twin.Fidelity, metric string) float64 {
	t.Helper()
	for _, m := range f.Metrics {
		if m.Metric == metric {
			return m.MAPE
		}
	}
	t.Fatalf("fidelity has no %s", metric)
	return 0
}

// With prefix caching on, the probe's requests on cached prefixes let
// the fit recover the prefill's cached-prefix terms of a server whose
// prefill reads cached KV otherwise than its decode does; without them
// the fit says it had none. How much better the twin then predicts
// held-out loads on a shared prefix is TestCachedTermsHeldOut's, on the
// virtual clock (BenchmarkCachedTermsHeldOut's on live servers, whose
// TTFTs of a few ms the race detector and other tests on the same cores
// blur).
func TestFitRecoversPrefixCacheTerms(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, want := slowCache()
	srv := sim.NewServer(sim.Options{Preset: p, PrefixCache: sim.PrefixCacheRadix})
	defer srv.Close()
	b := &promptsize.Builder{Counter: srv.Counter()}
	opts := probeOpts
	opts.Prefixes, opts.Suffixes = []int{512, 2048}, []int{0, 16, 128, 512}
	rows, err := twin.Probe(ctx, exoClient(t, srv), srv.Model(), b, opts)
	if err != nil {
		t.Fatal(err)
	}
	cached := 0
	var plain []benchkit.Request
	for _, r := range rows {
		c := cachedOf(r)
		cached = max(cached, c)
		if c < 64 {
			plain = append(plain, r)
		}
	}
	if cached < 2048 {
		t.Fatalf("the largest cached prefix the server reported is %d tokens, want at least 2048", cached)
	}
	tw, err := twin.Fit(rows, twin.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := tw.Coefficients
	for _, n := range tw.Notes {
		t.Log("note:", n)
	}
	t.Logf("fitted %+v", got)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"prefill_per_cached_token", got.PrefillPerCachedToken, want.PrefillPerCachedToken},
		{"prefill_per_pair", got.PrefillPerPair, want.PrefillPerPair},
		{"prefill_base", got.PrefillBase, want.PrefillBase},
		{"prefill_per_token", got.PrefillPerToken, want.PrefillPerToken},
		{"decode_per_context_token", got.DecodePerContextToken, want.DecodePerContextToken},
	} {
		e := (c.got - c.want) / c.want
		t.Logf("%-26s fitted %.6g s, implied %.6g s, error %+.3f %%", c.name, c.got, c.want, 100*e)
		if math.Abs(e) > 0.02 && (c.name == "prefill_per_cached_token" || c.name == "prefill_per_pair") {
			t.Errorf("%s: fitted %g, the server's %g: %+.2f %%, beyond 2 %%", c.name, c.got, c.want, 100*e)
		}
	}

	// The same probe without its cached requests: the fit as it is
	// without them, which says so.
	pw, err := twin.Fit(plain, twin.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("without cached records %+v notes %q", pw.Coefficients, pw.Notes)
	if !hasNote(pw.Notes, "no record carries a cached prefix") {
		t.Errorf("the fit without cached prefixes does not say so: %q", pw.Notes)
	}
	if hasNote(tw.Notes, "no record carries a cached prefix") {
		t.Errorf("the fit with cached prefixes says it had none: %q", tw.Notes)
	}
}

// BenchmarkCachedTermsHeldOut fits the probe of TestFitRecoversPrefixCacheTerms
// with and without its cached requests and reports each twin's TTFT MAPE
// (percent, p50 and mean) on held-out loads on a shared prefix, measured
// on live servers:
//
//	go test -run '^$' -bench CachedTermsHeldOut -benchtime 1x ./twin/
func BenchmarkCachedTermsHeldOut(b *testing.B) {
	for range b.N {
		cachedHeldOut(b)
	}
}

// cachedTwins probes a live slowCache server with prefix caching and
// fits three twins: fitted (from every probe row), fallback (the same
// with prefill per cached token at decode's value, the fit's fallback:
// what the cached records alone change) and no-cached-records (fitted
// without the probe's cached rows). It returns the server's preset too.
func cachedTwins(t testing.TB) (sim.Preset, []namedTwin) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, _ := slowCache()
	srv := sim.NewServer(sim.Options{Preset: p, PrefixCache: sim.PrefixCacheRadix})
	defer srv.Close()
	opts := probeOpts
	opts.Prefixes, opts.Suffixes = []int{512, 2048}, []int{0, 16, 128, 512}
	rows, err := twin.Probe(ctx, exoClient(t, srv), srv.Model(), &promptsize.Builder{Counter: srv.Counter()}, opts)
	if err != nil {
		t.Fatal(err)
	}
	var plain []benchkit.Request
	for _, r := range rows {
		if cachedOf(r) < 64 {
			plain = append(plain, r)
		}
	}
	tw, err := twin.Fit(rows, twin.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pw, err := twin.Fit(plain, twin.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fw := tw
	fw.Coefficients.PrefillPerCachedToken = fw.Coefficients.DecodePerContextToken
	return p, []namedTwin{{"fitted", tw}, {"fallback", fw}, {"no-cached-records", pw}}
}

// namedTwin is a twin and its name in the reports.
type namedTwin struct {
	name string
	tw   twin.Twin
}

// cachedHeld are the held-out loads of the cached-terms comparison:
// prompts that share a long prefix and add a short suffix
// (memory-bound prefills, where the cached KV's cost shows), after one
// request that caches the prefix (the shorter one's text opens the
// longer).
func cachedHeld() twin.HeldOut {
	long := benchkit.Lengths{Input: 6030, Output: 4, RangeRatio: 0.001, Seed: 5}
	return twin.HeldOut{
		Loads: []twin.LoadRun{
			{Workload: long, Traffic: benchkit.Traffic{Rate: 25, NumRequests: 1, Seed: 1}, SharedPrefix: 6000},
			{Workload: long, Traffic: benchkit.Traffic{Rate: 25, NumRequests: 12, Seed: 5}, SharedPrefix: 6000},
			{Workload: benchkit.Lengths{Input: 4030, Output: 4, RangeRatio: 0.002, Seed: 3}, Traffic: benchkit.Traffic{Rate: 25, NumRequests: 12, Seed: 3}, SharedPrefix: 4000},
		},
		Simulated: true,
	}
}

// cachedMAPE compares each twin's rows with measured and returns its
// TTFT MAPE (percent), p50 and mean, by twin name.
func cachedMAPE(t testing.TB, twins []namedTwin, predict func(twin.Twin) []benchkit.Request, measured []benchkit.Request) (p50, mean map[string]float64) {
	t.Helper()
	p50, mean = map[string]float64{}, map[string]float64{}
	for _, c := range twins {
		f := twin.Compare(predict(c.tw), measured)
		var sb strings.Builder
		if err := f.WriteTable(&sb); err != nil {
			t.Fatal(err)
		}
		p50[c.name], mean[c.name] = metricMAPE(t, f, "ttft_p50"), metricMAPE(t, f, "ttft_mean")
		t.Logf("%s twin on shared-prefix loads (TTFT MAPE: p50 %.2f %%, mean %.2f %%):\n%s", c.name, p50[c.name], mean[c.name], sb.String())
	}
	return p50, mean
}

func cachedHeldOut(t *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, twins := cachedTwins(t)
	held := cachedHeld()
	hsrv := sim.NewServer(sim.Options{Preset: p, PrefixCache: sim.PrefixCacheRadix})
	defer hsrv.Close()
	measured, err := twin.Measure(ctx, exoClient(t, hsrv), hsrv.Model(), &promptsize.Builder{Counter: hsrv.Counter()}, held)
	if err != nil {
		t.Fatal(err)
	}
	p50, mean := cachedMAPE(t, twins, func(tw twin.Twin) []benchkit.Request {
		ts := sim.NewServer(tw.Options())
		defer ts.Close()
		rows, err := twin.Measure(ctx, exoClient(t, ts), ts.Model(), &promptsize.Builder{Counter: ts.Counter()}, held)
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}, measured)
	for _, c := range twins {
		t.ReportMetric(p50[c.name], "ttft-p50-mape-%-"+c.name)
		t.ReportMetric(mean[c.name], "ttft-mean-mape-%-"+c.name)
	}
}

// predictHeld predicts h's loads on the engine opts describes, each
// with a Predictor on exo's bench API (as Measure sends them, with
// use_prefix_cache on a shared prefix), on an engine that starts cold,
// numbering the rows' runs as Measure does.
func predictHeld(t testing.TB, opts sim.Options, h twin.HeldOut) []benchkit.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A server only for its model name and its tokenizer's counter.
	srv := sim.NewServer(opts)
	defer srv.Close()
	var out []benchkit.Request
	for k, l := range h.Loads {
		ld := &benchkit.Load{Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}, Simulated: true, SharedPrefix: l.SharedPrefix}
		ld.Request.UsePrefixCache = l.SharedPrefix > 0
		run, err := (&predict.Predictor{Load: ld, Options: opts, API: sim.PredictExoBench}).Run(ctx, l.Workload, l.Traffic, timing.SLO{})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range run.Requests {
			q.Run = k
			out = append(out, q)
		}
	}
	return out
}

// TestCachedTermsHeldOut is BenchmarkCachedTermsHeldOut on the virtual
// clock: the held-out loads' "measured" rows are the hidden server's own
// scheduler predicting them (sim.Predict, exact for that engine), and
// each twin's are its Options' prediction, so no live server's jitter
// decides the comparison. The fitted twin's cached-prefix terms predict
// the loads' TTFT p50 better than the fallback's (prefill per cached
// token at decode's value, a thirtieth of the hidden server's).
func TestCachedTermsHeldOut(t *testing.T) {
	p, twins := cachedTwins(t)
	held := cachedHeld()
	measured := predictHeld(t, sim.Options{Preset: p, PrefixCache: sim.PrefixCacheRadix}, held)
	// A twin's Options add the client's overhead the probe measured
	// (ClientOverheadS, the live path's time) to every request: the
	// virtual clock's truth has no live path, so it is left out here, as
	// a twin measured live on a live server of its own counts that path
	// twice (once fitted, once its own).
	for _, c := range twins {
		t.Logf("%s twin: client overhead %.3f ms, left out", c.name, 1e3*c.tw.ClientOverheadS)
	}
	p50, mean := cachedMAPE(t, twins, func(tw twin.Twin) []benchkit.Request {
		o := tw.Options()
		o.RequestOverhead = 0
		return predictHeld(t, o, held)
	}, measured)
	t.Logf("TTFT p50 MAPE %% %v, mean %v", p50, mean)
	if p50["fitted"] >= p50["fallback"] {
		t.Errorf("the fitted twin's TTFT p50 MAPE %.2f %% is not below the fallback's %.2f %%", p50["fitted"], p50["fallback"])
	}
}

func hasNote(notes []string, s string) bool {
	for _, n := range notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// quiet is a server that caches prefixes but reports no cached tokens.
type quiet struct{ e engine.Engine }

func (q quiet) Complete(ctx context.Context, req engine.Request) (engine.Result, error) {
	res, err := q.e.Complete(ctx, req)
	if res.Usage != nil {
		res.Usage.CachedTokens = nil
	}
	if res.ServerStats != nil {
		res.ServerStats.CachedTokens = nil
	}
	return res, err
}

// The probe leaves out its cached requests where the server never says
// it served cached tokens (their offsets unknown, their prefill would
// read as the whole prompt's), and the fit says the records carry none;
// from a server that says so they are kept.
func TestProbeDropsUnreportedCache(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer srv.Close()
	b := &promptsize.Builder{Counter: srv.Counter()}
	opts := twin.ProbeOptions{Lengths: []int{32, 96}, Concurrency: []int{2}, TG: 4, Repeat: 1, Prefixes: []int{300}, Suffixes: []int{0, 40}, Simulated: true}
	longest := func(rows []benchkit.Request) int {
		n := 0
		for _, r := range rows {
			n = max(n, r.PPTarget)
		}
		return n
	}
	rows, err := twin.Probe(ctx, exoClient(t, srv), srv.Model(), b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if n := longest(rows); n < 300 {
		t.Errorf("the server that reports cached tokens: longest prompt %d, want the cached plan's (over 300)", n)
	}
	rows, err = twin.Probe(ctx, quiet{exoClient(t, srv)}, srv.Model(), b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if n := longest(rows); n > 96 {
		t.Errorf("the server that reports none: a row of %d tokens kept, want only the plain plans' (at most 96)", n)
	}
	tw, err := twin.Fit(rows, twin.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasNote(tw.Notes, "no record carries a cached prefix") {
		t.Errorf("notes %q do not say that no record carries a cached prefix", tw.Notes)
	}
}

// A cached plan with no prefix, or a negative suffix, is refused before
// anything is sent.
func TestCachedPlanRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer srv.Close()
	b := &promptsize.Builder{Counter: srv.Counter()}
	for _, c := range []twin.CachedPlan{
		{Prefix: 0, Plan: benchkit.Plan{PP: []int{0}, TG: []int{4}}},
		{Prefix: 64, Plan: benchkit.Plan{PP: []int{-1}, TG: []int{4}}},
	} {
		rows, err := twin.Measure(ctx, exoClient(t, srv), srv.Model(), b, twin.HeldOut{Cached: []twin.CachedPlan{c}})
		if err == nil || len(rows) != 0 {
			t.Errorf("prefix %d pp %v: %d rows, error %v; want an error and nothing sent", c.Prefix, c.Plan.PP, len(rows), err)
		}
	}
}
