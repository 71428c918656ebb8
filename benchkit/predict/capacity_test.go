package predict

import (
	"context"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/capacity"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// The setup of benchkit's TestFindCapacityAgainstTheEmbeddedEngine: the
// fast preset with a step overhead of 10 ms, a batch of 4, prompts of 64
// tokens (as the server counts the templated prompt) and 16 generated.
const (
	capBatch = 4
	capPP    = 64
	capTG    = 16
)

func capacityOptions() sim.Options {
	p := sim.Fast()
	p.Hardware.StepOverhead = 10 * time.Millisecond
	return sim.Options{Preset: p, MaxRunning: capBatch}
}

// serviceRate is the rate the engine serves requests of pp prompt and tg
// generated tokens at saturation, from its cost model, the batch always
// full: 1/μ = PrefillTime(pp − 1) + Σᵢ DecodeStep(batch × (pp − 1 + i)) / batch
// (benchkit's find_capacity_test.go derives it).
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

// TestPredictFindCapacity predicts the capacity search that benchkit's
// TestFindCapacityAgainstTheEmbeddedEngine sends: the knee's bracket, the
// service rate's interval and the capacity's bracket hold the rate the
// cost model serves, every run is predicted and numbered in the order
// made.
func TestPredictFindCapacity(t *testing.T) {
	opts := capacityOptions()
	srv := sim.NewServer(opts) // only for its model name and counter
	defer srv.Close()
	mu := serviceRate(opts.Preset, capBatch, capPP, capTG)
	l := &benchkit.Load{Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}, Simulated: true}
	traffic := benchkit.Traffic{Duration: 2500 * time.Millisecond, Burstiness: 20, Seed: 1}
	slo := timing.SLO{E2E: 600 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	res, runs, err := (&Predictor{Load: l, Options: opts}).FindCapacity(ctx, benchkit.Lengths{Input: capPP, Output: capTG}, traffic, slo,
		&capacity.Options{Start: 8, MaxRuns: 6, Tolerance: 0.15})
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(began)
	for _, p := range res.Points {
		t.Logf("rate %.3g/s: %s, throughput %.3g/s, backlog %+.3g/s, attainment %.2f (%s)", p.Rate, p.State, p.Throughput, p.Growth, p.Attainment, p.Meets)
	}
	t.Logf("service rate from the cost model %.4g/s; predicted knee %s, service rate %s, capacity %s; %d runs, %d requests, %v of wall time",
		mu, res.Knee, res.ServiceRate, res.Capacity, res.Runs, res.Requests, wall)
	if len(runs) != res.Runs || res.Runs < 4 {
		t.Errorf("%d runs returned, the result counts %d; want the same, at least 4", len(runs), res.Runs)
	}
	for i, r := range runs {
		if r.Requests[0].Run != i || !r.Requests[0].Predicted {
			t.Errorf("run %d: its first row is numbered %d, predicted %v", i, r.Requests[0].Run, r.Requests[0].Predicted)
		}
	}
	for name, iv := range map[string]capacity.Interval{"knee": res.Knee, "service rate": res.ServiceRate, "capacity": res.Capacity} {
		if !iv.Bracketed() || !(iv.Lo <= mu && mu <= iv.Hi) {
			t.Errorf("%s %s does not hold the engine's service rate %.4g/s", name, iv, mu)
		}
	}
}

// BenchmarkPredictFindCapacity is the wall time of the predicted capacity
// search of TestPredictFindCapacity (the live search it stands for takes
// its runs' schedules, about 19 s).
func BenchmarkPredictFindCapacity(b *testing.B) {
	opts := capacityOptions()
	srv := sim.NewServer(opts)
	defer srv.Close()
	l := &benchkit.Load{Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}, Simulated: true}
	traffic := benchkit.Traffic{Duration: 2500 * time.Millisecond, Burstiness: 20, Seed: 1}
	slo := timing.SLO{E2E: 600 * time.Millisecond}
	var res capacity.Result
	for b.Loop() {
		var err error
		res, _, err = (&Predictor{Load: l, Options: opts}).FindCapacity(context.Background(), benchkit.Lengths{Input: capPP, Output: capTG}, traffic, slo,
			&capacity.Options{Start: 8, MaxRuns: 6, Tolerance: 0.15})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(res.Runs), "runs")
	b.ReportMetric(float64(res.Requests), "requests")
	b.ReportMetric(res.Knee.Width(), "knee-width")
}
