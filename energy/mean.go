package energy

import (
	"fmt"
	"math"
	"slices"
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

// A PowerRange is the least and the greatest power a node can draw, in
// watts: its idle floor and its peak. Integrate uses it to bound the power
// that interval means cannot resolve (a step inside an interval, a gap
// between intervals). The zero value declares nothing: Min is then 0 (no
// node draws negative power) and Max unknown.
type PowerRange struct {
	// Min is the least power the node draws, ≥ 0.
	Min float64
	// Max is the greatest power the node draws; 0 when unknown.
	Max float64
}

// Known reports whether the range declares a maximum.
func (r PowerRange) Known() bool { return r.Max > 0 }

func (r PowerRange) validate(node string) error {
	if math.IsNaN(r.Min) || math.IsInf(r.Min, 0) || r.Min < 0 || math.IsNaN(r.Max) || math.IsInf(r.Max, 0) || r.Max < 0 {
		return fmt.Errorf("%w: node %q: power range [%v, %v] W: expected finite values ≥ 0", ErrInvalidTrace, node, r.Min, r.Max)
	}
	if r.Known() && r.Max < r.Min {
		return fmt.Errorf("%w: node %q: power range [%v, %v] W: expected Max ≥ Min", ErrInvalidTrace, node, r.Min, r.Max)
	}
	return nil
}

// A PowerRanger is a Source that declares the power range of each node it
// reads. The Sampler finds it by type assertion and sets the Range of the
// node's power trace (Recording.Power); the simulated engine's hardware
// has one (idle to idle plus full compute and memory power), a real
// machine's comes from its specification.
type PowerRanger interface {
	PowerRange(node string) PowerRange
}

// cumPoint is a point of the reconstructed cumulative energy: c joules at
// x seconds (after the window's start).
type cumPoint struct{ x, c float64 }

// integrateMean integrates a trace of interval means over w; see Integrate.
func integrateMean(p PowerTrace, w Window) (Estimate, error) {
	s := p.Samples
	n := len(s)
	tau := p.Kind.Interval.Seconds()
	est := Estimate{Window: w, Samples: inWindow(s, w)}
	sec := func(t time.Time) float64 { return t.Sub(w.Start).Seconds() }
	S, E := 0.0, sec(w.End)

	// f is the latest sample at or before the window's start: its
	// interval is the last one that ends before the window. The
	// reconstruction starts there, with that interval's energy spread
	// evenly over it.
	f := sort.Search(n, func(i int) bool { return s[i].At.After(w.Start) }) - 1
	f = max(f, 0)
	pts := []cumPoint{{x: sec(s[f].At) - tau}, {x: sec(s[f].At), c: tau * s[f].Value}}
	var clamped float64
	for k := f + 1; k < n && pts[len(pts)-1].x < E; k++ {
		tk, v := sec(s[k].At), s[k].Value
		a := tk - tau
		last := pts[len(pts)-1]
		var ca float64
		if a >= last.x {
			// The sample's interval starts after the last known point
			// (polls slower than τ): the gap is taken to hold the mean of
			// the two means beside it.
			ca = last.c + (a-last.x)*(s[k-1].Value+v)/2
			if a > last.x {
				pts = append(pts, cumPoint{x: a, c: ca})
			}
		} else {
			ca = cumAt(pts, a)
		}
		ck := ca + tau*v
		if ck < last.c {
			// Means that overlap must not imply negative energy; samples
			// that disagree so (mis-stamped, noisy) are clamped.
			clamped += last.c - ck
			ck = last.c
		}
		pts = append(pts, cumPoint{x: tk, c: ck})
	}
	if clamped > 0 {
		est.Warnings = append(est.Warnings, fmt.Errorf("%w: node %q: interval means that imply %.6g J of negative energy, clamped",
			ErrInvalidTrace, p.Node, clamped))
	}

	first, last := pts[0], pts[len(pts)-1]
	// cum returns C(x), holding the edge means past the reconstructed
	// span.
	cum := func(x float64) float64 {
		switch {
		case x < first.x:
			return -(first.x - x) * s[f].Value
		case x > last.x:
			return last.c + (x-last.x)*s[n-1].Value
		}
		return cumAt(pts, x)
	}
	if S < first.x {
		est.Warnings = append(est.Warnings, fmt.Errorf("%w: node %q: window starts %.6gs before the first sample's interval; its mean %g W held",
			ErrExtrapolated, p.Node, first.x-S, s[f].Value))
	}
	if E > last.x {
		est.Warnings = append(est.Warnings, fmt.Errorf("%w: node %q: window ends %.6gs after the last sample; its mean %g W held",
			ErrExtrapolated, p.Node, E-last.x, s[n-1].Value))
	}
	est.Joules = cum(E) - cum(S)
	if n == 1 && w.Duration() > 0 && (S < first.x || E > last.x) {
		est.Warnings = append(est.Warnings, fmt.Errorf("%w: node %q: %g W, the mean of one interval, held over %.6gs",
			ErrSingleSample, p.Node, s[0].Value, w.Duration().Seconds()))
	}

	lo, hi, relaxed := meanEnergyRange(p, w)
	switch {
	case math.IsNaN(lo):
		est.Bound = math.Inf(1)
		est.Warnings = append(est.Warnings, fmt.Errorf("%w: node %q: the interval means contradict each other or the power range by more than they can be relaxed; no bound",
			ErrInvalidTrace, p.Node))
	default:
		est.Bound = max(est.Joules-lo, hi-est.Joules, 0)
		if relaxed > 0 {
			est.Warnings = append(est.Warnings, fmt.Errorf("%w: node %q: the interval means contradict each other or the power range by up to %.6g J each; bounded as if each were that uncertain",
				ErrInvalidTrace, p.Node, relaxed))
		}
	}
	return est, nil
}

// cumAt interpolates the cumulative energy at x on the line between the
// known points around it (the power constant between them).
func cumAt(pts []cumPoint, x float64) float64 {
	i := sort.Search(len(pts), func(i int) bool { return pts[i].x > x }) - 1
	i = min(max(i, 0), len(pts)-2)
	a, b := pts[i], pts[i+1]
	h := b.x - a.x
	if h <= 0 {
		return a.c
	}
	return a.c + (b.c-a.c)*(x-a.x)/h
}

// meanEnergyRange returns the least and the greatest energy over w of any
// power curve consistent with the trace: the exact range, not an estimate
// of it. Let C be the curve's cumulative energy, and let the breakpoints
// be w's edges and every instant a sample's interval may start or end.
// The curve is consistent when
//
//	C(b) − C(a)        ∈ [Lo·(b − a), Hi·(b − a)]   between neighbouring breakpoints a < b
//	C(t − d) − C(t + d − τ) ≤ τ·P                   for each sample (t, P): its interval's
//	C(t + d) − C(t − d − τ) ≥ τ·P                   end lies within t ± d (d = StampError)
//
// where [Lo, Hi] is the trace's Range over a span inside some sample's
// certain interval [t + d − τ, t − d] (Min, and Max or +Inf when unknown),
// and over a span no sample covers, the Range when Max is known, else
// the least and greatest mean of the trace. Every constraint is a bound
// on a difference of two values of C, so the greatest C(End) − C(Start)
// is the shortest path from Start to End in the graph with an edge u → v
// of weight w for each constraint C(v) − C(u) ≤ w, and the least is minus
// the shortest path from End to Start (Bellman–Ford: weights can be
// negative). Only samples whose intervals reach within 3τ of the window
// enter: leaving constraints out widens the range, never narrows it.
//
// A negative cycle means the constraints contradict each other (readings
// mis-stamped by more than d, or outside the declared range); each
// sample's τ·P is then taken as uncertain by a tolerance that grows ten
// times at a time, from 10⁻⁹ of the largest τ·P up to all of it, and
// relaxed returns the tolerance used, 0 when the first sufficed. Without
// any consistent tolerance lo and hi are NaN. Both are finite otherwise:
// every span is bounded by a declared Max, a sample's certain interval or
// the means' range.
func meanEnergyRange(p PowerTrace, w Window) (lo, hi, relaxed float64) {
	s := p.Samples
	tau := p.Kind.Interval.Seconds()
	d := p.StampError.Seconds()
	sec := func(t time.Time) float64 { return t.Sub(w.Start).Seconds() }
	S, E := 0.0, sec(w.End)
	pmin, pmax := math.Inf(1), 0.0
	for _, x := range s {
		pmin, pmax = min(pmin, x.Value), max(pmax, x.Value)
	}

	type cons struct {
		t, v float64
	}
	var cs []cons
	xs := []float64{S, E}
	for _, x := range s {
		t := sec(x.At)
		if t+d < S-3*tau || t-d-tau > E+3*tau {
			continue
		}
		cs = append(cs, cons{t, x.Value})
		xs = append(xs, t-d-tau, t+d)
		if d > 0 && t-d > t+d-tau {
			xs = append(xs, t+d-tau, t-d)
		}
	}
	slices.Sort(xs)
	xs = slices.Compact(xs)
	idx := func(x float64) int {
		i, _ := slices.BinarySearch(xs, x)
		return i
	}
	m := len(xs)

	// covered[j] marks the span [xs[j], xs[j+1]] as inside some sample's
	// certain interval.
	cover := make([]int, m+1)
	for _, c := range cs {
		a, b := c.t+d-tau, c.t-d
		if b > a {
			cover[idx(a)]++
			cover[idx(b)]--
		}
	}
	type edge struct {
		to int
		w  float64
	}
	out := make([][]edge, m)
	rg := p.Range
	open := 0
	for j := 0; j+1 < m; j++ {
		open += cover[j]
		h := xs[j+1] - xs[j]
		l, u := rg.Min, math.Inf(1)
		switch {
		case rg.Known():
			u = rg.Max
		case open == 0:
			l, u = max(l, pmin), max(pmax, l)
		}
		if !math.IsInf(u, 1) {
			out[j] = append(out[j], edge{j + 1, u * h})
		}
		out[j+1] = append(out[j+1], edge{j, -l * h})
	}
	// Sample edges are appended after the span edges; their weights are
	// set per tolerance below.
	type sampleEdge struct {
		from, to int
		sign     float64 // +1: ≤ τP, −1: ≥ τP
		v        float64
	}
	var se []sampleEdge
	for _, c := range cs {
		if c.t-d > c.t+d-tau {
			se = append(se, sampleEdge{idx(c.t + d - tau), idx(c.t - d), 1, tau * c.v})
		}
		se = append(se, sampleEdge{idx(c.t + d), idx(c.t - d - tau), -1, tau * c.v})
	}
	base := make([]int, m)
	for j := range out {
		base[j] = len(out[j])
	}

	si, ei := idx(S), idx(E)
	for tol := 1e-9 * max(tau*pmax, 1e-9); ; tol *= 10 {
		for j := range out {
			out[j] = out[j][:base[j]]
		}
		for _, e := range se {
			if e.sign > 0 {
				out[e.from] = append(out[e.from], edge{e.to, e.v + tol})
			} else {
				out[e.from] = append(out[e.from], edge{e.to, -e.v + tol})
			}
		}
		// dist returns the shortest path from src to dst, or NaN on a
		// negative cycle reachable from src.
		dist := func(src, dst int) float64 {
			dd := make([]float64, m)
			for i := range dd {
				dd[i] = math.Inf(1)
			}
			dd[src] = 0
			relax := func(u int) bool {
				ch := false
				if math.IsInf(dd[u], 1) {
					return false
				}
				for _, e := range out[u] {
					if v := dd[u] + e.w; v < dd[e.to]-1e-12*max(1, math.Abs(v)) {
						dd[e.to] = v
						ch = true
					}
				}
				return ch
			}
			for pass := 0; pass <= m; pass++ {
				ch := false
				for u := 0; u < m; u++ {
					ch = relax(u) || ch
				}
				for u := m - 1; u >= 0; u-- {
					ch = relax(u) || ch
				}
				if !ch {
					return dd[dst]
				}
			}
			return math.NaN()
		}
		up, down := dist(si, ei), dist(ei, si)
		if !math.IsNaN(up) && !math.IsNaN(down) {
			r := 0.0
			if tol > 1e-9*max(tau*pmax, 1e-9)*1.5 {
				r = tol
			}
			return -down, up, r
		}
		if tol > tau*pmax {
			return math.NaN(), math.NaN(), 0
		}
	}
}
