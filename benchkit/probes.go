package benchkit

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// probeContent is a probe's prompt length after the chat template, in
// tokens: short, so that its own prefill adds little to what it measures,
// and long enough for its salt.
const probeContent = 32

// probeRun is a run's head-of-line probes (Traffic.ProbeRate): one-token
// requests on a constant schedule of their own, from the main schedule's
// start until its last request is dispatched, outside the cap on
// requests in flight. Their prompts are built and prepared with the
// plan's, before anything is sent.
type probeRun struct {
	r        *loadRun
	rate     float64
	offs     []time.Duration // probe k at k/rate
	prompts  []promptsize.Prompt
	prepared []engine.Prepared
	prepErrs []error

	ctx        context.Context // the probes' dispatch: the main's, ended by its last request
	stop       context.CancelFunc
	dispatched atomic.Int64 // main requests dispatched so far
	lastMain   atomic.Int64 // the last main dispatch, Unix ns
	mainStart  atomic.Int64 // the main loop's start, Unix ns
	probeStart atomic.Int64 // the probes' loop's start, Unix ns
	run        *concurrency.Run[engine.Result]
	rows       []Request
	done       chan struct{}
}

// planProbes builds and prepares the run's probes, when its traffic asks
// for them: as many as fit the main schedule's span (the last request's
// intended offset) at the probe rate, twice that span when a cap on
// requests in flight may make the dispatch late. Each probe's prompt is
// probeContent tokens after the chat template, salted with an index after
// the plan's n (promptsize.RunSalt), so that it shares no prefix with a
// request of the load or another probe, even when the load is unsalted.
func (r *loadRun) planProbes(ctx context.Context) error {
	t := r.traffic
	if !(t.ProbeRate > 0) {
		return nil
	}
	if r.l.Segment.Split() {
		return fmt.Errorf("%w: probes are not split in segments: run them in one process (or in none of the segments)", ErrBadLoad)
	}
	span := slices.Max(r.sched)
	if t.MaxConcurrency > 0 {
		span *= 2
	}
	n := int(math.Floor(span.Seconds()*t.ProbeRate)) + 1
	prompts, err := r.l.probePrompts(ctx, r.builder, r.runIdx, len(r.sched), n)
	if err != nil {
		return err
	}
	p := &probeRun{r: r, rate: t.ProbeRate, offs: make([]time.Duration, n), prompts: prompts,
		prepared: make([]engine.Prepared, n), prepErrs: make([]error, n), done: make(chan struct{})}
	for k := range n {
		p.offs[k] = seconds(float64(k) / t.ProbeRate)
		p.prepared[k], p.prepErrs[k] = engine.Prepare(ctx, r.l.Engine, r.l.request(p.prompts[k], 1))
	}
	r.probes = p
	return nil
}

// ProbePrompts are the prompts of count head-of-line probes of run runIdx
// beside a plan of n requests, as Load.Run builds them
// (Traffic.ProbeRate): probeContent tokens after the chat template, each
// salted with an index after the plan's. A prediction of the run
// (benchkit/predict) sends the same.
func (l *Load) ProbePrompts(ctx context.Context, runIdx, n, count int) ([]promptsize.Prompt, error) {
	if l.Builder == nil {
		return nil, fmt.Errorf("%w: a Builder is required", ErrBadLoad)
	}
	if l.Nonce == "" && !l.NoSalt {
		l.Nonce = promptsize.NewNonce(nil)
	}
	return l.probePrompts(ctx, l.Builder, runIdx, n, count)
}

func (l *Load) probePrompts(ctx context.Context, b *promptsize.Builder, runIdx, n, count int) ([]promptsize.Prompt, error) {
	over, err := b.Overhead(ctx)
	if err != nil {
		return nil, fmt.Errorf("benchkit: probes: %w", err)
	}
	out := make([]promptsize.Prompt, count)
	for k := range out {
		out[k], err = b.BuildSalted(ctx, over+probeContent, promptsize.RunSalt(l.Nonce, runIdx, n+k))
		if err != nil {
			return nil, fmt.Errorf("%w: probe %d: prompt of %d tokens: %w", ErrBadLoad, k, over+probeContent, err)
		}
	}
	return out, nil
}

// SummarizeProbes is the summary of a run's head-of-line probes sent at
// rate per second, peak of them in flight at once, as Load.Run writes it
// in Summary.Probes.
func (l *Load) SummarizeProbes(rows []Request, rate float64, peak int) *Summary {
	s := summarize(rows, ByRun, timing.SLO{})
	// One token is what a probe asks for: the note that tg=1 has no TPOT
	// says nothing about it.
	s.Warnings = slices.DeleteFunc(s.Warnings, func(w string) bool { return w == tg1Note })
	s.Traffic = fmt.Sprintf("probes(constant rate=%g/s, max_tokens=1)", rate)
	s.RequestRate = &rate
	s.Scheduled = len(rows)
	s.PeakInFlight = peak
	return &s
}

// arm makes the probes' dispatch context from the main's, before the
// main loop starts.
func (p *probeRun) arm(ctx context.Context) {
	if p != nil {
		p.ctx, p.stop = context.WithCancel(ctx)
	}
}

// sent notes that a main request was dispatched, and stops the probes
// after the last of n.
func (p *probeRun) sent(n int) {
	if p == nil {
		return
	}
	var clock concurrency.Clock = concurrency.SystemClock{}
	if p.r.l.Clock != nil {
		clock = p.r.l.Clock
	}
	p.lastMain.Store(clock.Now().UnixNano())
	if int(p.dispatched.Add(1)) == n {
		p.stop()
	}
}

// started notes the main loop's start.
func (p *probeRun) started(start time.Time) {
	if p != nil {
		p.mainStart.Store(start.UnixNano())
	}
}

// start starts the probes' loop (armed), each probe running under
// reqCtx, and collects them as they end.
func (p *probeRun) start(reqCtx context.Context) {
	if p == nil {
		return
	}
	l := p.r.l
	send := func(_ context.Context, k int, mark func(time.Time)) (engine.Result, error) {
		if p.prepErrs[k] != nil {
			return engine.Result{}, fmt.Errorf("benchkit: preparing probe %d: %w", k, p.prepErrs[k])
		}
		return sendWithin(engine.WithSendHook(reqCtx, mark), p.prepared[k], l.RequestTimeout)
	}
	p.run = concurrency.StartOpenLoop(p.ctx, concurrency.OpenLoop{
		Arrivals: concurrency.Replay{Offsets: p.offs},
		Clock:    l.Clock,
		Logger:   l.Logger,
		OnStart:  func(start time.Time) { p.probeStart.Store(start.UnixNano()) },
	}, send)
	go func() {
		defer close(p.done)
		for q := range p.run.Results() {
			p.rows = append(p.rows, p.row(q))
		}
	}()
}

// row is probe q's row, its offsets moved from the probes' start to the
// main loop's.
func (p *probeRun) row(q concurrency.Result[engine.Result]) Request {
	r, l := p.r, p.r.l
	asked := Request{Index: q.Index, PPTarget: p.prompts[q.Index].Tokens, TGTarget: 1,
		Model: l.Model, Stream: !l.NoStream, Simulated: l.Simulated, Probe: true}
	asked.Run, asked.Rate, asked.Thinking = r.runIdx, r.rate, r.thinking
	row := NewRequest(asked, p.prompts[q.Index], q, l.AllowEOS)
	if m := p.mainStart.Load(); m != 0 {
		shift := time.Duration(p.probeStart.Load() - m).Seconds()
		row.IntendedSendS += shift
		row.SendOffsetS += shift
		row.DoneS += shift
	}
	l.placeRow(&row, r.fields, p.prompts[q.Index], time.Duration(r.shift.Load()))
	return row
}

// finish stops the probes (the main dispatch is over), waits for those in
// flight, hands their rows to sinks and summarises them. A nil probeRun
// has nothing.
func (p *probeRun) finish(sinks []Sink) (rows []Request, sum *Summary, sinkErr error) {
	if p == nil || p.run == nil {
		return nil, nil, nil
	}
	p.stop()
	<-p.done // bounded: every probe ends by its timeout or the run's grace
	for _, row := range p.rows {
		if err := addAll(sinks, row); err != nil {
			sinkErr = err
			break
		}
	}
	s := p.r.l.SummarizeProbes(p.rows, p.rate, p.run.Summary().PeakInFlight)
	last := time.Duration(p.lastMain.Load() - p.mainStart.Load())
	if int(p.dispatched.Load()) == len(p.r.own) && len(p.rows) == len(p.offs) && last > p.offs[len(p.offs)-1]+seconds(1/p.rate) {
		s.Warnings = append(s.Warnings, fmt.Sprintf("the main dispatch went on to %.3gs, past the last of the %d probes planned (at %.3gs): the probes do not cover its end", last.Seconds(), len(p.offs), p.offs[len(p.offs)-1].Seconds()))
	}
	return p.rows, s, sinkErr
}

// withoutProbes returns reqs without its probes (Request.Probe), unless
// every request is one: a group of probes alone is summarised as such, and
// probes never enter the figures of the requests they were sent beside.
func withoutProbes(reqs []Request) []Request {
	n := countIf(reqs, func(r Request) bool { return r.Probe })
	if n == 0 || n == len(reqs) {
		return reqs
	}
	return slices.DeleteFunc(slices.Clone(reqs), func(r Request) bool { return r.Probe })
}
