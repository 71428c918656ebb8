package energy

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// A CounterTrace is one node's cumulative energy counter over time:
// Samples hold the counter in joules (RAPL's energy_uj / 10⁶, NVML's total
// energy / 10³), in strictly increasing order of At.
//
// Max is the value at which the counter wraps back to zero (RAPL's
// max_energy_range_uj / 10⁶); 0 means it never wraps within a run (NVML's
// 64-bit millijoule counter). A reading below the one before it is taken
// as one wrap:
//
//	Δ = Jᵢ − Jᵢ₋₁           if Jᵢ ≥ Jᵢ₋₁
//	Δ = Jᵢ + Max − Jᵢ₋₁     otherwise
//
// Several wraps between two readings look exactly like one, and no reading
// can tell them apart: sample faster than Max / (peak power) — RAPL's
// package counter, typically 2³² µJ ≈ 4295 J, lasts about 43 s at 100 W.
// Unwrap warns (ErrMissedWrap) about any interval long enough for that to
// have happened at the highest power the trace shows.
type CounterTrace struct {
	Node    string
	Max     float64
	Samples []Sample
}

// Validate reports whether the counter trace can be used: at least one
// sample, instants strictly increasing, values finite and non-negative,
// no value above a non-zero Max, and no decrease when Max is 0. Errors wrap
// ErrInvalidTrace.
func (c CounterTrace) Validate() error {
	if math.IsNaN(c.Max) || math.IsInf(c.Max, 0) || c.Max < 0 {
		return fmt.Errorf("%w: node %q: expected a finite wraparound maximum ≥ 0, found %v J", ErrInvalidTrace, c.Node, c.Max)
	}
	if err := validateSamples(c.Node, c.Samples, "J"); err != nil {
		return err
	}
	for i, x := range c.Samples {
		if c.Max > 0 && x.Value > c.Max {
			return fmt.Errorf("%w: node %q: sample %d: expected a counter ≤ its maximum %g J, found %g J", ErrInvalidTrace, c.Node, i, c.Max, x.Value)
		}
		if c.Max == 0 && i > 0 && x.Value < c.Samples[i-1].Value {
			return fmt.Errorf("%w: node %q: counter went from %g J to %g J at sample %d and the trace has no wraparound maximum (was the driver reloaded?)",
				ErrInvalidTrace, c.Node, c.Samples[i-1].Value, x.Value, i)
		}
	}
	return nil
}

// Unwrap returns the counter as energy since its first sample, with wraps
// undone (see CounterTrace for the rule), and ErrMissedWrap warnings for
// intervals that could hide more than one wrap: those with
//
//	(largest average power over any interval) × (interval length) ≥ Max
func (c CounterTrace) Unwrap() ([]Sample, []error, error) {
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	s := c.Samples
	out := make([]Sample, len(s))
	out[0] = Sample{At: s[0].At}
	peak := 0.0
	for i := 1; i < len(s); i++ {
		d := s[i].Value - s[i-1].Value
		if d < 0 {
			d += c.Max
		}
		out[i] = Sample{At: s[i].At, Value: out[i-1].Value + d}
		peak = max(peak, d/s[i].At.Sub(s[i-1].At).Seconds())
	}
	var warns []error
	if c.Max > 0 {
		longest := 0.0
		for i := 1; i < len(s); i++ {
			longest = max(longest, s[i].At.Sub(s[i-1].At).Seconds())
		}
		if peak*longest >= c.Max {
			warns = append(warns, fmt.Errorf("%w: node %q: an interval of %.6gs at the trace's peak of %.6g W would draw %.6g J, at least the counter's range of %g J",
				ErrMissedWrap, c.Node, longest, peak, peak*longest, c.Max))
		}
	}
	return out, warns, nil
}

// Energy returns the energy the counter recorded over exactly the window
// [Start, End]: the difference of the unwrapped counter at End and at
// Start, each interpolated linearly between the neighbouring readings:
//
//	E(t) = Eᵢ + (Eᵢ₊₁ − Eᵢ)·(t − tᵢ)/(tᵢ₊₁ − tᵢ),   Joules = E(End) − E(Start)
//
// Readings inside the window are exact, so the only error is at the edges.
// A counter never decreases, so the true E(t) lies in [Eᵢ, Eᵢ₊₁] and
//
//	Bound = Σ over the two edges of max(E(t) − Eᵢ, Eᵢ₊₁ − E(t))
//
// (0 at an edge that falls on a reading). The counter's own resolution
// and update period are not in the bound. Past the ends of the trace the
// average power of the first or last interval is held (ErrExtrapolated
// warning) and the bound grows by L × (largest − smallest interval power)
// over the L seconds outside. A counter needs two readings: one gives
// ErrTooFewSamples.
func (c CounterTrace) Energy(w Window) (Estimate, error) {
	if err := w.validate(); err != nil {
		return Estimate{}, err
	}
	u, warns, err := c.Unwrap()
	if err != nil {
		return Estimate{}, err
	}
	n := len(u)
	if n < 2 {
		return Estimate{}, fmt.Errorf("%w: node %q: a counter needs two readings to give energy, found %d", ErrTooFewSamples, c.Node, n)
	}
	est := Estimate{Window: w, Samples: inWindow(u, w), Warnings: warns}
	pmin, pmax := math.Inf(1), math.Inf(-1)
	for i := 1; i < n; i++ {
		p := (u[i].Value - u[i-1].Value) / u[i].At.Sub(u[i-1].At).Seconds()
		pmin, pmax = min(pmin, p), max(pmax, p)
	}
	first, last := u[0].At, u[n-1].At
	// at returns the counter at t and the bound on its error.
	at := func(t time.Time) (float64, float64) {
		switch {
		case t.Before(first):
			p := (u[1].Value - u[0].Value) / u[1].At.Sub(u[0].At).Seconds()
			l := first.Sub(t).Seconds()
			return u[0].Value - p*l, l * (pmax - pmin)
		case t.After(last):
			p := (u[n-1].Value - u[n-2].Value) / u[n-1].At.Sub(u[n-2].At).Seconds()
			l := t.Sub(last).Seconds()
			return u[n-1].Value + p*l, l * (pmax - pmin)
		}
		// i is the interval [tᵢ, tᵢ₊₁] holding t.
		i := sort.Search(n, func(k int) bool { return u[k].At.After(t) }) - 1
		i = min(max(i, 0), n-2)
		e := interpolate(u, i, t)
		if t.Equal(u[i].At) || t.Equal(u[i+1].At) {
			return e, 0
		}
		return e, max(e-u[i].Value, u[i+1].Value-e)
	}
	e0, b0 := at(w.Start)
	e1, b1 := at(w.End)
	est.Joules = e1 - e0
	est.Bound = b0 + b1
	if w.Start.Before(first) {
		est.Warnings = append(est.Warnings, fmt.Errorf("%w: node %q: window starts %.6gs before the first reading; the first interval's power held",
			ErrExtrapolated, c.Node, first.Sub(w.Start).Seconds()))
	}
	if w.End.After(last) {
		est.Warnings = append(est.Warnings, fmt.Errorf("%w: node %q: window ends %.6gs after the last reading; the last interval's power held",
			ErrExtrapolated, c.Node, w.End.Sub(last).Seconds()))
	}
	return est, nil
}

// Power returns the average power of each interval between readings,
// stamped at the interval's midpoint:
//
//	Pᵢ = (Eᵢ₊₁ − Eᵢ) / (tᵢ₊₁ − tᵢ)  at (tᵢ + tᵢ₊₁)/2
//
// with wraps undone as Unwrap does (its warnings are returned too). A
// trace of one reading gives an empty PowerTrace.
func (c CounterTrace) Power() (PowerTrace, []error, error) {
	u, warns, err := c.Unwrap()
	if err != nil {
		return PowerTrace{}, nil, err
	}
	p := PowerTrace{Node: c.Node}
	for i := 1; i < len(u); i++ {
		h := u[i].At.Sub(u[i-1].At)
		p.Samples = append(p.Samples, Sample{
			At:    u[i-1].At.Add(h / 2),
			Value: (u[i].Value - u[i-1].Value) / h.Seconds(),
		})
	}
	return p, warns, nil
}
