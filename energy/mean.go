package energy

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// A SampleKind says what the values of a power trace are. The zero value
// is instantaneous readings (RAPL power, nvidia-smi's power.draw); a
// positive Interval means each value is the mean power over the Interval
// that ends at the sample's instant, as macmon's sysPower is (exo's node
// metrics: a mean over the last second). The two are integrated
// differently: see Integrate.
type SampleKind struct {
	// Interval is the span each value is the mean over, ending at the
	// sample's instant; zero for instantaneous readings.
	Interval time.Duration
}

// IntervalMean returns the kind of samples that are each the mean power
// over d ending at their instant.
func IntervalMean(d time.Duration) SampleKind { return SampleKind{Interval: d} }

// IsMean reports whether samples of this kind are interval means.
func (k SampleKind) IsMean() bool { return k.Interval > 0 }

// String names the kind: "instantaneous" or "mean over 1s".
func (k SampleKind) String() string {
	if !k.IsMean() {
		return "instantaneous"
	}
	return "mean over " + k.Interval.String()
}

// A PowerKinder is a Source that declares what its MetricPower readings
// are. The Sampler finds it by type assertion and labels the power traces
// of the source's nodes with the kind (Recording.Power); a source that is
// not a PowerKinder reads instantaneous power.
type PowerKinder interface {
	PowerKind() SampleKind
}

// cumPoint is a point of the reconstructed cumulative energy: c joules at
// x seconds (after the window's start), known to within e joules.
type cumPoint struct{ x, c, e float64 }

// integrateMean integrates a trace of interval means over w; see Integrate.
func integrateMean(p PowerTrace, w Window) (Estimate, error) {
	s := p.Samples
	n := len(s)
	tau := p.Kind.Interval.Seconds()
	est := Estimate{Window: w, Samples: inWindow(s, w)}
	sec := func(t time.Time) float64 { return t.Sub(w.Start).Seconds() }
	S, E := 0.0, sec(w.End)
	pmin, pmax := s[0].Value, s[0].Value
	for _, x := range s[1:] {
		pmin, pmax = min(pmin, x.Value), max(pmax, x.Value)
	}

	// f is the latest sample at or before the window's start: its
	// interval is the last one that ends before the window. The
	// reconstruction starts there, with that interval's energy spread
	// evenly over it.
	f := sort.Search(n, func(i int) bool { return s[i].At.After(w.Start) }) - 1
	f = max(f, 0)
	ts := make([]float64, n)
	for i, x := range s {
		ts[i] = sec(x.At)
	}
	// means returns the range of the means of the samples whose intervals
	// overlap [a, b] or its neighbouring intervals: stamped in
	// [a − τ, b + 2τ]. A change sharper than the means resolve (a step)
	// shows fully only in means one interval away.
	means := func(a, b float64) (float64, float64) {
		lo, hi := math.Inf(1), math.Inf(-1)
		for i := sort.SearchFloat64s(ts, a-tau); i < n && ts[i] <= b+2*tau; i++ {
			lo, hi = min(lo, s[i].Value), max(hi, s[i].Value)
		}
		return lo, hi
	}
	pts := []cumPoint{{x: sec(s[f].At) - tau}, {x: sec(s[f].At), c: tau * s[f].Value}}
	var clamped float64
	// Points are added one interval past End, so that the step holding
	// End has neighbours to bound it by.
	for k := f + 1; k < n && pts[len(pts)-1].x < E+tau; k++ {
		tk, v := sec(s[k].At), s[k].Value
		a := tk - tau
		last := pts[len(pts)-1]
		var ca, ea float64
		if a >= last.x {
			// The sample's interval starts after the last known point
			// (polls slower than τ): the gap is taken to hold the mean of
			// the two means beside it, and bounded by the range of the
			// means of the samples around it.
			gap := a - last.x
			prev := s[k-1].Value
			mid := (prev + v) / 2
			lo, hi := min(prev, v), max(prev, v)
			for j := max(k-2, 0); j <= min(k+1, n-1); j++ {
				lo, hi = min(lo, s[j].Value), max(hi, s[j].Value)
			}
			ca = last.c + gap*mid
			ea = last.e + gap*max(mid-lo, hi-mid)
			if gap > 0 {
				pts = append(pts, cumPoint{x: a, c: ca, e: ea})
			}
		} else {
			ca, ea = cumAt(pts, a, means)
		}
		ck, ek := ca+tau*v, ea
		if ck < last.c {
			// Means that overlap must not imply negative energy; samples
			// that disagree so (mis-stamped, noisy) are clamped.
			ek += last.c - ck
			clamped += last.c - ck
			ck = last.c
		}
		pts = append(pts, cumPoint{x: tk, c: ck, e: ek})
	}
	if clamped > 0 {
		est.Warnings = append(est.Warnings, fmt.Errorf("%w: node %q: interval means that imply %.6g J of negative energy, clamped",
			ErrInvalidTrace, p.Node, clamped))
	}

	first, last := pts[0], pts[len(pts)-1]
	// cum returns C(x) and its error, holding the edge means past the
	// reconstructed span.
	cum := func(x float64) (float64, float64) {
		switch {
		case x < first.x:
			l := first.x - x
			est.Bound += l * (pmax - pmin)
			return -l * s[f].Value, 0
		case x > last.x:
			l := x - last.x
			est.Bound += l * (pmax - pmin)
			return last.c + l*s[n-1].Value, last.e
		}
		return cumAt(pts, x, means)
	}
	if S < first.x {
		est.Warnings = append(est.Warnings, fmt.Errorf("%w: node %q: window starts %.6gs before the first sample's interval; its mean %g W held",
			ErrExtrapolated, p.Node, first.x-S, s[f].Value))
	}
	if E > last.x {
		est.Warnings = append(est.Warnings, fmt.Errorf("%w: node %q: window ends %.6gs after the last sample; its mean %g W held",
			ErrExtrapolated, p.Node, E-last.x, s[n-1].Value))
	}
	cs, es := cum(S)
	ce, ee := cum(E)
	est.Joules = ce - cs
	est.Bound += es + ee
	if n == 1 && w.Duration() > 0 && (S < first.x || E > last.x) {
		est.Warnings = append(est.Warnings, fmt.Errorf("%w: node %q: %g W, the mean of one interval, held over %.6gs",
			ErrSingleSample, p.Node, s[0].Value, w.Duration().Seconds()))
	}
	return est, nil
}

// cumAt interpolates the cumulative energy at x on the line between the
// known points around it (the power constant between them) and bounds the
// error: the points' own errors, interpolated, plus
//
//	(x − xᵢ)(xᵢ₊₁ − x)/(xᵢ₊₁ − xᵢ) · (hi − lo)
//
// where [lo, hi] is the range of the mean powers of the step holding x and
// its two neighbours, and of the samples whose intervals overlap the step
// (means): the assumption is that within a step the power stays within
// what the means around it show.
func cumAt(pts []cumPoint, x float64, means func(a, b float64) (float64, float64)) (float64, float64) {
	i := sort.Search(len(pts), func(i int) bool { return pts[i].x > x }) - 1
	i = min(max(i, 0), len(pts)-2)
	a, b := pts[i], pts[i+1]
	h := b.x - a.x
	if h <= 0 {
		return a.c, a.e
	}
	u := (x - a.x) / h
	slope := func(j int) float64 { return (pts[j+1].c - pts[j].c) / (pts[j+1].x - pts[j].x) }
	lo, hi := means(a.x, b.x)
	lo, hi = min(lo, slope(i)), max(hi, slope(i))
	for _, j := range [2]int{i - 1, i + 1} {
		if j >= 0 && j+1 < len(pts) && pts[j+1].x > pts[j].x {
			lo, hi = min(lo, slope(j)), max(hi, slope(j))
		}
	}
	c := a.c + (b.c-a.c)*u
	e := a.e + (b.e-a.e)*u + (x-a.x)*(b.x-x)/h*(hi-lo)
	return c, e
}
