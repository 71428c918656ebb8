package promptsize

import "context"

// A Message is one turn of a chat request.
type Message struct {
	// Role is "system", "user", "assistant" or "tool".
	Role string `json:"role"`
	// Content is the turn's text.
	Content string `json:"content"`
}

// A Counter counts the tokens of a chat request exactly as the serving
// engine will: the messages rendered through the model's chat template with
// the generation prompt added (add_generation_prompt), then tokenized
// without adding special tokens (the template emits its own).
//
// Implementations must be safe for concurrent use and deterministic: the
// same messages always give the same count.
type Counter interface {
	Count(ctx context.Context, messages []Message) (int, error)
}

// CounterFunc adapts a function to the Counter interface.
type CounterFunc func(ctx context.Context, messages []Message) (int, error)

// Count calls f(ctx, messages).
func (f CounterFunc) Count(ctx context.Context, messages []Message) (int, error) {
	return f(ctx, messages)
}

var _ Counter = CounterFunc(nil)
