package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/energy/energytest"
)

// runEnergy samples each energytest fixture at 1 Hz for 30 s and integrates windows of
// 0.5, 1, 2, 5 and 10 s starting every π/8 s from 1.1 s (never on a
// sample) with energy.Integrate and with exo's method,
// energy.ExoWindowEnergy, and reports the mean and largest |error| / truth
// of each over all windows.
func runEnergy(_ context.Context, _ config, rep *report) error {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(math.Round(s * 1e9))) }
	for _, c := range energytest.Fixtures() {
		tr := energy.PowerTrace{Node: c.Name}
		for i := 0; i <= energytest.Span; i++ {
			tr.Samples = append(tr.Samples, energy.Sample{At: at(float64(i)), Value: c.P(float64(i))})
		}
		var ours, exo []float64
		for _, l := range energytest.WindowLengths {
			for _, a := range energytest.WindowStarts(l) {
				w := energy.Window{Start: at(a), End: at(a + l)}
				truth := c.Integral(a, a+l)
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
		if c.Exact {
			kind = "piecewise-linear truth"
		}
		row := Row{Section: "energy", Name: fmt.Sprintf("%s (%s), %d windows: max |error|", c.Name, kind, len(ours)), Value: ox, Unit: "%",
			Ref: ptr(ex), RefName: "exo", Note: fmt.Sprintf("mean |error| %.3f%%, exo's %.3f%%", om, em)}
		if c.Exact {
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
