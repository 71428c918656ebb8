package benchkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// ErrBadLoad is wrapped by every error that rejects a load test before
// anything is sent: bad lengths, bad traffic, prompts that cannot be built.
var ErrBadLoad = errors.New("benchkit: bad load")

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

// Traffic says how a load test's requests are sent: an open loop at Rate
// requests per second (gamma-distributed gaps with shape Burstiness, a
// Poisson process when Burstiness is 1 or 0; an infinite Rate sends every
// request at once), or, with Burst set, one barrier-synchronised burst.
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
	// Seed seeds the arrival schedule; the same seed and rate give the
	// same schedule, and schedules at different rates are the same draws
	// scaled by 1/Rate.
	Seed uint64 `json:"seed"`
}

// Validate checks the traffic; each error wraps ErrBadLoad.
func (t Traffic) Validate() error {
	switch {
	case t.Burst < 0:
		return fmt.Errorf("%w: burst must not be negative, got %d", ErrBadLoad, t.Burst)
	case t.NumRequests < 0:
		return fmt.Errorf("%w: number of requests must not be negative, got %d", ErrBadLoad, t.NumRequests)
	case t.Duration < 0:
		return fmt.Errorf("%w: duration must not be negative, got %s", ErrBadLoad, t.Duration)
	case t.MaxConcurrency < 0:
		return fmt.Errorf("%w: max concurrency must not be negative, got %d", ErrBadLoad, t.MaxConcurrency)
	case t.Burst > 0:
		return nil
	case math.IsNaN(t.Rate) || t.Rate <= 0:
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
// traffic's rate, burstiness and seed, or, for an infinite rate, zero
// gaps.
func (t Traffic) Arrivals() concurrency.Arrivals {
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
	if math.IsInf(t.Rate, 1) {
		return make([]time.Duration, t.NumRequests)
	}
	offs, _, _ := concurrency.Schedule(t.Arrivals(), t.NumRequests, t.Duration)
	return offs
}

// String describes the traffic, e.g. "poisson(rate=4/s)",
// "gamma(rate=4/s, burstiness=0.5)", "all at once" or "burst(n=8)".
func (t Traffic) String() string {
	switch {
	case t.Burst > 0:
		return fmt.Sprintf("burst(n=%d)", t.Burst)
	case math.IsInf(t.Rate, 1):
		return "all at once"
	case t.Burstiness == 0 || t.Burstiness == 1:
		return concurrency.Poisson{Rate: t.Rate}.String()
	}
	return concurrency.Gamma{Rate: t.Rate, Burstiness: t.Burstiness}.String()
}

// A Load measures an OpenAI-compatible (or any) engine under load: it
// draws each request's lengths, builds every prompt to its exact length
// with a per-request salt before anything is sent, prepares every request
// ahead of its send when the engine is an engine.Preparer (the encoded
// bodies are held until sent, about the size of the prompts), sends the
// requests on an open-loop schedule (or as one burst), and records one
// LoadRow per request with the client's timing, the server's counts and
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
	// Stream asks for streamed responses: without it there is no TTFT,
	// TPOT or ITL, only E2E.
	Stream bool
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
	// Request is a template for every request: its Header, Extra and
	// sampling fields are copied; Model, Messages, MaxTokens, Stream and
	// IgnoreEOS are the Load's.
	Request engine.Request
	// RequestTimeout bounds each request; 0 means no bound beyond ctx.
	RequestTimeout time.Duration
	// Grace is how long requests in flight may go on after ctx ends
	// (Ctrl-C): dispatch stops at once, and the requests still running
	// when Grace has passed are cancelled. 0 cancels them at once.
	Grace time.Duration
	// Simulated marks every row as measured against a simulated engine.
	Simulated bool
	// OnRow, when set, receives each row as its request ends, from one
	// goroutine at a time.
	OnRow func(LoadRow)
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
}

// LoadRow is one request of a load test. Durations are in seconds;
// offsets are from the run's start instant. Figures a request does not
// have (TTFT of an unstreamed request, TPOT of a one-token reply, a
// server count the server did not send) are null, never 0.
type LoadRow struct {
	// Run numbers the run in a sweep or search (from 0); Rate is its
	// offered rate (null when infinite or a burst).
	Run  int      `json:"run"`
	Rate *float64 `json:"rate"`
	// Index is the request's place in the schedule, from 0.
	Index int `json:"index"`
	// ResponseID is the server's id of the response.
	ResponseID string `json:"response_id"`
	// PPTarget is the drawn prompt length; PPTokens the client's verified
	// count of the prompt sent; ServerPromptTokens the server's
	// usage.prompt_tokens (or exo's generation_stats.prompt_tokens).
	PPTarget           int  `json:"pp_target"`
	PPTokens           int  `json:"pp_tokens"`
	ServerPromptTokens *int `json:"server_prompt_tokens"`
	// TGTarget is the drawn output length (max_tokens); CompletionTokens
	// what came back: the server's usage.completion_tokens, else the
	// streamed chunks' tokens.
	TGTarget         int `json:"tg_target"`
	CompletionTokens int `json:"completion_tokens"`
	// IntendedSendS is when the schedule meant the request to go,
	// SendOffsetS when its bytes began to go out (the engine's send
	// instant: for engine/openai, when the transport handed over the
	// connection, after any dial), DoneS when its response ended.
	IntendedSendS float64 `json:"intended_send_s"`
	SendOffsetS   float64 `json:"send_offset_s"`
	DoneS         float64 `json:"done_s"`
	// ConnectS is how long the request waited for a new connection to be
	// opened for it (DNS, dial, TLS: engine.Result.Connect) before its
	// send instant; null when it went out on a connection already open
	// (pooled or prewarmed) or the engine cannot tell. The wait is part
	// of the schedule lag (SendOffsetS − IntendedSendS), not of TTFTS or
	// E2ES; vLLM's benchmark, whose clock starts before the request is
	// issued, counts it in its TTFT.
	ConnectS *float64 `json:"connect_s"`
	// TTFTS, TPOTS and E2ES are the client's time to first token, time
	// per output token after the first, (E2E − TTFT)/(n − 1), and
	// end-to-end latency (timing.Trace's formulas), all measured from
	// the send instant, so without any dial (see ConnectS).
	TTFTS *float64 `json:"ttft_s"`
	TPOTS *float64 `json:"tpot_s"`
	E2ES  *float64 `json:"e2e_s"`
	// TTFTFirstChunkS is the time to the server's first chunk when that
	// chunk marks the first token before its text (vLLM's and SGLang's
	// role chunk, llama.cpp's role delta: timing.Trace.FirstChunk); TTFTS
	// is then the time to the first text, and TPOTS and ITLS count from
	// this instant. Null when the server wrote nothing before the text.
	TTFTFirstChunkS *float64 `json:"ttft_first_chunk_s"`
	// SharedInstants counts the chunks that share their instant with the
	// next chunk (timing.Trace.SharedInstants): each came in one read with
	// it, sent together or read only after the next one arrived, so its
	// instant is an upper bound and the gap after it, zero in ITLS, is
	// unknown. FirstShared says the first content chunk is one of them:
	// TTFTS is then an upper bound.
	SharedInstants int  `json:"shared_instants"`
	FirstShared    bool `json:"first_chunk_shared,omitempty"`
	// ITLS are the per-token gaps (a chunk of k tokens arriving g after
	// the previous one gives k gaps of g/k) and ICLS the per-chunk gaps.
	ITLS []float64 `json:"itl_s"`
	ICLS []float64 `json:"icl_s"`
	// Stream says whether the response was streamed; FinishReason is the
	// server's.
	Stream       bool   `json:"stream"`
	FinishReason string `json:"finish_reason,omitempty"`
	// Simulated marks rows measured against the embedded engine.
	Simulated bool `json:"simulated,omitempty"`
	// Warnings are quality notes: counts that differ, fewer tokens than
	// asked, estimated chunk token counts.
	Warnings []string `json:"warnings,omitempty"`
	// ErrorKind is engine.KindOf of the error; Error its message, ""
	// for a request that succeeded.
	ErrorKind string `json:"error_kind,omitempty"`
	Error     string `json:"error"`
	// PlanFields name the plan, the segment and the shared timeline.
	PlanFields
}

// Failed reports whether the row records a failed request.
func (r LoadRow) Failed() bool { return r.Error != "" }

// Metrics rebuilds the request's client figures from the row, as SLO.Met
// and ComputeGoodput take them.
func (r LoadRow) Metrics() timing.Metrics {
	var m timing.Metrics
	m.Tokens = r.CompletionTokens
	if r.TTFTS != nil {
		m.TTFT, m.TTFTDefined = seconds(*r.TTFTS), true
	}
	if r.TPOTS != nil {
		m.TPOT, m.TPOTDefined = seconds(*r.TPOTS), true
	}
	if r.E2ES != nil {
		m.E2E, m.E2EDefined = seconds(*r.E2ES), true
	}
	for _, g := range r.ITLS {
		m.ITL = append(m.ITL, seconds(g))
	}
	for _, g := range r.ICLS {
		m.ICL = append(m.ICL, seconds(g))
	}
	return m
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// A LoadRun is one run of a load test: its summary and every request.
type LoadRun struct {
	Summary  LoadSummary `json:"summary"`
	Requests []LoadRow   `json:"requests"`
}

// Run measures one load test: it validates lengths and traffic, draws the
// lengths, builds every prompt, then sends. Nothing is sent when a check
// or a prompt fails (the error wraps ErrBadLoad). A failed request is a
// row, never the end of the run. When ctx ends, dispatch stops, the
// requests in flight get Grace to finish, and Run returns the rows it has
// with an error wrapping ctx.Err().
func (l *Load) Run(ctx context.Context, lengths Lengths, traffic Traffic, slo timing.SLO) (LoadRun, error) {
	return l.run(ctx, 0, lengths, traffic, slo)
}

func (l *Load) run(ctx context.Context, runIdx int, lengths Lengths, traffic Traffic, slo timing.SLO) (LoadRun, error) {
	if l.Engine == nil || l.Builder == nil || l.Model == "" {
		return LoadRun{}, fmt.Errorf("%w: Engine, Model and Builder are required", ErrBadLoad)
	}
	if err := lengths.Validate(); err != nil {
		return LoadRun{}, err
	}
	if err := traffic.Validate(); err != nil {
		return LoadRun{}, err
	}
	sched := traffic.Schedule()
	n := len(sched)
	if n == 0 {
		return LoadRun{}, fmt.Errorf("%w: the schedule of %s within %s holds no request", ErrBadLoad, traffic, traffic.Duration)
	}
	if err := l.checkSegment(n, traffic); err != nil {
		return LoadRun{}, err
	}
	// own are the requests of the plan this segment sends (all of them
	// without a segment); everything below is indexed by plan request.
	own := l.Segment.norm().Indices(n)
	ins, outs := lengths.Draw(n)
	prompts, err := l.prompts(ctx, runIdx, ins, own)
	if err != nil {
		return LoadRun{}, err
	}
	// The plan is the whole one (its cap included); this segment's cap is
	// its share of it.
	plan := l.planFields(runIdx, lengths, traffic, n)
	traffic.MaxConcurrency = l.Segment.norm().Share(traffic.MaxConcurrency)
	// Connections are opened before the schedule starts: a burst's n, an
	// open loop's min(n, MaxConcurrency) (all n when uncapped), so that no
	// request of the first wave dials inside its measurement.
	if pw, ok := l.Engine.(engine.Prewarmer); ok {
		warm := len(own)
		if traffic.Burst == 0 && traffic.MaxConcurrency > 0 {
			warm = min(len(own), traffic.MaxConcurrency)
		}
		if err := pw.Prewarm(ctx, warm); err != nil {
			l.log(ctx, slog.LevelWarn, "prewarm failed; requests may dial inside the measurement", "n", warm, "err", err)
		}
	}

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

	// Every request is prepared (validated, encoded, its headers built:
	// engine.Preparer) before the schedule starts, so that the lag and the
	// skew measure the sending, not the encoding. An engine that cannot
	// prepare does that work in Complete, as before. A request that fails
	// to prepare is a failed row and is not sent.
	prepared := make([]engine.Prepared, n)
	prepErrs := make([]error, n)
	for _, i := range own {
		// A failure is that request's row, from send.
		prepared[i], prepErrs[i] = engine.Prepare(ctx, l.Engine, l.request(prompts[i], outs[i]))
	}
	// Building and preparing allocate more than anything in the run: a
	// garbage collection they start would run inside the first requests'
	// measurement, its mark workers taking a core from the readers of
	// their first chunks. Collect now, before the clock starts.
	runtime.GC()
	if l.GCPercent != 0 {
		defer debug.SetGCPercent(debug.SetGCPercent(l.GCPercent))
	}
	if err := l.waitStart(ctx); err != nil {
		return LoadRun{}, err
	}
	var startShift atomic.Int64 // the runner's start − StartAt, ns
	onStart := func(start time.Time) {
		if !l.StartAt.IsZero() {
			startShift.Store(int64(start.Sub(l.StartAt)))
		}
	}
	send := func(_ context.Context, j int, mark func(time.Time)) (engine.Result, error) {
		i := own[j]
		if prepErrs[i] != nil {
			return engine.Result{}, fmt.Errorf("benchkit: preparing request %d: %w", i, prepErrs[i])
		}
		return sendWithin(engine.WithSendHook(reqCtx, mark), prepared[i], l.RequestTimeout)
	}
	cpu0, cpuOK := ProcessCPU()
	gc0 := readGC()
	wall0 := time.Now()
	var run *concurrency.Run[engine.Result]
	if traffic.Burst > 0 {
		run = concurrency.StartBurst(ctx, len(own), send, &concurrency.BurstOptions{Clock: l.Clock, Logger: l.Logger, OnStart: onStart})
	} else {
		offs := make([]time.Duration, len(own))
		for j, i := range own {
			offs[j] = sched[i]
		}
		run = concurrency.StartOpenLoop(ctx, concurrency.OpenLoop{
			Arrivals:    concurrency.Replay{Offsets: offs},
			MaxInFlight: traffic.MaxConcurrency,
			Clock:       l.Clock,
			Logger:      l.Logger,
			OnStart:     onStart,
		}, send)
	}
	var rate *float64
	if traffic.Burst == 0 && !math.IsInf(traffic.Rate, 1) {
		rate = &traffic.Rate
	}
	var rows []LoadRow
	var dispatchLags []float64
	for q := range run.Results() {
		// A request that ctx stopped before it was sent (a burst not yet
		// released) was never attempted: it is not a row.
		if !q.Dispatched && ctx.Err() != nil && errors.Is(q.Err, ctx.Err()) {
			continue
		}
		if q.Dispatched {
			dispatchLags = append(dispatchLags, (q.Dispatch - q.Intended).Seconds())
		}
		q.Index = own[q.Index]
		row := l.row(q, prompts[q.Index], ins[q.Index], outs[q.Index])
		row.Run, row.Rate = runIdx, rate
		l.placeRow(&row, plan, prompts[q.Index], time.Duration(startShift.Load()))
		if l.OnRow != nil {
			l.OnRow(row)
		}
		rows = append(rows, row)
	}
	sum := run.Summary()
	ls := SummarizeLoad(rows, slo)
	ls.Traffic = traffic.String()
	ls.RequestRate = rate
	ls.Scheduled = len(own)
	ls.PeakInFlight = sum.PeakInFlight
	ls.Client = loadHealth(rows, dispatchLags, traffic.MaxConcurrency > 0, cpu0, cpuOK, time.Since(wall0))
	ls.Client.setGC(gc0, readGC())
	for _, w := range sum.Warnings {
		ls.Warnings = append(ls.Warnings, w.Error())
	}
	if sum.Err != nil {
		ls.Interrupted = true
		ls.Warnings = append(ls.Warnings, fmt.Sprintf("interrupted: %d of %d scheduled requests were sent", sum.Dispatched, len(own)))
		return LoadRun{Summary: ls, Requests: rows}, fmt.Errorf("benchkit: load run interrupted: %w", sum.Err)
	}
	return LoadRun{Summary: ls, Requests: rows}, nil
}

// prompts builds one exact prompt per request, salted with the nonce, the
// run and its index unless NoSalt, before anything is sent.
func (l *Load) prompts(ctx context.Context, runIdx int, ins, own []int) ([]promptsize.Prompt, error) {
	if l.Nonce == "" && !l.NoSalt {
		l.Nonce = promptsize.NewNonce(nil)
	}
	shared, err := sharedPrefix(ctx, l.Builder, l.SharedPrefix)
	if err != nil {
		return nil, err
	}
	ps := make([]promptsize.Prompt, len(ins))
	for _, i := range own {
		pp := ins[i]
		var p promptsize.Prompt
		var err error
		if l.NoSalt {
			p, err = l.Builder.Build(ctx, pp)
		} else {
			p, err = l.Builder.BuildSalted(ctx, pp, shared+promptsize.RunSalt(l.Nonce, runIdx, i))
		}
		if err != nil {
			if errors.Is(err, promptsize.ErrBelowOverhead) || errors.Is(err, promptsize.ErrUnreachable) {
				return nil, fmt.Errorf("%w: request %d: prompt of %d tokens: %w", ErrBadLoad, i, pp, err)
			}
			return nil, fmt.Errorf("benchkit: build prompt of request %d (%d tokens): %w", i, pp, err)
		}
		ps[i] = p
	}
	return ps, nil
}

// request is the request of prompt p generating tg tokens.
func (l *Load) request(p promptsize.Prompt, tg int) engine.Request {
	req := promptRequest(l.Request, l.Model, p, tg, !l.AllowEOS)
	req.Stream = l.Stream
	return req
}

// row turns one request's result into a LoadRow.
func (l *Load) row(q concurrency.Result[engine.Result], p promptsize.Prompt, pp, tg int) LoadRow {
	res := q.Value
	row := LoadRow{
		Index:         q.Index,
		ResponseID:    res.ResponseID,
		PPTarget:      pp,
		PPTokens:      p.Tokens,
		TGTarget:      tg,
		IntendedSendS: q.Intended.Seconds(),
		SendOffsetS:   q.Sent.Seconds(),
		DoneS:         q.Done.Seconds(),
		Stream:        l.Stream,
		FinishReason:  res.FinishReason,
		Simulated:     l.Simulated,
	}
	if res.Connect != nil {
		row.ConnectS = finite(res.Connect.Seconds())
	}
	for _, w := range res.Warnings {
		row.Warnings = append(row.Warnings, w.Error())
	}
	if q.Err != nil {
		row.ErrorKind, row.Error = string(engine.KindOf(q.Err)), q.Err.Error()
	}
	switch {
	case res.Usage != nil:
		n := res.Usage.PromptTokens
		row.ServerPromptTokens = &n
	case res.ServerStats != nil:
		n := res.ServerStats.PromptTokens
		row.ServerPromptTokens = &n
	}
	tr := res.Trace
	switch {
	case res.Usage != nil:
		row.CompletionTokens = res.Usage.CompletionTokens
	case len(tr.Chunks) > 0:
		row.CompletionTokens = tr.Tokens()
	case res.ServerStats != nil:
		row.CompletionTokens = res.ServerStats.GenerationTokens
	}
	if !tr.Start.IsZero() {
		m, err := tr.Metrics()
		if err != nil {
			row.Warnings = append(row.Warnings, err.Error())
		} else {
			if m.E2EDefined {
				row.E2ES = finite(m.E2E.Seconds())
			}
			if len(tr.Chunks) > 0 {
				if m.TTFTDefined {
					row.TTFTS = finite(m.TTFT.Seconds())
				}
				if m.TTFTFirstChunkDefined {
					row.TTFTFirstChunkS = finite(m.TTFTFirstChunk.Seconds())
				}
				if m.TPOTDefined {
					row.TPOTS = finite(m.TPOT.Seconds())
				}
				row.ITLS = timing.Seconds(m.ITL)
				row.ICLS = timing.Seconds(m.ICL)
				row.SharedInstants = tr.SharedInstants()
				row.FirstShared = len(tr.Chunks) > 1 && tr.Chunks[1].At.Equal(tr.Chunks[0].At)
			}
		}
	}
	if q.Err == nil {
		if row.ServerPromptTokens != nil && *row.ServerPromptTokens != row.PPTokens {
			row.Warnings = append(row.Warnings, fmt.Sprintf("%s: server counted %d prompt tokens, the client %d", warnPromptMismatch, *row.ServerPromptTokens, row.PPTokens))
		}
		if !l.AllowEOS && row.CompletionTokens < tg {
			row.Warnings = append(row.Warnings, fmt.Sprintf("%s: %d generated, %d asked for", warnShort, row.CompletionTokens, tg))
		}
	}
	return row
}

// The prefixes of the row warnings the summary counts.
const (
	warnPromptMismatch = "prompt count mismatch"
	warnShort          = "short generation"
	warnDialed         = "new connections"
	warnFirstShared    = "first chunks shared a read"
)

func (l *Load) log(ctx context.Context, level slog.Level, msg string, args ...any) {
	if l.Logger != nil {
		l.Logger.Log(ctx, level, msg, args...)
	}
}
