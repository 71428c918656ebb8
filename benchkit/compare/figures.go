package compare

import (
	"math"
	"slices"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/timing"
)

// A Figure is one quantity compared: its name (the results files'), the
// unit it prints in, the factor from its stored value (seconds, tokens
// per second, a fraction) to that unit, and whether lower is better.
type Figure struct {
	Name  string
	Unit  string
	Scale float64
	Lower bool
}

// The figures, in the order they print. A figure absent from a side's
// units (an unstreamed run has no TTFT; a run without objectives no
// goodput) is not compared.
var figures = []Figure{
	{"ttft_mean", "ms", 1e3, true}, {"ttft_p50", "ms", 1e3, true}, {"ttft_p90", "ms", 1e3, true}, {"ttft_p99", "ms", 1e3, true},
	{"tpot_mean", "ms", 1e3, true}, {"tpot_p50", "ms", 1e3, true}, {"tpot_p90", "ms", 1e3, true}, {"tpot_p99", "ms", 1e3, true},
	{"itl_mean", "ms", 1e3, true}, {"itl_p50", "ms", 1e3, true}, {"itl_p90", "ms", 1e3, true}, {"itl_p99", "ms", 1e3, true},
	{"e2e_mean", "ms", 1e3, true}, {"e2e_p50", "ms", 1e3, true}, {"e2e_p90", "ms", 1e3, true}, {"e2e_p99", "ms", 1e3, true},
	{"output_throughput", "tok/s", 1, false}, {"request_throughput", "req/s", 1, false},
	{"goodput", "%", 100, false}, {"error_rate", "%", 100, true},
	// exo-bench's per-repeat figures (Summary's repeat-level ones).
	{"prompt_tps", "tok/s", 1, false}, {"generation_tps", "tok/s", 1, false},
	{"exo_aggregate_tps", "tok/s", 1, false}, {"throughput_tps", "tok/s", 1, false},
	{"server_prefill", "ms", 1e3, true}, {"j_per_token", "J/tok", 1, true}, {"server_j_per_token", "J/tok", 1, true},
}

// FigureByName returns the figure of that name.
func FigureByName(name string) (Figure, bool) {
	for _, f := range figures {
		if f.Name == name {
			return f, true
		}
	}
	return Figure{}, false
}

// Figures returns every figure's name, in print order.
func Figures() []string {
	out := make([]string, len(figures))
	for i, f := range figures {
		out[i] = f.Name
	}
	return out
}

// A Unit is one independent sample of a side: a run, a batch of one
// run's requests, or a repeat of exo-bench's cell, with each figure
// computed over it (NaN where undefined).
type Unit map[string]float64

// put sets name to v when v is a number.
func (u Unit) put(name string, v float64) {
	if !math.IsNaN(v) && !math.IsInf(v, 0) {
		u[name] = v
	}
}

// latency puts the mean and percentiles of x under prefix. A percentile
// q is put only when x holds at least 1/(1 − q) values (2 for p50, 10 for
// p90, 100 for p99): below that it is the unit's largest value, a figure of the
// sample's size as much as of the server.
func (u Unit) latency(prefix string, x []float64) {
	if len(x) == 0 {
		return
	}
	s := timing.Summarize(x)
	u.put(prefix+"_mean", s.Mean)
	if len(x) >= 2 {
		u.put(prefix+"_p50", s.P50)
	}
	if len(x) >= 10 {
		u.put(prefix+"_p90", s.P90)
	}
	if len(x) >= 100 {
		u.put(prefix+"_p99", s.P99)
	}
}

// requestFigures computes a unit's figures from its rows: latency means
// and percentiles over the completed requests, throughputs over span
// seconds, the error rate over every row and, with objectives, the
// goodput fraction (failed requests counted, never good).
func requestFigures(rows []benchkit.Request, span float64, slo timing.SLO) Unit {
	u := Unit{}
	var ttft, tpot, itl, e2e []float64
	var metrics []timing.Metrics
	tokens, completed, failed := 0, 0, 0
	for _, r := range rows {
		if r.Failed() {
			failed++
			continue
		}
		completed++
		tokens += r.Tokens()
		if r.TTFTS != nil {
			ttft = append(ttft, *r.TTFTS)
		}
		if r.TPOTS != nil {
			tpot = append(tpot, *r.TPOTS)
		}
		if r.E2ES != nil {
			e2e = append(e2e, *r.E2ES)
		}
		itl = append(itl, r.ITLS...)
		metrics = append(metrics, r.Metrics())
	}
	u.latency("ttft", ttft)
	u.latency("tpot", tpot)
	u.latency("itl", itl)
	u.latency("e2e", e2e)
	if span > 0 && completed > 0 {
		u.put("output_throughput", float64(tokens)/span)
		u.put("request_throughput", float64(completed)/span)
	}
	if len(rows) > 0 {
		u.put("error_rate", float64(failed)/float64(len(rows)))
	}
	if slo != (timing.SLO{}) && len(rows) > 0 {
		g := timing.ComputeGoodput(slo, metrics, failed, 0)
		u.put("goodput", g.Fraction)
	}
	return u
}

// runUnit is a whole run as a unit: throughputs over the run's wall time,
// from its start (offset 0) to the end of its last request, as the run's
// Summary has them.
func runUnit(rows []benchkit.Request, slo timing.SLO) Unit {
	wall := 0.0
	for _, r := range rows {
		wall = math.Max(wall, r.DoneS)
	}
	return requestFigures(rows, wall, slo)
}

// batches splits one run's rows, ordered by send instant, into k
// consecutive batches of near-equal size (the first n mod k one larger)
// and computes each batch's figures; a batch's throughputs are over its
// span, from its first send to its last end.
func batches(rows []benchkit.Request, k int, slo timing.SLO) []Unit {
	sorted := slices.Clone(rows)
	slices.SortStableFunc(sorted, func(a, b benchkit.Request) int {
		return cmpFloat(a.SendOffsetS, b.SendOffsetS)
	})
	out := make([]Unit, 0, k)
	n := len(sorted)
	start := 0
	for i := range k {
		size := n / k
		if i < n%k {
			size++
		}
		b := sorted[start : start+size]
		start += size
		first, last := math.Inf(1), math.Inf(-1)
		for _, r := range b {
			first = math.Min(first, r.SendOffsetS)
			last = math.Max(last, r.DoneS)
		}
		out = append(out, requestFigures(b, last-first, slo))
	}
	return out
}

// repeatUnit is one repeat (burst) of exo-bench's cell: the repeat-level
// figures of its Summary (computed over the one repeat) beside the
// request figures of its rows.
func repeatUnit(rows []benchkit.Request) Unit {
	u := runUnit(rows, timing.SLO{})
	// A burst's throughput is the cell's throughput_tps; its request
	// throughput says nothing a burst controls.
	delete(u, "output_throughput")
	delete(u, "request_throughput")
	sums := benchkit.Summarize(rows, benchkit.ByCell, timing.SLO{})
	if len(sums) != 1 {
		return u
	}
	s := sums[0]
	one := func(name string, iv timing.Interval) {
		if iv.N > 0 {
			u.put(name, iv.Center)
		}
	}
	one("prompt_tps", s.PromptTPS)
	one("generation_tps", s.GenerationTPS)
	one("exo_aggregate_tps", s.ExoAggregateTPS)
	one("throughput_tps", s.ThroughputTPS)
	one("server_prefill", s.ServerPrefillS)
	if !s.EnergyWindowShort {
		one("j_per_token", s.JPerToken)
	}
	one("server_j_per_token", s.ServerJPerToken)
	return u
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
