package metrics

import (
	"math"
	"sort"
	"strconv"
)

// Percentile is the q-quantile of a window's histogram, the order statistic
// x₍ₖ₎ with k = ⌈q·N⌉ (at least 1) of its N observations, as far as the
// buckets and the exact sum tell it. The fields nest:
//
//	Lower ≤ Min ≤ x₍ₖ₎ ≤ Max ≤ Upper
//
// Value is the figure Prometheus's histogram_quantile would give, which
// assumes the observations spread evenly over their bucket; print it only
// when Point is true ([Percentile.Format] does).
type Percentile struct {
	Q float64
	// Value is histogram_quantile's estimate: linear interpolation inside
	// the bucket (the lowest bucket from 0); in the +Inf bucket, the last
	// finite bound.
	Value float64
	// Lower and Upper bound the bucket holding x₍ₖ₎: (Lower, Upper], the
	// first bucket [0, Upper] (observations are taken to be non-negative
	// when its bound is; a first bound below 0 gives Lower −Inf).
	Lower, Upper float64
	// Closed says the interval includes Lower: the first bucket's 0.
	Closed bool
	// AtLeast marks x₍ₖ₎ in the +Inf bucket: Upper is +Inf, Value is Lower.
	AtLeast bool
	// Min and Max are the interval the bucket counts and the exact sum
	// allow x₍ₖ₎, within the bucket: finite even in the +Inf bucket.
	Min, Max float64
	// Point says Value is a figure to print: it lies in [Min, Max], outside
	// the +Inf bucket, and its bucket holds less than nine tenths of the
	// observations (where one bucket holds nearly all of them, an
	// interpolated point says only which q was asked).
	Point bool
	// Inconsistent says the sum contradicts the bucket counts (an
	// observation below 0 in a layout starting at a positive bound, a
	// server that adds to its sum what it does not count): Min and Max are
	// then the bucket's bounds.
	Inconsistent bool
}

// nearlyAll is the share of the observations in one bucket past which an
// interpolated point is not printed.
const nearlyAll = 0.9

// Quantile gives the q-quantile (0 ≤ q ≤ 1) of the histogram: false for an
// empty window or q outside [0, 1].
//
// The bucket is the first whose cumulative count reaches k = ⌈q·N⌉ (k ≥ 1,
// so q = 0 is the smallest observation's bucket; q·N within 10⁻⁹·N of an
// integer counts as that integer). Value interpolates in it at rank q·N as
// histogram_quantile does.
//
// Min and Max narrow the bucket with the exact sum S. Let bucket i hold
// nᵢ observations in (lᵢ, uᵢ], and bucket b hold x = x₍ₖ₎ as its r-th
// smallest (r = k − the count below b). Then the r − 1 observations of b
// below x are at most x and at least l_b, the n_b − r above it at least x
// and at most u_b, and those of every other bucket within (lᵢ, uᵢ]; so
//
//	S ≤ Σ_{i≠b} nᵢ·uᵢ + r·x + (n_b − r)·u_b
//	S ≥ Σ_{i≠b} nᵢ·lᵢ + (r − 1)·l_b + (n_b − r + 1)·x
//
// which bound x from below and above; each bound holds only where its
// terms are finite (an observation in the +Inf bucket lifts the first).
// The interval is intersected with the bucket and widened by 10⁻⁹ of the
// terms, the rounding of a sum the server adds in floating point and of a
// difference of two scrapes. Each bound is the best the counts and the
// sum allow: observations can be placed at it, or as near as a bucket's
// open lower bound lets them. With fractional counts the bucket alone is
// kept.
func (h Hist) Quantile(q float64) (Percentile, bool) {
	n := len(h.Buckets)
	if math.IsNaN(q) || q < 0 || q > 1 || n == 0 || !math.IsInf(h.Buckets[n-1].UpperBound, 1) {
		return Percentile{}, false
	}
	total := h.Buckets[n-1].Count
	if !(total > 0) || math.IsInf(total, 1) {
		return Percentile{}, false
	}
	k := max(math.Ceil(q*total-1e-9*total), 1)
	k = min(k, total)
	b := sort.Search(n, func(i int) bool { return h.Buckets[i].Count >= k })
	b = min(b, n-1)
	p := Percentile{Q: q, Upper: h.Buckets[b].UpperBound}
	p.Lower, p.Closed = h.lower(b)
	below := 0.0
	if b > 0 {
		below = h.Buckets[b-1].Count
	}
	in := h.Buckets[b].Count - below
	switch {
	case b == n-1:
		p.AtLeast = true
		p.Value = p.Lower
		if n == 1 {
			p.Value = 0
		}
	case b == 0 && p.Upper <= 0:
		p.Value = p.Upper
	default:
		p.Value = p.Lower
		if in > 0 && !math.IsInf(p.Lower, -1) {
			p.Value = p.Lower + (p.Upper-p.Lower)*(q*total-below)/in
		}
		p.Value = min(max(p.Value, p.Lower), p.Upper)
	}
	p.Min, p.Max = p.Lower, p.Upper
	if h.integral() && !math.IsNaN(h.Sum) && !math.IsInf(h.Sum, 0) {
		lo, hi := h.sumBounds(b, k-below, in)
		lo, hi = max(p.Min, lo), min(p.Max, hi)
		if lo > hi {
			p.Inconsistent = true
		} else {
			p.Min, p.Max = lo, hi
		}
	}
	p.Point = !p.AtLeast && p.Value >= p.Min && p.Value <= p.Max && in < nearlyAll*total
	return p, true
}

// lower is bucket i's lower bound, and whether it belongs to the bucket:
// the previous bound, or for the first bucket 0 (included) when its bound
// is not negative, −Inf otherwise.
func (h Hist) lower(i int) (float64, bool) {
	if i > 0 {
		return h.Buckets[i-1].UpperBound, false
	}
	if h.Buckets[0].UpperBound >= 0 {
		return 0, true
	}
	return math.Inf(-1), false
}

// integral reports whether every count is a whole number: the order
// statistics the sum bounds speak of exist.
func (h Hist) integral() bool {
	for _, b := range h.Buckets {
		if b.Count != math.Trunc(b.Count) {
			return false
		}
	}
	return true
}

// sumBounds bounds the r-th smallest of the nb observations of bucket b by
// the sum (see Quantile); ±Inf where a bound does not hold.
func (h Hist) sumBounds(b int, r, nb float64) (lo, hi float64) {
	lo, hi = math.Inf(-1), math.Inf(1)
	if r < 1 || r > nb {
		return lo, hi
	}
	var upOthers, lowOthers float64 // Σ nᵢ·uᵢ and Σ nᵢ·lᵢ over i ≠ b
	upInf, lowInf := false, false
	prev := 0.0
	for i, bk := range h.Buckets {
		ni := bk.Count - prev
		prev = bk.Count
		if i == b || ni <= 0 {
			continue
		}
		if u := bk.UpperBound; math.IsInf(u, 1) {
			upInf = true
		} else {
			upOthers += ni * u
		}
		if l, _ := h.lower(i); math.IsInf(l, -1) {
			lowInf = true
		} else {
			lowOthers += ni * l
		}
	}
	ub := h.Buckets[b].UpperBound
	lb, _ := h.lower(b)
	s := h.Sum
	// From above: the others as large as they may be.
	if above := nb - r; !upInf && (above == 0 || !math.IsInf(ub, 1)) {
		rest := 0.0
		if above > 0 {
			rest = above * ub
		}
		slack := 1e-9 * (math.Abs(s) + math.Abs(upOthers) + math.Abs(rest))
		lo = (s - upOthers - rest - slack) / r
	}
	// From below: the others as small as they may be.
	if under := r - 1; !lowInf && (under == 0 || !math.IsInf(lb, -1)) {
		rest := 0.0
		if under > 0 {
			rest = under * lb
		}
		slack := 1e-9 * (math.Abs(s) + math.Abs(lowOthers) + math.Abs(rest))
		hi = (s - lowOthers - rest + slack) / (nb - r + 1)
	}
	return lo, hi
}

// String formats the percentile in the histogram's unit with six
// significant digits; see Format.
func (p Percentile) String() string { return p.Format(1, 6) }

// Format writes the percentile for print, its values times scale (1000 for
// milliseconds of a histogram in seconds) with digits significant digits,
// the bounds rounded outward (Min down, Max up: "≤ 41.9" is never written
// for a Max of 41.94; see roundOut) and the point to the nearest, in the first of these
// forms that applies:
//
//	"v"            Min and Max print alike: the order statistic is known
//	"v [min, max]" Point: the interpolated value, and what the counts and the sum allow
//	"≤ max"        no point, and nothing rules out 0
//	"(min, max]"   no point; "[" where Min is above the bucket's lower bound
//	"≥ min"        the +Inf bucket, unbounded (no finite sum)
//
// It never prints a value the bucket counts and the sum rule out, and what
// it prints holds the order statistic wherever Min and Max do.
func (p Percentile) Format(scale float64, digits int) string {
	f := func(v float64) string { return strconv.FormatFloat(v*scale, 'g', digits, 64) }
	out := func(v float64, up bool) string {
		return strconv.FormatFloat(roundOut(v*scale, digits, up), 'g', digits, 64)
	}
	if math.IsInf(p.Max, 1) {
		return "≥ " + out(p.Min, false)
	}
	lo, hi := out(p.Min, false), out(p.Max, true)
	open := "["
	if p.Min == p.Lower && !p.Closed {
		open = "("
	}
	switch {
	case lo == hi:
		return hi
	case p.Point:
		return f(p.Value) + " " + open + lo + ", " + hi + "]"
	case p.Min <= 0 && p.Closed:
		return "≤ " + hi
	}
	return open + lo + ", " + hi + "]"
}

// roundOut rounds v to digits significant digits toward −Inf (up false)
// or +Inf (up true). A value within 10⁻⁷ of itself from the figure
// nearest it takes that figure: the sum's bounds carry a slack of that
// order (the server's rounding), and 0.99999999 is printed 1, not 0.999.
// From 15 digits on, v is kept: its rounding is below that slack.
func roundOut(v float64, digits int, up bool) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) || digits < 1 || digits >= 15 {
		return v
	}
	if near, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', digits, 64), 64); err == nil && math.Abs(near-v) <= 1e-7*math.Abs(v) {
		return near
	}
	unit := math.Pow(10, math.Floor(math.Log10(math.Abs(v)))-float64(digits-1))
	if up {
		return math.Ceil(v/unit) * unit
	}
	return math.Floor(v/unit) * unit
}
