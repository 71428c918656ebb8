package benchkit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/metrics/view"
	"github.com/inferbench/inferbench/precision"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// Lengths draws the prompt and generation lengths of a load test, as
// vLLM's random dataset does: each request's input length is uniform over
// the integers of
//
//	[⌊Input · (1 − RangeRatio)⌋, ⌊Input · (1 + RangeRatio)⌋]
//
// and its output length likewise over Output's range, independently. A
// RangeRatio of 0 gives every request exactly Input and Output tokens.
// Input counts the whole chat-templated request (promptsize's count), so
// every drawn length is still an exact prompt.
type Lengths struct {
	// Input and Output are the centres of the ranges, in tokens.
	Input  int `json:"input_len"`
	Output int `json:"output_len"`
	// RangeRatio is the half width of both ranges relative to their
	// centre, in [0, 1).
	RangeRatio float64 `json:"range_ratio"`
	// InputMin and InputMax, when InputMax is positive, give the input
	// range directly (nano-vllm's offline benchmark draws from [100,
	// max]); Input and RangeRatio then set nothing for inputs. OutputMin
	// and OutputMax likewise for outputs.
	InputMin  int `json:"input_min,omitempty"`
	InputMax  int `json:"input_max,omitempty"`
	OutputMin int `json:"output_min,omitempty"`
	OutputMax int `json:"output_max,omitempty"`
	// Seed seeds the draws; the same seed gives the same lengths.
	Seed uint64 `json:"seed"`
}

// Validate checks the lengths; each error wraps ErrBadLoad.
func (l Lengths) Validate() error {
	if l.InputMax > 0 || l.OutputMax > 0 {
		ilo, ihi := l.InputRange()
		olo, ohi := l.OutputRange()
		switch {
		case ilo < 1 || ihi < ilo:
			return fmt.Errorf("%w: input range [%d, %d] must be non-empty and start at 1 token or more", ErrBadLoad, ilo, ihi)
		case olo < 1 || ohi < olo:
			return fmt.Errorf("%w: output range [%d, %d] must be non-empty and start at 1 token or more", ErrBadLoad, olo, ohi)
		case math.IsNaN(l.RangeRatio) || l.RangeRatio < 0 || l.RangeRatio >= 1:
			return fmt.Errorf("%w: range ratio must be in [0, 1), got %g", ErrBadLoad, l.RangeRatio)
		}
		return nil
	}
	switch {
	case l.Input < 1:
		return fmt.Errorf("%w: input length must be at least 1 token, got %d", ErrBadLoad, l.Input)
	case l.Output < 1:
		return fmt.Errorf("%w: output length must be at least 1 token, got %d", ErrBadLoad, l.Output)
	case math.IsNaN(l.RangeRatio) || l.RangeRatio < 0 || l.RangeRatio >= 1:
		return fmt.Errorf("%w: range ratio must be in [0, 1), got %g", ErrBadLoad, l.RangeRatio)
	}
	if lo, _ := lengthRange(l.Output, l.RangeRatio); lo < 1 {
		return fmt.Errorf("%w: output length %d with range ratio %g can draw %d tokens; it must be at least 1", ErrBadLoad, l.Output, l.RangeRatio, lo)
	}
	return nil
}

// InputRange returns the smallest and largest input length Draw can give.
func (l Lengths) InputRange() (lo, hi int) {
	if l.InputMax > 0 {
		return l.InputMin, l.InputMax
	}
	return lengthRange(l.Input, l.RangeRatio)
}

// OutputRange returns the smallest and largest output length Draw can give.
func (l Lengths) OutputRange() (lo, hi int) {
	if l.OutputMax > 0 {
		return l.OutputMin, l.OutputMax
	}
	return lengthRange(l.Output, l.RangeRatio)
}

func lengthRange(c int, r float64) (int, int) {
	return int(math.Floor(float64(c) * (1 - r))), int(math.Floor(float64(c) * (1 + r)))
}

// Draw returns n input and n output lengths. Request i always gets the
// same pair for the same Lengths, whatever n is.
func (l Lengths) Draw(n int) (in, out []int) {
	ilo, ihi := l.InputRange()
	olo, ohi := l.OutputRange()
	src := rand.New(rand.NewPCG(l.Seed, 0x6c656e67746873)) // "lengths"
	in, out = make([]int, n), make([]int, n)
	for i := range n {
		in[i] = ilo + src.IntN(ihi-ilo+1)
		out[i] = olo + src.IntN(ohi-olo+1)
	}
	return in, out
}

// A Workload is a source of requests for a Load: for each request of a
// run, its prompt built to an exact length, what it asks for, the labels
// that place it and, when the workload has its own timing, when it is
// meant to go. Lengths (random lengths, as vLLM's random dataset) is the
// first; traces, datasets and sessions are others.
type Workload interface {
	// Requests builds requests own (indices into a plan of n, in
	// schedule order) with b, whose Counter counts as the engine does.
	// salt(i) is the text that makes request i's prompt unique in the run
	// (the run nonce, the run and i), nil when the Load sends unsalted
	// prompts. out[j] is request own[j]. An error refuses the whole run:
	// nothing has been sent.
	Requests(ctx context.Context, b *promptsize.Builder, n int, own []int, salt func(i int) string) ([]Item, error)
}

// An Item is one request of a Workload.
type Item struct {
	// Prompt is the prompt to send, its count verified (promptsize).
	Prompt promptsize.Prompt
	// PPTarget is the prompt length asked for; MaxTokens the generation
	// length (max_tokens).
	PPTarget, MaxTokens int
	// At, when set, is when the request is meant to go, from the run's
	// start: a trace's own timing, which a replay (Traffic.Replay)
	// follows in place of a schedule.
	At *time.Duration
	// Labels are the item's own (a session and turn); the Load sets the
	// run and rate.
	Labels Labels
}

// Requests draws the lengths of a plan of n requests and builds the
// prompts of own: Workload's method.
func (l Lengths) Requests(ctx context.Context, b *promptsize.Builder, n int, own []int, salt func(int) string) ([]Item, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	ins, outs := l.Draw(n)
	items := make([]Item, len(own))
	for j, i := range own {
		pp := ins[i]
		var p promptsize.Prompt
		var err error
		if salt == nil {
			p, err = b.Build(ctx, pp)
		} else {
			p, err = b.BuildSalted(ctx, pp, salt(i))
		}
		if err != nil {
			if errors.Is(err, promptsize.ErrBelowOverhead) || errors.Is(err, promptsize.ErrUnreachable) {
				return nil, fmt.Errorf("%w: request %d: prompt of %d tokens: %w", ErrBadLoad, i, pp, err)
			}
			return nil, fmt.Errorf("benchkit: build prompt of request %d (%d tokens): %w", i, pp, err)
		}
		items[j] = Item{Prompt: p, PPTarget: pp, MaxTokens: outs[i]}
	}
	return items, nil
}

// Traffic says how a load test's requests are sent: an open loop at Rate
// requests per second (gamma-distributed gaps with shape Burstiness, a
// Poisson process when Burstiness is 1 or 0; an infinite Rate sends every
// request at once; with RampShape, a rate that ramps from Rate to
// RampTo), or, with Burst set, one barrier-synchronised burst. ProbeRate
// adds head-of-line probes beside an open loop. See
// docs/RAMPS-AND-PROBES.md for ramps and probes.
type Traffic struct {
	// Rate is the offered load in requests per second; math.Inf(1) sends
	// all requests at the start with no gap. Ignored for a burst. (In
	// JSON it is the meta's rates, since JSON has no infinity.)
	Rate float64 `json:"-"`
	// Burstiness is the gamma shape of the gaps (vLLM's burstiness): 1 is
	// Poisson, below 1 burstier, above 1 more regular; 0 means 1.
	Burstiness float64 `json:"burstiness,omitempty"`
	// Burst, when positive, sends one burst of Burst requests released at
	// one instant (concurrency.Burst) instead of an open loop.
	Burst int `json:"burst,omitempty"`
	// NumRequests bounds the number of requests; Duration bounds the
	// schedule (no request is scheduled at or after it). At least one is
	// needed for an open loop at a finite rate, NumRequests at an
	// infinite one.
	NumRequests int           `json:"num_requests,omitempty"`
	Duration    time.Duration `json:"duration_ns,omitempty"`
	// MaxConcurrency caps the requests in flight (0: no cap). A request
	// that finds the cap reached leaves late; its lag shows by how much.
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// Users, when positive, sends a closed loop instead: Users virtual
	// users, each sending its next request only after its previous one
	// returned and Think passed (concurrency.ClosedLoop), NumRequests in
	// all. The load then adapts to the server: it measures capacity at a
	// concurrency, not latency at an offered rate, so it has no rate and
	// no saturation gate.
	Users int           `json:"users,omitempty"`
	Think time.Duration `json:"think_ns,omitempty"`
	// Replay sends each request at its workload's own instant (a trace's
	// timestamps: Item.At), capped by MaxConcurrency; NumRequests, when
	// set, keeps the first that many. The workload must know its size
	// (a Len method, as Trace has).
	Replay bool `json:"replay,omitempty"`
	// Seed seeds the arrival schedule; the same seed and rate give the
	// same schedule, and schedules at different rates are the same draws
	// scaled by 1/Rate.
	Seed uint64 `json:"seed"`
	// RampShape, when set ("linear" or "exponential"), ramps the open
	// loop's rate from Rate (the start, which may be 0 for a linear ramp)
	// to RampTo requests per second over the first RampOver of the
	// schedule; the rate stays at RampTo after it (concurrency.Ramp, with
	// Burstiness and Seed as above). A ramp's run has no single offered
	// rate: its Summary.RequestRate and its rows' rate are null, and
	// Summary.Traffic describes the ramp.
	RampShape string        `json:"ramp_shape,omitempty"`
	RampTo    float64       `json:"ramp_to,omitempty"`
	RampOver  time.Duration `json:"ramp_over_ns,omitempty"`
	// ProbeRate, when positive, sends head-of-line probes beside an open
	// loop: one-token requests with short prompts of their own, at this
	// many per second from the schedule's start until the last main
	// request has been dispatched, outside MaxConcurrency. They are
	// reported apart (LoadRun.Probes, Summary.Probes), never in the main
	// figures.
	ProbeRate float64 `json:"probe_rate,omitempty"`
}

// Validate checks the traffic; each error wraps ErrBadLoad.
func (t Traffic) Validate() error {
	if err := t.shapeErr(); err != nil {
		return err
	}
	switch {
	case t.Burst < 0:
		return fmt.Errorf("%w: burst must not be negative, got %d", ErrBadLoad, t.Burst)
	case t.NumRequests < 0:
		return fmt.Errorf("%w: number of requests must not be negative, got %d", ErrBadLoad, t.NumRequests)
	case t.Duration < 0:
		return fmt.Errorf("%w: duration must not be negative, got %s", ErrBadLoad, t.Duration)
	case t.MaxConcurrency < 0:
		return fmt.Errorf("%w: max concurrency must not be negative, got %d", ErrBadLoad, t.MaxConcurrency)
	case t.Users < 0 || t.Think < 0:
		return fmt.Errorf("%w: users and think time must not be negative, got %d and %s", ErrBadLoad, t.Users, t.Think)
	case t.Replay && (t.Burst > 0 || t.Users > 0):
		return fmt.Errorf("%w: a replay follows its trace's instants; it is not a burst or a closed loop", ErrBadLoad)
	case t.Replay:
		return nil
	case t.Users > 0 && t.Burst > 0:
		return fmt.Errorf("%w: a closed loop of %d users is not a burst; give one of them", ErrBadLoad, t.Users)
	case t.Users > 0 && t.NumRequests == 0:
		return fmt.Errorf("%w: a closed loop needs a number of requests", ErrBadLoad)
	case t.Burst > 0 || t.Users > 0:
		return nil
	case math.IsNaN(t.Rate) || t.Rate < 0 || t.Rate == 0 && t.RampShape == "":
		return fmt.Errorf("%w: rate must be a positive number of requests per second or inf, got %g", ErrBadLoad, t.Rate)
	case math.IsNaN(t.Burstiness) || t.Burstiness < 0 || math.IsInf(t.Burstiness, 0):
		return fmt.Errorf("%w: burstiness must be a finite number ≥ 0, got %g", ErrBadLoad, t.Burstiness)
	case math.IsInf(t.Rate, 1) && t.NumRequests == 0:
		return fmt.Errorf("%w: an infinite rate needs a number of requests (a duration bounds nothing when every request goes at once)", ErrBadLoad)
	case t.NumRequests == 0 && t.Duration == 0:
		return fmt.Errorf("%w: an open loop needs a number of requests or a duration, got neither", ErrBadLoad)
	}
	return nil
}

// Arrivals returns the open loop's arrival process: Gamma with the
// traffic's rate, burstiness and seed, a concurrency.Ramp from Rate to
// RampTo with them when RampShape is set, or, for an infinite rate, zero
// gaps.
func (t Traffic) Arrivals() concurrency.Arrivals {
	if r, ok := t.ramp(); ok {
		return r
	}
	if math.IsInf(t.Rate, 1) {
		return concurrency.ArrivalsFunc(func(time.Duration, int) (time.Duration, bool) { return 0, true })
	}
	k := t.Burstiness
	if k == 0 {
		k = 1
	}
	return concurrency.Gamma{Rate: t.Rate, Burstiness: k, Src: rand.NewPCG(t.Seed, 0x61727269766c73)} // "arrivls"
}

// Schedule returns the intended send offsets of every request: all zero
// for a burst, else the arrivals' schedule within the bounds.
func (t Traffic) Schedule() []time.Duration {
	if t.Burst > 0 {
		return make([]time.Duration, t.Burst)
	}
	if t.Users > 0 {
		return make([]time.Duration, t.NumRequests) // each user's turn, when the previous reply comes
	}
	if t.Replay {
		return nil // the workload's own instants (Load.Run)
	}
	if math.IsInf(t.Rate, 1) {
		return make([]time.Duration, t.NumRequests)
	}
	offs, _, _ := concurrency.Schedule(t.Arrivals(), t.NumRequests, t.Duration)
	return offs
}

// String describes the traffic, e.g. "poisson(rate=4/s)",
// "gamma(rate=4/s, burstiness=0.5)", "ramp(linear 1/s→8/s over 30s)",
// "all at once" or "burst(n=8)".
func (t Traffic) String() string {
	switch {
	case t.Burst > 0:
		return fmt.Sprintf("burst(n=%d)", t.Burst)
	case t.Replay:
		return "replay"
	case t.Users > 0 && t.Think > 0:
		return fmt.Sprintf("closed(users=%d, think=%s)", t.Users, t.Think)
	case t.Users > 0:
		return fmt.Sprintf("closed(users=%d)", t.Users)
	case math.IsInf(t.Rate, 1):
		return "all at once"
	case t.RampShape != "":
		r, _ := t.ramp()
		return r.String()
	case t.Burstiness == 0 || t.Burstiness == 1:
		return concurrency.Poisson{Rate: t.Rate}.String()
	}
	return concurrency.Gamma{Rate: t.Rate, Burstiness: t.Burstiness}.String()
}

// A Load measures an OpenAI-compatible (or any) engine under load: it
// takes each request from a Workload (random lengths, a trace, a dataset),
// every prompt built to its exact length with a per-request salt before
// anything is sent, prepares every request
// ahead of its send when the engine is an engine.Preparer (the encoded
// bodies are held until sent, about the size of the prompts), sends the
// requests on an open-loop schedule (or as one burst), and records one
// Request per request with the client's timing, the server's counts and
// the schedule.
//
// Before the first request goes, Run prewarms min(n, MaxConcurrency)
// connections (engine.Prewarmer), prepares every request and collects
// garbage (runtime.GC), so that neither a dial nor a collection started by
// that work falls inside the first requests' measurement.
//
// Set the fields, then call Run, or Sweep and FindMaxRate for several
// rates. Engine, Model and Builder are required.
type Load struct {
	// Engine serves the requests.
	Engine engine.Engine
	// Model is the model id as the engine expects it.
	Model string
	// Builder makes the prompts; its Counter must count as the engine does.
	Builder *promptsize.Builder
	// NoStream asks for whole, unstreamed responses: the client then
	// measures E2E alone, no TTFT, TPOT or ITL. By default a Load streams,
	// as every online benchmark does.
	NoStream bool
	// AllowEOS lets the engine stop before the drawn output length (no
	// ignore_eos); by default every request asks for exactly its length.
	AllowEOS bool
	// NoSalt sends unsalted prompts, which an engine that caches prefixes
	// may partly serve from its cache.
	NoSalt bool
	// Nonce goes into every salt (promptsize.RunSalt with the run's
	// index), so that no request of this Load shares a prefix beyond the
	// chat template with any request of another invocation, or of another
	// run of a sweep. Empty: the first run draws a random one
	// (promptsize.NewNonce) and sets it here.
	Nonce string
	// SharedPrefix, when positive, puts the same text of about that many
	// tokens before every request's salt, for prefix-cache ablations: the
	// requests then share the chat template and those tokens, and nothing
	// after them.
	SharedPrefix int
	// Request is a template for every request: its Header, Extra,
	// sampling fields and Thinking are copied; Model, Messages, MaxTokens,
	// Stream and IgnoreEOS are the Load's. Its Thinking labels every row
	// (Labels.Thinking), and the prompts are counted with the chat
	// template variables it sends (a Builder whose Counter has
	// WithTemplateVars, as promptsize/hf's and promptsize/remote's have;
	// another counts without them, and each run says so in a warning).
	Request engine.Request
	// RequestTimeout bounds each request; 0 means no bound beyond ctx.
	RequestTimeout time.Duration
	// Grace is how long requests in flight may go on after ctx ends
	// (Ctrl-C): dispatch stops at once, and the requests still running
	// when Grace has passed are cancelled. 0 cancels them at once.
	Grace time.Duration
	// Simulated marks every request as measured against a simulated
	// engine.
	Simulated bool
	// Sinks receive each request as it ends, from one goroutine at a
	// time. A sink that fails stops the dispatch; Run's error then wraps
	// ErrSink.
	Sinks []Sink
	// Clock reads every instant of the schedule; nil means the system's.
	Clock concurrency.Clock
	// Logger receives debug records; nil logs nothing.
	Logger *slog.Logger
	// Segment, when split, sends only this segment's share of the plan
	// (Segment says which requests); the zero Segment sends all of it.
	// A split plan needs a shared Nonce, and its cap on requests in
	// flight is shared out (Segment.Share). See docs/DISTRIBUTED.md.
	Segment Segment
	// StartAt, when set, is a start instant shared by every segment: Run
	// waits for it on the wall clock before the schedule starts, and
	// every row's offsets are from it (a late start shows in the schedule
	// lag), its intended instant on the shared timeline in IntendedAt.
	StartAt time.Time
	// GCPercent, when not zero, is the garbage collector's target
	// percentage (debug.SetGCPercent) while the schedule runs; Run
	// restores the previous one before it returns. A collection inside
	// the run stops every reader for its pauses and takes CPU from them
	// for its marking: a chunk whose read comes after the next chunk has
	// arrived carries the next one's instant. Go's default is 100 (a
	// collection each time the heap doubles what was live after the last
	// one); serve-load sets 400. Negative turns collection off for the
	// run, which then holds all it allocates. The setting is the
	// process's: Loads that run at once in one process share it.
	// Summary.Client counts the collections that ran (GCCycles).
	GCPercent int
	// ServerMetrics, when set, scrapes the server's /metrics before and
	// after each run and puts its own figures in Summary.Server, beside
	// the client's. A split plan's segments share the server, so a
	// segment's run reads no server figures.
	ServerMetrics *view.Scraper
	// Warmup, when positive, sends that many requests before each run's
	// schedule starts and drops them: built by the workload as its
	// requests are, each with a salt of its own (no prefix shared with a
	// measured request beyond the chat template), at most MaxConcurrency
	// (a closed loop's Users) at once, all waited for. They are in no
	// row, no sink and no figure; Summary.Warmup counts them, and a
	// failed one is a warning, not the end of the run.
	Warmup int
	// SteadyRatio is the share of the reference in-flight count that
	// picks the steady-state window (docs/STEADY-STATE.md); 0 means 0.95.
	SteadyRatio float64
	// Until, when set, are targets margins of error (precision.Target:
	// "ttft.p99:5%") on the figures ttft, tpot, itl, e2e or ttfa: the
	// run checks them as its requests complete and, once every one is
	// met, stops dispatching (the requests in flight finish and are
	// kept). The traffic's NumRequests or Duration is then the cap.
	// Summary.Stopped says which ended the run, Summary.Precision each
	// target's interval and margin. See docs/PRECISION.md.
	Until []precision.Target

	runOffset int                                // added to every run's index (Document's thinking settings)
	builders  map[builderKey]*promptsize.Builder // the Builders that count with a thinking setting's variables
}

// A LoadRun is one run of a load test: its summary and every request.
type LoadRun struct {
	Summary  Summary   `json:"summary"`
	Requests []Request `json:"requests"`
	// Probes are the run's head-of-line probes (Traffic.ProbeRate), in
	// the order they ended; Summary.Probes summarises them.
	Probes []Request `json:"probes,omitempty"`
}

// Run measures one load test: it validates the traffic, takes every
// request from w and builds its prompt, then sends. Nothing is sent when a
// check or a prompt fails (the error wraps ErrBadLoad). A failed request
// is a Request with its error, never the end of the run. When ctx ends,
// dispatch stops, the requests in flight get Grace to finish, and Run
// returns the requests it has with an error wrapping ctx.Err().
func (l *Load) Run(ctx context.Context, w Workload, traffic Traffic, slo timing.SLO) (LoadRun, error) {
	return l.run(ctx, 0, w, traffic, slo)
}

func (l *Load) run(ctx context.Context, runIdx int, w Workload, traffic Traffic, slo timing.SLO) (LoadRun, error) {
	r, err := l.plan(ctx, runIdx+l.runOffset, w, traffic)
	if err != nil {
		return LoadRun{}, err
	}
	warmed, warmWarning := l.warmup(ctx, r, w)
	// Requests run under their own context, which outlives ctx by Grace:
	// an interrupt stops dispatch at once but lets requests in flight end.
	reqCtx, cancelReqs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelReqs()
	stop := context.AfterFunc(ctx, func() {
		if l.Grace <= 0 {
			cancelReqs()
			return
		}
		t := time.AfterFunc(l.Grace, cancelReqs)
		context.AfterFunc(reqCtx, func() { t.Stop() })
	})
	defer stop()
	var scr *view.Run
	if !l.Segment.Split() {
		scr = l.ServerMetrics.Start(ctx)
	}
	r.prepare(ctx)
	// Building and preparing allocate more than anything in the run: a
	// garbage collection they start would run inside the first requests'
	// measurement, its mark workers taking a core from the readers of
	// their first chunks. Collect now, before the clock starts.
	runtime.GC()
	scr.Ready()
	if l.GCPercent != 0 {
		defer debug.SetGCPercent(debug.SetGCPercent(l.GCPercent))
	}
	if err := l.waitStart(ctx); err != nil {
		return LoadRun{}, err
	}
	// A sink that fails stops the dispatch, and so do targets met
	// (errTargetsMet).
	dispatchCtx, stopDispatch := context.WithCancelCause(ctx)
	defer stopDispatch(nil)
	cpu0, cpuOK := processCPU()
	gc0 := readGC()
	wall0 := time.Now()
	scr.StartSampling(ctx, wall0)
	run := r.start(dispatchCtx, reqCtx)
	rows, lags, sinkErr := r.collect(dispatchCtx, run, stopDispatch)
	probes, probeSum, probeErr := r.probes.finish(l.Sinks)
	scr.StopSampling()
	sum := run.Summary()
	ls := summarize(rows, ByRun, slo)
	ls.Traffic = traffic.String()
	ls.RequestRate = r.rate
	ls.Scheduled = len(r.own)
	ls.PeakInFlight = sum.PeakInFlight
	ls.Probes, sinkErr = probeSum, cmp.Or(sinkErr, probeErr)
	ls.Warmup = warmed
	if warmWarning != "" {
		ls.DriverWarnings = append(ls.DriverWarnings, warmWarning)
	}
	ls.setSteady(rows, slo, r.traffic, l.SteadyRatio)
	if th, ok := w.(interface{ TheoreticalHitRate([]int) (float64, bool) }); ok {
		if v, ok := th.TheoreticalHitRate(r.own); ok {
			ls.TheoreticalHitRate = finite(v)
		}
	}
	// A capped open loop's lag, and a closed loop's, are the server's: no
	// gate.
	ls.Client = loadHealth(rows, lags, r.traffic.MaxConcurrency > 0 || r.traffic.Users > 0, cpu0, cpuOK, time.Since(wall0))
	ls.Client.setGC(gc0, readGC())
	if r.thinkWarning != "" {
		ls.DriverWarnings = append(ls.DriverWarnings, r.thinkWarning)
	}
	for _, w := range sum.Warnings {
		ls.DriverWarnings = append(ls.DriverWarnings, w.Error())
	}
	switch {
	case sinkErr != nil:
		ls.Interrupted, err = true, sinkErr
	case sum.Err != nil && r.until.met && errors.Is(context.Cause(dispatchCtx), errTargetsMet):
		// Stopped at its targets: a clean stop.
	case sum.Err != nil:
		ls.Interrupted, err = true, fmt.Errorf("benchkit: load run interrupted: %w", sum.Err)
		ls.DriverWarnings = append(ls.DriverWarnings, fmt.Sprintf("interrupted: %d of %d scheduled requests were sent", sum.Dispatched, len(r.own)))
	}
	r.until.stopped(&ls, rows)
	if v := scr.Finish(ctx, serverCounts(slices.Concat(rows, probes))); v != nil {
		compareServer(v, ls)
		ls.Server = v
	}
	ls.Warnings = append(ls.Warnings, ls.DriverWarnings...)
	return LoadRun{Summary: ls, Requests: rows, Probes: probes}, err
}

// Resummarize summarises the run's requests again, after a caller changed
// them (completion tokens counted after the run, say), against slo: every
// figure from the requests is recomputed, and what only the Load knew
// (the traffic, the schedule's size, the peak in flight, the client's
// health, an interruption, the warm-ups and its own warnings) is kept;
// the steady-state figures are recomputed over the window the run picked.
func (r *LoadRun) Resummarize(slo timing.SLO) {
	old := r.Summary
	s := summarize(r.Requests, ByRun, slo)
	s.Traffic, s.RequestRate, s.Scheduled, s.PeakInFlight = old.Traffic, old.RequestRate, old.Scheduled, old.PeakInFlight
	s.Client, s.Interrupted, s.DriverWarnings = old.Client, old.Interrupted, old.DriverWarnings
	s.Probes = old.Probes
	s.Warmup, s.Steady = old.Warmup, resteady(old.Steady, r.Requests, slo)
	s.setPeaks(r.Requests)
	s.Precision, s.Stopped = old.Precision, old.Stopped
	if s.Server = old.Server; s.Server != nil {
		compareServer(s.Server, s)
	}
	s.Warnings = append(s.Warnings, old.DriverWarnings...)
	r.Summary = s
}

// loadRun is one run of a Load as planned: everything indexed by plan
// request (sched, prepared) or by the segment's own requests (items).
type loadRun struct {
	l        *Load
	runIdx   int
	traffic  Traffic // the segment's share of the cap
	sched    []time.Duration
	own      []int
	items    []Item
	fields   PlanFields
	rate     *float64
	prepared []engine.Prepared
	prepErrs []error
	probes   *probeRun    // head-of-line probes; nil for none
	shift    atomic.Int64 // the runner's start − StartAt, ns
	// builder makes the prompts, counting with the template variables of
	// the requests' thinking control; thinking labels the rows, and
	// thinkWarning says when the counts cannot follow the variables.
	builder                *promptsize.Builder
	thinking, thinkWarning string
	// until checks the Load's targets as rows complete.
	until *untilWatch
}

// plan checks the load, takes its requests from w and opens the
// connections, before anything is sent; each refusal wraps ErrBadLoad.
func (l *Load) plan(ctx context.Context, runIdx int, w Workload, traffic Traffic) (*loadRun, error) {
	if l.Engine == nil || l.Builder == nil || l.Model == "" || w == nil {
		return nil, fmt.Errorf("%w: Engine, Model, Builder and a Workload are required", ErrBadLoad)
	}
	if err := traffic.Validate(); err != nil {
		return nil, err
	}
	if err := l.CheckUntil(traffic); err != nil {
		return nil, err
	}
	r := &loadRun{l: l, runIdx: runIdx, sched: traffic.Schedule(), thinking: thinkingLabel(l.Request.Thinking)}
	r.builder, r.thinkWarning = l.thinkingBuilder()
	if traffic.Replay {
		sized, ok := w.(interface{ Len() int })
		if !ok {
			return nil, fmt.Errorf("%w: a replay needs a workload that knows its size (a trace)", ErrBadLoad)
		}
		n := sized.Len()
		if traffic.NumRequests > 0 {
			n = min(n, traffic.NumRequests)
		}
		r.sched = make([]time.Duration, n)
	}
	n := len(r.sched)
	if n == 0 {
		return nil, fmt.Errorf("%w: the schedule of %s within %s holds no request", ErrBadLoad, traffic, traffic.Duration)
	}
	if err := l.checkSegment(n, traffic); err != nil {
		return nil, err
	}
	// own are the requests of the plan this segment sends (all of them
	// without a segment).
	r.own = l.Segment.norm().Indices(n)
	r.until = newUntilWatch(l.Until, len(r.own))
	var err error
	if r.items, err = l.items(ctx, r.builder, runIdx, w, n, r.own); err != nil {
		return nil, err
	}
	if traffic.Replay {
		if err := timed(r.items, r.own, r.sched); err != nil {
			return nil, err
		}
	}
	// The plan is the whole one (its cap included); this segment's cap is
	// its share of it.
	r.fields = l.planFields(runIdx, w, traffic, n)
	traffic.MaxConcurrency = l.Segment.norm().Share(traffic.MaxConcurrency)
	r.traffic = traffic
	if err := r.planProbes(ctx); err != nil {
		return nil, err
	}
	if traffic.Burst == 0 && traffic.Users == 0 && !traffic.Replay && !math.IsInf(traffic.Rate, 1) && traffic.RampShape == "" {
		rate := traffic.Rate
		r.rate = &rate
	}
	// Connections are opened before the schedule starts: a burst's n, an
	// open loop's min(n, MaxConcurrency) (all n when uncapped), so that no
	// request of the first wave dials inside its measurement.
	if pw, ok := l.Engine.(engine.Prewarmer); ok {
		warm := len(r.own)
		switch {
		case traffic.Users > 0:
			warm = min(len(r.own), traffic.Users)
		case traffic.Burst == 0 && traffic.MaxConcurrency > 0:
			warm = min(len(r.own), traffic.MaxConcurrency)
		}
		if err := pw.Prewarm(ctx, warm); err != nil {
			l.log(ctx, slog.LevelWarn, "prewarm failed; requests may dial inside the measurement", "n", warm, "err", err)
		}
	}
	return r, nil
}

// prepare readies every request (validated, encoded, its headers built:
// engine.Preparer) before the schedule starts, so that the lag and the
// skew measure the sending, not the encoding. An engine that cannot
// prepare does that work in Complete. A request that fails to prepare is
// a failed row and is not sent.
func (r *loadRun) prepare(ctx context.Context) {
	n := len(r.sched)
	r.prepared, r.prepErrs = make([]engine.Prepared, n), make([]error, n)
	for j, i := range r.own {
		r.prepared[i], r.prepErrs[i] = engine.Prepare(ctx, r.l.Engine, r.l.request(r.items[j].Prompt, r.items[j].MaxTokens))
	}
}

// start starts the schedule: one burst, or an open loop replaying the
// plan's offsets of the segment's requests. Requests run under reqCtx.
func (r *loadRun) start(ctx, reqCtx context.Context) *concurrency.Run[engine.Result] {
	l := r.l
	onStart := func(start time.Time) {
		r.probes.started(start)
		if !l.StartAt.IsZero() {
			r.shift.Store(int64(start.Sub(l.StartAt)))
		}
	}
	send := func(_ context.Context, j int, mark func(time.Time)) (engine.Result, error) {
		i := r.own[j]
		r.probes.sent(len(r.own))
		if r.prepErrs[i] != nil {
			return engine.Result{}, fmt.Errorf("benchkit: preparing request %d: %w", i, r.prepErrs[i])
		}
		return sendWithin(engine.WithSendHook(reqCtx, mark), r.prepared[i], l.RequestTimeout)
	}
	if r.traffic.Burst > 0 {
		return concurrency.StartBurst(ctx, len(r.own), send, &concurrency.BurstOptions{Clock: l.Clock, Logger: l.Logger, OnStart: onStart})
	}
	if r.traffic.Users > 0 {
		return concurrency.StartClosedLoop(ctx, concurrency.ClosedLoop{Users: r.traffic.Users, Think: r.traffic.Think,
			Count: len(r.own), Clock: l.Clock, Logger: l.Logger}, send)
	}
	offs := make([]time.Duration, len(r.own))
	for j, i := range r.own {
		offs[j] = r.sched[i]
	}
	r.probes.arm(ctx)
	run := concurrency.StartOpenLoop(ctx, concurrency.OpenLoop{
		Arrivals:    concurrency.Replay{Offsets: offs},
		MaxInFlight: r.traffic.MaxConcurrency,
		Clock:       l.Clock,
		Logger:      l.Logger,
		OnStart:     onStart,
	}, send)
	r.probes.start(reqCtx)
	return run
}

// collect records each request as it ends and hands it to the sinks; the
// first sink that fails stops the dispatch (stop) and is returned, and
// the Load's targets, once met, stop it with errTargetsMet. lags
// are the dispatch lags of the requests sent.
func (r *loadRun) collect(ctx context.Context, run *concurrency.Run[engine.Result], stop context.CancelCauseFunc) (rows []Request, lags []float64, sinkErr error) {
	l := r.l
	for q := range run.Results() {
		// A request that ctx stopped before it was sent (a burst not yet
		// released) was never attempted: it is not a row.
		if !q.Dispatched && ctx.Err() != nil && errors.Is(q.Err, ctx.Err()) {
			continue
		}
		if q.Dispatched {
			lags = append(lags, (q.Dispatch - q.Intended).Seconds())
		}
		j := q.Index
		q.Index = r.own[j]
		it := r.items[j]
		asked := Request{Labels: it.Labels, Index: q.Index, PPTarget: it.PPTarget, TGTarget: it.MaxTokens,
			Model: l.Model, Stream: !l.NoStream, Simulated: l.Simulated}
		asked.Run, asked.Rate, asked.Thinking = r.runIdx, r.rate, r.thinking
		row := NewRequest(asked, it.Prompt, q, l.AllowEOS)
		l.placeRow(&row, r.fields, it.Prompt, time.Duration(r.shift.Load()))
		if err := addAll(l.Sinks, row); err != nil && sinkErr == nil {
			sinkErr = err
			stop(err)
		}
		rows = append(rows, row)
		if r.until.observe(rows) {
			stop(errTargetsMet)
		}
	}
	return rows, lags, sinkErr
}

// Items is the requests own of a plan of n that run runIdx of the Load
// would send of w, as Run builds them (its Builder's prompts, the shared
// prefix, the salts of its nonce, which it draws when empty), before
// anything is sent: what a prediction of the run sends on its virtual
// clock. A thinking control's Builder is not applied.
func (l *Load) Items(ctx context.Context, runIdx int, w Workload, n int, own []int) ([]Item, error) {
	if l.Builder == nil {
		return nil, fmt.Errorf("%w: a Builder is required", ErrBadLoad)
	}
	return l.items(ctx, l.Builder, runIdx, w, n, own)
}

// items takes the requests own of a plan of n from w, their prompts built
// by b, salted with the nonce, the run and the index (after any shared
// prefix) unless NoSalt, before anything is sent.
func (l *Load) items(ctx context.Context, b *promptsize.Builder, runIdx int, w Workload, n int, own []int) ([]Item, error) {
	if l.Nonce == "" && !l.NoSalt {
		l.Nonce = promptsize.NewNonce(nil)
	}
	shared, err := sharedPrefix(ctx, b, l.SharedPrefix)
	if err != nil {
		return nil, err
	}
	var salt func(int) string
	if !l.NoSalt {
		salt = func(i int) string { return shared + promptsize.RunSalt(l.Nonce, runIdx, i) }
	}
	items, err := w.Requests(ctx, b, n, own, salt)
	if err == nil && len(items) != len(own) {
		err = fmt.Errorf("benchkit: the workload gave %d requests for %d", len(items), len(own))
	}
	return items, err
}

// timed puts the workload's own send offsets in place of the schedule
// sched, for a replay (items[j] is request own[j]).
func timed(items []Item, own []int, sched []time.Duration) error {
	if n := countIf(items, func(it Item) bool { return it.At != nil }); n < len(items) {
		return fmt.Errorf("%w: a replay needs every request's own send instant, and %d of %d have none (a dataset without timing: give a rate)", ErrBadLoad, len(items)-n, len(items))
	}
	for j, it := range items {
		sched[own[j]] = *it.At
	}
	return nil
}

// thinkingBuilder is the Builder of the requests' thinking control
// (thinkingBuilder), made once per setting so that its caches last over
// the runs of a sweep, and the warning of a Counter that cannot render
// with the control's variables.
func (l *Load) thinkingBuilder() (*promptsize.Builder, string) {
	key := builderKey{l.Builder, thinkingLabel(l.Request.Thinking)}
	if b, ok := l.builders[key]; ok {
		return b, ""
	}
	b, warn := thinkingBuilder(l.Builder, l.Request.Thinking)
	if warn != "" {
		return b, warn
	}
	if l.builders == nil {
		l.builders = map[builderKey]*promptsize.Builder{}
	}
	l.builders[key] = b
	return b, ""
}

// builderKey is a Builder and a thinking setting's label.
type builderKey struct {
	b     *promptsize.Builder
	label string
}

// request is the request of prompt p generating tg tokens.
func (l *Load) request(p promptsize.Prompt, tg int) engine.Request {
	req := promptRequest(l.Request, l.Model, p, tg, !l.AllowEOS)
	req.Stream = !l.NoStream
	return req
}

func (l *Load) log(ctx context.Context, level slog.Level, msg string, args ...any) {
	if l.Logger != nil {
		l.Logger.Log(ctx, level, msg, args...)
	}
}
