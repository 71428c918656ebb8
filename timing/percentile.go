package timing

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// PercentileInterval returns the distribution-free confidence interval for
// the p-th percentile (0 < p < 100) of the population x was drawn from, at
// the given level, from x's order statistics: with x₍₁₎ ≤ … ≤ x₍ₙ₎ and B
// the number of samples below the true percentile, B ~ Binomial(n, p/100)
// whatever the distribution (continuous, independent samples), so
//
//	P(x₍ₗ₎ ≤ q < x₍ᵤ₎) = P(l ≤ B ≤ u − 1)
//
// and the ranks are chosen as l = the largest rank with P(B ≤ l − 1) ≤
// (1 − level)/2 and u = the smallest with P(B ≤ u − 1) ≥ (1 + level)/2
// (gonum's distuv.Binomial). The coverage is then at least level; being
// discrete, it is usually a little more. Center is Percentile(x, p), which
// lies between the bounds but not necessarily in their middle.
//
// A sample too small for a side at this level (for the 99th percentile at
// 95 %, fewer than 368 samples leave no upper rank: even the largest of
// 367 samples is below the true p99 more than 2.5 % of the time) gets an
// infinite bound on that side and a Warning wrapping ErrFewSamples; an
// empty one is NaN throughout. SD is the samples' standard deviation. It
// panics for p outside (0, 100) or a level outside (0, 1).
func PercentileInterval(x []float64, p, level float64) Interval {
	if !(p > 0 && p < 100) {
		panic(fmt.Sprintf("timing: percentile %v outside (0, 100)", p))
	}
	if !(level > 0 && level < 1) {
		panic(fmt.Sprintf("timing: confidence level %v outside (0, 1)", level))
	}
	iv := Interval{N: len(x), Confidence: level, SD: math.NaN()}
	if len(x) == 0 {
		iv.Center, iv.Lo, iv.Hi = math.NaN(), math.NaN(), math.NaN()
		iv.Warnings = append(iv.Warnings, fmt.Errorf("%w: confidence interval of no samples", ErrFewSamples))
		return iv
	}
	s := slices.Clone(x)
	slices.Sort(s)
	iv.Center = percentileSorted(s, p)
	if len(s) > 1 {
		iv.SD = ConfidenceInterval(s, level).SD
	}
	l, u := orderRanks(len(s), p, level)
	iv.Lo, iv.Hi = math.Inf(-1), math.Inf(1)
	if l > 0 {
		iv.Lo = s[l-1]
	}
	if u > 0 {
		iv.Hi = s[u-1]
	}
	if l == 0 || u == 0 {
		iv.Warnings = append(iv.Warnings, fmt.Errorf("%w: %d samples cannot bound the p%g on both sides at %g %% (an infinite bound)", ErrFewSamples, len(s), p, level*100))
	}
	return iv
}

// orderRanks returns the ranks (1-based, into n samples sorted ascending)
// of PercentileInterval's bounds for the p-th percentile at level: l = 0
// when no rank bounds it from below, u = 0 when none bounds it from above.
func orderRanks(n int, p, level float64) (l, u int) {
	if n < 1 {
		return 0, 0
	}
	b := distuv.Binomial{N: float64(n), P: p / 100}
	alpha := (1 - level) / 2
	// cdf(k) = P(B ≤ k − 1), non-decreasing in k.
	cdf := func(k int) float64 { return b.CDF(float64(k - 1)) }
	// l: the largest k in [1, n] with cdf(k) ≤ alpha.
	if cdf(1) <= alpha {
		lo, hi := 1, n // cdf(lo) ≤ alpha
		for lo < hi {
			mid := lo + (hi-lo+1)/2
			if cdf(mid) <= alpha {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		l = lo
	}
	// u: the smallest k in [1, n] with cdf(k) ≥ 1 − alpha.
	if cdf(n) >= 1-alpha {
		lo, hi := 1, n // cdf(hi) ≥ 1 − alpha
		for lo < hi {
			mid := lo + (hi-lo)/2
			if cdf(mid) >= 1-alpha {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		u = lo
	}
	return l, u
}
