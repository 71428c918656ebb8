package predict

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
)

// probes are a predicted run's head-of-line probes (Traffic.ProbeRate):
// one-token requests at k/rate, from the schedule's start until the last
// main request is sent, outside the cap on requests in flight, with the
// prompts Load.Run gives them (Load.ProbePrompts).
type probes struct {
	rate    float64
	planned int
	offs    []time.Duration
	prompts []promptsize.Prompt
	reqs    []sim.PredictRequest
	// first is the first probe's number in the prediction: the main
	// requests known from the start come before the probes, those the
	// replies add after them.
	first int
	pred  []sim.Predicted
}

// planProbes plans the run's probes as Load.Run does: as many as fit the
// schedule's span at the probe rate, twice that span when a cap on
// requests in flight may make the dispatch late. nil when the traffic
// asks for none.
func (p *Predictor) planProbes(ctx context.Context, sched []time.Duration, n int, traffic benchkit.Traffic) (*probes, error) {
	if !(traffic.ProbeRate > 0) {
		return nil, nil
	}
	l := p.Load
	span := slices.Max(sched)
	if traffic.MaxConcurrency > 0 {
		span *= 2
	}
	count := int(math.Floor(span.Seconds()*traffic.ProbeRate)) + 1
	prompts, err := l.ProbePrompts(ctx, p.RunIndex, n, count)
	if err != nil {
		return nil, err
	}
	pr := &probes{rate: traffic.ProbeRate, planned: count, prompts: prompts}
	for k := range count {
		at := time.Duration(float64(k) / traffic.ProbeRate * float64(time.Second))
		pr.offs = append(pr.offs, at)
		pr.reqs = append(pr.reqs, sim.PredictRequest{At: at, API: p.API, Messages: prompts[k].Messages, TokenIDs: prompts[k].TokenIDs,
			MaxTokens: 1, IgnoreEOS: !l.AllowEOS, Seed: l.Request.Seed, UsePrefixCache: l.Request.UsePrefixCache})
	}
	return pr, nil
}

// isProbe says whether request i of the prediction is a probe.
func (pr *probes) isProbe(i int) bool {
	return pr != nil && i >= pr.first && i < pr.first+len(pr.reqs)
}

// keepUntil drops the probes meant after last, the last main request's
// send, as the live run stops sending them then; it reports whether it
// dropped any.
func (pr *probes) keepUntil(last time.Duration) bool {
	k := len(pr.offs)
	for k > 0 && pr.offs[k-1] > last {
		k--
	}
	dropped := k < len(pr.offs)
	pr.offs, pr.reqs, pr.prompts = pr.offs[:k], pr.reqs[:k], pr.prompts[:k]
	return dropped
}

// split parts a prediction into the main requests', in their numbering,
// and the probes'.
func (pr *probes) split(pred []sim.Predicted) (main, probe []sim.Predicted) {
	end := pr.first + len(pr.reqs)
	return slices.Concat(pred[:pr.first], pred[end:]), slices.Clone(pred[pr.first:end])
}

// probeRows are the probes' rows, in the order they end, and their
// summary as Load.Run writes it; nil, nil for none. sent are the main
// requests' send instants; rate is the run's offered rate.
func (p *Predictor) probeRows(pr *probes, sent []time.Duration, rate *float64) ([]benchkit.Request, *benchkit.Summary) {
	if pr == nil {
		return nil, nil
	}
	l := p.Load
	rows := make([]benchkit.Request, len(pr.pred))
	for k, r := range pr.pred {
		asked := benchkit.Request{Index: k, PPTarget: pr.prompts[k].Tokens, TGTarget: 1,
			Model: l.Model, Stream: !l.NoStream, Simulated: true, Predicted: true, Probe: true}
		asked.Run, asked.Rate = p.RunIndex, rate
		rows[k] = benchkit.NewRequest(asked, pr.prompts[k], p.result(k, pr.offs[k], pr.offs[k], pr.prompts[k], r, l.Model, !l.NoStream), l.AllowEOS)
	}
	slices.SortStableFunc(rows, func(a, b benchkit.Request) int { return cmp.Compare(a.DoneS, b.DoneS) })
	s := l.SummarizeProbes(rows, pr.rate, peakInFlight(pr.offs, pr.pred))
	if n := len(pr.offs); n == pr.planned && n > 0 && len(sent) > 0 {
		if last := slices.Max(sent); last > pr.offs[n-1]+time.Duration(float64(time.Second)/pr.rate) {
			s.Warnings = append(s.Warnings, fmt.Sprintf("the main dispatch went on to %.3gs, past the last of the %d probes planned (at %.3gs): the probes do not cover its end", last.Seconds(), n, pr.offs[n-1].Seconds()))
		}
	}
	return rows, s
}
