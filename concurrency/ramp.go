package concurrency

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

var _ Arrivals = Ramp{}

// Ramp arrivals: a rate that moves from Start to End requests per second
// over the first Over of the schedule and stays at End after it, drawn as
// an exact inhomogeneous process. The rate at t seconds from the start is
//
//	linear:       λ(t) = S + (E − S)·t/T
//	exponential:  λ(t) = S·(E/S)^(t/T)
//
// for t < T (S = Start, E = End, T = Over), and λ(t) = E from T on. With
// Λ(t) = ∫₀ᵗ λ, the cumulative intensity (Expected), the arrivals after
// the first are Λ⁻¹(U₁), Λ⁻¹(U₂), … where the U are the running sums of
// independent unit-mean gamma gaps of shape Burstiness: a time change of
// Gamma's renewal process at rate 1. With Burstiness 1 (or ≤ 0) the gaps
// are exponential and the arrivals an inhomogeneous Poisson process of
// rate λ(t): the number in any window [a, b) is Poisson with mean
// Λ(b) − Λ(a). As Gamma's, the first arrival is at the start.
//
// Start may be 0 for a linear ramp (the rate starts at nothing); an
// exponential one needs Start > 0. End below Start ramps down; an End of
// 0 ends the schedule once the ramp has run down. Gaps come from gonum's
// distuv.Gamma with Src; a nil Src means math/rand/v2's global source (a
// different schedule every run). A Ramp that cannot give a positive rate
// (negative or not finite rates, an exponential ramp from 0, Over ≤ 0)
// schedules nothing.
type Ramp struct {
	Start, End  float64       // requests per second
	Over        time.Duration // the ramp's length; the rate is End after it
	Exponential bool          // geometric interpolation instead of linear
	Burstiness  float64       // gamma shape k of the unit-time gaps; ≤ 0 means 1
	Src         rand.Source
}

// valid reports whether the ramp gives a schedule.
func (r Ramp) valid() bool {
	ok := func(x float64) bool { return x >= 0 && !math.IsInf(x, 0) }
	switch {
	case !ok(r.Start) || !ok(r.End) || r.Over <= 0:
		return false
	case r.Exponential:
		return r.Start > 0 && r.End > 0
	}
	return r.Start+r.End > 0
}

func (r Ramp) shape() float64 {
	if !(r.Burstiness > 0) {
		return 1
	}
	return r.Burstiness
}

// growth is ln(E/S)/T of an exponential ramp, per second.
func (r Ramp) growth() float64 { return math.Log(r.End/r.Start) / r.Over.Seconds() }

// Rate returns λ(t), the rate in requests per second at t from the start.
func (r Ramp) Rate(t time.Duration) float64 {
	s, T := t.Seconds(), r.Over.Seconds()
	switch {
	case s >= T:
		return r.End
	case s < 0:
		return 0
	case r.Exponential:
		return r.Start * math.Exp(r.growth()*s)
	}
	return r.Start + (r.End-r.Start)*s/T
}

// Expected returns Λ(t) = ∫₀ᵗ λ, the expected number of arrivals in [0, t)
// of a Poisson ramp, not counting the arrival the schedule puts at the
// start.
func (r Ramp) Expected(t time.Duration) float64 { return r.integral(t.Seconds()) }

// integral is Λ at s seconds.
func (r Ramp) integral(s float64) float64 {
	T := r.Over.Seconds()
	if s <= 0 {
		return 0
	}
	if s > T {
		return r.integral(T) + r.End*(s-T)
	}
	if r.Exponential {
		if g := r.growth(); math.Abs(g*s) > 1e-12 {
			return r.Start * math.Expm1(g*s) / g
		}
		return r.Start * s
	}
	return r.Start*s + (r.End-r.Start)*s*s/(2*T)
}

// inverse is Λ⁻¹(u) in seconds, and false when Λ never reaches u (a ramp
// down to 0).
func (r Ramp) inverse(u float64) (float64, bool) {
	if u <= 0 {
		return 0, true
	}
	T := r.Over.Seconds()
	if full := r.integral(T); u > full {
		if !(r.End > 0) {
			return 0, false
		}
		return T + (u-full)/r.End, true
	}
	if r.Exponential {
		g := r.growth()
		if math.Abs(g) < 1e-15 {
			return u / r.Start, true
		}
		return min(T, math.Log1p(g*u/r.Start)/g), true
	}
	// S·s + a·s² = u with a = (E − S)/(2T): the root that is 0 at u = 0,
	// written so that it neither cancels nor divides by a small a.
	a := (r.End - r.Start) / (2 * T)
	d := r.Start*r.Start + 4*a*u
	return min(T, 2*u/(r.Start+math.Sqrt(max(0, d)))), true
}

// Next returns the gap to Λ⁻¹(Λ(prev) + G), G a unit-mean gamma draw.
func (r Ramp) Next(prev time.Duration, n int) (time.Duration, bool) {
	if !r.valid() {
		return 0, false
	}
	if n == 0 {
		return 0, true
	}
	k := r.shape()
	g := distuv.Gamma{Alpha: k, Beta: k, Src: r.Src}.Rand()
	at, ok := r.inverse(r.integral(prev.Seconds()) + g)
	if !ok {
		return 0, false
	}
	return max(0, seconds(at)-prev), true
}

// String describes the ramp, e.g. Ramp{Start: 1, End: 10, Over: 30 *
// time.Second} as
//
//	ramp(linear 1/s→10/s over 30s)
//
// with ", burstiness=k" before the closing parenthesis when k is not 1.
func (r Ramp) String() string {
	shape := "linear"
	if r.Exponential {
		shape = "exponential"
	}
	s := fmt.Sprintf("ramp(%s %g/s→%g/s over %v", shape, r.Start, r.End, r.Over)
	if k := r.shape(); k != 1 {
		s += fmt.Sprintf(", burstiness=%g", k)
	}
	return s + ")"
}
