package twin_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/twin"
)

// slowCache is a server whose prefill reads its cached KV at a tenth of
// the bandwidth its decode does (as an engine whose prefill kernel
// reads the paged cache less efficiently than its decode kernel): its
// coefficients are the roofline's of the fast preset at 80 % of its
// bandwidth and 10 % of its compute, derived from its Hardware and
// Model, with prefill_per_cached_token ten times decode's. A short
// prompt's prefill on a cached prefix is then bound by memory, a long
// one's by compute.
func slowCache() (sim.Preset, sim.Coefficients) {
	p := sim.Fast()
	p.Name = "hidden-cache"
	p.Hardware.MemoryEfficiency = 0.8
	p.Hardware.ComputeEfficiency = 0.1
	p.Hardware.StepOverhead = 150 * time.Microsecond
	c := implied(p)
	c.PrefillPerCachedToken *= 10
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
func metricMAPE(t *testing.T, f twin.Fidelity, metric string) float64 {
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
// prefill reads cached KV otherwise than its decode does, and the twin
// predicts held-out loads on a shared prefix better than one fitted
// without them (the cached terms then taking decode's).
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
	// The fitted twin with its cached-prefix terms at their fallback:
	// what the cached records alone change.
	fw := tw
	fw.Coefficients.PrefillPerCachedToken = fw.Coefficients.DecodePerContextToken

	// Held out: loads whose prompts share a long prefix and add a short
	// suffix (memory-bound prefills, where the cached KV's cost shows);
	// the first request of each prefills the prefix cold, so the median
	// TTFT is the one that tells.
	held := twin.HeldOut{
		Loads: []twin.LoadRun{
			{Workload: benchkit.Lengths{Input: 6030, Output: 4, RangeRatio: 0.001, Seed: 3}, Traffic: benchkit.Traffic{Rate: 25, NumRequests: 12, Seed: 3}, SharedPrefix: 6000},
			{Workload: benchkit.Lengths{Input: 12030, Output: 4, RangeRatio: 0.0005, Seed: 5}, Traffic: benchkit.Traffic{Rate: 25, NumRequests: 12, Seed: 5}, SharedPrefix: 12000},
		},
		Simulated: true,
	}
	measured, err := twin.Measure(ctx, exoClient(t, srv), srv.Model(), b, held)
	if err != nil {
		t.Fatal(err)
	}
	p50, mean := map[string]float64{}, map[string]float64{}
	for _, c := range []struct {
		name string
		tw   twin.Twin
	}{{"fitted", tw}, {"fallback", fw}, {"no-cached-records", pw}} {
		ts := sim.NewServer(c.tw.Options())
		predicted, err := twin.Measure(ctx, exoClient(t, ts), ts.Model(), &promptsize.Builder{Counter: ts.Counter()}, held)
		ts.Close()
		if err != nil {
			t.Fatal(err)
		}
		f := twin.Compare(predicted, measured)
		var sb strings.Builder
		if err := f.WriteTable(&sb); err != nil {
			t.Fatal(err)
		}
		p50[c.name], mean[c.name] = metricMAPE(t, f, "ttft_p50"), metricMAPE(t, f, "ttft_mean")
		t.Logf("%s twin on shared-prefix loads (TTFT MAPE: p50 %.2f %%, mean %.2f %%):\n%s", c.name, p50[c.name], mean[c.name], sb.String())
	}
	if p50["fitted"] >= p50["fallback"] {
		t.Errorf("median TTFT MAPE %.2f %% with the fitted cache terms, %.2f %% with the fallback: want the fitted lower", p50["fitted"], p50["fallback"])
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
