// Package energytest holds true power curves with closed-form integrals, the
// fixtures against which energy integration is checked (gonum's testquad
// idea applied to power): energy's own tests, its error table and the
// cmd/perf energy section all sample the same curves. It imports nothing
// of the module, so package energy's tests can use it.
package energytest

import "math"

// Span is the length of every fixture in seconds: sample each over
// [0, Span].
const Span = 30

// A Fixture is a true power curve: P gives watts at second t, Integral the
// joules over [a, b]. Exact marks fixtures that are piecewise linear with
// every breakpoint on a whole second, so a 1 Hz trace samples them all and
// an exact-window trapezoid integral must be exact.
type Fixture struct {
	Name     string
	P        func(t float64) float64
	Integral func(a, b float64) float64
	Exact    bool
}

// Fixtures returns the curves: constant 50 W; a ramp 20 → 140 W; "load",
// piecewise linear (idle, a prefill burst, decode that slowly cools, idle
// again); a step 30 → 150 W at 10.4 s, between samples; and a sine
// 80 ± 40 W with a 7 s period.
func Fixtures() []Fixture {
	ramp := pwl{T: []float64{0, 30}, P: []float64{20, 140}}
	load := pwl{T: []float64{0, 3, 5, 6, 20, 22, 30}, P: []float64{40, 40, 210, 160, 140, 40, 40}}
	const stepAt, lo, hi = 10.4, 30.0, 150.0
	const mean, amp, period = 80.0, 40.0, 7.0
	w := 2 * math.Pi / period
	return []Fixture{
		{Name: "constant", P: func(float64) float64 { return 50 }, Integral: func(a, b float64) float64 { return 50 * (b - a) }, Exact: true},
		{Name: "ramp", P: ramp.eval, Integral: ramp.integral, Exact: true},
		{Name: "load", P: load.eval, Integral: load.integral, Exact: true},
		{
			Name: "step",
			P: func(t float64) float64 {
				if t < stepAt {
					return lo
				}
				return hi
			},
			Integral: func(a, b float64) float64 {
				return lo*overlap(a, b, math.Inf(-1), stepAt) + hi*overlap(a, b, stepAt, math.Inf(1))
			},
		},
		{
			Name: "sine",
			P:    func(t float64) float64 { return mean + amp*math.Sin(w*t) },
			Integral: func(a, b float64) float64 {
				return mean*(b-a) - amp/w*(math.Cos(w*b)-math.Cos(w*a))
			},
		},
	}
}

// WindowLengths are the window lengths of the error table, in seconds.
var WindowLengths = []float64{0.5, 1, 2, 5, 10}

// WindowStarts returns window starts for a window of length l: a start
// every π/8 s from 1.1 s while the window ends by second 29. The step is
// irrational, so no start or end falls on a whole or half second and the
// windows are not aligned to 1 Hz samples.
func WindowStarts(l float64) []float64 {
	var out []float64
	for a := 1.1; a+l <= 29; a += math.Pi / 8 {
		out = append(out, a)
	}
	return out
}

// pwl is a piecewise-linear curve through knots (T[i], P[i]), constant
// beyond the ends.
type pwl struct{ T, P []float64 }

func (c pwl) eval(t float64) float64 {
	if t <= c.T[0] {
		return c.P[0]
	}
	for i := 1; i < len(c.T); i++ {
		if t <= c.T[i] {
			return c.P[i-1] + (c.P[i]-c.P[i-1])*(t-c.T[i-1])/(c.T[i]-c.T[i-1])
		}
	}
	return c.P[len(c.P)-1]
}

// integral adds the exact area of each linear piece clipped to [a, b]:
// a piece from u to v of a straight line has area (v − u)·(P(u) + P(v))/2.
func (c pwl) integral(a, b float64) float64 {
	cuts := []float64{a}
	for _, k := range c.T {
		if k > a && k < b {
			cuts = append(cuts, k)
		}
	}
	cuts = append(cuts, b)
	sum := 0.0
	for i := 1; i < len(cuts); i++ {
		u, v := cuts[i-1], cuts[i]
		sum += (v - u) * (c.eval(u) + c.eval(v)) / 2
	}
	return sum
}

func overlap(a, b, lo, hi float64) float64 {
	return math.Max(0, math.Min(b, hi)-math.Max(a, lo))
}
