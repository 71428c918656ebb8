package benchkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// A Runner measures a Plan against an Engine: it builds each prompt to its
// exact length, sends each cell's requests as one barrier-released burst
// (concurrency.Burst; concurrency 1 is a burst of one) whose connections
// are opened (engine.Prewarmer) and whose requests are encoded
// (engine.Preparer) before the release when the engine can, integrates sampled
// power over each burst's window, computes each request's client timing,
// compares the client's prompt count with the server's, and hands every row
// to the Sinks as soon as it is measured.
//
// Set the fields, then call Run. Engine, Model and Builder are required.
type Runner struct {
	// Engine serves the requests.
	Engine engine.Engine
	// Model is the model id as the engine expects it; ModelShortID a short
	// name for rows ("" repeats Model).
	Model, ModelShortID string
	// Builder makes the prompts; its Counter must count as the engine does.
	Builder *promptsize.Builder
	// Nonce goes into every salt of a salted plan (promptsize.RunSalt),
	// so that no request shares a prefix beyond the chat template with a
	// request of another invocation. Empty: Run draws a random one
	// (promptsize.NewNonce) and sets it here.
	Nonce string
	// AllowEOS sends requests without bench semantics (IgnoreEOS false):
	// the engine may stop before tg tokens. Off by default, so every
	// request generates exactly tg tokens.
	AllowEOS bool
	// Request is a template for every request: its Header, Extra, sampling
	// fields, MinTokens and Thinking are copied; Model, Messages,
	// MaxTokens, Stream, UsePrefixCache and IgnoreEOS are the Runner's.
	// Its Thinking (or each of Plan.Thinking) labels the rows
	// (Labels.Thinking), and the prompts are counted with the chat
	// template variables it sends (a Builder whose Counter has
	// WithTemplateVars, as promptsize/hf's and promptsize/remote's have;
	// another counts without them, and the report says so in a warning).
	Request engine.Request
	// RequestTimeout bounds each request; 0 means no bound beyond ctx.
	RequestTimeout time.Duration
	// Grace is how long requests in flight may go on after ctx ends
	// (Ctrl-C): no burst is released after ctx ends, and the requests
	// still running when Grace has passed are cancelled. 0 cancels them at
	// once.
	Grace time.Duration
	// Sampler, when set and started by the caller, supplies power
	// readings: the Runner polls it at each burst's edges and integrates
	// over the burst's window. Idle, when set, is subtracted.
	Sampler *energy.Sampler
	Idle    energy.Baseline
	// Placement is copied onto every request; Simulated marks every one.
	Placement Placement
	Simulated bool
	// Sinks receive the requests as they are measured, from one goroutine
	// at a time (a JSONL file, a progress bar, the caller's own).
	Sinks []Sink
	// Logger receives debug and warning records; nil logs nothing.
	Logger *slog.Logger
	// Sleep waits between repeats and groups; nil uses a timer that
	// returns early when ctx is done.
	Sleep func(ctx context.Context, d time.Duration) error
}

// A Report is what Run measured.
type Report struct {
	// Requests are every measured request, in the order they were
	// measured.
	Requests []Request
	// Overhead is the chat template's overhead in tokens.
	Overhead int
	// Interrupted is true when ctx ended the run before its plan did.
	Interrupted bool
	// Warnings are the run's own: plan cautions, failed warmups, sink
	// errors.
	Warnings []string
	// Windows are when the bursts ran, in order, for lining up other
	// telemetry (a power plot) with the requests.
	Windows []Window
}

// A Window is when one burst ran on the client's clock: from its release
// to the end of its last request.
type Window struct {
	Cell   Cell
	Repeat int
	Start  time.Time
	End    time.Time
	// FirstToken is the earliest first content chunk among the burst's
	// requests, splitting the window into prefill and generation; zero
	// when the responses were not streamed.
	FirstToken time.Time
}

// Cells summarises the report's requests per cell (Summarize ByCell),
// without the plan's targets: Plan.Summarize checks them too.
func (r Report) Cells() []Summary { return Summarize(r.Requests, ByCell, timing.SLO{}) }

// Failed counts the failed requests.
func (r Report) Failed() int { return countIf(r.Requests, Request.Failed) }

// Run measures plan. It validates the plan first (against the template
// overhead counted with the Builder's Counter, the largest of its thinking
// settings') and sends nothing if it is bad. A failed request is a row with its error, never the end of the run.
// When ctx is cancelled, Run stops sending, gives the requests in flight
// Grace to end (then cancels them), hands every measured row to the sinks,
// and returns the report with Interrupted set and an error wrapping
// ctx.Err().
func (r *Runner) Run(ctx context.Context, plan Plan) (Report, error) {
	var rep Report
	if r.Engine == nil || r.Builder == nil || r.Builder.Counter == nil || r.Model == "" {
		return rep, errors.New("benchkit: Runner needs an Engine, a Model and a Builder with a Counter")
	}
	arms, err := r.arms(ctx, plan, &rep)
	if err != nil {
		return rep, err
	}
	if err := plan.Validate(rep.Overhead); err != nil {
		return rep, err
	}
	for _, w := range plan.Warnings() {
		rep.Warnings = append(rep.Warnings, w.Error())
		r.log(ctx, slog.LevelWarn, w.Error())
	}

	if plan.Salt && r.Nonce == "" {
		r.Nonce = promptsize.NewNonce(nil)
	}
	for i := range arms {
		if arms[i].promptFor, err = r.prompts(ctx, plan, arms[i].b, i); err != nil {
			return rep, err
		}
	}

	// Measured requests run under their own context, which outlives ctx by
	// Grace: an interrupt stops dispatch at once but lets requests in
	// flight end.
	reqCtx, cancelReqs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelReqs()
	stopGrace := context.AfterFunc(ctx, func() {
		if r.Grace <= 0 {
			cancelReqs()
			return
		}
		t := time.AfterFunc(r.Grace, cancelReqs)
		context.AfterFunc(reqCtx, func() { t.Stop() })
	})
	defer stopGrace()

	rep.Warnings = append(rep.Warnings, r.warmup(ctx, plan, arms[0])...)

	// A group is a cell under one thinking setting: each cell's settings
	// follow each other, so that a table compares them line by line.
	cells := plan.Cells()
	total := plan.Requests()
	done := 0
	for ci, cell := range cells {
		for ai, arm := range arms {
			// A cell with targets repeats until they are met
			// (Plan.again) over its own rows.
			var cellRows []Request
			for rpt := 0; plan.again(rpt, cellRows); rpt++ {
				if ctx.Err() != nil {
					break
				}
				if err := r.sleep(ctx, plan.PauseBetweenRepeats); err != nil {
					break
				}
				rows, win, err := r.burst(ctx, reqCtx, plan, cell, rpt, arm)
				if !win.Start.IsZero() {
					rep.Windows = append(rep.Windows, win)
				}
				cellRows = append(cellRows, rows...)
				for _, row := range rows {
					rep.Requests = append(rep.Requests, row)
					if serr := addAll(r.Sinks, row); serr != nil {
						rep.Interrupted = true
						return rep, serr
					}
					done++
				}
				if err != nil {
					rep.Interrupted = true
					return rep, err
				}
			}
			if (ci < len(cells)-1 || ai < len(arms)-1) && ctx.Err() == nil {
				if err := r.sleep(ctx, plan.PauseBetweenGroups); err != nil {
					break
				}
			}
		}
	}
	if err := ctx.Err(); err != nil {
		rep.Interrupted = true
		return rep, fmt.Errorf("benchkit: run interrupted after %d of %d requests: %w", done, total, err)
	}
	return rep, nil
}

// thinkingArm is one thinking setting of a Runner's plan: the requests'
// control, its label, the Builder that counts with its template variables
// and the source of its prompts.
type thinkingArm struct {
	th        *engine.Thinking
	label     string
	b         *promptsize.Builder
	promptFor func(int) (promptsize.Prompt, error)
}

// arms are the plan's thinking settings, each with the Builder that counts
// with its template variables; rep gets the largest overhead among them
// and the warning of a Counter that cannot render with variables.
func (r *Runner) arms(ctx context.Context, plan Plan, rep *Report) ([]thinkingArm, error) {
	settings := thinkingSettings(plan.Thinking, r.Request.Thinking)
	arms := make([]thinkingArm, len(settings))
	for i, th := range settings {
		b, warn := thinkingBuilder(r.Builder, th)
		if warn != "" {
			rep.Warnings = append(rep.Warnings, warn)
			r.log(ctx, slog.LevelWarn, warn)
		}
		overhead, err := b.Overhead(ctx)
		if err != nil {
			return nil, err
		}
		rep.Overhead = max(rep.Overhead, overhead)
		arms[i] = thinkingArm{th: th, label: thinkingLabel(th), b: b}
	}
	return arms, nil
}

// prompts returns the source of the plan's prompts built by b: unsalted
// ones built once per pp before anything is sent, or a salted one per
// request, salted as run arm of the nonce (RunSalt).
func (r *Runner) prompts(ctx context.Context, plan Plan, b *promptsize.Builder, arm int) (func(int) (promptsize.Prompt, error), error) {
	// Unsalted prompts are built once per pp, before anything is sent.
	prompts := map[int]promptsize.Prompt{}
	if !plan.Salt {
		for _, pp := range plan.PP {
			if _, ok := prompts[pp]; ok {
				continue
			}
			p, err := b.Build(ctx, pp)
			if err != nil {
				return nil, fmt.Errorf("benchkit: build prompt of pp=%d: %w", pp, err)
			}
			prompts[pp] = p
		}
	}
	salt := 0
	return func(pp int) (promptsize.Prompt, error) {
		if !plan.Salt {
			return prompts[pp], nil
		}
		salt++
		return b.BuildSalted(ctx, pp, promptsize.RunSalt(r.Nonce, arm, salt))
	}, nil
}

// warmup sends the plan's warmup requests one at a time and returns a
// warning for each that failed.
func (r *Runner) warmup(ctx context.Context, plan Plan, arm thinkingArm) []string {
	var warnings []string
	pairs := plan.Pairs()
	for i := 0; i < plan.Warmup && ctx.Err() == nil; i++ {
		p, err := arm.promptFor(pairs[0][0])
		if err == nil {
			_, err = r.complete(ctx, p, pairs[0][1], plan, arm.th)
		}
		if err != nil {
			w := fmt.Sprintf("warmup %d of %d failed: %v", i+1, plan.Warmup, err)
			warnings = append(warnings, w)
			r.log(ctx, slog.LevelWarn, w)
		}
	}
	return warnings
}

// burst measures one repeat of one cell and returns its rows, in the
// order the requests completed. ctx releases the burst; its requests run
// under reqCtx. Its error is non-nil only when a prompt could not be built
// or ctx ended.
func (r *Runner) burst(ctx, reqCtx context.Context, plan Plan, cell Cell, rpt int, arm thinkingArm) ([]Request, Window, error) {
	n := cell.Concurrency
	ps := make([]promptsize.Prompt, n)
	for i := range ps {
		p, err := arm.promptFor(cell.PP)
		if err != nil {
			return nil, Window{}, fmt.Errorf("benchkit: build prompt of pp=%d: %w", cell.PP, err)
		}
		ps[i] = p
	}
	if pw, ok := r.Engine.(engine.Prewarmer); ok {
		if err := pw.Prewarm(ctx, n); err != nil {
			r.log(ctx, slog.LevelWarn, "prewarm failed; requests may dial inside the measurement", "n", n, "err", err)
		}
	}
	// Each worker prepares its request before the barrier (validation,
	// JSON encoding, headers: engine.Preparer), so that only the I/O is
	// left after the release. An engine that cannot prepare does that work
	// in Complete, after the release. A request that fails to prepare is a
	// failed row; the others are released.
	prepared := make([]engine.Prepared, n)
	opts := &concurrency.BurstOptions{Prepare: func(ctx context.Context, i int) error {
		var err error
		prepared[i], err = engine.Prepare(ctx, r.Engine, r.request(ps[i], cell.TG, plan, arm.th))
		return err
	}}
	r.poll(ctx)
	br := concurrency.Burst(ctx, n, func(_ context.Context, i int, mark func(time.Time)) (engine.Result, error) {
		return sendWithin(engine.WithSendHook(reqCtx, mark), prepared[i], r.RequestTimeout)
	}, opts)
	r.poll(ctx)

	var en *Energy
	if r.Sampler != nil && br.Dispatched > 0 {
		en = r.energy(br, ps)
	}
	// Rows in completion order; concurrent_index is that order (exo's).
	reqs := slices.Clone(br.Requests)
	slices.SortStableFunc(reqs, func(a, b concurrency.Result[engine.Result]) int {
		return int(a.Done - b.Done)
	})
	rows := make([]Request, 0, n)
	order := 0
	for _, q := range reqs {
		// A request that ctx stopped before the release was never
		// attempted: it is not a row. (One whose Prepare failed is.)
		if !q.Dispatched && ctx.Err() != nil && errors.Is(q.Err, ctx.Err()) {
			continue
		}
		row := NewRequest(r.asked(q.Index, cell, rpt, plan, arm.label), ps[q.Index], q, r.AllowEOS)
		row.DispatchSkewS = br.Skew.Max.Seconds()
		if n > 1 {
			ci := order
			row.ConcurrentIndex = &ci
		}
		order++
		if en != nil {
			e := *en
			row.Energy = &e
			row.EnergyWindowShort = e.WindowS < ShortWindowFactor*e.SampleIntervalS
		}
		rows = append(rows, row)
	}
	var win Window
	if br.Dispatched > 0 {
		win = Window{Cell: cell, Repeat: rpt, Start: br.Start, End: br.Start.Add(br.Wall)}
		for _, q := range br.Requests {
			if ch := q.Value.Trace.Chunks; q.Err == nil && len(ch) > 0 && (win.FirstToken.IsZero() || ch[0].At.Before(win.FirstToken)) {
				win.FirstToken = ch[0].At
			}
		}
	}
	if br.Err != nil {
		return rows, win, fmt.Errorf("benchkit: run interrupted in %s repeat %d: %w", cell, rpt, br.Err)
	}
	return rows, win, nil
}

// complete sends one request.
func (r *Runner) complete(ctx context.Context, p promptsize.Prompt, tg int, plan Plan, th *engine.Thinking) (engine.Result, error) {
	return completeWithin(ctx, r.Engine, r.request(p, tg, plan, th), r.RequestTimeout)
}

// request is the request of prompt p generating tg tokens under plan,
// with the thinking control th.
func (r *Runner) request(p promptsize.Prompt, tg int, plan Plan, th *engine.Thinking) engine.Request {
	req := promptRequest(r.Request, r.Model, p, tg, !r.AllowEOS)
	req.Stream = plan.Stream
	req.UsePrefixCache = plan.UsePrefixCache
	req.Thinking = th
	return req
}

// promptRequest fills a copy of the template tmpl with the model, the
// prompt's messages and the generation length; ignoreEOS asks for bench
// semantics (exactly tg tokens).
func promptRequest(tmpl engine.Request, model string, p promptsize.Prompt, tg int, ignoreEOS bool) engine.Request {
	req := tmpl
	req.Model = model
	req.Messages = make([]engine.Message, len(p.Messages))
	for i, m := range p.Messages {
		req.Messages[i] = engine.Message(m)
	}
	req.MaxTokens = tg
	req.IgnoreEOS = ignoreEOS
	if p.TokenIDs != nil { // token ids go to a completions endpoint as they are
		req.Messages, req.Prompt = nil, &engine.Prompt{Tokens: p.TokenIDs}
	}
	return req
}

// completeWithin sends req, bounded by timeout when it is positive.
func completeWithin(ctx context.Context, e engine.Engine, req engine.Request, timeout time.Duration) (engine.Result, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return e.Complete(ctx, req)
}

// sendWithin sends a prepared request, bounded by timeout when it is
// positive; the bound starts at the send, not at the preparation.
func sendWithin(ctx context.Context, p engine.Prepared, timeout time.Duration) (engine.Result, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return p.Send(ctx)
}

// asked is what the Runner asks of request i of a burst of cell, and the
// labels that place it.
func (r *Runner) asked(i int, cell Cell, rpt int, plan Plan, thinking string) Request {
	q := Request{Index: i, PPTarget: cell.PP, TGTarget: cell.TG, Model: r.Model, ModelShortID: r.ModelShortID,
		Stream: plan.Stream, Simulated: r.Simulated}
	if q.ModelShortID == "" {
		q.ModelShortID = r.Model
	}
	q.Placement, q.Concurrency, q.Repeat, q.Thinking = r.Placement, cell.Concurrency, rpt, thinking
	return q
}

// energy integrates the sampler's power over the burst's window: from the
// shared release to the last request's end. It is shared by the burst's
// rows.
func (r *Runner) energy(br concurrency.BurstResult[engine.Result], ps []promptsize.Prompt) *Energy {
	n := len(ps)
	rec := r.Sampler.Recording()
	w := energy.Window{Start: br.Start, End: br.Start.Add(br.Wall)}
	run := energy.Run{Window: w, Idle: r.Idle}
	tokens, answer, answerKnown := 0, 0, true
	for _, q := range br.Requests {
		if q.Err == nil {
			n, _ := resultTokens(q.Value)
			tokens += n
			run.PromptTokens += ps[q.Index].Tokens
			a, ok := resultAnswerTokens(q.Value)
			answer, answerKnown = answer+a, answerKnown && ok
		}
	}
	run.GeneratedTokens = tokens
	// One streamed request splits at its first token; the requests of a
	// larger burst overlap, so their phases cannot be told apart.
	if n == 1 && br.Requests[0].Err == nil {
		if tr := br.Requests[0].Value.Trace; len(tr.Chunks) > 0 {
			run.FirstToken = tr.Chunks[0].At
		}
	}
	rep, err := energy.Measure(run, rec.Power(), rec.Counters())
	if err != nil {
		r.log(context.Background(), slog.LevelWarn, "energy not measured", "err", err)
		return nil
	}
	e := &Energy{
		WindowS:     w.Duration().Seconds(),
		Joules:      rep.Total.Joules,
		ErrorBoundJ: finite(rep.Total.Bound),
		Shared:      n > 1,
		Source:      "client",
		// The samples resolve no finer than the polling interval and the
		// span each is a mean over.
		SampleIntervalS: max(r.Sampler.Interval(), rec.MeanInterval()).Seconds(),
	}
	if e.WindowS > 0 {
		e.AvgWatts = e.Joules / e.WindowS
	}
	for _, ne := range rep.Nodes {
		e.BaselineW += ne.IdleWatts
	}
	if rep.Split {
		e.PrefillJoules, e.GenerationJoules = finite(rep.Prefill.Joules), finite(rep.Generation.Joules)
		e.JPerPromptToken = finite(rep.JoulesPerPromptToken)
		e.JPerGeneratedToken = finite(rep.JoulesPerGeneratedToken)
	} else if tokens > 0 {
		e.JPerGeneratedToken = finite(e.Joules / float64(tokens))
	}
	if answerKnown && answer > 0 {
		j := e.Joules
		if rep.Split {
			j = rep.Generation.Joules
		}
		e.JPerAnswerToken = finite(j / float64(answer))
	}
	for _, w := range rep.Warnings {
		r.log(context.Background(), slog.LevelDebug, "energy warning", "err", w)
	}
	return e
}

func (r *Runner) poll(ctx context.Context) {
	if r.Sampler == nil {
		return
	}
	if err := r.Sampler.Poll(ctx); err != nil {
		r.log(ctx, slog.LevelDebug, "power poll failed", "err", err)
	}
}

func (r *Runner) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	if r.Sleep != nil {
		return r.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Runner) log(ctx context.Context, level slog.Level, msg string, args ...any) {
	if r.Logger != nil {
		r.Logger.Log(ctx, level, msg, args...)
	}
}
