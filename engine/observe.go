package engine

import (
	"context"
	"errors"
)

// Observe returns an Engine that sends through e and hands every Result
// to f once its request has ended, after Complete or a Prepared's Send
// returns, error or not (a second Send of one Prepared, which sends
// nothing, is not handed on): a harness keeps what it needs of each reply (by
// Result.ResponseID, say) outside the measured part of the request. f may
// be called from many goroutines at once.
//
// The Engine is a Preparer, preparing through Prepare(ctx, e, req), and a
// Prewarmer exactly when e is one.
func Observe(e Engine, f func(Result)) Engine {
	o := &observed{e: e, f: f}
	if pw, ok := e.(Prewarmer); ok {
		return &observedPrewarmer{o, pw}
	}
	return o
}

type observed struct {
	e Engine
	f func(Result)
}

func (o *observed) Complete(ctx context.Context, req Request) (Result, error) {
	res, err := o.e.Complete(ctx, req)
	o.f(res)
	return res, err
}

func (o *observed) Prepare(ctx context.Context, req Request) (Prepared, error) {
	p, err := Prepare(ctx, o.e, req)
	if err != nil {
		return nil, err
	}
	return PreparedFunc(func(ctx context.Context) (Result, error) {
		res, err := p.Send(ctx)
		if !errors.Is(err, ErrAlreadySent) {
			o.f(res)
		}
		return res, err
	}), nil
}

type observedPrewarmer struct {
	*observed
	pw Prewarmer
}

func (o *observedPrewarmer) Prewarm(ctx context.Context, n int) error { return o.pw.Prewarm(ctx, n) }
