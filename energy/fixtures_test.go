package energy

import (
	"math"
	"time"
)

// t0 is the instant every fixture's second 0 maps to.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// at returns t0 + s seconds.
func at(s float64) time.Time { return t0.Add(time.Duration(math.Round(s * 1e9))) }

// A fixture is a true power curve with a closed-form integral, the
// testquad idea applied to power: P gives watts at second t, Integral the
// joules over [a, b]. Exact marks fixtures that are piecewise linear with
// every breakpoint on a whole second, so a 1 Hz trace samples them all and
// Integrate must be exact.
type fixture struct {
	Name     string
	P        func(t float64) float64
	Integral func(a, b float64) float64
	Exact    bool
}

// span is the length of every fixture trace in seconds.
const span = 30

// sampled returns the fixture sampled at 1 Hz over [0, span].
func (f fixture) sampled() PowerTrace {
	p := PowerTrace{Node: f.Name}
	for i := 0; i <= span; i++ {
		p.Samples = append(p.Samples, Sample{At: at(float64(i)), Value: f.P(float64(i))})
	}
	return p
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

func fixtures() []fixture {
	ramp := pwl{T: []float64{0, 30}, P: []float64{20, 140}}
	// load: idle, a prefill burst, decode that slowly cools, idle again.
	load := pwl{T: []float64{0, 3, 5, 6, 20, 22, 30}, P: []float64{40, 40, 210, 160, 140, 40, 40}}
	const stepAt, lo, hi = 10.4, 30.0, 150.0
	const mean, amp, period = 80.0, 40.0, 7.0
	w := 2 * math.Pi / period
	return []fixture{
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

// windowLengths are the window lengths of the error table, in seconds.
var windowLengths = []float64{0.5, 1, 2, 5, 10}

// placements returns window starts for a window of length l: a start every
// π/8 s from 1.1 s while the window ends by second 29. The step is
// irrational, so no start or end falls on a whole or half second and the
// windows are not aligned to the 1 Hz samples.
func placements(l float64) []float64 {
	var out []float64
	for a := 1.1; a+l <= 29; a += math.Pi / 8 {
		out = append(out, a)
	}
	return out
}
