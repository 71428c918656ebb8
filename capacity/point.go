package capacity

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// analyzePoint analyses one run: its window's backlog slope and
// throughput, its state and its attainment. It also returns the
// throughput of each batch, which ServiceRate pools.
func analyzePoint(p Point, withSLO bool, o Options) (PointResult, []float64) {
	pr := PointResult{Rate: p.Rate, Requests: len(p.Spans), State: TooFew}
	if withSLO {
		pr.Attainment, pr.AttainmentLo, pr.AttainmentHi, pr.Meets = attainment(p.Good, p.Total, o.Attainment, o.Confidence)
	}
	if !math.IsNaN(p.Latency) && !math.IsInf(p.Latency, 0) && p.Latency > 0 {
		l := p.Latency
		pr.LatencyS = &l
	}
	thr := throughput(p.Spans, o.Bins)
	if len(thr) > 0 {
		pr.Throughput, pr.ThroughputLo, pr.ThroughputHi = meanInterval(thr, o.Confidence)
		if !finite(pr.Throughput, pr.ThroughputLo, pr.ThroughputHi) {
			// Instants too close for a rate (or too far apart): none.
			pr.Throughput, pr.ThroughputLo, pr.ThroughputHi, thr = 0, 0, 0, nil
		}
	}
	w, ok := window(p.Spans, o)
	if !ok {
		return pr, thr
	}
	pr.WindowS = w.b - w.a
	backlog := w.backlog(p.Spans)
	xs := make([]float64, w.k)
	for j := range xs {
		xs[j] = w.a + (float64(j)+0.5)*w.h
	}
	pr.Growth, pr.GrowthLo, pr.GrowthHi = slope(xs, backlog, o.Confidence)
	pr.GrowthShare = pr.Growth / p.Rate
	if !finite(pr.WindowS, pr.Growth, pr.GrowthLo, pr.GrowthHi, pr.GrowthShare) {
		pr.WindowS, pr.Growth, pr.GrowthLo, pr.GrowthHi, pr.GrowthShare = 0, 0, 0, 0, 0
		return pr, thr
	}
	limit := o.MinGrowth * p.Rate
	switch {
	case pr.GrowthLo > 0 && pr.Growth >= limit:
		pr.State = OverSaturated
	case pr.GrowthHi < limit:
		pr.State = Stable
	default:
		pr.State = Undecided
	}
	return pr, thr
}

// throughput returns the completion rate over the middle half of a run's
// completions (from the first quartile of their end instants to the
// third), cut into as many of bins batches as hold minBin completions
// each, at least one: the rate the server completes requests at while
// it works through the run, which at over-saturation is its service rate
// (the backlog keeps its batch full from the first quartile on, whether
// the requests arrived over seconds or at once) and below it the offered
// rate. Nil with fewer than minBin completions.
func throughput(spans []Span, bins int) []float64 {
	var ends []float64
	for _, s := range spans {
		if s.OK && !math.IsNaN(s.End) && !math.IsInf(s.End, 0) {
			ends = append(ends, s.End)
		}
	}
	if len(ends) < minBin {
		return nil
	}
	slices.Sort(ends)
	a, b := ends[len(ends)/4], ends[3*len(ends)/4]
	if !(b > a) {
		return nil
	}
	// Completions in (a, b]: one per gap between the quartiles' instants,
	// not one more.
	in := 0
	for _, e := range ends {
		if e > a && e <= b {
			in++
		}
	}
	k := max(min(bins, in/minBin), 1)
	h := (b - a) / float64(k)
	thr := make([]float64, k)
	for _, e := range ends {
		if e <= a || e > b {
			continue
		}
		j := min(int((e-a)/h), k-1)
		thr[j]++
	}
	for j := range thr {
		thr[j] /= h
	}
	return thr
}

// finite reports whether every v is neither NaN nor infinite.
func finite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// A span window is the analysed part of a run's arrival window, [a, b],
// cut into batches of width h.
type spanWindow struct {
	a, b, h float64
	k       int
}

// window is the arrival window of spans from Settle of the way in to the
// last intended send, cut into as many of Bins batches as hold minBin
// arrivals each on average; false when fewer than minBins would.
func window(spans []Span, o Options) (spanWindow, bool) {
	t0, t1 := math.Inf(1), math.Inf(-1)
	for _, s := range spans {
		if !math.IsNaN(s.Start) && !math.IsInf(s.Start, 0) {
			t0, t1 = min(t0, s.Start), max(t1, s.Start)
		}
	}
	if !(t1 > t0) {
		return spanWindow{}, false
	}
	a, b := t0+o.Settle*(t1-t0), t1
	in := 0
	for _, s := range spans {
		if s.Start >= a && s.Start <= b {
			in++
		}
	}
	k := min(o.Bins, in/minBin)
	h := (b - a) / float64(k)
	if k < minBins || !(h > 0) || !finite(h) {
		return spanWindow{}, false
	}
	return spanWindow{a: a, b: b, h: h, k: k}, true
}

// backlog returns each batch's time-averaged backlog: the requests meant
// to have gone and not yet ended, Σ overlap of [Start, End) with the
// batch / its width (a request that never ended stays in it).
func (w spanWindow) backlog(spans []Span) []float64 {
	k := w.k
	backlog := make([]float64, k)
	for _, s := range spans {
		if math.IsNaN(s.Start) || math.IsInf(s.Start, 0) {
			continue
		}
		end := s.End
		if math.IsNaN(end) || end < s.Start {
			end = math.Inf(1)
		}
		for j := range k {
			lo, hi := w.a+float64(j)*w.h, w.a+float64(j+1)*w.h
			if ov := min(end, hi) - max(s.Start, lo); ov > 0 {
				backlog[j] += ov
			}
		}
	}
	for j := range k {
		backlog[j] /= w.h
	}
	return backlog
}

// slope is the least-squares slope of ys on xs with its two-sided
// Student-t interval at level c (len − 2 degrees of freedom).
func slope(xs, ys []float64, c float64) (b, lo, hi float64) {
	_, b = stat.LinearRegression(xs, ys, nil, false)
	mx := stat.Mean(xs, nil)
	var sxx, rss float64
	a := stat.Mean(ys, nil) - b*mx
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		r := ys[i] - (a + b*xs[i])
		rss += r * r
	}
	dof := float64(len(xs) - 2)
	se := math.Sqrt(rss / dof / sxx)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: dof}.Quantile(1 - (1-c)/2)
	return b, b - t*se, b + t*se
}

// meanInterval is the mean of xs with its two-sided Student-t interval at
// level c (len − 1 degrees of freedom); the mean alone for one value.
func meanInterval(xs []float64, c float64) (m, lo, hi float64) {
	m = stat.Mean(xs, nil)
	if len(xs) < 2 {
		return m, m, m
	}
	se := stat.StdDev(xs, nil) / math.Sqrt(float64(len(xs)))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(xs) - 1)}.Quantile(1 - (1-c)/2)
	return m, m - t*se, m + t*se
}

// attainment is good/total with its Clopper–Pearson interval at level c
// and the verdict against target.
func attainment(good, total int, target, c float64) (p, lo, hi float64, verdict string) {
	if total == 0 {
		return 0, 0, 1, Unsure
	}
	p = float64(good) / float64(total)
	alpha := 1 - c
	lo, hi = 0, 1
	if good > 0 {
		lo = distuv.Beta{Alpha: float64(good), Beta: float64(total - good + 1)}.Quantile(alpha / 2)
	}
	if good < total {
		hi = distuv.Beta{Alpha: float64(good + 1), Beta: float64(total - good)}.Quantile(1 - alpha/2)
	}
	switch {
	case lo >= target:
		verdict = Meets
	case hi < target:
		verdict = Misses
	default:
		verdict = Unsure
	}
	return p, lo, hi, verdict
}

// serviceRate pools the batch throughputs of the over-saturated runs: the
// server's throughput when it cannot keep up.
func serviceRate(sat [][]float64, c float64) Interval {
	var all []float64
	for _, b := range sat {
		all = append(all, b...)
	}
	if len(all) < 2 {
		return Interval{Status: unknown}
	}
	m, lo, hi := meanInterval(all, c)
	return Interval{Status: "bracketed", Rate: m, Lo: max(lo, 0), Hi: hi}
}
