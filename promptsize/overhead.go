package promptsize

import (
	"context"
	"errors"
)

// Overhead counts the chat template's overhead of b's prompts: the tokens
// of a request whose user message is empty, with b's System message if
// any. No prompt b builds can be shorter (a target below it gives an
// *OverheadError). It is counted once per Builder, the builds sharing the
// count, and the call is in CounterCalls.
func (b *Builder) Overhead(ctx context.Context) (int, error) {
	if b.Counter == nil {
		return 0, errors.New("promptsize: Builder.Counter is nil; expected a Counter")
	}
	s := newSearcher(ctx, b.Counter, b.System)
	defer func() {
		b.mu.Lock()
		b.calls += int64(s.calls)
		b.mu.Unlock()
	}()
	return b.templateOverhead(s)
}
