package energy_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/energy/energytest"
)

var meanT0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return meanT0.Add(time.Duration(math.Round(sec * 1e9))) }

// meanTrace samples f as interval means over tau seconds, stamped every
// step seconds from first to last: the value stamped t is the curve's
// exact mean over [t − tau, t].
func meanTrace(f energytest.Fixture, tau, step, first, last float64) energy.PowerTrace {
	p := energy.PowerTrace{Node: f.Name, Kind: energy.IntervalMean(time.Duration(tau * 1e9))}
	for i := 0; ; i++ {
		t := first + float64(i)*step
		if t > last+1e-9 {
			break
		}
		p.Samples = append(p.Samples, energy.Sample{At: at(t), Value: f.Integral(t-tau, t) / tau})
	}
	return p
}

// instantTrace samples f instantaneously every step seconds.
func instantTrace(f energytest.Fixture, step, first, last float64) energy.PowerTrace {
	p := energy.PowerTrace{Node: f.Name}
	for i := 0; ; i++ {
		t := first + float64(i)*step
		if t > last+1e-9 {
			break
		}
		p.Samples = append(p.Samples, energy.Sample{At: at(t), Value: f.P(t)})
	}
	return p
}

// TestIntegrateMeanExactOnPiecewiseLinear: interval-mean samples of the
// piecewise-linear fixtures (breakpoints anywhere inside the intervals),
// polled every τ or every τ/m, integrate exactly over windows whose edges
// are sample instants and which start after a steady interval, as every
// burst of a run does (the runner polls at its edges, after a pause).
// Polled every τ, any window with edges on samples is exact.
func TestIntegrateMeanExactOnPiecewiseLinear(t *testing.T) {
	// Two bursts: idle 20 W, a prefill spike, decode cooling, idle; again.
	burst := energytest.Fixture{Name: "bursts"}
	knots := []float64{0, 4, 4.3, 4.6, 9.2, 9.4, 14, 14.2, 14.7, 19.1, 19.3, 30}
	watts := []float64{20, 20, 190, 150, 120, 20, 20, 170, 130, 125, 20, 20}
	pwlEval := func(x float64) float64 {
		if x <= knots[0] {
			return watts[0]
		}
		for i := 1; i < len(knots); i++ {
			if x <= knots[i] {
				return watts[i-1] + (watts[i]-watts[i-1])*(x-knots[i-1])/(knots[i]-knots[i-1])
			}
		}
		return watts[len(watts)-1]
	}
	burst.P = pwlEval
	burst.Integral = func(a, b float64) float64 {
		// Exact: the trapezoid over the knots inside [a, b].
		xs := []float64{a}
		for _, k := range knots {
			if k > a && k < b {
				xs = append(xs, k)
			}
		}
		xs = append(xs, b)
		e := 0.0
		for i := 1; i < len(xs); i++ {
			e += (xs[i] - xs[i-1]) * (pwlEval(xs[i]) + pwlEval(xs[i-1])) / 2
		}
		return e
	}
	fixtures := []energytest.Fixture{burst}
	for _, f := range energytest.Fixtures() {
		if f.Exact {
			fixtures = append(fixtures, f)
		}
	}
	for _, f := range fixtures {
		for _, m := range []int{1, 2, 4} {
			const tau = 1.0
			step := tau / float64(m)
			p := meanTrace(f, tau, step, 1, 29)
			n := 0
			for i, si := range p.Samples {
				s := 1 + float64(i)*step
				steady := math.Abs(f.Integral(s-2*tau, s)/(2*tau)-f.P(s)) < 1e-12 && math.Abs(f.P(s-tau)-f.P(s)) < 1e-12
				if m > 1 && !steady {
					continue
				}
				for j := i + 1; j < len(p.Samples); j += 3 {
					e := 1 + float64(j)*step
					w := energy.Window{Start: si.At, End: p.Samples[j].At}
					got, err := energy.Integrate(p, w)
					if err != nil {
						t.Fatal(err)
					}
					want := f.Integral(s, e)
					if math.Abs(got.Joules-want) > 1e-9*max(want, 1) {
						t.Errorf("%s, polls every τ/%d, [%g, %g]: %.9g J, want %.9g", f.Name, m, s, e, got.Joules, want)
					}
					n++
				}
			}
			if n == 0 && m == 1 {
				t.Errorf("%s τ/%d: no window checked", f.Name, m)
			}
		}
	}
}

// TestIntegrateBoundHoldsForBothKinds: on the smooth fixtures (constant,
// ramp, sine), for instantaneous and interval-mean samples at several poll
// periods, the error of Integrate stays within its Bound on windows that
// start and end between samples.
func TestIntegrateBoundHoldsForBothKinds(t *testing.T) {
	for _, f := range energytest.Fixtures() {
		if f.Name != "constant" && f.Name != "ramp" && f.Name != "sine" {
			continue
		}
		for _, step := range []float64{0.1, 0.25, 0.5, 1, 2} {
			for _, kind := range []string{"instantaneous", "mean"} {
				var p energy.PowerTrace
				if kind == "mean" {
					p = meanTrace(f, 1, step, 0.05, energytest.Span)
				} else {
					p = instantTrace(f, step, 0, energytest.Span)
				}
				for _, l := range energytest.WindowLengths {
					for _, a := range energytest.WindowStarts(l) {
						w := energy.Window{Start: at(a), End: at(a + l)}
						got, err := energy.Integrate(p, w)
						if err != nil {
							t.Fatal(err)
						}
						want := f.Integral(a, a+l)
						if e := math.Abs(got.Joules - want); e > got.Bound+1e-9*want {
							t.Errorf("%s, %s every %gs, [%.4g, +%g]: error %.6g J above the bound %.6g J (got %.6g, want %.6g)",
								f.Name, kind, step, a, l, e, got.Bound, got.Joules, want)
						}
					}
				}
			}
		}
	}
}

// TestIntegrateMeanShortWindow is the case that showed the need: a burst
// of about 1 s between idle pauses, node power read as 1 s means every
// 0.1 s. Read as instantaneous, the samples lose about half the energy;
// read as what they are, the energy is exact.
func TestIntegrateMeanShortWindow(t *testing.T) {
	f := energytest.Fixture{Name: "pulse"}
	const idle, busy, s0, s1 = 20.0, 120.0, 10.0, 11.2
	f.P = func(x float64) float64 {
		if x >= s0 && x < s1 {
			return busy
		}
		return idle
	}
	f.Integral = func(a, b float64) float64 {
		in := max(0, min(b, s1)-max(a, s0))
		return idle*(b-a) + (busy-idle)*in
	}
	p := meanTrace(f, 1, 0.1, 0.1, 20)
	w := energy.Window{Start: at(s0), End: at(s1)}
	want := f.Integral(s0, s1)
	mean, err := energy.Integrate(p, w)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(mean.Joules-want) > 1e-9*want {
		t.Errorf("as means: %.6g J, want %.6g", mean.Joules, want)
	}
	naive := p
	naive.Kind = energy.SampleKind{}
	inst, err := energy.Integrate(naive, w)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Joules > 0.8*want {
		t.Errorf("read as instantaneous: %.6g J, expected the lag to lose a large share of %.6g J", inst.Joules, want)
	}
}

type kindedSource struct{ energy.SourceFunc }

func (kindedSource) PowerKind() energy.SampleKind { return energy.IntervalMean(time.Second) }

// TestSamplerLabelsPowerKind: a source that declares interval means gets
// power traces of that kind; one that does not, instantaneous ones.
func TestSamplerLabelsPowerKind(t *testing.T) {
	read := func(node string) energy.SourceFunc {
		return func(ctx context.Context) ([]energy.Reading, error) {
			return []energy.Reading{{Node: node, Metric: energy.MetricPower, Value: 10}}, nil
		}
	}
	s, err := energy.NewSampler([]energy.Source{kindedSource{read("mean")}, read("instant")})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec := s.Recording()
	got := map[string]energy.SampleKind{}
	for _, p := range rec.Power() {
		got[p.Node] = p.Kind
	}
	if got["mean"] != energy.IntervalMean(time.Second) || got["instant"].IsMean() {
		t.Errorf("kinds %v, want mean over 1s and instantaneous", got)
	}
	if rec.MeanInterval() != time.Second {
		t.Errorf("MeanInterval = %v, want 1s", rec.MeanInterval())
	}
}
