package main

import (
	"math"
	"slices"

	"github.com/inferbench/inferbench/benchkit"
	htmlreport "github.com/inferbench/inferbench/benchkit/report"
)

// miniFigures are mini-sglang's figures of one run as client.py computes
// them (htmlreport.MiniSGLang says how); figuresOf computes them from our
// records. miniDist is one of its distributions.
type (
	miniFigures = htmlreport.MiniSGLang
	miniDist    = htmlreport.MiniSGLangDist
)

// ticsOf rebuilds a request's instants, in seconds from the run's start,
// as close to client.py's as our record allows:
//
//   - the first is the send instant: client.py's is the response headers,
//     which we do not keep;
//   - then the role chunk, when the server wrote one before any text
//     (TTFTFirstChunkS), each content chunk (TTFTS, then each gap of
//     ICLS), and last the end of the response (E2ES), standing for the
//     chunk after the last text (a finish chunk, a usage chunk), whose own
//     instant we do not keep.
//
// On mini-sglang's server, whose first chunk carries the role and the
// first token and whose last is an empty finish chunk, that is
// output_length + 2 instants, as its client counts. ok is false for a
// request without them: failed, or not streamed.
func ticsOf(r benchkit.Request) (tics []float64, ok bool) {
	if r.Failed() || r.TTFTS == nil || r.E2ES == nil {
		return nil, false
	}
	t0 := r.SendOffsetS
	tics = append(make([]float64, 0, len(r.ICLS)+4), t0)
	if r.TTFTFirstChunkS != nil {
		tics = append(tics, t0+*r.TTFTFirstChunkS)
	}
	c := t0 + *r.TTFTS
	tics = append(tics, c)
	for _, g := range r.ICLS {
		c += g
		tics = append(tics, c)
	}
	return append(tics, t0+*r.E2ES), true
}

// figuresOf computes mini-sglang's figures of a run's requests; nil when
// none has tics.
func figuresOf(reqs []benchkit.Request) *miniFigures {
	var all [][]float64
	for _, r := range reqs {
		if t, ok := ticsOf(r); ok {
			all = append(all, t)
		}
	}
	f := processResults(all)
	if f != nil {
		f.LeftOut = len(reqs) - len(all)
	}
	return f
}

// processResults is process_benchmark_results on each request's tics;
// nil with no request, and for requests of fewer than two tics, where
// client.py fails.
func processResults(results [][]float64) *miniFigures {
	if len(results) == 0 {
		return nil
	}
	var first, accum, e2e []float64
	lo, hi, tokens := math.Inf(1), math.Inf(-1), 0
	for _, tics := range results {
		if len(tics) < 2 {
			return nil
		}
		for i := 0; i+1 < len(tics); i++ {
			d := tics[i+1] - tics[i]
			if i == 0 {
				first = append(first, d)
			} else {
				accum = append(accum, d)
			}
		}
		e2e = append(e2e, tics[len(tics)-1]-tics[0])
		lo, hi = min(lo, slices.Min(tics)), max(hi, slices.Max(tics))
		tokens += len(tics)
	}
	dur := hi - lo
	f := &miniFigures{Requests: len(results), Tokens: tokens, TTFTms: printStats(first, 1000),
		TPOTms: printStats(accum, 1000), E2Es: printStats(e2e, 1), DurationS: dur}
	if dur > 0 {
		f.TokensPS, f.ReqPS = float64(tokens)/dur, float64(len(results))/dur
	}
	return f
}

// printStats is client.py's _print_stats: avg, p50, p90, p99 and max of
// times, each times scale, the percentiles times[int(len·q)] of the sorted
// values. Empty times give zeros (client.py asserts they are not empty:
// only a run whose every request had one chunk has no TPOT).
func printStats(times []float64, scale float64) miniDist {
	if len(times) == 0 {
		return miniDist{}
	}
	s := slices.Clone(times)
	slices.Sort(s)
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	at := func(q float64) float64 { return scale * s[int(float64(len(s))*q)] }
	return miniDist{Avg: scale * sum / float64(len(s)), P50: at(0.5), P90: at(0.9), P99: at(0.99), Max: scale * s[len(s)-1]}
}
