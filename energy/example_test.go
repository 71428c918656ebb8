package energy_test

import (
	"context"
	"fmt"
	"time"

	"github.com/inferbench/inferbench/energy"
)

// A 1 Hz power trace and a 2.5 s window that starts between samples:
// Integrate interpolates the edges, exo's method drops them. By hand:
// P(0.5) = 200 W, so 0.5·(200+300)/2 + 300 + (300+100)/2 = 625 J; exo
// integrates from 1 s only: 300 + 200 = 500 J. The bound is the range
// terms 0.5·(250−100) + 0 + 200/2 = 175 J plus the curvature terms
// (M = 200 W/s² everywhere): 100·(0.375 − 0.875/3) + 2·200/12 ≈ 41.7 J.
func ExampleIntegrate() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sec := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	trace := energy.PowerTrace{Node: "gpu0", Samples: []energy.Sample{
		{At: sec(0), Value: 100}, {At: sec(1), Value: 300}, {At: sec(2), Value: 300}, {At: sec(3), Value: 100},
	}}
	w := energy.Window{Start: sec(0.5), End: sec(3)}

	ours, err := energy.Integrate(trace, w)
	if err != nil {
		panic(err)
	}
	exo, err := energy.ExoWindowEnergy(trace, w)
	if err != nil {
		panic(err)
	}
	fmt.Printf("ours: %.1f J ± %.1f J, %.1f W average\n", ours.Joules, ours.Bound, ours.Watts())
	fmt.Printf("exo:  %.1f J\n", exo.Joules)
	// Output:
	// ours: 625.0 J ± 216.7 J, 250.0 W average
	// exo:  500.0 J
}

// A RAPL-style counter that wraps at 100 J between its second and third
// readings.
func ExampleCounterTrace_Energy() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := energy.CounterTrace{Node: "package-0", Max: 100, Samples: []energy.Sample{
		{At: t0, Value: 60}, {At: t0.Add(time.Second), Value: 90}, {At: t0.Add(2 * time.Second), Value: 20},
	}}
	e, err := c.Energy(energy.Window{Start: t0, End: t0.Add(2 * time.Second)})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.0f J over %.0f s\n", e.Joules, e.Seconds())
	// Output:
	// 60 J over 2 s
}

// One run on two nodes: split at the first token, idle subtracted, J per
// token.
func ExampleMeasure() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sec := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	flat := func(node string, watts float64) energy.PowerTrace {
		p := energy.PowerTrace{Node: node}
		for i := range 7 {
			p.Samples = append(p.Samples, energy.Sample{At: sec(float64(i)), Value: watts})
		}
		return p
	}
	rep, err := energy.Measure(energy.Run{
		Window:       energy.Window{Start: sec(1), End: sec(5)},
		FirstToken:   sec(2),
		PromptTokens: 512, GeneratedTokens: 128,
		Idle: energy.Baseline{"node-a": 40, "node-b": 40},
	}, []energy.PowerTrace{flat("node-a", 200), flat("node-b", 120)}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("total %.0f J, %.0f W\n", rep.Total.Joules, rep.Watts())
	fmt.Printf("prefill %.0f J (%.3f J/token), generation %.0f J (%.3f J/token)\n",
		rep.Prefill.Joules, rep.JoulesPerPromptToken, rep.Generation.Joules, rep.JoulesPerGeneratedToken)
	// Output:
	// total 960 J, 240 W
	// prefill 240 J (0.469 J/token), generation 720 J (5.625 J/token)
}

// A Sampler over a source; Poll adds a reading outside the schedule, Stop
// returns what was gathered in the shape of exo's system_metrics.
func ExampleSampler() {
	watts := 100.0
	src := energy.SourceFunc(func(ctx context.Context) ([]energy.Reading, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return []energy.Reading{{Node: "gpu0", Metric: energy.MetricPower, Value: watts}}, nil
	})
	s, err := energy.NewSampler([]energy.Source{src}, energy.WithInterval(time.Hour))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := s.Start(ctx); err != nil { // first reading now, the next in an hour
		panic(err)
	}
	rec := s.Stop() // and a last one
	fmt.Printf("%+v\n", rec.Summary()["gpu0"][energy.MetricPower])
	// Output:
	// {Min:100 Max:100 Mean:100 Samples:2}
}

func ExampleParseNvidiaSMI() {
	out := []byte("0, 312.45, 987654321\n1, [N/A], [Not Supported]\n")
	gpus, err := energy.ParseNvidiaSMI(out)
	if err != nil {
		panic(err)
	}
	for _, g := range gpus {
		fmt.Printf("gpu%d: %v W, %v J\n", g.Index, g.Watts, g.Joules)
	}
	// Output:
	// gpu0: 312.45 W, 987654.321 J
	// gpu1: NaN W, NaN J
}
