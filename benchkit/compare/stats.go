package compare

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// welch is Welch's two-sample t-test of B's mean against A's on the unit
// values a and b, each mean's variance multiplied by its inflation factor
// (1 unless the units were correlated batches), with the difference
// mean(b) − mean(a), its interval at level conf and Fieller's interval
// for mean(b)/mean(a).
type welch struct {
	MeanA, MeanB float64
	SDA, SDB     float64
	Diff         float64
	DiffLo       float64
	DiffHi       float64
	DF           float64
	T            float64
	P            float64
	// RatioOK is false when Fieller's interval is unbounded (A's mean is
	// not told apart from 0); RatioLo and RatioHi then mean nothing.
	RatioOK          bool
	RatioLo, RatioHi float64
}

// welchTest runs the test; a and b need at least two values each.
func welchTest(a, b []float64, inflA, inflB, conf float64) welch {
	var w welch
	w.MeanA, w.SDA = stat.MeanStdDev(a, nil)
	w.MeanB, w.SDB = stat.MeanStdDev(b, nil)
	na, nb := float64(len(a)), float64(len(b))
	va := w.SDA * w.SDA / na * inflA
	vb := w.SDB * w.SDB / nb * inflB
	w.Diff = w.MeanB - w.MeanA
	se := math.Sqrt(va + vb)
	if se == 0 || math.IsNaN(se) {
		// Both sides constant: either the same value (to rounding) or a
		// certain change.
		w.DF = na + nb - 2
		w.DiffLo, w.DiffHi = w.Diff, w.Diff
		w.P = 1
		if math.Abs(w.Diff) > 1e-12*math.Max(math.Abs(w.MeanA), math.Abs(w.MeanB)) {
			w.P, w.T = 0, math.Copysign(math.Inf(1), w.Diff)
		}
		if w.MeanA != 0 {
			w.RatioOK = true
			w.RatioLo, w.RatioHi = w.MeanB/w.MeanA, w.MeanB/w.MeanA
		}
		return w
	}
	// Welch–Satterthwaite degrees of freedom.
	w.DF = (va + vb) * (va + vb) / (va*va/(na-1) + vb*vb/(nb-1))
	w.T = w.Diff / se
	td := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: w.DF}
	w.P = 2 * td.Survival(math.Abs(w.T))
	q := td.Quantile(1 - (1-conf)/2)
	w.DiffLo, w.DiffHi = w.Diff-q*se, w.Diff+q*se
	w.RatioOK, w.RatioLo, w.RatioHi = fieller(w.MeanA, w.MeanB, va, vb, q)
	return w
}

// fieller is Fieller's interval for the ratio mb/ma of two independent
// means with variances va and vb, at the quantile q: the ρ with
// (mb − ρ·ma)² ≤ q²(vb + ρ²·va). It is bounded only when ma² > q²·va,
// that is when A's mean is told apart from 0.
func fieller(ma, mb, va, vb, q float64) (ok bool, lo, hi float64) {
	q2 := q * q
	a := ma*ma - q2*va
	if !(a > 0) {
		return false, math.NaN(), math.NaN()
	}
	half := math.Sqrt(q2 * (va*mb*mb + vb*a))
	lo, hi = (ma*mb-half)/a, (ma*mb+half)/a
	return true, lo, hi
}

// holm marks which of the p-values Holm's step-down procedure rejects at
// family-wise level alpha: sorted ascending, p(i) is rejected while
// p(i) ≤ alpha / (m − i) (i from 0), and none after the first kept.
func holm(p []float64, alpha float64) []bool {
	p = slices.Clone(p)
	for i, v := range p {
		if math.IsNaN(v) {
			p[i] = 1 // no test: never rejected, last in the order
		}
	}
	idx := make([]int, len(p))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(x, y int) int {
		switch {
		case p[x] < p[y]:
			return -1
		case p[x] > p[y]:
			return 1
		}
		return 0
	})
	out := make([]bool, len(p))
	m := len(p)
	for i, j := range idx {
		if !(p[j] <= alpha/float64(m-i)) {
			break
		}
		out[j] = true
	}
	return out
}

// holmAdjusted is each p-value adjusted for the family by Holm's
// procedure: with the p-values sorted ascending, p(i) becomes
// min(1, max over j ≤ i of (m − j)·p(j)) (i, j from 0), the smallest
// family-wise level at which holm rejects it. NaN counts as 1, as in holm.
func holmAdjusted(p []float64) []float64 {
	m := len(p)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	val := func(i int) float64 {
		if math.IsNaN(p[i]) {
			return 1
		}
		return p[i]
	}
	slices.SortStableFunc(idx, func(x, y int) int {
		switch {
		case val(x) < val(y):
			return -1
		case val(x) > val(y):
			return 1
		}
		return 0
	})
	out := make([]float64, m)
	run := 0.0
	for i, j := range idx {
		run = math.Max(run, math.Min(1, float64(m-i)*val(j)))
		out[j] = run
	}
	return out
}

// lag1 is the lag-1 autocorrelation of x in its order,
// Σ(x_i − x̄)(x_{i+1} − x̄) / Σ(x_i − x̄)²; 0 when x is constant or has
// fewer than three values.
func lag1(x []float64) float64 {
	if len(x) < 3 {
		return 0
	}
	m := stat.Mean(x, nil)
	var num, den float64
	for i, v := range x {
		d := v - m
		den += d * d
		if i+1 < len(x) {
			num += d * (x[i+1] - m)
		}
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// inflation is the factor by which batch means with lag-1
// autocorrelation r widen the variance of their mean, (1 + r)/(1 − r)
// (an AR(1) process's), applied when r exceeds 2/√k, the bound beyond
// which k independent batches show a correlation about 5 % of the time.
// r is capped at 0.9. It returns 1 when the batches pass the check.
func inflation(r float64, k int) float64 {
	if k < 3 || !(r > 2/math.Sqrt(float64(k))) {
		return 1
	}
	r = math.Min(r, 0.9)
	return (1 + r) / (1 - r)
}
