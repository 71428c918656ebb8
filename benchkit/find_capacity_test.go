package benchkit_test

import (
	"context"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/capacity"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// The embedded engine's capacity setup: the fast preset with a step
// overhead of 10 ms (so that the server saturates at about 18 requests/s,
// a rate the client keeps up with under the race detector), a batch of 4
// and fixed lengths.
const (
	capBatch = 4
	capPP    = 64 // the whole templated prompt, as the server counts it
	capTG    = 16
)

func capacityPreset() sim.Preset {
	p := sim.Fast()
	p.Hardware.StepOverhead = 10 * time.Millisecond
	return p
}

// serviceRate is the rate the embedded engine serves requests of pp
// prompt and tg generated tokens at saturation, from its cost model
// (engine/sim's package doc): with the running batch always full (batch
// requests), each request takes one prefill of its pp − 1 tokens, which
// stalls the batch, and tg decode steps shared by the batch, the i-th at
// a context of pp − 1 + i tokens for every request of the batch, so
//
//	1/μ = PrefillTime(pp − 1) + Σᵢ DecodeStep(batch × (pp − 1 + i)) / batch.
//
// (A prompt's leading blocks served from the prefix cache shorten its
// prefill by a few KV bytes against the weights' gigabyte: nothing at
// this precision.)
func serviceRate(p sim.Preset, batch, pp, tg int) float64 {
	per := p.PrefillTime(pp-1, 0, 0).Seconds()
	for i := range tg {
		ctx := make([]int, batch)
		for j := range ctx {
			ctx[j] = pp - 1 + i
		}
		per += p.DecodeStep(ctx).Seconds() / float64(batch)
	}
	return 1 / per
}

func capacityServer(t testing.TB) (*openai.Client, *sim.Server) {
	srv := sim.NewServer(sim.Options{Preset: capacityPreset(), MaxRunning: capBatch})
	c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseIdleConnections(); srv.Close() })
	return c, srv
}

// TestFindCapacityAgainstTheEmbeddedEngine sweeps rates across the
// embedded engine's saturation: the knee's bracket and the service rate's
// interval hold the rate its cost model serves, and so does the
// capacity's bracket under an objective lax enough that only the
// backlog's growth breaks it.
func TestFindCapacityAgainstTheEmbeddedEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("a sweep of several seconds")
	}
	c, srv := capacityServer(t)
	mu := serviceRate(capacityPreset(), capBatch, capPP, capTG)
	l := &benchkit.Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}}
	traffic := benchkit.Traffic{Duration: 2500 * time.Millisecond, Burstiness: 20, Seed: 1}
	slo := timing.SLO{E2E: 600 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, runs, err := l.FindCapacity(ctx, benchkit.Lengths{Input: capPP, Output: capTG}, traffic, slo,
		&capacity.Options{Start: 8, MaxRuns: 6, Tolerance: 0.15})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Points {
		t.Logf("rate %.3g/s: %s, throughput %.3g/s, backlog %+.3g/s [%.3g, %.3g], attainment %.2f (%s)",
			p.Rate, p.State, p.Throughput, p.Growth, p.GrowthLo, p.GrowthHi, p.Attainment, p.Meets)
	}
	t.Logf("service rate from the cost model %.4g/s; knee %s, service rate %s, capacity %s; %d runs, %d requests, %.1f s",
		mu, res.Knee, res.ServiceRate, res.Capacity, res.Runs, res.Requests, res.Seconds)
	if len(runs) != res.Runs || res.Runs < 4 {
		t.Errorf("%d runs returned, the result counts %d; want the same, at least 4", len(runs), res.Runs)
	}
	for i, r := range runs {
		if r.Requests[0].Run != i {
			t.Errorf("run %d is numbered %d", i, r.Requests[0].Run)
		}
	}
	for name, iv := range map[string]capacity.Interval{"knee": res.Knee, "service rate": res.ServiceRate, "capacity": res.Capacity} {
		if !iv.Bracketed() || !(iv.Lo <= mu && mu <= iv.Hi) {
			t.Errorf("%s %s does not hold the engine's service rate %.4g/s", name, iv, mu)
		}
	}
}

// BenchmarkFindCapacity measures what the capacity search costs against
// the embedded engine, beside a fixed-length sweep of the same precision:
// a linear grid of rates over the range the search's ladder covered, one
// step the width of the knee bracket the search reached, so that it
// brackets the knee as tightly wherever the knee lies. Each reports its
// runs, requests, seconds and the knee bracket's width (hi − lo)/lo; run
// it with -benchtime=1x.
func BenchmarkFindCapacity(b *testing.B) {
	c, srv := capacityServer(b)
	l := &benchkit.Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}}
	w := benchkit.Lengths{Input: capPP, Output: capTG}
	traffic := benchkit.Traffic{Duration: 2500 * time.Millisecond, Burstiness: 20, Seed: 1}
	slo := timing.SLO{E2E: 600 * time.Millisecond}
	mu := serviceRate(capacityPreset(), capBatch, capPP, capTG)
	ctx := context.Background()
	for b.Loop() {
		res, _, err := l.FindCapacity(ctx, w, traffic, slo, &capacity.Options{Start: 8, MaxRuns: 8, Tolerance: 0.1})
		if err != nil {
			b.Fatal(err)
		}
		if !res.Knee.Bracketed() {
			b.Fatalf("knee %s not bracketed", res.Knee)
		}
		lo, hi := res.Points[0].Rate, res.Points[len(res.Points)-1].Rate
		step := res.Knee.Hi - res.Knee.Lo
		var grid []float64
		for r := lo; r <= hi+1e-9; r += step {
			grid = append(grid, r)
		}
		fixed, _, err := l.FindCapacity(ctx, w, traffic, slo, &capacity.Options{Rates: grid, MaxRuns: len(grid), Tolerance: 1e9})
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("service rate %.4g/s; search: knee %s in %d runs; fixed grid of %d rates from %.3g by %.3g: knee %s",
			mu, res.Knee, res.Runs, len(grid), lo, step, fixed.Knee)
		b.ReportMetric(float64(res.Runs), "search-runs")
		b.ReportMetric(float64(res.Requests), "search-requests")
		b.ReportMetric(res.Seconds, "search-s")
		b.ReportMetric(res.Knee.Width(), "search-knee-width")
		b.ReportMetric(float64(fixed.Runs), "fixed-runs")
		b.ReportMetric(float64(fixed.Requests), "fixed-requests")
		b.ReportMetric(fixed.Seconds, "fixed-s")
		b.ReportMetric(fixed.Knee.Width(), "fixed-knee-width")
	}
}
