package compare

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestWelchAgainstTheFormula: the test statistic, the degrees of freedom
// and the interval of two small samples, each worked out by hand from
// Welch's and Satterthwaite's formulas.
func TestWelchAgainstTheFormula(t *testing.T) {
	a := []float64{1, 2, 3, 4}     // mean 2.5, variance 5/3
	b := []float64{2, 4, 6, 8, 10} // mean 6, variance 10
	w := welchTest(a, b, 1, 1, 0.95)
	va, vb := (5.0/3)/4, 10.0/5
	se := math.Sqrt(va + vb)
	df := (va + vb) * (va + vb) / (va*va/3 + vb*vb/4)
	if math.Abs(w.Diff-3.5) > 1e-12 || math.Abs(w.T-3.5/se) > 1e-12 || math.Abs(w.DF-df) > 1e-12 {
		t.Fatalf("diff %g t %g df %g; want 3.5, %g, %g", w.Diff, w.T, w.DF, 3.5/se, df)
	}
	// The interval's half width is the t quantile times the standard
	// error: the p-value at its end is exactly 5 %.
	half := w.DiffHi - w.Diff
	if math.Abs((w.Diff-w.DiffLo)-half) > 1e-12 {
		t.Fatalf("interval [%g, %g] not centred on %g", w.DiffLo, w.DiffHi, w.Diff)
	}
	shifted := welchTest(a, addTo(b, -w.DiffLo), 1, 1, 0.95)
	if math.Abs(shifted.P-0.05) > 1e-9 {
		t.Errorf("p at the interval's end = %g, want 0.05", shifted.P)
	}
	// Welch's p-value is between 0 and 1 and falls as the gap grows.
	if !(w.P > 0 && w.P < 1) || welchTest(a, addTo(b, 10), 1, 1, 0.95).P >= w.P {
		t.Errorf("p = %g: want a p in (0, 1) that falls as the gap grows", w.P)
	}
}

func addTo(x []float64, d float64) []float64 {
	y := slices.Clone(x)
	for i := range y {
		y[i] += d
	}
	return y
}

// TestWelchCalibrated: on normal samples of equal means and unequal
// variances, the test rejects about 5 % of the time, and the difference's
// and the ratio's intervals hold the truth about 95 % of the time.
func TestWelchCalibrated(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const trials = 4000
	reject, coverD, coverR := 0, 0, 0
	for range trials {
		a, b := make([]float64, 8), make([]float64, 12)
		for i := range a {
			a[i] = 10 + rng.NormFloat64()
		}
		for i := range b {
			b[i] = 11 + 3*rng.NormFloat64()
		}
		w := welchTest(a, b, 1, 1, 0.95)
		if w.DiffLo <= 1 && 1 <= w.DiffHi {
			coverD++
		}
		if w.RatioOK && w.RatioLo <= 1.1 && 1.1 <= w.RatioHi {
			coverR++
		}
		w0 := welchTest(a, addTo(b, -1), 1, 1, 0.95)
		if w0.P < 0.05 {
			reject++
		}
	}
	// Binomial(4000, 0.05) has a standard deviation of 0.34 %.
	if r := float64(reject) / trials; r < 0.04 || r > 0.06 {
		t.Errorf("false rejections %.3f, want about 0.05", r)
	}
	for name, c := range map[string]int{"difference": coverD, "ratio": coverR} {
		if r := float64(c) / trials; r < 0.94 || r > 0.96 {
			t.Errorf("%s interval covered the truth %.3f of the time, want about 0.95", name, r)
		}
	}
}

// TestWelchConstant: two constant sides are the same (p = 1) or
// certainly different (p = 0).
func TestWelchConstant(t *testing.T) {
	if w := welchTest([]float64{2, 2}, []float64{2, 2, 2}, 1, 1, 0.95); w.P != 1 || w.Diff != 0 {
		t.Errorf("equal constants: p %g diff %g, want 1 and 0", w.P, w.Diff)
	}
	if w := welchTest([]float64{0.1 + 0.2, 0.1 + 0.2}, []float64{0.3, 0.3}, 1, 1, 0.95); w.P != 1 {
		t.Errorf("constants equal but for rounding: p %g, want 1", w.P)
	}
	w := welchTest([]float64{2, 2}, []float64{3, 3}, 1, 1, 0.95)
	if w.P != 0 || !w.RatioOK || w.RatioLo != 1.5 || w.RatioHi != 1.5 {
		t.Errorf("different constants: p %g ratio [%g, %g], want 0 and [1.5, 1.5]", w.P, w.RatioLo, w.RatioHi)
	}
}

// TestFiellerUnbounded: when A's mean is within its own noise of zero
// the ratio has no bounded interval.
func TestFiellerUnbounded(t *testing.T) {
	if ok, _, _ := fieller(0.1, 5, 1, 0.1, 2); ok {
		t.Error("A's mean 0.1 with variance 1: want no bounded interval")
	}
	ok, lo, hi := fieller(10, 11, 0.01, 0.01, 2)
	if !ok || !(lo < 1.1 && 1.1 < hi) || hi-lo > 0.1 {
		t.Errorf("tight means: [%g, %g], want a narrow interval around 1.1", lo, hi)
	}
}

// TestHolm: the step-down procedure on a hand-worked family.
func TestHolm(t *testing.T) {
	// Sorted: 0.005 ≤ 0.05/4 yes, 0.01 ≤ 0.05/3 yes, 0.03 ≤ 0.05/2 no:
	// stop, so 0.04 is kept although 0.04 ≤ 0.05/1.
	got := holm([]float64{0.01, 0.04, 0.03, 0.005}, 0.05)
	if want := []bool{true, false, false, true}; !slices.Equal(got, want) {
		t.Errorf("holm = %v, want %v", got, want)
	}
	if got := holm([]float64{math.NaN(), 0.001}, 0.05); !slices.Equal(got, []bool{false, true}) {
		t.Errorf("holm with NaN = %v, want NaN kept", got)
	}
}

// TestHolmAdjusted: the adjusted p-values of a hand-worked family, and
// on random families they agree with the step-down procedure at every
// level: p adjusted ≤ α exactly where holm rejects at α.
func TestHolmAdjusted(t *testing.T) {
	// Sorted 0.005, 0.01, 0.03, 0.04: ×4, ×3, ×2, ×1 = 0.02, 0.03, 0.06,
	// 0.04 → running maximum 0.02, 0.03, 0.06, 0.06.
	got := holmAdjusted([]float64{0.01, 0.04, 0.03, 0.005})
	want := []float64{0.03, 0.06, 0.06, 0.02}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("holmAdjusted = %v, want %v", got, want)
			break
		}
	}
	if got := holmAdjusted([]float64{math.NaN(), 0.6}); got[0] != 1 || got[1] != 1 {
		t.Errorf("holmAdjusted with NaN = %v, want 1 and min(1, 2·0.6) = 1", got)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		p := make([]float64, 1+rng.IntN(20))
		for i := range p {
			p[i] = math.Pow(rng.Float64(), 3) // many small ones
		}
		adj := holmAdjusted(p)
		for _, alpha := range []float64{0.001, 0.01, 0.05, 0.2} {
			rej := holm(p, alpha)
			for i := range p {
				// Away from the boundary, where k·p and α/k round apart.
				if math.Abs(adj[i]-alpha) > 1e-12 && (adj[i] <= alpha) != rej[i] {
					t.Fatalf("trial %d, α %g: p %v adjusted %v, holm %v", trial, alpha, p, adj, rej)
				}
			}
		}
	}
}

// TestLag1: batches that follow a trend are correlated and widened;
// alternating ones are not widened.
func TestLag1(t *testing.T) {
	trend := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	r := lag1(trend)
	if r < 0.6 || inflation(r, len(trend)) <= 1 {
		t.Errorf("trend: r = %g, inflation %g; want r > 0.6 and widening", r, inflation(r, len(trend)))
	}
	alt := []float64{1, 3, 1, 3, 1, 3, 1, 3, 1, 3}
	if r := lag1(alt); r > -0.5 || inflation(r, len(alt)) != 1 {
		t.Errorf("alternating: r = %g; want strongly negative and no widening", r)
	}
	if lag1([]float64{4, 4, 4}) != 0 {
		t.Error("constant batches: want r = 0")
	}
}
