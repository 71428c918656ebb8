package energy_test

import (
	"math"
	"testing"
	"time"

	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/energy/energytest"
)

// stepFixture is power that jumps between idle and busy at each of edges
// (idle before the first), with its closed-form integral.
func stepFixture(idle, busy float64, edges ...float64) energytest.Fixture {
	level := func(x float64) float64 {
		on := false
		for _, e := range edges {
			if x >= e {
				on = !on
			}
		}
		if on {
			return busy
		}
		return idle
	}
	integral := func(a, b float64) float64 {
		pts := []float64{a}
		for _, e := range edges {
			if e > a && e < b {
				pts = append(pts, e)
			}
		}
		pts = append(pts, b)
		j := 0.0
		for i := 1; i < len(pts); i++ {
			j += (pts[i] - pts[i-1]) * level((pts[i]+pts[i-1])/2)
		}
		return j
	}
	return energytest.Fixture{Name: "steps", P: level, Integral: integral}
}

// TestIntegrateBoundHoldsForStepsInsideIntervals: load steps anywhere
// inside a sample interval, with no steady interval before the window
// (bursts back to back, as the default run sends them), sampled as
// interval means or instantaneously at several poll periods and phases,
// over windows whose edges fall anywhere: the closed-form energy always
// lies within Joules ± Bound. The interval-mean case without a declared
// range is the one the range of nearby means did not cover. Instantaneous
// readings are checked where at most one step falls between two of them
// (a pulse between two readings is invisible to them), and means polled
// slower than τ only with a declared range (nothing else bounds the power
// in the gaps between their intervals).
func TestIntegrateBoundHoldsForStepsInsideIntervals(t *testing.T) {
	const idle, busy, tau = 12.0, 232.0, 1.0
	for _, edges := range [][]float64{
		{10.37, 11.68, 11.71, 13.02}, // two bursts 30 ms apart
		{10.05, 10.95},               // a burst inside one interval
		{10.5, 14.25, 14.26, 15.9},
	} {
		f := stepFixture(idle, busy, edges...)
		for _, step := range []float64{0.1, 0.5, 1, 1.3} {
			for _, phase := range []float64{0, 0.23, 0.71} {
				traces := map[string]energy.PowerTrace{
					"mean":     meanTrace(f, tau, step, 2+phase, 25),
					"instant":  instantTrace(f, step, 2+phase, 25),
					"in range": meanTrace(f, tau, step, 2+phase, 25),
				}
				r := traces["in range"]
				r.Range = energy.PowerRange{Min: idle, Max: busy}
				traces["in range"] = r
				spaced := true // at most one step between two samples
				for i := 1; i < len(edges); i++ {
					spaced = spaced && edges[i]-edges[i-1] > step
				}
				if !spaced {
					delete(traces, "instant") // a pulse between two readings is invisible
				}
				if step > tau {
					delete(traces, "mean") // gaps: only a declared range bounds them
				}
				for name, p := range traces {
					for _, a := range []float64{edges[0] - 0.4, edges[0], edges[0] + 0.013, edges[1] - 0.2} {
						for _, l := range []float64{0.3, 1.2, 1.31, 2.7, 5} {
							w := energy.Window{Start: at(a), End: at(a + l)}
							got, err := energy.Integrate(p, w)
							if err != nil {
								t.Fatal(err)
							}
							want := f.Integral(a, a+l)
							if e := math.Abs(got.Joules - want); !(e <= got.Bound+1e-9*want) {
								t.Errorf("steps %v, %s every %gs from %g, [%g, +%g]: error %.6g J above the bound %.6g J (got %.6g, want %.6g)",
									edges, name, step, 2+phase, a, l, e, got.Bound, got.Joules, want)
							}
						}
					}
				}
			}
		}
	}
}

// TestIntegrateMeanBoundIsTight: the interval-mean bound is the exact
// worst case, so it is not slack: for a window that ends in the middle of
// one 1 s mean with polls every second, without a declared range the
// energy of the window's last part may be anything from 0 to the whole
// interval's, and with a range, anything the range allows. Both bounds
// are the closed-form worst cases, and the declared range narrows it.
func TestIntegrateMeanBoundIsTight(t *testing.T) {
	const idle, busy = 10.0, 110.0
	f := stepFixture(idle, busy, 5, 100)
	p := meanTrace(f, 1, 1, 1, 20) // stamps 1, 2, …, 20; busy from 5
	w := energy.Window{Start: at(8), End: at(10.5)}
	got, err := energy.Integrate(p, w)
	if err != nil {
		t.Fatal(err)
	}
	// [8, 10] is known exactly (two whole means); [10, 10.5] holds
	// between 0 and the whole 110 J of the interval [10, 11]; the
	// reconstruction gives 55 J there, so the bound is 55 J.
	if math.Abs(got.Joules-(220+55)) > 1e-9 || math.Abs(got.Bound-55) > 1e-6 {
		t.Errorf("without a range: %.9g ± %.9g J, want 275 ± 55", got.Joules, got.Bound)
	}
	p.Range = energy.PowerRange{Min: idle, Max: busy}
	got, err = energy.Integrate(p, w)
	if err != nil {
		t.Fatal(err)
	}
	// With power within [10, 110] W, [10, 10.5] holds at most
	// 0.5·110 = 55 J and at least 110 − 0.5·110 = 55 J (the rest of the
	// interval holds at most 55 J): the energy is determined.
	if math.Abs(got.Joules-275) > 1e-9 || got.Bound > 1e-6 {
		t.Errorf("with the range: %.9g ± %.9g J, want 275 ± 0", got.Joules, got.Bound)
	}
}

// TestIntegrateMeanStampError: readings stamped up to d away from the end
// of their interval, with the trace's StampError = d: the bound still
// covers the truth; with StampError 0 the same readings are taken as
// exact and the error can exceed the bound.
func TestIntegrateMeanStampError(t *testing.T) {
	const d = 0.05
	f := stepFixture(12, 232, 10.37, 11.68)
	p := energy.PowerTrace{Node: "late", Kind: energy.IntervalMean(time.Second), StampError: time.Duration(d * 1e9)}
	for i := 0; i < 40; i++ {
		t0 := 2 + 0.5*float64(i)
		off := d * math.Sin(float64(i)*1.7) // where the interval really ends
		p.Samples = append(p.Samples, energy.Sample{At: at(t0), Value: f.Integral(t0+off-1, t0+off)})
	}
	missed := false
	for _, a := range []float64{10, 10.37, 10.9} {
		for _, l := range []float64{0.5, 1.31, 3} {
			w := energy.Window{Start: at(a), End: at(a + l)}
			want := f.Integral(a, a+l)
			got, err := energy.Integrate(p, w)
			if err != nil {
				t.Fatal(err)
			}
			if e := math.Abs(got.Joules - want); !(e <= got.Bound+1e-9*want) {
				t.Errorf("[%g, +%g]: error %.6g J above the bound %.6g J", a, l, e, got.Bound)
			}
			exact := p
			exact.StampError = 0
			g0, err := energy.Integrate(exact, w)
			if err != nil {
				t.Fatal(err)
			}
			missed = missed || math.Abs(g0.Joules-want) > g0.Bound+1e-9*want
		}
	}
	if !missed {
		t.Error("with StampError 0 every bound still held: the test's stamps are not off enough to show StampError matters")
	}
}
