package benchkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// BurstOptions configure SendBurst and SendPrompts. A nil *BurstOptions,
// like the zero value, prewarms, sets no timeout and logs nothing.
type BurstOptions struct {
	// Request is SendPrompts' template for every request, as
	// Runner.Request is the Runner's: its Header, Extra, sampling fields,
	// MinTokens and UsePrefixCache are copied. SendBurst ignores it.
	Request engine.Request
	// RequestTimeout bounds each request from its send; 0 means no bound
	// beyond ctx.
	RequestTimeout time.Duration
	// NoPrewarm skips engine.Prewarmer: requests then dial inside the
	// measurement and the skew grows by a connection setup.
	NoPrewarm bool
	// Clock reads the burst's instants; nil means the system clock.
	Clock concurrency.Clock
	// Logger receives a warning when the prewarm fails and the burst's
	// debug record; nil logs nothing.
	Logger *slog.Logger
}

// A BurstReport is one measured burst: each request's result and client
// timing, the burst's dispatch skew and wall time (the embedded
// concurrency.Summary), and the throughput aggregates.
type BurstReport struct {
	// Requests[i] is the outcome of request i.
	Requests []BurstOutcome
	// Summary holds Start (the shared release instant), Wall (release to
	// the end of the last request), Skew (the spread of the send
	// instants), and the Dispatched and Failed counts.
	concurrency.Summary
	// Stats are the generation aggregates over the requests, from each
	// request's tokens and client-side generation rate: exo's max×N
	// beside Σ tokens / Wall, the mean and the median.
	Stats timing.BurstStats
	// Prewarmed is true when the engine opened a connection per request
	// before the release (engine.Prewarmer).
	Prewarmed bool
	// Warnings say what may have bent the figures: a failed prewarm, a
	// server that counted the prompt differently from the client.
	Warnings []error
}

// A BurstOutcome is one request of a burst: concurrency's Result (Index,
// Value, Err and the Sent and Done offsets from the release) and the
// client-side figures of its trace.
type BurstOutcome struct {
	concurrency.Result[engine.Result]
	// Metrics are TTFT, TPOT, E2E, the generation rate and the token gaps
	// computed from Value.Trace; zero when Failed.
	Metrics timing.Metrics
	// MetricsErr is why Metrics could not be computed: a trace that
	// breaks its invariants (timing.Trace.Validate).
	MetricsErr error
}

// Failed reports whether the request failed or left no usable trace.
func (o BurstOutcome) Failed() bool { return o.Err != nil || o.MetricsErr != nil }

// Window is the burst's window on the client's clock, from the release to
// the end of the last request, for energy.Measure or a power plot.
func (r BurstReport) Window() energy.Window {
	return energy.Window{Start: r.Start, End: r.Start.Add(r.Wall)}
}

// SendBurst sends reqs to e as one burst and measures it: it opens a
// connection per request (when e is an engine.Prewarmer and
// opts.NoPrewarm is unset), readies every request before the release
// (engine.Prepare: validation and encoding happen outside the
// measurement), releases them at one instant (concurrency.Burst), and
// computes each request's client timing and the burst's aggregates.
//
// A failed request is an outcome with its error, never the end of the
// burst; a request that e refuses to prepare is such a failure and the
// others are still released. The error is non-nil only when e is nil or
// ctx ended before the burst finished (it wraps ctx.Err(), and the report
// holds what was measured).
//
// It is the common path in one call; the Runner does the same for every
// cell of a Plan, and the package's Example_handWiredBurst shows the steps
// by hand for a harness that must interleave its own.
func SendBurst(ctx context.Context, e engine.Engine, reqs []engine.Request, opts *BurstOptions) (BurstReport, error) {
	var o BurstOptions
	if opts != nil {
		o = *opts
	}
	var rep BurstReport
	if e == nil {
		return rep, errors.New("benchkit: SendBurst needs an Engine")
	}
	n := len(reqs)
	if pw, ok := e.(engine.Prewarmer); ok && !o.NoPrewarm && n > 0 {
		if err := pw.Prewarm(ctx, n); err != nil {
			rep.Warnings = append(rep.Warnings, fmt.Errorf("benchkit: prewarm failed, so requests may dial inside the measurement: %w", err))
			if o.Logger != nil {
				o.Logger.WarnContext(ctx, "prewarm failed; requests may dial inside the measurement", "n", n, "err", err)
			}
		} else {
			rep.Prewarmed = true
		}
	}
	prepared := make([]engine.Prepared, n)
	bopts := &concurrency.BurstOptions{Clock: o.Clock, Logger: o.Logger, Prepare: func(ctx context.Context, i int) error {
		var err error
		prepared[i], err = engine.Prepare(ctx, e, reqs[i])
		return err
	}}
	br := concurrency.Burst(ctx, n, func(ctx context.Context, i int, mark func(time.Time)) (engine.Result, error) {
		return sendWithin(engine.WithSendHook(ctx, mark), prepared[i], o.RequestTimeout)
	}, bopts)
	rep.Summary = br.Summary
	rep.Warnings = append(rep.Warnings, br.Warnings...)
	rep.Requests = make([]BurstOutcome, n)
	agg := make([]timing.BurstRequest, n)
	for i, q := range br.Requests {
		out := BurstOutcome{Result: q}
		if q.Err == nil {
			out.Metrics, out.MetricsErr = q.Value.Trace.Metrics()
		}
		if out.Failed() {
			out.Metrics = timing.Metrics{}
			agg[i].Failed = true
		} else {
			agg[i] = timing.BurstRequest{Tokens: resultTokens(q.Value), GenerationTPS: out.Metrics.GenerationTPS, RateDefined: out.Metrics.GenerationTPSDefined}
		}
		rep.Requests[i] = out
	}
	rep.Stats = timing.AggregateBurst(agg, br.Wall)
	if br.Err != nil {
		return rep, fmt.Errorf("benchkit: burst interrupted: %w", br.Err)
	}
	return rep, nil
}

// SendPrompts sends one request per prompt to e as one burst (SendBurst):
// each asks model for exactly tg tokens (bench semantics: IgnoreEOS),
// streamed, with the prompt's messages, on opts.Request's template. It
// adds a warning for each request whose server counted the prompt
// differently from prompts[i].Tokens: the client's tokenizer or chat
// template then differs from the engine's, and the prompt was not the
// length asked for.
func SendPrompts(ctx context.Context, e engine.Engine, model string, tg int, prompts []promptsize.Prompt, opts *BurstOptions) (BurstReport, error) {
	var tmpl engine.Request
	if opts != nil {
		tmpl = opts.Request
	}
	reqs := make([]engine.Request, len(prompts))
	for i, p := range prompts {
		reqs[i] = promptRequest(tmpl, model, p, tg, true)
		reqs[i].Stream = true
	}
	rep, err := SendBurst(ctx, e, reqs, opts)
	for i, out := range rep.Requests {
		if w := promptCountMismatch(out.Value, prompts[i].Tokens); out.Err == nil && w != "" {
			rep.Warnings = append(rep.Warnings, fmt.Errorf("benchkit: request %d: %s", i, w))
		}
	}
	return rep, err
}

// promptCountMismatch says how the server's prompt count of res differs
// from the client's, or "" when it agrees or the server gave none.
func promptCountMismatch(res engine.Result, client int) string {
	switch {
	case res.ServerStats != nil && res.ServerStats.PromptTokens != client:
		return fmt.Sprintf("server counted %d prompt tokens, the client %d: the client's tokenizer or chat template differs from the engine's", res.ServerStats.PromptTokens, client)
	case res.ServerStats == nil && res.Usage != nil && res.Usage.PromptTokens != client:
		return fmt.Sprintf("server usage says %d prompt tokens, the client counted %d: the client's tokenizer or chat template differs from the engine's", res.Usage.PromptTokens, client)
	}
	return ""
}
