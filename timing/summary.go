package timing

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Percentile returns the p-th percentile (0 ≤ p ≤ 100) of x by linear
// interpolation between closest ranks, the definition numpy uses by default
// (Hyndman & Fan type 7) and so the one vLLM's, SGLang's and GuideLLM's
// benchmarks report:
//
//	h = (n − 1) · p/100;  P = x₍⌊h⌋₎ + (h − ⌊h⌋) · (x₍⌊h⌋+1₎ − x₍⌊h⌋₎)
//
// over x sorted ascending (x itself is not modified). gonum's
// stat.Quantile offers types 1 and 4 only, whose medians of {1, 2} are 1
// rather than 1.5, so figures would not compare with those tools.
// Percentile returns NaN for empty x and panics for p outside [0, 100].
func Percentile(x []float64, p float64) float64 {
	if !(p >= 0 && p <= 100) {
		panic(fmt.Sprintf("timing: percentile %v outside [0, 100]", p))
	}
	if len(x) == 0 {
		return math.NaN()
	}
	s := slices.Clone(x)
	slices.Sort(s)
	return percentileSorted(s, p)
}

func percentileSorted(s []float64, p float64) float64 {
	h := float64(len(s)-1) * p / 100
	lo := math.Floor(h)
	i := int(lo)
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[i] + (h-lo)*(s[i+1]-s[i])
}

// A Summary describes a sample: its size, mean, sample standard deviation,
// extremes and the usual percentiles (Percentile's definition).
type Summary struct {
	N                  int
	Mean, StdDev       float64
	Min, Max           float64
	P50, P90, P95, P99 float64
	// Extra holds the percentiles asked for beyond the usual ones, keyed
	// by p (0–100).
	Extra map[float64]float64
	// Warnings note what the sample cannot support (StdDev of one value,
	// NaN values dropped).
	Warnings []error
}

// Summarize describes x. Mean and StdDev come from gonum's
// stat.MeanStdDev (StdDev is the sample standard deviation, n − 1 in the
// denominator). NaN values are dropped with a Warning. An empty sample
// gives N = 0, NaN everywhere and a Warning; one value gives StdDev NaN and
// a Warning. Extra percentiles (0–100) are computed on request.
func Summarize(x []float64, extra ...float64) Summary {
	s := make([]float64, 0, len(x))
	for _, v := range x {
		if !math.IsNaN(v) {
			s = append(s, v)
		}
	}
	var out Summary
	if dropped := len(x) - len(s); dropped > 0 {
		out.Warnings = append(out.Warnings, fmt.Errorf("timing: %d NaN values left out of the summary", dropped))
	}
	out.N = len(s)
	if len(s) == 0 {
		nan := math.NaN()
		out.Mean, out.StdDev, out.Min, out.Max = nan, nan, nan, nan
		out.P50, out.P90, out.P95, out.P99 = nan, nan, nan, nan
		for _, p := range extra {
			if out.Extra == nil {
				out.Extra = map[float64]float64{}
			}
			out.Extra[p] = nan
		}
		out.Warnings = append(out.Warnings, fmt.Errorf("%w: summary of an empty sample", ErrFewSamples))
		return out
	}
	slices.Sort(s)
	out.Mean, out.StdDev = stat.MeanStdDev(s, nil)
	if len(s) < 2 {
		out.StdDev = math.NaN()
		out.Warnings = append(out.Warnings, fmt.Errorf("%w: standard deviation of 1 value", ErrFewSamples))
	}
	out.Min, out.Max = s[0], s[len(s)-1]
	out.P50 = percentileSorted(s, 50)
	out.P90 = percentileSorted(s, 90)
	out.P95 = percentileSorted(s, 95)
	out.P99 = percentileSorted(s, 99)
	for _, p := range extra {
		if !(p >= 0 && p <= 100) {
			panic(fmt.Sprintf("timing: percentile %v outside [0, 100]", p))
		}
		if out.Extra == nil {
			out.Extra = map[float64]float64{}
		}
		out.Extra[p] = percentileSorted(s, p)
	}
	return out
}

// Seconds converts durations to float seconds, the unit Summarize and
// ConfidenceInterval expect for latencies.
func Seconds(d []time.Duration) []float64 {
	out := make([]float64, len(d))
	for i, v := range d {
		out[i] = v.Seconds()
	}
	return out
}

// An Interval is a two-sided confidence interval for a mean
// (ConfidenceInterval) or a percentile (PercentileInterval).
type Interval struct {
	// N is the number of samples it rests on.
	N int
	// Center is the sample mean (the sample percentile for a
	// percentile's); Lo and Hi the interval's bounds.
	Center, Lo, Hi float64
	// SD is the samples' standard deviation (n − 1 in the denominator),
	// to report beside the interval's half width: the half width says how
	// well the mean is known, SD how far the samples spread. NaN with
	// fewer than two samples.
	SD float64
	// Confidence is the level asked for, e.g. 0.95.
	Confidence float64
	// Warnings say why the interval is infinite or missing.
	Warnings []error
}

// ConfidenceInterval returns the Student-t confidence interval for the mean
// of x (for instance the per-repeat means of a cell) at the given level:
//
//	mean ± t₍(1+level)/2, n−1₎ · s / √n
//
// with s the sample standard deviation and t the quantile of Student's t
// distribution with n − 1 degrees of freedom (gonum's distuv.StudentsT).
// It assumes the samples are independent and roughly normal. With fewer
// than two samples the bounds are infinite (one sample) or NaN (none) and
// a Warning wrapping ErrFewSamples says so. It panics for a level outside
// (0, 1).
func ConfidenceInterval(x []float64, level float64) Interval {
	if !(level > 0 && level < 1) {
		panic(fmt.Sprintf("timing: confidence level %v outside (0, 1)", level))
	}
	iv := Interval{N: len(x), Confidence: level}
	switch len(x) {
	case 0:
		iv.Center, iv.Lo, iv.Hi, iv.SD = math.NaN(), math.NaN(), math.NaN(), math.NaN()
		iv.Warnings = append(iv.Warnings, fmt.Errorf("%w: confidence interval of no samples", ErrFewSamples))
		return iv
	case 1:
		iv.Center, iv.Lo, iv.Hi, iv.SD = x[0], math.Inf(-1), math.Inf(1), math.NaN()
		iv.Warnings = append(iv.Warnings, fmt.Errorf("%w: confidence interval needs at least 2 samples, have 1", ErrFewSamples))
		return iv
	}
	mean, sd := stat.MeanStdDev(x, nil)
	n := float64(len(x))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(0.5 * (1 + level))
	half := t * sd / math.Sqrt(n)
	iv.Center, iv.Lo, iv.Hi, iv.SD = mean, mean-half, mean+half, sd
	return iv
}

// Short formats the interval, scaled (1000 for seconds as ms), as
// "center ±half": the half width to two significant digits and the
// center to the same decimal place, never more than four significant
// digits of the center (a half width below them shows as zeros), so that
// no digit finer than the interval can tell is printed. Without a finite
// half width (one sample) it is the center alone to four significant
// digits; "—" when the center is undefined. It is exo-bench's table's
// rule, and its page's.
func (iv Interval) Short(scale float64) string {
	c := iv.Center * scale
	if math.IsNaN(c) || math.IsInf(c, 0) {
		return "—"
	}
	half := (iv.Hi - iv.Center) * scale
	if math.IsNaN(half) || math.IsInf(half, 0) || half <= 0 {
		return strconv.FormatFloat(c, 'f', max(0, sigDecimals(c, 4)), 64)
	}
	d := min(sigDecimals(half, 2), max(0, sigDecimals(c, 4)))
	if d < 0 { // round both to the half width's second significant digit
		unit := math.Pow(10, float64(-d))
		c, half, d = math.Round(c/unit)*unit, math.Round(half/unit)*unit, 0
	}
	return strconv.FormatFloat(c, 'f', d, 64) + " ±" + strconv.FormatFloat(half, 'f', d, 64)
}

// sigDecimals is how many decimal places show sig significant digits of
// v: negative when the last of them is left of the point.
func sigDecimals(v float64, sig int) int {
	if v == 0 {
		return 0
	}
	return sig - 1 - int(math.Floor(math.Log10(math.Abs(v))))
}
