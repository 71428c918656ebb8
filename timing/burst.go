package timing

import (
	"fmt"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/stat"
)

// A BurstRequest is what AggregateBurst needs of one request of a burst.
type BurstRequest struct {
	// Tokens is the number of tokens the request generated.
	Tokens int
	// GenerationTPS is the request's generation rate (the server's
	// generation_tps, or the client's Metrics.GenerationTPS).
	GenerationTPS float64
	// RateDefined is false when the request's rate is undefined (fewer
	// than two tokens); such a request adds its tokens but no rate.
	RateDefined bool
	// Failed marks a request that ended in an error. It adds nothing but
	// is counted in N.
	Failed bool
}

// BurstStats are the aggregates of one burst of N concurrent requests,
// reported side by side so that no reader sees only the optimistic one.
type BurstStats struct {
	// N is the number of requests in the burst, failed ones included.
	N int
	// Failed is how many of them failed.
	Failed int
	// ExoAggregateTPS is exo's aggregate:
	//
	//	max(per-request generation TPS) × N
	//
	// It assumes every request decoded as fast as the fastest one, for
	// the whole burst; it overstates throughput when requests are
	// uneven or some fail.
	ExoAggregateTPS float64
	// TotalTokens is Σ generated tokens over the burst's requests.
	TotalTokens int
	// Wall is the burst's wall time: from the shared start instant to the
	// end of its last request.
	Wall time.Duration
	// ThroughputTPS is the honest aggregate:
	//
	//	Σ generated tokens / Wall
	ThroughputTPS float64
	// MeanTPS and MedianTPS are the mean and median (Percentile's
	// definition) of the per-request generation rates that are defined.
	MeanTPS, MedianTPS float64
	// Warnings say which figures are missing and why.
	Warnings []error
}

// AggregateBurst computes the aggregates of one burst from its requests and
// its wall time. Requests whose rate is undefined or that failed are left
// out of the rate aggregates, with a Warning; with no defined rate, the
// rate aggregates are NaN and a Warning wrapping ErrUndefined says so. A
// non-positive wall time makes ThroughputTPS NaN, likewise.
func AggregateBurst(reqs []BurstRequest, wall time.Duration) BurstStats {
	b := BurstStats{N: len(reqs), Wall: wall}
	var rates []float64
	undefined := 0
	for _, r := range reqs {
		if r.Failed {
			b.Failed++
			continue
		}
		b.TotalTokens += r.Tokens
		if !r.RateDefined || math.IsNaN(r.GenerationTPS) {
			undefined++
			continue
		}
		rates = append(rates, r.GenerationTPS)
	}
	if b.Failed > 0 {
		b.Warnings = append(b.Warnings, fmt.Errorf("timing: %d of %d requests failed; exo's aggregate still multiplies by N = %d", b.Failed, b.N, b.N))
	}
	if undefined > 0 {
		b.Warnings = append(b.Warnings, fmt.Errorf("%w: %d of %d requests have no generation rate (fewer than 2 tokens)", ErrUndefined, undefined, b.N))
	}
	if len(rates) == 0 {
		b.ExoAggregateTPS, b.MeanTPS, b.MedianTPS = math.NaN(), math.NaN(), math.NaN()
		b.Warnings = append(b.Warnings, fmt.Errorf("%w: no request of the burst has a generation rate", ErrUndefined))
	} else {
		b.ExoAggregateTPS = slices.Max(rates) * float64(b.N)
		b.MeanTPS = stat.Mean(rates, nil)
		slices.Sort(rates)
		b.MedianTPS = percentileSorted(rates, 50)
	}
	if wall <= 0 {
		b.ThroughputTPS = math.NaN()
		b.Warnings = append(b.Warnings, fmt.Errorf("%w: throughput over a wall time of %v", ErrUndefined, wall))
	} else {
		b.ThroughputTPS = float64(b.TotalTokens) / wall.Seconds()
	}
	return b
}
