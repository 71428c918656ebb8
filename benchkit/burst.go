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

// A BurstReport is one measured burst: each request's record, the
// burst's dispatch skew and wall time (the embedded concurrency.Summary),
// and the throughput aggregates.
type BurstReport struct {
	// Requests[i] is request i, as every driver records it: its client
	// timing (TTFTS, TPOTS, ITLS, …), the server's counts, its error.
	Requests []Request
	// Summary holds Start (the shared release instant), Wall (release to
	// the end of the last request), Skew (the spread of the send
	// instants), and the Dispatched and Failed counts.
	concurrency.Summary
	// Stats are the generation aggregates over the requests, from each
	// request's tokens and generation rate: exo's max×N beside Σ tokens /
	// Wall, the mean and the median.
	Stats timing.BurstStats
	// Prewarmed is true when the engine opened a connection per request
	// before the release (engine.Prewarmer).
	Prewarmed bool
	// Warnings say what may have bent the figures: a failed prewarm.
	Warnings []error
}

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
// records each request (NewRequest) with the burst's aggregates. The
// records have no client prompt count (PPTokens 0): SendPrompts, which
// knows the prompts, has.
//
// A failed request is a record with its error, never the end of the
// burst; a request that e refuses to prepare is such a failure and the
// others are still released. The error is non-nil only when e is nil or
// ctx ended before the burst finished (it wraps ctx.Err(), and the report
// holds what was measured).
//
// It is the common path in one call; the Runner does the same for every
// cell of a Plan, and the package's Example_handWiredBurst shows the steps
// by hand for a harness that must interleave its own.
func SendBurst(ctx context.Context, e engine.Engine, reqs []engine.Request, opts *BurstOptions) (BurstReport, error) {
	prompts := make([]promptsize.Prompt, len(reqs))
	for i, q := range reqs {
		for _, m := range q.Messages {
			prompts[i].Messages = append(prompts[i].Messages, promptsize.Message(m))
		}
	}
	return sendBurst(ctx, e, reqs, prompts, opts)
}

func sendBurst(ctx context.Context, e engine.Engine, reqs []engine.Request, prompts []promptsize.Prompt, opts *BurstOptions) (BurstReport, error) {
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
	rep.Requests = make([]Request, n)
	for i, q := range br.Requests {
		asked := Request{Index: i, TGTarget: reqs[i].MaxTokens, Model: reqs[i].Model, Stream: reqs[i].Stream}
		asked.Concurrency = n
		r := NewRequest(asked, prompts[i], q, !reqs[i].IgnoreEOS)
		r.DispatchSkewS = br.Skew.Max.Seconds()
		rep.Requests[i] = r
	}
	rep.Stats = figuresOf(rep.Requests).burst
	if br.Err != nil {
		return rep, fmt.Errorf("benchkit: burst interrupted: %w", br.Err)
	}
	return rep, nil
}

// SendPrompts sends one request per prompt to e as one burst (SendBurst):
// each asks model for exactly tg tokens (bench semantics: IgnoreEOS),
// streamed, with the prompt's messages, on opts.Request's template. Each
// record has the prompt's verified count (PPTokens) and target, and a
// WarnPromptMismatch warning when the server counted the prompt
// differently: the client's tokenizer or chat template then differs from
// the engine's, and the prompt was not the length asked for.
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
	rep, err := sendBurst(ctx, e, reqs, prompts, opts)
	for i := range rep.Requests {
		rep.Requests[i].PPTarget = prompts[i].Tokens
	}
	return rep, err
}
