// Package predict gives the run a benchkit.Load would measure against the
// embedded engine (engine/sim) without sending it: the Load's plan (its
// schedule, its workload's prompts built by its Builder, salted as it
// salts them) goes through the engine's scheduler on a virtual clock
// (sim.Predict), and each predicted request becomes a benchkit.Request
// through benchkit.NewRequest, as a measured one does, so that the
// summary, the table and every figure are computed by the same code. A
// thousand rows take milliseconds where the run takes their schedule's
// length.
//
// A predicted row is the engine's schedule seen by a client with no
// network: its request goes out at its intended instant and reaches the
// server then, its chunks arrive at the instants the server computes
// them. A live run's rows differ from it by the client's and the
// network's own time (the send lag, the loopback, the reads); see
// docs/PREDICT.md for how far apart they are.
package predict

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/capacity"
	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// ErrUnpredictable wraps every refusal: a plan this package does not
// model (probes, a split segment, a thinking control).
var ErrUnpredictable = errors.New("predict: the plan cannot be predicted")

// A Predictor predicts the runs of a Load against the embedded engine.
type Predictor struct {
	// Load is the load test as it would be sent; its Engine is not used.
	// Model, Builder, NoStream, AllowEOS, NoSalt, Nonce and Request.Seed
	// shape the requests as they shape the sent ones, and so do SharedPrefix
	// (every prompt opens with the same text, which the engine's prefix
	// cache, where Options has one, serves as the live server's does) and
	// Request.UsePrefixCache (exo's bench API). A split Segment and a
	// Request.Thinking are refused; Warmup requests
	// are left out (their salted prompts share nothing with the run's,
	// and the engine is idle again before the run starts).
	Load *benchkit.Load
	// Options is the embedded engine the Load would be sent to.
	Options sim.Options
	// API is the API the Load's engine adapter speaks to it; empty means
	// sim.PredictVLLM (engine/openai at Server.VLLMURL). exo's adapter
	// speaks sim.PredictExoBench.
	API sim.PredictAPI
	// RunIndex numbers the run in a sweep, as Load.Sweep numbers its runs
	// from 0: its rows' Run and its prompts' salts.
	RunIndex int
	// BurstGap spaces a burst's requests at the server: request i of a
	// burst arrives at i × BurstGap. Zero means all at one instant. A live
	// burst's requests reach the server some microseconds apart (its
	// release skew), so the first finds the engine idle and starts alone,
	// the rest at the next step's boundary: on exo's engine, where a
	// prefill stalls the batch, that first request's generation then waits
	// out the others' prefills. A gap of a microsecond predicts that.
	BurstGap time.Duration
}

// Run predicts one run of the Load with workload w and traffic, its
// summary against slo: what Load.Run would return, its rows marked
// Predicted and Simulated, in the order they end. The traffic is an open
// loop (a rate, a ramp, all at once, a replay), capped by MaxConcurrency
// or not, a burst, or a closed loop (Users), without probes.
//
// Where the sending waits on replies the virtual clock sends as the live
// loops do (sim.PredictDynamic): a capped open loop (concurrency's
// StartOpenLoop) sends its requests in order, each at its intended
// instant or, when MaxConcurrency are in flight, at the instant a reply
// ends and frees a slot, whichever is later; a closed loop
// (StartClosedLoop) sends each user's first request at the start and its
// next when its previous reply ends plus Think, numbered in the order
// sent, NumRequests in all (none intended at or after a Duration). A row's
// intended_send_s is the instant the loop meant (a closed loop's: the
// previous reply's end plus Think) and its send_offset_s the instant it
// left; their difference is the lag a live run records.
func (p *Predictor) Run(ctx context.Context, w benchkit.Workload, traffic benchkit.Traffic, slo timing.SLO) (benchkit.LoadRun, error) {
	l := p.Load
	if l == nil || l.Builder == nil || l.Model == "" || w == nil {
		return benchkit.LoadRun{}, fmt.Errorf("%w: a Load with a Model and a Builder, and a Workload, are required", ErrUnpredictable)
	}
	if err := traffic.Validate(); err != nil {
		return benchkit.LoadRun{}, err
	}
	switch {
	case l.Segment.Split():
		return benchkit.LoadRun{}, fmt.Errorf("%w: a split plan's segment is not predicted: predict the whole plan", ErrUnpredictable)
	case l.Request.Thinking != nil:
		return benchkit.LoadRun{}, fmt.Errorf("%w: a thinking control is not predicted", ErrUnpredictable)
	}
	sched, items, err := p.plan(ctx, w, traffic)
	if err != nil {
		return benchkit.LoadRun{}, err
	}
	pr, err := p.planProbes(ctx, sched, len(items), traffic)
	if err != nil {
		return benchkit.LoadRun{}, err
	}
	pred, intended, sent, err := p.send(ctx, sched, items, traffic, pr)
	if err != nil {
		return benchkit.LoadRun{}, err
	}
	var rate *float64
	if traffic.Burst == 0 && traffic.Users == 0 && !traffic.Replay && !math.IsInf(traffic.Rate, 1) && traffic.RampShape == "" {
		r := traffic.Rate
		rate = &r
	}
	rows := make([]benchkit.Request, len(pred))
	for i, pr := range pred {
		it := items[i]
		asked := benchkit.Request{Labels: it.Labels, Index: i, PPTarget: it.PPTarget, TGTarget: it.MaxTokens,
			Model: l.Model, Stream: !l.NoStream, Simulated: true, Predicted: true}
		asked.Run, asked.Rate = p.RunIndex, rate
		rows[i] = benchkit.NewRequest(asked, it.Prompt, p.result(i, intended[i], sent[i], it.Prompt, pr, l.Model, !l.NoStream), l.AllowEOS)
	}
	slices.SortStableFunc(rows, func(a, b benchkit.Request) int { return cmp.Compare(a.DoneS, b.DoneS) })
	sums := benchkit.Summarize(rows, benchkit.ByRun, slo)
	if len(sums) != 1 {
		return benchkit.LoadRun{}, fmt.Errorf("predict: %d summaries of one run", len(sums))
	}
	s := sums[0]
	s.Traffic, s.RequestRate, s.Scheduled, s.PeakInFlight = traffic.String(), rate, len(items), peakInFlight(sent, pred)
	if th, ok := w.(interface{ TheoreticalHitRate([]int) (float64, bool) }); ok {
		all := make([]int, len(items))
		for i := range all {
			all[i] = i
		}
		if v, ok := th.TheoreticalHitRate(all); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			s.TheoreticalHitRate = &v
		}
	}
	probeRows, probeSum := p.probeRows(pr, sent, rate)
	s.Probes = probeSum
	return benchkit.LoadRun{Summary: s, Requests: rows, Probes: probeRows}, nil
}

// plan is the Load's schedule and requests: its traffic's offsets (a
// replay's: the workload's own), the workload's prompts built by the
// Load's Builder and salted with its nonce, as Load.Run builds them for
// the run numbered RunIndex.
func (p *Predictor) plan(ctx context.Context, w benchkit.Workload, traffic benchkit.Traffic) ([]time.Duration, []benchkit.Item, error) {
	l := p.Load
	sched := traffic.Schedule()
	if traffic.Burst > 0 {
		for i := range sched {
			sched[i] += time.Duration(i) * p.BurstGap
		}
	}
	if traffic.Replay {
		sized, ok := w.(interface{ Len() int })
		if !ok {
			return nil, nil, fmt.Errorf("%w: a replay needs a workload that knows its size (a trace)", benchkit.ErrBadLoad)
		}
		n := sized.Len()
		if traffic.NumRequests > 0 {
			n = min(n, traffic.NumRequests)
		}
		sched = make([]time.Duration, n)
	}
	n := len(sched)
	if n == 0 {
		return nil, nil, fmt.Errorf("%w: the schedule of %s holds no request", benchkit.ErrBadLoad, traffic)
	}
	own := make([]int, n)
	for i := range own {
		own[i] = i
	}
	// Load.Run's prompts: the shared prefix, then the salt.
	items, err := l.Items(ctx, p.RunIndex, w, n, own)
	if err != nil {
		return nil, nil, err
	}
	if traffic.Replay {
		for i, it := range items {
			if it.At == nil {
				return nil, nil, fmt.Errorf("%w: a replay needs every request's own send instant, and request %d has none", benchkit.ErrBadLoad, i)
			}
			sched[i] = *it.At
		}
	}
	return sched, items, nil
}

// send predicts the plan as the Load's loop would send it: the
// predictions, numbered as the rows (a closed loop's in the order sent, at
// most len(items)), each one's intended instant and the instant it is
// sent. The head-of-line probes pr, when not nil, go beside them, and
// their predictions are left in pr.
func (p *Predictor) send(ctx context.Context, sched []time.Duration, items []benchkit.Item, traffic benchkit.Traffic, pr *probes) (pred []sim.Predicted, intended, sent []time.Duration, err error) {
	for {
		first, next, st := p.loop(sched, items, traffic, pr)
		if pr == nil {
			pred, err = sim.PredictDynamic(ctx, p.Options, first, next)
			return pred, st.intended, st.sent, err
		}
		pr.first = len(first)
		pred, err = sim.PredictDynamic(ctx, p.Options, append(first, pr.reqs...), next)
		if err != nil {
			return nil, nil, nil, err
		}
		intended, sent = st.intended, st.sent
		// The probes go out until the last main request has: those after
		// it are dropped and the plan predicted again, which leaves the
		// main requests' instants as they were (nothing later moves them).
		if !pr.keepUntil(slices.Max(sent)) {
			break
		}
	}
	pred, pr.pred = pr.split(pred)
	return pred, intended, sent, nil
}

// sends are the main requests' intended instants and the instants they
// were sent, in their numbering, as a prediction adds them.
type sends struct{ intended, sent []time.Duration }

// loop is the Load's loop as requests for the virtual clock: those known
// from the start, the function that adds those the replies let go (nil for
// none), and the requests' instants, which that function adds to as the
// prediction runs. The probes pr are never a reply that frees a slot.
func (p *Predictor) loop(sched []time.Duration, items []benchkit.Item, traffic benchkit.Traffic, pr *probes) (first []sim.PredictRequest, next func(int, sim.Predicted) []sim.PredictRequest, st *sends) {
	l := p.Load
	st = &sends{intended: slices.Clone(sched)}
	req := func(i int, at time.Duration) sim.PredictRequest {
		st.sent = append(st.sent, at)
		it := items[i]
		return sim.PredictRequest{At: at, API: p.API, Messages: it.Prompt.Messages, TokenIDs: it.Prompt.TokenIDs,
			MaxTokens: it.MaxTokens, IgnoreEOS: !l.AllowEOS, Seed: l.Request.Seed, UsePrefixCache: l.Request.UsePrefixCache}
	}
	n := len(items)
	switch {
	case traffic.Users > 0:
		// Each reply's end (plus Think) is its user's next request.
		st.intended = st.intended[:0]
		for i := range min(traffic.Users, n) {
			first = append(first, req(i, 0))
			st.intended = append(st.intended, 0)
		}
		next = func(_ int, r sim.Predicted) []sim.PredictRequest {
			at := r.Last + traffic.Think
			k := len(st.intended)
			if k >= n || (traffic.Duration > 0 && at >= traffic.Duration) {
				return nil
			}
			st.intended = append(st.intended, at)
			return []sim.PredictRequest{req(k, at)}
		}
	case traffic.MaxConcurrency > 0 && traffic.Burst == 0:
		// Each reply frees a slot for the next request in order, sent at
		// its instant or at once if that has passed.
		k := min(traffic.MaxConcurrency, n)
		for i := range k {
			first = append(first, req(i, sched[i]))
		}
		next = func(i int, r sim.Predicted) []sim.PredictRequest {
			if k >= n || pr.isProbe(i) {
				return nil
			}
			k++
			return []sim.PredictRequest{req(k-1, max(sched[k-1], r.Last))}
		}
	default:
		for i := range n {
			first = append(first, req(i, sched[i]))
		}
	}
	return first, next, st
}

// epoch anchors the predicted traces: every instant is epoch plus a
// schedule offset.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// result is what a client with no network would have measured of request
// i to model, meant for intended and sent at at, streamed or not: the
// request written at its arrival, a chunk at each
// predicted token (StreamChunk tokens a chunk, at the last one's
// instant), the response read at the last token.
func (p *Predictor) result(i int, intended, at time.Duration, pr promptsize.Prompt, r sim.Predicted, model string, stream bool) concurrency.Result[engine.Result] {
	res := engine.Result{Model: model, FinishReason: r.FinishReason, Text: r.Text}
	res.Trace.Start, res.Trace.Headers, res.Trace.End = epoch.Add(at), epoch.Add(at), epoch.Add(r.Last)
	if stream {
		k := max(p.Options.StreamChunk, 1)
		for c := 0; c < len(r.Tokens); c += k {
			last := min(c+k, len(r.Tokens))
			res.Trace.Chunks = append(res.Trace.Chunks, timing.Chunk{At: epoch.Add(r.Tokens[last-1]), Tokens: last - c})
		}
		if p.vllm() && len(pr.TokenIDs) == 0 && len(r.Tokens) > 0 {
			// vLLM's chat writes its role chunk with the first token.
			res.Trace.FirstChunk = epoch.Add(r.Tokens[0])
		}
	}
	u := &engine.Usage{PromptTokens: r.PromptTokens, CompletionTokens: r.GeneratedTokens, TotalTokens: r.PromptTokens + r.GeneratedTokens}
	if p.vllm() && !p.Options.NoPromptTokensDetails && (len(pr.TokenIDs) > 0 || r.CachedTokens > 0) {
		c := r.CachedTokens
		u.CachedTokens = &c
	}
	res.Usage = u
	if !p.vllm() {
		res.ServerStats = &engine.ServerStats{PromptTPS: r.PromptTPS, GenerationTPS: r.GenerationTPS,
			PromptTokens: r.PromptTokens, GenerationTokens: r.GeneratedTokens, PrefixCacheHit: engine.PrefixCacheHit(r.PrefixCacheHit)}
	}
	return concurrency.Result[engine.Result]{Index: i, User: -1, Value: res, Dispatched: true,
		Intended: intended, Dispatch: at, Sent: at, Marked: true, Done: r.Last}
}

func (p *Predictor) vllm() bool { return p.API == "" || p.API == sim.PredictVLLM }

// peakInFlight is the most requests between their send and their last
// token at once.
func peakInFlight(sched []time.Duration, pred []sim.Predicted) int {
	type edge struct {
		t time.Duration
		d int
	}
	es := make([]edge, 0, 2*len(sched))
	for i, at := range sched {
		es = append(es, edge{at, 1}, edge{pred[i].Last, -1})
	}
	// An end and a start at one instant: the end first.
	slices.SortFunc(es, func(a, b edge) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.d, b.d)) })
	peak, n := 0, 0
	for _, e := range es {
		n += e.d
		peak = max(peak, n)
	}
	return peak
}

// FindCapacity predicts the Load's capacity search (Load.FindCapacity:
// the same ladder, the same classification by capacity.Analyze, the same
// refinement), each run predicted by Run instead of sent, numbered from
// RunIndex in the order made. The result's Seconds are the prediction's
// wall time; its runs' rows are marked Predicted.
func (p *Predictor) FindCapacity(ctx context.Context, w benchkit.Workload, traffic benchkit.Traffic, slo timing.SLO, opts *capacity.Options) (capacity.Result, []benchkit.LoadRun, error) {
	if p.Load == nil {
		return capacity.Result{}, nil, fmt.Errorf("%w: a Load is required", ErrUnpredictable)
	}
	return p.Load.FindCapacityBy(ctx, traffic, slo, opts, func(ctx context.Context, index int, t benchkit.Traffic) (benchkit.LoadRun, error) {
		q := *p
		q.RunIndex = p.RunIndex + index
		return q.Run(ctx, w, t, slo)
	})
}

// FindMaxRate predicts the Load's search of the highest rate that meets
// slo at attainment (Load.FindMaxRate: the same bracketing and bisection
// of concurrency.SearchRate, the same test of each run), each run
// predicted by Run instead of sent, numbered from RunIndex in the order
// made; its runs' rows are marked Predicted.
func (p *Predictor) FindMaxRate(ctx context.Context, w benchkit.Workload, traffic benchkit.Traffic, slo timing.SLO, attainment float64, opts *concurrency.SearchOptions) (benchkit.MaxRate, []benchkit.LoadRun, error) {
	if p.Load == nil {
		return benchkit.MaxRate{}, nil, fmt.Errorf("%w: a Load is required", ErrUnpredictable)
	}
	if v, ok := w.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return benchkit.MaxRate{}, nil, err
		}
	}
	return p.Load.FindMaxRateBy(ctx, traffic, slo, attainment, opts, func(ctx context.Context, index int, t benchkit.Traffic) (benchkit.LoadRun, error) {
		q := *p
		q.RunIndex = p.RunIndex + index
		return q.Run(ctx, w, t, slo)
	})
}
