package engine

import (
	"context"
	"time"
)

// An Engine serves chat completions.
//
// Complete sends one request and waits for its whole response. It fills
// Result.Trace from the client's clock as the bytes move: Start when the
// request begins to be written (after the connection is open, so dialing is
// not part of the measurement when the connection was prewarmed), Headers
// when the response headers arrive, one chunk per streamed content chunk,
// End when the response has been read. It never retries: a failed request
// returns its error, and the Result holds whatever was measured until then.
// (Only a request that failed before any byte of an answer on a reused
// connection the server had closed may go out again, on another; Start is
// then that attempt's, and Result.Resent counts the others.)
//
// Cancelling ctx aborts the request promptly; Complete then returns an error
// of kind KindCanceled or KindTimeout. Implementations must be safe for
// concurrent use: a burst calls Complete from many goroutines at once.
type Engine interface {
	Complete(ctx context.Context, req Request) (Result, error)
}

// Func adapts a function to the Engine interface.
type Func func(ctx context.Context, req Request) (Result, error)

// Complete calls f(ctx, req).
func (f Func) Complete(ctx context.Context, req Request) (Result, error) { return f(ctx, req) }

// A Prewarmer opens connections ahead of a burst, so that a request
// released at a shared instant writes its bytes at once instead of dialing
// first. Prewarm returns when n idle connections are open and ready for the
// next n Complete calls, or with an error saying how many it managed.
// Preparer is its companion: it readies what is written on them.
type Prewarmer interface {
	Prewarm(ctx context.Context, n int) error
}

// PrewarmFunc adapts a function to the Prewarmer interface.
type PrewarmFunc func(ctx context.Context, n int) error

// Prewarm calls f(ctx, n).
func (f PrewarmFunc) Prewarm(ctx context.Context, n int) error { return f(ctx, n) }

// A ModelLister lists the models an engine can serve (exo's /models, the
// OpenAI /v1/models).
type ModelLister interface {
	Models(ctx context.Context) ([]Model, error)
}

// ModelListerFunc adapts a function to the ModelLister interface.
type ModelListerFunc func(ctx context.Context) ([]Model, error)

// Models calls f(ctx).
func (f ModelListerFunc) Models(ctx context.Context) ([]Model, error) { return f(ctx) }

// A TokenCounter counts the tokens of a chat request as the engine itself
// tokenizes it: the messages rendered through the model's chat template with
// the generation prompt added (vLLM's and SGLang's /tokenize). The method is
// named CountTokens rather than Count so that one type can also implement
// promptsize.Counter, whose Count takes promptsize.Message.
type TokenCounter interface {
	CountTokens(ctx context.Context, model string, messages []Message) (int, error)
}

// TokenCounterFunc adapts a function to the TokenCounter interface.
type TokenCounterFunc func(ctx context.Context, model string, messages []Message) (int, error)

// CountTokens calls f(ctx, model, messages).
func (f TokenCounterFunc) CountTokens(ctx context.Context, model string, messages []Message) (int, error) {
	return f(ctx, model, messages)
}

var (
	_ Engine       = Func(nil)
	_ Prewarmer    = PrewarmFunc(nil)
	_ ModelLister  = ModelListerFunc(nil)
	_ TokenCounter = TokenCounterFunc(nil)
)

// sendHookKey is the context key of a send hook.
type sendHookKey struct{}

// WithSendHook returns a copy of ctx carrying hook. An adapter calls the
// hook, through NotifySend, once per Complete call, with the instant the
// request's bytes began to go out on an open connection (for HTTP adapters,
// when net/http/httptrace reports the connection obtained and the request
// about to be written). It is the same instant as the Result's Trace.Start.
//
// The hook runs on the goroutine that called Complete, before the response
// arrives, so it must be quick and must not block: record the instant and
// return. concurrency.Burst uses it to measure the spread of the actual send
// instants of a burst (its dispatch skew). A hook already on ctx is
// replaced.
func WithSendHook(ctx context.Context, hook func(time.Time)) context.Context {
	return context.WithValue(ctx, sendHookKey{}, hook)
}

// SendHook returns the hook WithSendHook attached to ctx, or nil.
func SendHook(ctx context.Context) func(time.Time) {
	h, _ := ctx.Value(sendHookKey{}).(func(time.Time))
	return h
}

// NotifySend calls the send hook attached to ctx, if any, with t. Adapters
// call it exactly once per Complete call, when they set Trace.Start, and
// never after Complete has returned.
func NotifySend(ctx context.Context, t time.Time) {
	if h := SendHook(ctx); h != nil {
		h(t)
	}
}
