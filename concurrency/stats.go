package concurrency

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// DurationStats describes a sample of durations: its size, mean, extremes
// and usual percentiles. Percentiles interpolate linearly between closest
// ranks (Hyndman & Fan type 7, numpy's default), as package timing's
// Percentile does, so figures compare across the two packages:
//
//	h = (N − 1) · p/100;  P = x₍⌊h⌋₎ + (h − ⌊h⌋) · (x₍⌊h⌋+1₎ − x₍⌊h⌋₎)
//
// over the sample sorted ascending, rounded to the nanosecond. The zero
// value (N = 0) describes an empty sample; its other fields are 0 and mean
// nothing.
type DurationStats struct {
	N                  int
	Min, Mean, Max     time.Duration
	P50, P90, P95, P99 time.Duration
}

// SummarizeDurations returns the DurationStats of d (d is not modified).
// The mean is Σd / N, accumulated in float64 and rounded to the nanosecond.
func SummarizeDurations(d []time.Duration) DurationStats {
	if len(d) == 0 {
		return DurationStats{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	var sum float64
	for _, v := range s {
		sum += float64(v)
	}
	return DurationStats{
		N:    len(s),
		Min:  s[0],
		Max:  s[len(s)-1],
		Mean: time.Duration(math.Round(sum / float64(len(s)))),
		P50:  percentileSorted(s, 50),
		P90:  percentileSorted(s, 90),
		P95:  percentileSorted(s, 95),
		P99:  percentileSorted(s, 99),
	}
}

// String formats the stats on one line, for logs:
//
//	n=4 min=0s p50=1.5ms p90=2.7ms p99=2.97ms max=3ms mean=1.5ms
func (s DurationStats) String() string {
	if s.N == 0 {
		return "n=0"
	}
	return fmt.Sprintf("n=%d min=%v p50=%v p90=%v p99=%v max=%v mean=%v",
		s.N, s.Min, s.P50, s.P90, s.P99, s.Max, s.Mean)
}

func percentileSorted(s []time.Duration, p float64) time.Duration {
	h := float64(len(s)-1) * p / 100
	lo := math.Floor(h)
	i := int(lo)
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[i] + time.Duration(math.Round((h-lo)*float64(s[i+1]-s[i])))
}
