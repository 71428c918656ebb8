package energy

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"gonum.org/v1/gonum/integrate"
)

// gapFactor is how many times the trace's median interval an interval
// inside the window may last before Integrate warns of a gap.
const gapFactor = 3

// Integrate returns the energy of the power trace over exactly the window
// [Start, End], by the trapezoid rule (gonum's integrate.Trapezoidal) over
// the samples inside the window plus the two edges, whose power is
// interpolated linearly from the neighbouring samples:
//
//	P(t)  = Pᵢ + (Pᵢ₊₁ − Pᵢ)·(t − tᵢ)/(tᵢ₊₁ − tᵢ)      for tᵢ ≤ t ≤ tᵢ₊₁
//	E     = Σ over consecutive points (t, P) of (tₖ₊₁ − tₖ)·(Pₖ + Pₖ₊₁)/2
//
// where the points are (Start, P(Start)), every sample strictly inside,
// (End, P(End)). On a trace whose true power is piecewise linear with
// every breakpoint sampled, E is exact. Since the interpolated edge values
// lie on the lines between samples, splitting a window at any instant and
// adding the halves gives the whole window's E (see Split).
//
// Near the ends of the trace:
//   - a window that starts before the first sample or ends after the last
//     holds the edge sample's power over the uncovered part and adds an
//     ErrExtrapolated warning;
//   - a trace of one sample gives P₀ × (End − Start), an ErrSingleSample
//     warning and Bound = +Inf;
//   - an interval inside the window longer than 3 × the trace's median
//     interval adds an ErrGap warning.
//
// For instantaneous samples, Bound is a worst-case error that follows from
// the samples, under the assumption that between two samples tᵢ, tᵢ₊₁ (h = tᵢ₊₁ − tᵢ apart) the
// true power either stays within [min(Pᵢ, Pᵢ₊₁), max(Pᵢ, Pᵢ₊₁)] (a step or
// any monotone change), or departs from the line between them no more than
// a curve of curvature Mᵢ would. For each piece [a, b] of an interval that
// the window covers, with Ā the mean of the interpolated values at a and b
// and u measured from tᵢ:
//
//	range term      (b − a) · max(Ā − min(Pᵢ, Pᵢ₊₁), max(Pᵢ, Pᵢ₊₁) − Ā)
//	curvature term  (Mᵢ/2) · ∫ₐᵇ u(h − u) du   (= Mᵢh³/12 for a whole interval)
//	Mᵢ              largest |second divided difference| × 2 of the sample
//	                triples centred on tᵢ and tᵢ₊₁ (0 with two samples)
//
// For a whole interval the range term is h·|Pᵢ₊₁ − Pᵢ|/2, so a trace
// sampled Δ apart has a bound of about Δ/2 × the total variation of the
// sampled power. Over an extrapolated part of length L the bound is
// L × (max P − min P) of the whole trace: the uncovered power is assumed
// to stay within the range the trace saw. The bound is honest only as far
// as those assumptions are: a spike shorter than the sampling interval
// that falls between two samples is invisible to any method that reads
// the samples, and Mᵢ is an estimate from the samples, not a guarantee.
//
// A trace whose Kind is IntervalMean(τ) holds means: the value stamped t
// is (1/τ)·∫ P over [t − τ, t]. Treating such values as instantaneous
// shifts the power τ/2 late and smooths its edges, which loses about half
// the energy of a window as short as τ. Integrate instead reconstructs the
// cumulative energy C, starting from the latest sample at or before Start
// (its interval's energy spread evenly over it) and adding each later
// sample by
//
//	C(tₖ) = C(tₖ − τ) + τ·Pₖ
//
// with C(tₖ − τ) interpolated linearly between the points already known
// (when sample intervals leave a gap, polls slower than τ, the gap holds
// the mean of the two means beside it), and returns C(End) − C(Start).
// Overlapping means (polls faster than τ) thus resolve power finer than τ.
// The result is exact, for any curve, when the samples' intervals tile
// time (polls every τ) or every tₖ − τ falls on an earlier instant (polls
// every τ/m), the power is steady over the interval before Start's
// sample, and Start and End are sample instants. Past the reconstructed
// span the edge mean is held, with an ErrExtrapolated warning; means that
// would imply negative energy are clamped, with an ErrInvalidTrace
// warning.
//
// For interval means, Bound is not an estimate but the exact worst case:
// the largest distance from Joules to the energy over the window of any
// power curve consistent with the samples (computed as the range of
// C(End) − C(Start) under difference constraints; meanEnergyRange in
// mean.go spells them out). A curve is consistent when
//   - each sample's value is its exact mean over an interval of τ whose
//     end lies within StampError of the sample's instant (the Sampler sets
//     StampError to half its longest Read; the sim answers within the
//     Read);
//   - inside any sample's interval, its power lies within the trace's
//     Range: [Min, Max] as the source declares them (PowerRanger), else
//     only ≥ 0, so a step, a pulse or any shape inside an interval is
//     covered however sharp;
//   - over a span no sample's interval covers for certain (a gap between
//     polls slower than τ, a sliver between intervals, the window's parts
//     before the first interval or after the last), its power lies within
//     the declared Range, or without one between the least and the
//     greatest mean of the trace: this is the one assumption the samples
//     cannot check (past the trace, an ErrExtrapolated warning says it was
//     made).
//
// Means that contradict each other under these assumptions (a source that
// relays readings late: exo's macmon means reach its API up to a second
// or more after their interval ends, which StampError does not cover) are
// relaxed until consistent, with an ErrInvalidTrace warning that says by
// how many joules; the bound then covers a mean that far off. Without a
// declared Range, a window that ends inside an interval is bounded only by
// that interval's whole energy, so short windows against long means get
// wide bounds: that is what the samples know.
//
// Integrate validates the trace and the window first (PowerTrace.Validate)
// and returns their errors; it never panics on bad data.
func Integrate(p PowerTrace, w Window) (Estimate, error) {
	if err := w.validate(); err != nil {
		return Estimate{}, err
	}
	if err := p.Validate(); err != nil {
		return Estimate{}, err
	}
	if p.Kind.IsMean() {
		return integrateMean(p, w)
	}
	s := p.Samples
	n := len(s)
	dur := w.Duration().Seconds()
	est := Estimate{Window: w, Samples: inWindow(s, w)}
	if n == 1 {
		est.Joules = s[0].Value * dur
		est.Bound = math.Inf(1)
		if dur == 0 {
			est.Bound = 0
		}
		est.Warnings = append(est.Warnings, fmt.Errorf("%w: node %q: %g W at %s held over %.6gs, with no bound",
			ErrSingleSample, p.Node, s[0].Value, s[0].At.Format(time.RFC3339Nano), dur))
		return est, nil
	}

	first, last := s[0].At, s[n-1].At
	pmin, pmax := s[0].Value, s[0].Value
	for _, x := range s[1:] {
		pmin, pmax = min(pmin, x.Value), max(pmax, x.Value)
	}

	if w.Start.Before(first) {
		l := minTime(w.End, first).Sub(w.Start).Seconds()
		est.Joules += l * s[0].Value
		est.Bound += l * (pmax - pmin)
		est.Warnings = append(est.Warnings, fmt.Errorf("%w: node %q: window starts %.6gs before the first sample; %g W held over %.6gs",
			ErrExtrapolated, p.Node, first.Sub(w.Start).Seconds(), s[0].Value, l))
	}
	if w.End.After(last) {
		l := w.End.Sub(maxTime(w.Start, last)).Seconds()
		est.Joules += l * s[n-1].Value
		est.Bound += l * (pmax - pmin)
		est.Warnings = append(est.Warnings, fmt.Errorf("%w: node %q: window ends %.6gs after the last sample; %g W held over %.6gs",
			ErrExtrapolated, p.Node, w.End.Sub(last).Seconds(), s[n-1].Value, l))
	}

	a, b := maxTime(w.Start, first), minTime(w.End, last)
	if !a.Before(b) {
		return est, nil
	}
	// i0 is the interval [tᵢ₀, tᵢ₀₊₁] holding a.
	i0 := sort.Search(n, func(i int) bool { return s[i].At.After(a) }) - 1
	i0 = min(max(i0, 0), n-2)

	sec := func(t time.Time) float64 { return t.Sub(w.Start).Seconds() }
	xs := []float64{sec(a)}
	fs := []float64{interpolate(s, i0, a)}
	i1 := i0 // the interval holding b
	for j := i0 + 1; j < n && s[j].At.Before(b); j++ {
		xs = append(xs, sec(s[j].At))
		fs = append(fs, s[j].Value)
		i1 = j
	}
	i1 = min(i1, n-2)
	xs = append(xs, sec(b))
	fs = append(fs, interpolate(s, i1, b))
	est.Joules += integrate.Trapezoidal(xs, fs)

	med := medianInterval(s)
	worst := 0.0
	for i := i0; i <= i1; i++ {
		ti, tj := s[i].At, s[i+1].At
		h := tj.Sub(ti).Seconds()
		pa, pb := maxTime(a, ti), minTime(b, tj)
		ua, ub := pa.Sub(ti).Seconds(), pb.Sub(ti).Seconds()
		va, vb := interpolate(s, i, pa), interpolate(s, i, pb)
		mean := (va + vb) / 2
		lo, hi := min(s[i].Value, s[i+1].Value), max(s[i].Value, s[i+1].Value)
		est.Bound += (ub - ua) * max(mean-lo, hi-mean)
		m := curvature(s, i)
		est.Bound += m / 2 * (h*(ub*ub-ua*ua)/2 - (ub*ub*ub-ua*ua*ua)/3)
		worst = max(worst, h)
	}
	if worst > gapFactor*med {
		est.Warnings = append(est.Warnings, fmt.Errorf("%w: node %q: an interval of %.6gs inside the window, against a median of %.6gs",
			ErrGap, p.Node, worst, med))
	}
	return est, nil
}

// ExoWindowEnergy returns the energy of the power trace over the window
// the way exo's client computes it (SystemMetricsSampler.energy_between in
// bench/exo_bench.py): only the samples with Start ≤ t ≤ End count, and
// the parts of the window before the first of them and after the last are
// dropped:
//
//	≥ 2 samples inside   E = Σ (tₖ₊₁ − tₖ)·(Pₖ + Pₖ₊₁)/2 over those samples
//	1 sample inside      E = P × (End − Start)            (ErrSingleSample warning)
//	none inside          E = 0                            (ErrNoSamplesInWindow warning)
//
// It exists so that the difference from Integrate can be shown: with
// samples Δ apart it loses up to Δ of energy at each edge, and a window
// shorter than Δ often counts nothing. Bound is NaN: the method states no
// error. The trace and window are validated as for Integrate.
func ExoWindowEnergy(p PowerTrace, w Window) (Estimate, error) {
	if err := w.validate(); err != nil {
		return Estimate{}, err
	}
	if err := p.Validate(); err != nil {
		return Estimate{}, err
	}
	est := Estimate{Window: w, Bound: math.NaN()}
	var xs, fs []float64
	for _, x := range p.Samples {
		if !x.At.Before(w.Start) && !x.At.After(w.End) {
			xs = append(xs, x.At.Sub(w.Start).Seconds())
			fs = append(fs, x.Value)
		}
	}
	est.Samples = len(xs)
	switch len(xs) {
	case 0:
		est.Warnings = append(est.Warnings, fmt.Errorf("%w: node %q: exo's method counts 0 J over %.6gs", ErrNoSamplesInWindow, p.Node, w.Duration().Seconds()))
	case 1:
		est.Joules = fs[0] * w.Duration().Seconds()
		est.Warnings = append(est.Warnings, fmt.Errorf("%w: node %q: exo's method holds %g W over the window", ErrSingleSample, p.Node, fs[0]))
	default:
		est.Joules = integrate.Trapezoidal(xs, fs)
	}
	return est, nil
}

// interpolate returns the power at t on the line between samples i and i+1.
func interpolate(s []Sample, i int, t time.Time) float64 {
	h := s[i+1].At.Sub(s[i].At).Seconds()
	f := t.Sub(s[i].At).Seconds() / h
	return s[i].Value + (s[i+1].Value-s[i].Value)*f
}

// curvature returns Mᵢ for the interval [tᵢ, tᵢ₊₁]: the larger second-derivative
// estimate of the triples centred on its two ends, where a triple centred
// on j gives 2·[Pⱼ₋₁, Pⱼ, Pⱼ₊₁] = 2·(slopeⱼ − slopeⱼ₋₁)/(tⱼ₊₁ − tⱼ₋₁).
func curvature(s []Sample, i int) float64 {
	m := 0.0
	for _, j := range [2]int{i, i + 1} {
		if j < 1 || j > len(s)-2 {
			continue
		}
		h0 := s[j].At.Sub(s[j-1].At).Seconds()
		h1 := s[j+1].At.Sub(s[j].At).Seconds()
		d := 2 * ((s[j+1].Value-s[j].Value)/h1 - (s[j].Value-s[j-1].Value)/h0) / (h0 + h1)
		m = max(m, math.Abs(d))
	}
	return m
}

func medianInterval(s []Sample) float64 {
	d := make([]float64, len(s)-1)
	for i := range d {
		d[i] = s[i+1].At.Sub(s[i].At).Seconds()
	}
	slices.Sort(d)
	return d[len(d)/2]
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
