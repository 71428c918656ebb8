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

// A TokenEnder is a Counter that can also tokenize plain text (no chat
// template, no special tokens added) and say where each token ends. A
// client that counts generated text checks for it (a type assertion) to
// attribute the tokens of a whole stream to its chunks from one call,
// instead of counting every prefix of the text.
//
// TokenEnds appends to dst, for each token of text in order, the byte
// offset in text just past the token's last byte, and returns dst. The
// offsets never decrease and the last is at most len(text); the number
// appended is the text's token count. A token that text's bytes cannot be
// traced to exactly (a normalizer that rewrote them, an unknown token)
// may be given a later offset, up to the end of the stretch the tokenizer
// rewrote, never an earlier one.
type TokenEnder interface {
	TokenEnds(ctx context.Context, text string, dst []int) ([]int, error)
}

// A ContentLocator is a Counter that can also say where, among the tokens
// it counts for a request, the content of the request's last message
// begins. BlockBuilder checks for it (a type assertion) to place the chat
// template's tokens where they fall: those before the content at the start
// of the first block, those after it at the end of the last, so that the
// templated prompt's tokens line up with the trace's blocks.
//
// ContentOffset returns the number of the request's tokens, as Count
// tokenizes the request, that precede the last message's content: the
// template's own tokens before it and those of any earlier messages.
type ContentLocator interface {
	ContentOffset(ctx context.Context, messages []Message) (int, error)
}
