package timing

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// An SLO is a set of latency objectives a request must meet to count as
// good. A zero field sets no objective.
type SLO struct {
	// TTFT is the longest acceptable time to first token.
	TTFT time.Duration
	// TTFA is the longest acceptable time to the first answer token
	// (Metrics.TTFA): for a model that reasons first, when its answer
	// begins; TTFT for one that does not.
	TTFA time.Duration
	// TPOT is the longest acceptable time per output token.
	TPOT time.Duration
	// ITL is the longest acceptable inter-token gap: every per-token gap
	// (Metrics.ITL) must be within it.
	ITL time.Duration
	// E2E is the longest acceptable end-to-end latency.
	E2E time.Duration
}

// Met reports whether a request with metrics m meets every objective of s.
// A figure the objective needs but m lacks (no first token, no answer
// token, no end) fails it; an undefined TPOT (one token) has no time per
// output token to exceed and passes, as in vLLM's goodput.
func (s SLO) Met(m Metrics) bool {
	if s.TTFT > 0 && (!m.TTFTDefined || m.TTFT > s.TTFT) {
		return false
	}
	if s.TTFA > 0 && (!m.TTFADefined || m.TTFA > s.TTFA) {
		return false
	}
	if s.E2E > 0 && (!m.E2EDefined || m.E2E > s.E2E) {
		return false
	}
	if s.TPOT > 0 && m.TPOTDefined && m.TPOT > s.TPOT {
		return false
	}
	if s.ITL > 0 && len(m.ITL) > 0 && slices.Max(m.ITL) > s.ITL {
		return false
	}
	return true
}

// Goodput counts the requests that meet an SLO.
type Goodput struct {
	// Good is the number of requests that met every objective; Total the
	// number attempted, failed ones included.
	Good, Total int
	// Fraction is Good / Total.
	Fraction float64
	// Rate is Good / wall seconds: good requests per second.
	Rate float64
}

// ComputeGoodput counts the requests among ok that meet slo and adds the
// failed ones, which are never good, to the total:
//
//	Fraction = good / (len(ok) + failed);  Rate = good / wall seconds
//
// Fraction is NaN with no requests and Rate NaN for a non-positive wall.
func ComputeGoodput(slo SLO, ok []Metrics, failed int, wall time.Duration) Goodput {
	g := Goodput{Total: len(ok) + failed}
	for _, m := range ok {
		if slo.Met(m) {
			g.Good++
		}
	}
	g.Fraction, g.Rate = math.NaN(), math.NaN()
	if g.Total > 0 {
		g.Fraction = float64(g.Good) / float64(g.Total)
	}
	if wall > 0 {
		g.Rate = float64(g.Good) / wall.Seconds()
	}
	return g
}

// String formats s as its set objectives, e.g. "ttft≤200ms tpot≤50ms",
// "ttfa≤2s".
func (s SLO) String() string {
	var out []byte
	add := func(name string, d time.Duration) {
		if d > 0 {
			if len(out) > 0 {
				out = append(out, ' ')
			}
			out = fmt.Appendf(out, "%s≤%v", name, d)
		}
	}
	add("ttft", s.TTFT)
	add("ttfa", s.TTFA)
	add("tpot", s.TPOT)
	add("itl", s.ITL)
	add("e2e", s.E2E)
	if len(out) == 0 {
		return "none"
	}
	return string(out)
}
