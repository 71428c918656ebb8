package concurrency

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// Arrivals is a schedule of request arrivals for an open loop.
//
// Next returns the gap between the previous arrival's intended instant and
// the next one's, given prev, the previous arrival's intended offset from
// the start (0 when n is 0), and n, the number of arrivals scheduled so
// far. For n = 0 the gap is from the start. ok = false ends the schedule.
// Intended instants are the running sum of gaps, so a schedule never
// depends on how late the requests actually left: that is what makes the
// load open. A negative gap is treated as 0, with a warning.
//
// Every implementation in this package puts its first arrival at the start
// (gap 0 for n = 0), as vegeta's pacers and vLLM's benchmark do, so a run's
// first request is not held back by a random draw. Implementations that
// draw random numbers are not safe for concurrent use (neither is a
// rand.Source); a runner calls Next from one goroutine.
type Arrivals interface {
	Next(prev time.Duration, n int) (gap time.Duration, ok bool)
}

// ArrivalsFunc adapts a function to Arrivals.
type ArrivalsFunc func(prev time.Duration, n int) (gap time.Duration, ok bool)

// Next returns f(prev, n).
func (f ArrivalsFunc) Next(prev time.Duration, n int) (time.Duration, bool) { return f(prev, n) }

var (
	_ Arrivals = ArrivalsFunc(nil)
	_ Arrivals = Poisson{}
	_ Arrivals = Gamma{}
	_ Arrivals = Constant{}
	_ Arrivals = Replay{}
)

// Poisson arrivals: independent exponential gaps of mean 1/Rate seconds
// (density Rate·e^(−Rate·t)), a Poisson process of Rate requests per
// second. Gaps are drawn with gonum's distuv.Exponential from Src; a nil Src
// means math/rand/v2's global source, randomly seeded, so the schedule
// differs on every run. Set Src (rand.NewPCG(seed1, seed2)) to reproduce a
// schedule exactly. A Rate that is not positive schedules nothing.
type Poisson struct {
	Rate float64 // requests per second
	Src  rand.Source
}

// Next draws the next exponential gap.
func (p Poisson) Next(_ time.Duration, n int) (time.Duration, bool) {
	if !(p.Rate > 0) {
		return 0, false
	}
	if n == 0 {
		return 0, true
	}
	return seconds(distuv.Exponential{Rate: p.Rate, Src: p.Src}.Rand()), true
}

// String describes the process, e.g. Poisson{Rate: 10} as
//
//	poisson(rate=10/s)
func (p Poisson) String() string { return fmt.Sprintf("poisson(rate=%g/s)", p.Rate) }

// Gamma arrivals: independent gamma-distributed gaps with shape
// k = Burstiness and rate k·Rate, so that
//
//	mean gap = k / (k·Rate) = 1/Rate,   coefficient of variation = 1/√k.
//
// Burstiness 1 is a Poisson process (the gamma of shape 1 is the
// exponential; with the same Src the two draw the same gaps); below 1
// arrivals clump into bursts separated by lulls, above 1 they are more
// regular than Poisson, and as k grows they approach Constant. This is the
// burstiness factor of vLLM's benchmark_serving. A Burstiness that is not
// positive means 1. Gaps come from gonum's distuv.Gamma with Src; a nil Src
// means math/rand/v2's global source (a different schedule every run). A
// Rate that is not positive schedules nothing.
type Gamma struct {
	Rate       float64 // requests per second
	Burstiness float64 // shape k; ≤ 0 means 1
	Src        rand.Source
}

func (g Gamma) shape() float64 {
	if !(g.Burstiness > 0) {
		return 1
	}
	return g.Burstiness
}

// Next draws the next gamma gap.
func (g Gamma) Next(_ time.Duration, n int) (time.Duration, bool) {
	if !(g.Rate > 0) {
		return 0, false
	}
	if n == 0 {
		return 0, true
	}
	k := g.shape()
	return seconds(distuv.Gamma{Alpha: k, Beta: k * g.Rate, Src: g.Src}.Rand()), true
}

// String describes the process, e.g. Gamma{Rate: 10, Burstiness: 0.5} as
//
//	gamma(rate=10/s, burstiness=0.5)
func (g Gamma) String() string {
	return fmt.Sprintf("gamma(rate=%g/s, burstiness=%g)", g.Rate, g.shape())
}

// Constant arrivals: arrival n at exactly n/Rate seconds from the start,
// rounded to the nanosecond (each offset is computed from n, so rounding
// does not accumulate). A Rate that is not positive schedules nothing.
type Constant struct {
	Rate float64 // requests per second
}

// Next returns the gap to arrival n's instant n/Rate.
func (c Constant) Next(prev time.Duration, n int) (time.Duration, bool) {
	if !(c.Rate > 0) {
		return 0, false
	}
	return max(0, seconds(float64(n)/c.Rate)-prev), true
}

// String describes the process, e.g. Constant{Rate: 4} as
//
//	constant(rate=4/s)
func (c Constant) String() string { return fmt.Sprintf("constant(rate=%g/s)", c.Rate) }

// Replay arrivals: the recorded offsets, in order, one arrival each
// (arrival n at Offsets[n]); the schedule ends after the last. Offsets
// should not decrease; a decrease gives a negative gap, which a runner sends
// at once with a warning.
type Replay struct {
	Offsets []time.Duration
}

// Next returns the gap to Offsets[n].
func (r Replay) Next(prev time.Duration, n int) (time.Duration, bool) {
	if n < 0 || n >= len(r.Offsets) {
		return 0, false
	}
	return r.Offsets[n] - prev, true
}

// String describes the trace, e.g. Replay{Offsets: []time.Duration{0,
// time.Second, 1500 * time.Millisecond}} as
//
//	replay(3 arrivals over 1.5s)
func (r Replay) String() string {
	var span time.Duration
	if len(r.Offsets) > 0 {
		span = r.Offsets[len(r.Offsets)-1] - r.Offsets[0]
	}
	return fmt.Sprintf("replay(%d arrivals over %v)", len(r.Offsets), span)
}

// seconds converts seconds to a Duration, rounding to the nanosecond and
// saturating at the largest Duration.
func seconds(s float64) time.Duration {
	ns := math.Round(s * 1e9)
	if ns >= math.MaxInt64 || math.IsNaN(ns) {
		return math.MaxInt64
	}
	if ns <= math.MinInt64 {
		return math.MinInt64
	}
	return time.Duration(ns)
}

// scheduler walks an Arrivals within a count and a duration bound.
type scheduler struct {
	a      Arrivals
	count  int           // ≤ 0: no bound
	within time.Duration // ≤ 0: no bound
	n      int
	prev   time.Duration
}

// next returns the intended offset of the next arrival, or stop = true and
// why. warn is non-nil when the arrivals gave a negative gap.
func (s *scheduler) next() (at time.Duration, stop bool, why StopReason, warn error) {
	if s.count > 0 && s.n >= s.count {
		return 0, true, StopCount, nil
	}
	gap, ok := s.a.Next(s.prev, s.n)
	if !ok {
		return 0, true, StopArrivals, nil
	}
	if gap < 0 {
		warn = fmt.Errorf("concurrency: arrival %d: %v gave a negative gap %v; expected ≥ 0, sent at once", s.n, describe(s.a), gap)
		gap = 0
	}
	at = s.prev + gap
	if at < s.prev { // overflow
		at = math.MaxInt64
	}
	if s.within > 0 && at >= s.within {
		return 0, true, StopDuration, warn
	}
	s.prev = at
	s.n++
	return at, false, 0, warn
}

// Schedule returns the intended offsets from the start that a produces,
// stopping after count arrivals, before the first offset at or beyond
// within, or when a ends, whichever comes first, and why it stopped. It is
// exactly the schedule an open loop with the same bounds follows (given a
// freshly seeded Src). Warnings note negative gaps, which are treated as 0.
// Schedule panics if neither count nor within is positive, as the schedule
// might never end.
func Schedule(a Arrivals, count int, within time.Duration) (offsets []time.Duration, why StopReason, warnings []error) {
	if count <= 0 && within <= 0 {
		panic("concurrency: Schedule needs a count or a duration bound; got neither")
	}
	s := scheduler{a: a, count: count, within: within}
	for {
		at, stop, reason, warn := s.next()
		if warn != nil {
			warnings = append(warnings, warn)
		}
		if stop {
			return offsets, reason, warnings
		}
		offsets = append(offsets, at)
	}
}

// describe names an Arrivals for a message: its String when it has one,
// else its type.
func describe(a Arrivals) string {
	if s, ok := a.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", a)
}
