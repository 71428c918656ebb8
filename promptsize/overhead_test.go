package promptsize_test

import (
	"context"
	"testing"

	"github.com/inferbench/inferbench/promptsize"
)

// TestBuilderOverhead: the overhead is the count of the request with an
// empty user message (the system message included), counted once and
// shared with the builds, and no build goes below it.
func TestBuilderOverhead(t *testing.T) {
	ctx := context.Background()
	for _, system := range []string{"", "You are terse."} {
		tok := newBPE()
		b := &promptsize.Builder{Counter: tok, System: system}
		got, err := b.Overhead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		msgs := []promptsize.Message{{Role: "user", Content: ""}}
		if system != "" {
			msgs = append([]promptsize.Message{{Role: "system", Content: system}}, msgs...)
		}
		want, _ := tok.Count(ctx, msgs)
		if got != want || (system == "" && got != fakeOverhead) {
			t.Errorf("system %q: overhead %d; want the empty request's %d", system, got, want)
		}
		before := tok.calls.Load()
		if again, err := b.Overhead(ctx); err != nil || again != got {
			t.Errorf("second Overhead = %d, %v; want %d", again, err, got)
		}
		p, err := b.Build(ctx, got)
		if err != nil {
			t.Fatal(err)
		}
		if p.Overhead != got || p.Tokens != got {
			t.Errorf("a build at the overhead: %d tokens, overhead %d; want %d", p.Tokens, p.Overhead, got)
		}
		if n := tok.calls.Load() - before; n > 1 {
			t.Errorf("%d counter calls after the overhead was known; want the build's one", n)
		}
		// The test's own count above is not the Builder's.
		if n := b.CounterCalls(); n != tok.calls.Load()-1 {
			t.Errorf("CounterCalls %d; want every call the Builder made, %d", n, tok.calls.Load()-1)
		}
	}
	if _, err := (&promptsize.Builder{}).Overhead(ctx); err == nil {
		t.Error("Overhead without a Counter gave no error")
	}
}
