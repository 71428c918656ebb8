package timing

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// TestPercentileIntervalCoverage draws many seeded samples from known
// distributions and counts how often the interval holds the true
// percentile: at 95 % it must hold it about 95 % of the time, neither
// much less (too narrow) nor nearly always (too wide to be of use).
func TestPercentileIntervalCoverage(t *testing.T) {
	type dist struct {
		name     string
		rand     func(*rand.Rand) float64
		quantile func(float64) float64
	}
	exp := distuv.Exponential{Rate: 2}
	logn := distuv.LogNormal{Mu: -3, Sigma: 0.8}
	dists := []dist{
		{"exponential", func(r *rand.Rand) float64 { return r.ExpFloat64() / 2 }, exp.Quantile},
		{"lognormal", func(r *rand.Rand) float64 { return math.Exp(-3 + 0.8*r.NormFloat64()) }, logn.Quantile},
		{"uniform", func(r *rand.Rand) float64 { return 0.1 + r.Float64() }, func(q float64) float64 { return 0.1 + q }},
	}
	cases := []struct {
		n int
		p float64
	}{{50, 50}, {200, 90}, {1000, 99}}
	const trials = 1500
	for _, d := range dists {
		for _, c := range cases {
			src := rand.New(rand.NewPCG(uint64(c.n), uint64(c.p)))
			truth := d.quantile(c.p / 100)
			held := 0
			x := make([]float64, c.n)
			for range trials {
				for i := range x {
					x[i] = d.rand(src)
				}
				iv := PercentileInterval(x, c.p, 0.95)
				if math.IsInf(iv.Lo, 0) || math.IsInf(iv.Hi, 0) {
					t.Fatalf("%s n=%d p%g: infinite bound %v", d.name, c.n, c.p, iv)
				}
				if iv.Lo <= truth && truth <= iv.Hi {
					held++
				}
				if !(iv.Lo <= iv.Center && iv.Center <= iv.Hi) {
					t.Fatalf("%s n=%d p%g: center %g outside [%g, %g]", d.name, c.n, c.p, iv.Center, iv.Lo, iv.Hi)
				}
			}
			cov := float64(held) / trials
			if cov < 0.93 || cov > 0.99 {
				t.Errorf("%s n=%d p%g: coverage %.3f, want about 0.95 (in [0.93, 0.99])", d.name, c.n, c.p, cov)
			}
		}
	}
}

// TestPercentileIntervalTooFew checks the sample sizes below which a side
// has no rank, against the binomial bound worked by hand: the largest of
// n samples is above the true p99 with probability 1 − 0.99ⁿ, which
// reaches 97.5 % at n = ⌈ln 0.025 / ln 0.99⌉ = 368.
func TestPercentileIntervalTooFew(t *testing.T) {
	need := int(math.Ceil(math.Log(0.025) / math.Log(0.99)))
	for _, n := range []int{need - 1, need} {
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(i)
		}
		iv := PercentileInterval(x, 99, 0.95)
		infinite := math.IsInf(iv.Hi, 1)
		if infinite != (n < need) {
			t.Errorf("n=%d: upper bound %g, want infinite only below %d samples", n, iv.Hi, need)
		}
		if infinite && (len(iv.Warnings) == 0 || !errors.Is(iv.Warnings[0], ErrFewSamples)) {
			t.Errorf("n=%d: infinite bound without an ErrFewSamples warning: %v", n, iv.Warnings)
		}
		if math.IsInf(iv.Lo, 0) {
			t.Errorf("n=%d: lower bound %g, want finite", n, iv.Lo)
		}
	}
	if iv := PercentileInterval(nil, 50, 0.95); !math.IsNaN(iv.Center) || len(iv.Warnings) == 0 {
		t.Errorf("empty sample: %+v, want NaN and a warning", iv)
	}
}
