package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
)

// preparing is an engine with the Preparer capability that records what it
// was asked to do.
type preparing struct {
	engine.Func
	calls []string
}

func (p *preparing) Prepare(_ context.Context, req engine.Request) (engine.Prepared, error) {
	p.calls = append(p.calls, "prepare "+req.Model)
	if req.Model == "" {
		return nil, errors.New("no model")
	}
	return engine.PreparedFunc(func(context.Context) (engine.Result, error) {
		p.calls = append(p.calls, "send "+req.Model)
		return engine.Result{Model: req.Model}, nil
	}), nil
}

func TestPrepareUsesThePreparer(t *testing.T) {
	e := &preparing{}
	e.Func = func(context.Context, engine.Request) (engine.Result, error) {
		e.calls = append(e.calls, "complete")
		return engine.Result{}, nil
	}
	p, err := engine.Prepare(context.Background(), e, engine.Request{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Send(context.Background())
	if err != nil || res.Model != "m" {
		t.Errorf("Send = %+v, %v; want the Preparer's result for model m", res, err)
	}
	if _, err := engine.Prepare(context.Background(), e, engine.Request{}); err == nil {
		t.Error("Prepare of a request the Preparer refuses: no error")
	}
	if diff := cmp.Diff([]string{"prepare m", "send m", "prepare "}, e.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestPrepareFallsBackToComplete(t *testing.T) {
	var got []engine.Request
	var ctxs []context.Context
	e := engine.Func(func(ctx context.Context, req engine.Request) (engine.Result, error) {
		got = append(got, req)
		ctxs = append(ctxs, ctx)
		return engine.Result{Text: "ok"}, nil
	})
	req := engine.Request{Model: "m", MaxTokens: 3}
	p, err := engine.Prepare(context.Background(), e, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("Prepare of an engine without the capability called Complete %d times, want 0 before Send", len(got))
	}
	type key struct{}
	sendCtx := context.WithValue(context.Background(), key{}, "send")
	res, err := p.Send(sendCtx)
	if err != nil || res.Text != "ok" {
		t.Errorf("Send = %+v, %v; want Complete's result", res, err)
	}
	if len(got) != 1 || got[0].Model != "m" || got[0].MaxTokens != 3 || ctxs[0].Value(key{}) != "send" {
		t.Errorf("Complete got %+v, want the request once under Send's context", got)
	}
	_, err = p.Send(sendCtx)
	if !errors.Is(err, engine.ErrAlreadySent) || engine.KindOf(err) != engine.KindOther {
		t.Errorf("second Send: %v (kind %q), want ErrAlreadySent of kind %q", err, engine.KindOf(err), engine.KindOther)
	}
	if len(got) != 1 {
		t.Errorf("Complete called %d times after two Sends, want 1", len(got))
	}
}

func ExamplePrepare() {
	// An engine without the Preparer capability: Prepare defers its work
	// to Send, which calls Complete once.
	e := engine.Func(func(_ context.Context, req engine.Request) (engine.Result, error) {
		return engine.Result{Text: "hello " + req.Model}, nil
	})
	p, err := engine.Prepare(context.Background(), e, engine.Request{Model: "m"})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := p.Send(context.Background())
	fmt.Println(res.Text, err)
	_, err = p.Send(context.Background())
	fmt.Println(errors.Is(err, engine.ErrAlreadySent))
	// Output:
	// hello m <nil>
	// true
}
