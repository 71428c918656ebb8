package enginetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
)

// A Mode is a set of response modes, streamed and not.
type Mode uint8

// The modes a claim can cover.
const (
	// Unstreamed responses: Request.Stream false.
	Unstreamed Mode = 1 << iota
	// Streamed responses: Request.Stream true.
	Streamed
	// Both modes.
	Both = Unstreamed | Streamed
)

// Has reports whether m includes every mode of o.
func (m Mode) Has(o Mode) bool { return m&o == o }

// String returns "none", "unstreamed", "streamed" or "both".
func (m Mode) String() string {
	switch m & Both {
	case Unstreamed:
		return "unstreamed"
	case Streamed:
		return "streamed"
	case Both:
		return "both"
	}
	return "none"
}

// Defaults of Config's zero fields.
const (
	DefaultMaxTokens       = 8
	DefaultCancelMaxTokens = 4096
	DefaultCancelAfter     = 50 * time.Millisecond
	DefaultCancelWithin    = 2 * time.Second
	DefaultTimeout         = 30 * time.Second
	DefaultConcurrency     = 4
	DefaultUnknownModel    = "enginetest/no-such-model"
)

// A Fault is a request the server is known to fail (for instance through
// engine/sim's fault-injection header) and the kind of error the adapter
// must report for it.
type Fault struct {
	// Name labels the case in findings.
	Name string
	// Header is set as the request's Request.Header (engine/sim reads its
	// fault from sim.FaultHeader there), so the adapter must send
	// Request.Header for the fault to reach the server.
	Header http.Header
	// Stream sends the request streamed.
	Stream bool
	// Want is the kind engine.KindOf must give the error.
	Want engine.Kind
}

// Config says which engine to check and what it claims. Engine and Model
// are required; every other zero field takes its default or claims
// nothing.
type Config struct {
	// Engine is the adapter under test, pointed at a running server.
	Engine engine.Engine
	// Model is a model the server serves.
	Model string
	// Messages is the prompt of every request; nil means one short user
	// message.
	Messages []engine.Message
	// Prompt, when set, makes every request of the kit a text completion
	// of it (engine.Request.Prompt) instead of a chat of Messages. A prompt
	// of token ids is also checked to come back as exactly that many
	// prompt tokens in every usage and server stats the server sends.
	Prompt *engine.Prompt
	// MaxTokens is the max_tokens of ordinary requests (DefaultMaxTokens
	// when 0). It should be small: every check sends a few requests.
	MaxTokens int
	// Timeout bounds each request of the kit (DefaultTimeout when 0).
	Timeout time.Duration

	// Stream claims the adapter streams: with Request.Stream it records a
	// chunk per content chunk. Without it, Streamed claims are ignored and
	// only unstreamed requests are sent.
	Stream bool
	// ChunkTokens claims every streamed chunk carries its token count
	// (timing.Chunk.Tokens > 0), so Trace.Tokens() is exact.
	ChunkTokens bool
	// Bench claims bench semantics: a request with IgnoreEOS generates
	// exactly MaxTokens tokens, as every token count the result carries
	// (server stats, usage, exact chunk counts) must say.
	Bench bool
	// Stats claims which responses carry ServerStats.
	Stats Mode
	// Usage claims which responses carry the usage block.
	Usage Mode
	// SendHook claims the adapter calls the send hook of
	// engine.WithSendHook exactly once per request, with Trace.Start.
	SendHook bool

	// CancelMaxTokens is the max_tokens of the request the cancellation
	// checks cancel (DefaultCancelMaxTokens when 0): large enough that the
	// request is still running CancelAfter after it was sent.
	CancelMaxTokens int
	// CancelAfter is how long after Complete is called the context is
	// cancelled, or its deadline falls (DefaultCancelAfter when 0).
	CancelAfter time.Duration
	// CancelWithin is how soon after the cancellation Complete must return
	// (DefaultCancelWithin when 0).
	CancelWithin time.Duration

	// UnknownModel is a model id the server does not serve
	// (DefaultUnknownModel when empty).
	UnknownModel string
	// NewAt, when set, returns the adapter pointed at baseURL
	// ("http://127.0.0.1:port"). The kit points it at a loopback port
	// where nothing listens and expects an error of kind connect.
	NewAt func(baseURL string) engine.Engine
	// Faults are requests that must fail with a given kind.
	Faults []Fault
	// Concurrency is the number of simultaneous requests of the
	// concurrency check (DefaultConcurrency when 0).
	Concurrency int
}

func (c Config) withDefaults() Config {
	if c.Messages == nil && c.Prompt == nil {
		c.Messages = []engine.Message{{Role: "user", Content: "Count from one to ten."}}
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.CancelMaxTokens <= 0 {
		c.CancelMaxTokens = DefaultCancelMaxTokens
	}
	if c.CancelAfter <= 0 {
		c.CancelAfter = DefaultCancelAfter
	}
	if c.CancelWithin <= 0 {
		c.CancelWithin = DefaultCancelWithin
	}
	if c.UnknownModel == "" {
		c.UnknownModel = DefaultUnknownModel
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if !c.Stream {
		c.Stats &^= Streamed
		c.Usage &^= Streamed
	}
	return c
}

// modes returns the response modes the engine supports.
func (c Config) modes() []Mode {
	if c.Stream {
		return []Mode{Unstreamed, Streamed}
	}
	return []Mode{Unstreamed}
}

// request returns the kit's request for mode m with maxTokens.
func (c Config) request(m Mode, maxTokens int) engine.Request {
	return engine.Request{
		Model:     c.Model,
		Messages:  c.Messages,
		Prompt:    c.Prompt,
		MaxTokens: maxTokens,
		Stream:    m == Streamed,
		IgnoreEOS: c.Bench,
	}
}

// A Finding is one way the engine broke a contract or a claim.
type Finding struct {
	// Check names the check that found it ("trace", "bench", ...).
	Check string
	// Err says what was expected and what was found.
	Err error
}

// Error formats f as "enginetest: <check>: <what>".
func (f *Finding) Error() string { return "enginetest: " + f.Check + ": " + f.Err.Error() }

// Unwrap returns f.Err.
func (f *Finding) Unwrap() error { return f.Err }

// A check runs one group of checks and returns what it found.
type check struct {
	name string
	run  func(ctx context.Context, c Config) []error
}

// checks lists the kit's checks in the order they run.
func checks() []check {
	return []check{
		{"trace", checkTrace},
		{"send_hook", checkSendHook},
		{"bench", checkBench},
		{"stats", checkStats},
		{"usage", checkUsage},
		{"cancel", checkCancel},
		{"deadline", checkDeadline},
		{"unknown_model", checkUnknownModel},
		{"connect", checkConnect},
		{"faults", checkFaults},
		{"concurrent", checkConcurrent},
		{"prewarm", checkPrewarm},
		{"prepare", checkPrepare},
		{"models", checkModels},
		{"count_tokens", checkCountTokens},
	}
}

// CheckNames lists the names of the checks, in the order Run and Check run
// them.
func CheckNames() []string {
	var names []string
	for _, ch := range checks() {
		names = append(names, ch.name)
	}
	return names
}

// Check runs every check against c.Engine and returns what it found, as
// errors.Join of *Finding values (nil when the engine conforms). A check
// whose claim is off passes without sending anything. ctx bounds the whole
// run.
func Check(ctx context.Context, c Config) error {
	if err := c.validate(); err != nil {
		return err
	}
	c = c.withDefaults()
	var all []error
	for _, ch := range checks() {
		for _, err := range ch.run(ctx, c) {
			all = append(all, &Finding{Check: ch.name, Err: err})
		}
	}
	return errors.Join(all...)
}

// Run runs every check as a subtest of t named after it, reporting each
// finding with t.Error at the line of the caller's test that called Run.
func Run(t *testing.T, c Config) {
	t.Helper()
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	c = c.withDefaults()
	for _, ch := range checks() {
		t.Run(ch.name, func(t *testing.T) {
			t.Helper()
			for _, err := range ch.run(t.Context(), c) {
				t.Error(err)
			}
		})
	}
}

func (c Config) validate() error {
	switch {
	case c.Engine == nil:
		return errors.New("enginetest: Config.Engine is nil, want the adapter under test")
	case c.Model == "":
		return errors.New("enginetest: Config.Model is empty, want a model the server serves")
	}
	return nil
}

// complete sends req with the kit's per-request timeout.
func complete(ctx context.Context, c Config, e engine.Engine, req engine.Request) (engine.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	return e.Complete(ctx, req)
}

// checkTrace: every successful request returns a valid trace with start,
// headers and end set; streamed ones have chunks, unstreamed ones none.
func checkTrace(ctx context.Context, c Config) []error {
	var errs []error
	for _, m := range c.modes() {
		res, err := complete(ctx, c, c.Engine, c.request(m, c.MaxTokens))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s request: want success, got %w", m, err))
			continue
		}
		errs = append(errs, traceErrors(m, c, res)...)
	}
	return errs
}

// traceErrors checks the trace of a successful request in mode m.
func traceErrors(m Mode, c Config, res engine.Result) []error {
	var errs []error
	tr := res.Trace
	if err := tr.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%s request: Trace.Validate: %w", m, err))
	}
	if tr.Start.IsZero() || tr.Headers.IsZero() || tr.End.IsZero() {
		errs = append(errs, fmt.Errorf("%s request: want Start, Headers and End set, got zero Start %v, Headers %v, End %v",
			m, tr.Start.IsZero(), tr.Headers.IsZero(), tr.End.IsZero()))
	}
	switch m {
	case Streamed:
		if len(tr.Chunks) == 0 {
			errs = append(errs, fmt.Errorf("streamed request: want at least one chunk in the trace, got none"))
		}
		if c.ChunkTokens {
			for i, ch := range tr.Chunks {
				if ch.Tokens <= 0 {
					errs = append(errs, fmt.Errorf("streamed request: chunk %d carries %d tokens, want > 0 (ChunkTokens claimed)", i, ch.Tokens))
					break
				}
			}
		}
	case Unstreamed:
		if len(tr.Chunks) != 0 {
			errs = append(errs, fmt.Errorf("unstreamed request: want no chunks in the trace, got %d", len(tr.Chunks)))
		}
	}
	return errs
}

// checkSendHook: the send hook is called once, with Trace.Start.
func checkSendHook(ctx context.Context, c Config) []error {
	if !c.SendHook {
		return nil
	}
	var errs []error
	for _, m := range c.modes() {
		hctx, calls := recordSends(ctx)
		res, err := complete(hctx, c, c.Engine, c.request(m, c.MaxTokens))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s request: want success, got %w", m, err))
			continue
		}
		got := calls()
		switch {
		case len(got) != 1:
			errs = append(errs, fmt.Errorf("%s request: send hook called %d times, want once", m, len(got)))
		case !got[0].Equal(res.Trace.Start):
			errs = append(errs, fmt.Errorf("%s request: send hook got %v, want Trace.Start %v", m, got[0], res.Trace.Start))
		}
	}
	return errs
}

// recordSends returns ctx with a send hook that records every instant it is
// called with, and a function that returns the instants so far.
func recordSends(ctx context.Context) (context.Context, func() []time.Time) {
	var mu sync.Mutex
	var calls []time.Time
	hctx := engine.WithSendHook(ctx, func(t time.Time) {
		mu.Lock()
		calls = append(calls, t)
		mu.Unlock()
	})
	return hctx, func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Time(nil), calls...)
	}
}

// checkBench: requests with IgnoreEOS generate exactly MaxTokens tokens by
// every count the result carries.
func checkBench(ctx context.Context, c Config) []error {
	if !c.Bench {
		return nil
	}
	var errs []error
	for _, m := range c.modes() {
		for _, n := range []int{1, c.MaxTokens} {
			res, err := complete(ctx, c, c.Engine, c.request(m, n))
			if err != nil {
				errs = append(errs, fmt.Errorf("%s request, max_tokens=%d: want success, got %w", m, n, err))
				continue
			}
			counts := 0
			if s := res.ServerStats; s != nil {
				counts++
				if s.GenerationTokens != n {
					errs = append(errs, fmt.Errorf("%s request: generation_tokens = %d, want max_tokens = %d", m, s.GenerationTokens, n))
				}
			}
			if u := res.Usage; u != nil {
				counts++
				if u.CompletionTokens != n {
					errs = append(errs, fmt.Errorf("%s request: usage completion_tokens = %d, want max_tokens = %d", m, u.CompletionTokens, n))
				}
			}
			if m == Streamed && c.ChunkTokens {
				counts++
				if got := res.Trace.Tokens(); got != n {
					errs = append(errs, fmt.Errorf("%s request: chunks carry %d tokens, want max_tokens = %d", m, got, n))
				}
			}
			if counts == 0 {
				errs = append(errs, fmt.Errorf("%s request: no token count to check (no server stats, usage or chunk token counts)", m))
			}
			if res.FinishReason != "" && res.FinishReason != "length" {
				errs = append(errs, fmt.Errorf("%s request: finish_reason %q, want \"length\" (the token bound)", m, res.FinishReason))
			}
		}
	}
	return errs
}

// checkStats: server stats are present where claimed and plausible.
func checkStats(ctx context.Context, c Config) []error {
	var errs []error
	for _, m := range c.modes() {
		if !c.Stats.Has(m) {
			continue
		}
		res, err := complete(ctx, c, c.Engine, c.request(m, c.MaxTokens))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s request: want success, got %w", m, err))
			continue
		}
		s := res.ServerStats
		if s == nil {
			errs = append(errs, fmt.Errorf("%s request: ServerStats is nil, want the server's stats (claimed for %s)", m, c.Stats))
			continue
		}
		if s.PromptTokens <= 0 || s.GenerationTokens <= 0 {
			errs = append(errs, fmt.Errorf("%s request: prompt_tokens = %d, generation_tokens = %d, want both > 0", m, s.PromptTokens, s.GenerationTokens))
		}
		if !positive(s.PromptTPS) {
			errs = append(errs, fmt.Errorf("%s request: prompt_tps = %v, want a finite rate > 0", m, s.PromptTPS))
		}
		if s.GenerationTokens >= 2 && !positive(s.GenerationTPS) {
			errs = append(errs, fmt.Errorf("%s request: generation_tps = %v over %d tokens, want a finite rate > 0", m, s.GenerationTPS, s.GenerationTokens))
		}
		switch s.PrefixCacheHit {
		case engine.PrefixCacheNone, engine.PrefixCachePartial, engine.PrefixCacheExact:
		default:
			errs = append(errs, fmt.Errorf("%s request: prefix_cache_hit %q, want none, partial or exact", m, s.PrefixCacheHit))
		}
		if s.PeakMemoryBytes < 0 {
			errs = append(errs, fmt.Errorf("%s request: peak memory %d bytes, want ≥ 0", m, s.PeakMemoryBytes))
		}
		if u := res.Usage; u != nil && (u.PromptTokens != s.PromptTokens || u.CompletionTokens != s.GenerationTokens) {
			errs = append(errs, fmt.Errorf("%s request: usage says %d prompt and %d completion tokens, stats say %d and %d; want them equal",
				m, u.PromptTokens, u.CompletionTokens, s.PromptTokens, s.GenerationTokens))
		}
	}
	return errs
}

func positive(x float64) bool { return x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }

// checkUsage: the usage block is present where claimed and consistent.
func checkUsage(ctx context.Context, c Config) []error {
	var errs []error
	for _, m := range c.modes() {
		if !c.Usage.Has(m) {
			continue
		}
		res, err := complete(ctx, c, c.Engine, c.request(m, c.MaxTokens))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s request: want success, got %w", m, err))
			continue
		}
		u := res.Usage
		if u == nil {
			errs = append(errs, fmt.Errorf("%s request: Usage is nil, want the usage block (claimed for %s)", m, c.Usage))
			continue
		}
		if u.PromptTokens <= 0 || u.CompletionTokens <= 0 {
			errs = append(errs, fmt.Errorf("%s request: usage prompt_tokens = %d, completion_tokens = %d, want both > 0", m, u.PromptTokens, u.CompletionTokens))
		}
		if u.CompletionTokens > c.MaxTokens {
			errs = append(errs, fmt.Errorf("%s request: usage completion_tokens = %d, want ≤ max_tokens = %d", m, u.CompletionTokens, c.MaxTokens))
		}
		if u.TotalTokens != 0 && u.TotalTokens != u.PromptTokens+u.CompletionTokens {
			errs = append(errs, fmt.Errorf("%s request: usage total_tokens = %d, want prompt + completion = %d", m, u.TotalTokens, u.PromptTokens+u.CompletionTokens))
		}
	}
	return errs
}

// cancelMode is the mode the cancellation checks use: streamed when the
// engine streams, since that is where a request spends its time reading.
func (c Config) cancelMode() Mode {
	if c.Stream {
		return Streamed
	}
	return Unstreamed
}

// checkCancel: cancelling the context stops a running request promptly
// with an error of kind canceled that wraps context.Canceled.
func checkCancel(ctx context.Context, c Config) []error {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	at := make(chan time.Time, 1)
	timer := time.AfterFunc(c.CancelAfter, func() {
		at <- time.Now()
		cancel()
	})
	defer timer.Stop()
	return interrupted(cctx, c, at, engine.KindCanceled, context.Canceled)
}

// checkDeadline: a context deadline that falls while the request runs
// stops it promptly with an error of kind timeout that wraps
// context.DeadlineExceeded.
func checkDeadline(ctx context.Context, c Config) []error {
	dl := time.Now().Add(c.CancelAfter)
	dctx, cancel := context.WithDeadline(ctx, dl)
	defer cancel()
	at := make(chan time.Time, 1)
	at <- dl
	return interrupted(dctx, c, at, engine.KindTimeout, context.DeadlineExceeded)
}

// interrupted sends a long request under ctx, which is cancelled (or
// expires) at the instant sent on at, and checks how Complete ends.
func interrupted(ctx context.Context, c Config, at <-chan time.Time, want engine.Kind, wantIs error) []error {
	m := c.cancelMode()
	tctx, cancel := context.WithTimeout(ctx, c.CancelAfter+c.CancelWithin+c.Timeout)
	defer cancel()
	start := time.Now()
	res, err := c.Engine.Complete(tctx, c.request(m, c.CancelMaxTokens))
	returned := time.Now()
	if err == nil {
		// A request that ended before the context did was too short to
		// be interrupted; one that ended after it was not stopped.
		var ended time.Time
		select {
		case ended = <-at:
		default:
		}
		if ended.IsZero() || !returned.After(ended) {
			return []error{fmt.Errorf("%s request of max_tokens=%d finished in %v without error, before the context ended at %v: want it still running then (raise CancelMaxTokens so the request outlasts CancelAfter)",
				m, c.CancelMaxTokens, returned.Sub(start).Round(time.Millisecond), c.CancelAfter)}
		}
		return []error{fmt.Errorf("%s request returned success %v after the context ended, want an error of kind %q wrapping %v: the adapter does not stop on its context (is ctx passed to the HTTP request and the stream reader?)",
			m, returned.Sub(ended).Round(time.Millisecond), want, wantIs)}
	}
	var errs []error
	if k := engine.KindOf(err); k != want {
		errs = append(errs, fmt.Errorf("%s request: error kind %q, want %q (error: %w)", m, k, want, err))
	}
	if !errors.Is(err, wantIs) {
		errs = append(errs, fmt.Errorf("%s request: error %q does not wrap %v", m, err, wantIs))
	}
	var when time.Time
	select {
	case when = <-at:
	default:
		when = start.Add(c.CancelAfter)
	}
	if late := returned.Sub(when); late > c.CancelWithin {
		errs = append(errs, fmt.Errorf("%s request: Complete returned %v after the context ended, want within %v", m, late.Round(time.Millisecond), c.CancelWithin))
	}
	if !res.Trace.Start.IsZero() {
		if verr := res.Trace.Validate(); verr != nil {
			errs = append(errs, fmt.Errorf("%s request: the interrupted request's trace: %w", m, verr))
		}
	}
	return errs
}

// checkUnknownModel: a model the server does not serve gives a 4xx
// *StatusError or another typed kind.
func checkUnknownModel(ctx context.Context, c Config) []error {
	var errs []error
	for _, m := range c.modes() {
		req := c.request(m, c.MaxTokens)
		req.Model = c.UnknownModel
		_, err := complete(ctx, c, c.Engine, req)
		if err == nil {
			errs = append(errs, fmt.Errorf("%s request for model %q: want an error, got success", m, c.UnknownModel))
			continue
		}
		if k := engine.KindOf(err); k == engine.KindOther {
			errs = append(errs, fmt.Errorf("%s request for model %q: error kind %q, want a typed kind (a 4xx status): %w", m, c.UnknownModel, k, err))
		}
		var se *engine.StatusError
		if errors.As(err, &se) && (se.Code < 400 || se.Code >= 500) {
			errs = append(errs, fmt.Errorf("%s request for model %q: HTTP status %d, want 4xx (404 or 400)", m, c.UnknownModel, se.Code))
		}
	}
	return errs
}

// checkConnect: an adapter pointed where nothing listens reports kind
// connect.
func checkConnect(ctx context.Context, c Config) []error {
	if c.NewAt == nil {
		return nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return []error{fmt.Errorf("finding a free loopback port: %w", err)}
	}
	addr := l.Addr().String()
	l.Close()
	e := c.NewAt("http://" + addr)
	_, err = complete(ctx, c, e, c.request(Unstreamed, c.MaxTokens))
	if k := engine.KindOf(err); k != engine.KindConnect {
		return []error{fmt.Errorf("request to %s where nothing listens: error kind %q, want %q (error: %v)", addr, k, engine.KindConnect, err)}
	}
	return nil
}

// checkFaults: each listed fault fails with its kind.
func checkFaults(ctx context.Context, c Config) []error {
	var errs []error
	for _, f := range c.Faults {
		m := Unstreamed
		if f.Stream {
			m = Streamed
		}
		req := c.request(m, c.MaxTokens)
		req.Header = f.Header.Clone()
		res, err := complete(ctx, c, c.Engine, req)
		switch k := engine.KindOf(err); {
		case err == nil:
			errs = append(errs, fmt.Errorf("fault %q: the request succeeded, want an error of kind %q; the likely cause is an adapter that does not send Request.Header, which carries the fault (%v)",
				f.Name, f.Want, f.Header))
		case k != f.Want:
			errs = append(errs, fmt.Errorf("fault %q: error kind %q, want %q (error: %v)", f.Name, k, f.Want, err))
		}
		if !res.Trace.Start.IsZero() {
			if verr := res.Trace.Validate(); verr != nil {
				errs = append(errs, fmt.Errorf("fault %q: the failed request's trace: %w", f.Name, verr))
			}
		}
	}
	return errs
}

// checkConcurrent: Concurrency simultaneous requests all succeed with
// valid traces (run under -race, it also finds data races in the adapter).
func checkConcurrent(ctx context.Context, c Config) []error {
	m := c.cancelMode()
	errc := make(chan []error, c.Concurrency)
	release := make(chan struct{})
	for i := range c.Concurrency {
		go func() {
			<-release
			res, err := complete(ctx, c, c.Engine, c.request(m, c.MaxTokens))
			if err != nil {
				errc <- []error{fmt.Errorf("request %d of %d: want success, got %w", i, c.Concurrency, err)}
				return
			}
			errc <- traceErrors(m, c, res)
		}()
	}
	close(release)
	var errs []error
	for range c.Concurrency {
		errs = append(errs, <-errc...)
	}
	return errs
}

// checkPrewarm: an engine that is a Prewarmer prewarms Concurrency
// connections, and as many requests then succeed at once.
func checkPrewarm(ctx context.Context, c Config) []error {
	p, ok := c.Engine.(engine.Prewarmer)
	if !ok {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	if err := p.Prewarm(pctx, c.Concurrency); err != nil {
		return []error{fmt.Errorf("Prewarm(%d): want success, got %w", c.Concurrency, err)}
	}
	return checkConcurrent(ctx, c)
}

// checkPrepare: an engine that is a Preparer prepares each mode's request
// without sending it (the send hook stays silent until Send), sends it
// with a valid trace and the hook called once with Trace.Start, and refuses
// a second Send with an error wrapping engine.ErrAlreadySent.
func checkPrepare(ctx context.Context, c Config) []error {
	p, ok := c.Engine.(engine.Preparer)
	if !ok {
		return nil
	}
	var errs []error
	for _, m := range c.modes() {
		hctx, calls := recordSends(ctx)
		pctx, cancel := context.WithTimeout(hctx, c.Timeout)
		prep, err := p.Prepare(pctx, c.request(m, c.MaxTokens))
		if err != nil {
			cancel()
			errs = append(errs, fmt.Errorf("%s request: Prepare: want success, got %w", m, err))
			continue
		}
		if early := len(calls()); early != 0 {
			errs = append(errs, fmt.Errorf("%s request: Prepare called the send hook %d times, want none before Send", m, early))
		}
		res, err := prep.Send(pctx)
		if err != nil {
			cancel()
			errs = append(errs, fmt.Errorf("%s request: Send: want success, got %w", m, err))
			continue
		}
		errs = append(errs, traceErrors(m, c, res)...)
		if got := calls(); c.SendHook && (len(got) != 1 || !got[0].Equal(res.Trace.Start)) {
			errs = append(errs, fmt.Errorf("%s request: Send called the send hook with %v, want once with Trace.Start %v", m, got, res.Trace.Start))
		}
		if _, err := prep.Send(pctx); !errors.Is(err, engine.ErrAlreadySent) {
			errs = append(errs, fmt.Errorf("%s request: a second Send returned %v, want an error wrapping engine.ErrAlreadySent", m, err))
		}
		cancel()
	}
	return errs
}

// checkModels: an engine that is a ModelLister lists Config.Model.
func checkModels(ctx context.Context, c Config) []error {
	l, ok := c.Engine.(engine.ModelLister)
	if !ok {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	models, err := l.Models(lctx)
	if err != nil {
		return []error{fmt.Errorf("a Models call: want success, got %w", err)}
	}
	var ids []string
	for _, m := range models {
		if m.ID == c.Model {
			return nil
		}
		ids = append(ids, m.ID)
	}
	return []error{fmt.Errorf("a Models call lists %q, want it to include the served model %q", ids, c.Model)}
}

// checkCountTokens: an engine that is a TokenCounter counts the kit's
// prompt deterministically, and as many tokens as its responses say the
// prompt had (server stats or usage). With a Prompt of token ids the count
// is known without one: every response says exactly len(Tokens); a text
// Prompt has no chat messages to count.
func checkCountTokens(ctx context.Context, c Config) []error {
	if c.Prompt != nil {
		return checkPromptTokens(ctx, c)
	}
	tc, ok := c.Engine.(engine.TokenCounter)
	if !ok {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	n, err := tc.CountTokens(cctx, c.Model, c.Messages)
	if err != nil {
		return []error{fmt.Errorf("CountTokens: want success, got %w", err)}
	}
	var errs []error
	if n <= 0 {
		errs = append(errs, fmt.Errorf("CountTokens = %d, want > 0", n))
	}
	if again, err := tc.CountTokens(cctx, c.Model, c.Messages); err != nil || again != n {
		errs = append(errs, fmt.Errorf("CountTokens gave %d, then %d (error %v), want the same count twice", n, again, err))
	}
	for _, m := range c.modes() {
		res, err := complete(ctx, c, c.Engine, c.request(m, c.MaxTokens))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s request: want success, got %w", m, err))
			continue
		}
		errs = append(errs, promptCountErrs(m, res, n, fmt.Sprintf("CountTokens %d", n))...)
	}
	return errs
}

// promptCountErrs compares every prompt count a response carries (the
// server's stats, the usage block) with n; want names where n came from.
func promptCountErrs(m Mode, res engine.Result, n int, want string) []error {
	var errs []error
	if s := res.ServerStats; s != nil && s.PromptTokens != n {
		errs = append(errs, fmt.Errorf("%s request: server counted %d prompt tokens, %s; want them equal", m, s.PromptTokens, want))
	}
	if u := res.Usage; u != nil && u.PromptTokens != n {
		errs = append(errs, fmt.Errorf("%s request: usage says %d prompt tokens, %s; want them equal", m, u.PromptTokens, want))
	}
	return errs
}

// checkPromptTokens: a prompt of token ids is exactly that many prompt
// tokens in whatever counts the responses carry.
func checkPromptTokens(ctx context.Context, c Config) []error {
	n := len(c.Prompt.Tokens)
	if n == 0 {
		return nil
	}
	var errs []error
	for _, m := range c.modes() {
		res, err := complete(ctx, c, c.Engine, c.request(m, c.MaxTokens))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s request: want success, got %w", m, err))
			continue
		}
		errs = append(errs, promptCountErrs(m, res, n, fmt.Sprintf("sent as %d token ids", n))...)
		if u := res.Usage; u != nil {
			if k, ok := u.Cached(); ok && (k < 0 || k > u.PromptTokens) {
				errs = append(errs, fmt.Errorf("%s request: usage says %d of %d prompt tokens were cached; want 0 to %d", m, k, u.PromptTokens, u.PromptTokens))
			}
		}
	}
	return errs
}
