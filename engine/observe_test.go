package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// TestObserve: every ended request reaches f once, through Complete and
// through Prepare and Send; a second Send does not; the Engine is a
// Prewarmer exactly when the observed one is.
func TestObserve(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	f := func(r Result) {
		mu.Lock()
		seen = append(seen, r.ResponseID)
		mu.Unlock()
	}
	plain := Func(func(_ context.Context, req Request) (Result, error) {
		return Result{ResponseID: req.Model}, nil
	})
	o := Observe(plain, f)
	if _, ok := o.(Prewarmer); ok {
		t.Error("an engine without Prewarm became a Prewarmer")
	}
	if _, err := o.Complete(context.Background(), Request{Model: "a"}); err != nil {
		t.Fatal(err)
	}
	p, err := Prepare(context.Background(), o, Request{Model: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(context.Background()); !errors.Is(err, ErrAlreadySent) {
		t.Errorf("second Send: %v, want ErrAlreadySent", err)
	}
	if len(seen) != 2 || seen[0] != "a" || seen[1] != "b" {
		t.Errorf("f saw %q, want [a b]", seen)
	}

	warmed := 0
	pw := struct {
		Engine
		Prewarmer
	}{plain, PrewarmFunc(func(_ context.Context, n int) error { warmed += n; return nil })}
	ow, ok := Observe(pw, f).(Prewarmer)
	if !ok {
		t.Fatal("a Prewarmer's observer is no Prewarmer")
	}
	if err := ow.Prewarm(context.Background(), 3); err != nil || warmed != 3 {
		t.Errorf("Prewarm: %v, %d warmed; want 3", err, warmed)
	}
}
