package twin

import (
	"math"
	"slices"

	"github.com/inferbench/inferbench/benchkit"
)

// overheadSlots reads from rows how many requests' client overhead o (the
// fitted ClientOverheadS, from requests sent alone) the measured server
// passes at once (sim.Options.RequestOverheadSlots), from the bursts of
// at most running requests (so that no request of them waits for a slot
// of the scheduler) whose rows carry the server's prefill time. In such a
// burst the part of each request's TTFT outside its prefill,
// e = TTFT − prefill, is about one overhead when the path outside the
// engine runs the requests side by side, and about ⌈k / slots⌉
// overheads for the k-th when it passes them a few at a time (the path
// shares the host's cores with the engine). With each burst's e sorted,
// slots is the k ∈ {1, …, largest burst} whose o · ⌈rank / k⌉ has the
// least squared error over all of them; a k as large as the largest
// burst is no bound, 0. It returns 0 too where no burst qualifies or o
// is not positive. It also returns the bursts it read.
func overheadSlots(rows []benchkit.Request, o float64, running int) (slots, bursts int) {
	if !(o > 0) {
		return 0, 0
	}
	groups := map[burstKey][]float64{}
	for _, r := range rows {
		if r.Failed() || r.Probe || r.Rate != nil || r.Concurrency < 2 || (running > 0 && r.Concurrency > running) ||
			!r.Stream || r.TTFTS == nil || r.Stats == nil || r.Stats.Prefill == nil {
			continue
		}
		k := keyOf(r)
		groups[k] = append(groups[k], *r.TTFTS-r.Stats.Prefill.Seconds())
	}
	largest := 0
	var es [][]float64
	for k, e := range groups {
		if len(e) != k.conc {
			continue // a burst with a failed or untimed request
		}
		slices.Sort(e)
		es = append(es, e)
		largest = max(largest, len(e))
	}
	if largest < 2 {
		return 0, 0
	}
	best, bestErr := 0, math.Inf(1)
	for k := 1; k <= largest; k++ {
		var sse float64
		for _, e := range es {
			for rank, x := range e {
				d := x - o*math.Ceil(float64(rank+1)/float64(k))
				sse += d * d
			}
		}
		if sse < bestErr {
			best, bestErr = k, sse
		}
	}
	if best >= largest {
		best = 0
	}
	return best, len(es)
}
