package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
)

// ErrAlreadySent is wrapped by the error of a second Send of one Prepared:
// a prepared request goes out at most once.
var ErrAlreadySent = errors.New("engine: prepared request already sent")

// A Preparer does a request's client-side work ahead of sending it, so that
// a request released at a shared instant (a burst) has only I/O left to do
// when it is let go. It is the companion of Prewarmer: Prewarm opens the
// connections, Prepare readies what is written on them.
//
// Prepare does everything that does not need the network: it validates req,
// encodes its body and builds its headers. It sends nothing and keeps
// nothing of ctx (Send runs under its own). An error from Prepare means
// nothing was sent and nothing will be: a request the adapter refuses, an
// Extra value that does not encode.
//
// The Prepared's Send does only the I/O: it writes the request (on an idle
// connection when one was prewarmed) and reads the response, stamping
// Result.Trace and calling NotifySend under Send's ctx exactly as Complete
// does, with the warnings Prepare found already in Result.Warnings. A
// Prepared is sent at most once: a second Send sends nothing and returns an
// *Error of kind KindOther wrapping ErrAlreadySent. A Prepared that is
// never sent holds no connection and may be dropped.
//
// For an engine that implements both, Complete(ctx, req) must be the same
// as Prepare(ctx, req) followed by Send(ctx): the same bytes on the wire,
// the same Result and the same errors. Prepare and Send must be safe for
// concurrent use; distinct Prepared values may be sent at once.
type Preparer interface {
	Prepare(ctx context.Context, req Request) (Prepared, error)
}

// A Prepared is a request ready to send; see Preparer.
type Prepared interface {
	Send(ctx context.Context) (Result, error)
}

// PreparerFunc adapts a function to the Preparer interface.
type PreparerFunc func(ctx context.Context, req Request) (Prepared, error)

// Prepare calls f(ctx, req).
func (f PreparerFunc) Prepare(ctx context.Context, req Request) (Prepared, error) {
	return f(ctx, req)
}

// PreparedFunc adapts a function to the Prepared interface. It calls f on
// every Send: a function that must be sent at most once guards itself (as
// Prepare's fallback does).
type PreparedFunc func(ctx context.Context) (Result, error)

// Send calls f(ctx).
func (f PreparedFunc) Send(ctx context.Context) (Result, error) { return f(ctx) }

var (
	_ Preparer = PreparerFunc(nil)
	_ Prepared = PreparedFunc(nil)
)

// Prepare readies req for e: through e's own Prepare when e is a Preparer,
// else as a Prepared whose Send calls e.Complete(ctx, req), which does the
// client-side work at Send as before. Either way the result is sent at most
// once, so a caller has one code path for every engine.
func Prepare(ctx context.Context, e Engine, req Request) (Prepared, error) {
	if p, ok := e.(Preparer); ok {
		return p.Prepare(ctx, req)
	}
	return &deferred{e: e, req: req}, nil
}

// deferred is the Prepared of an engine that cannot prepare: Send is
// Complete.
type deferred struct {
	e    Engine
	req  Request
	sent atomic.Bool
}

func (d *deferred) Send(ctx context.Context) (Result, error) {
	if !d.sent.CompareAndSwap(false, true) {
		return Result{}, SentTwice("Complete")
	}
	return d.e.Complete(ctx, d.req)
}

// SentTwice returns the error of a second Send of one Prepared: an *Error of
// kind KindOther for op (what the request would have done, e.g. "POST
// http://host/v1/chat/completions") wrapping ErrAlreadySent. Adapters
// return it so that every Preparer reports the misuse alike.
func SentTwice(op string) error {
	return &Error{Kind: KindOther, Op: op,
		Err: fmt.Errorf("expected a prepared request to be sent once, found a second Send: %w", ErrAlreadySent)}
}
