package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/inferbench/inferbench/energy"
)

// curve is a true power curve with a closed-form integral over [a, b]
// (seconds), and whether it is piecewise linear with every breakpoint on a
// whole second (so a 1 Hz trace samples every breakpoint).
type curve struct {
	name     string
	p        func(t float64) float64
	integral func(a, b float64) float64
	linear   bool
}

// pwl is a piecewise-linear curve through (t[i], p[i]), constant beyond
// its ends.
type pwl struct{ t, p []float64 }

func (c pwl) at(x float64) float64 {
	if x <= c.t[0] {
		return c.p[0]
	}
	for i := 1; i < len(c.t); i++ {
		if x <= c.t[i] {
			return c.p[i-1] + (c.p[i]-c.p[i-1])*(x-c.t[i-1])/(c.t[i]-c.t[i-1])
		}
	}
	return c.p[len(c.p)-1]
}

// area integrates each straight piece clipped to [a, b] exactly:
// (v − u)·(P(u) + P(v))/2.
func (c pwl) area(a, b float64) float64 {
	cuts := []float64{a}
	for _, k := range c.t {
		if k > a && k < b {
			cuts = append(cuts, k)
		}
	}
	cuts = append(cuts, b)
	sum := 0.0
	for i := 1; i < len(cuts); i++ {
		sum += (cuts[i] - cuts[i-1]) * (c.at(cuts[i-1]) + c.at(cuts[i])) / 2
	}
	return sum
}

// curves are the power curves of energy's error table: constant, a ramp,
// an inference load (idle, prefill burst, decode, idle), a step between
// samples and a sine.
func curves() []curve {
	ramp := pwl{t: []float64{0, 30}, p: []float64{20, 140}}
	load := pwl{t: []float64{0, 3, 5, 6, 20, 22, 30}, p: []float64{40, 40, 210, 160, 140, 40, 40}}
	const stepAt, lo, hi = 10.4, 30.0, 150.0
	w := 2 * math.Pi / 7
	return []curve{
		{"constant", func(float64) float64 { return 50 }, func(a, b float64) float64 { return 50 * (b - a) }, true},
		{"ramp", ramp.at, ramp.area, true},
		{"load", load.at, load.area, true},
		{"step", func(t float64) float64 {
			if t < stepAt {
				return lo
			}
			return hi
		}, func(a, b float64) float64 {
			return lo*math.Max(0, math.Min(b, stepAt)-a) + hi*math.Max(0, b-math.Max(a, stepAt))
		}, false},
		{"sine", func(t float64) float64 { return 80 + 40*math.Sin(w*t) }, func(a, b float64) float64 {
			return 80*(b-a) - 40/w*(math.Cos(w*b)-math.Cos(w*a))
		}, false},
	}
}

// runEnergy samples each curve at 1 Hz for 30 s and integrates windows of
// 0.5, 1, 2, 5 and 10 s starting every π/8 s from 1.1 s (never on a
// sample) with energy.Integrate and with exo's method,
// energy.ExoWindowEnergy, and reports the mean and largest |error| / truth
// of each over all windows.
func runEnergy(_ context.Context, _ config, rep *report) error {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(math.Round(s * 1e9))) }
	for _, c := range curves() {
		tr := energy.PowerTrace{Node: c.name}
		for i := 0; i <= 30; i++ {
			tr.Samples = append(tr.Samples, energy.Sample{At: at(float64(i)), Value: c.p(float64(i))})
		}
		var ours, exo []float64
		for _, l := range []float64{0.5, 1, 2, 5, 10} {
			for a := 1.1; a+l <= 29; a += math.Pi / 8 {
				w := energy.Window{Start: at(a), End: at(a + l)}
				truth := c.integral(a, a+l)
				o, err := energy.Integrate(tr, w)
				if err != nil {
					return err
				}
				e, err := energy.ExoWindowEnergy(tr, w)
				if err != nil {
					return err
				}
				ours = append(ours, 100*math.Abs(o.Joules-truth)/truth)
				exo = append(exo, 100*math.Abs(e.Joules-truth)/truth)
			}
		}
		om, ox := meanMax(ours)
		em, ex := meanMax(exo)
		kind := "smooth or stepped truth, sampled at 1 Hz"
		if c.linear {
			kind = "piecewise-linear truth"
		}
		row := Row{Section: "energy", Name: fmt.Sprintf("%s (%s), %d windows: max |error|", c.name, kind, len(ours)), Value: ox, Unit: "%",
			Ref: ptr(ex), RefName: "exo", Note: fmt.Sprintf("mean |error| %.3f%%, exo's %.3f%%", om, em)}
		if c.linear {
			row.Target, row.Met = target("≤ 1%", ox <= 1)
		}
		rep.add(row)
	}
	return nil
}

func meanMax(x []float64) (mean, mx float64) {
	for _, v := range x {
		mean += v
		mx = math.Max(mx, v)
	}
	return mean / float64(len(x)), mx
}
