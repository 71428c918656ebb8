package openai

import (
	"fmt"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/thinktags"
	"github.com/inferbench/inferbench/timing"
)

// thinkInContent finds a reasoning block in the content of a stream whose
// server sent no reasoning field and makes its chunks timing.Reasoning:
// thinktags.Classify on the stream's text, with ErrEstimatedTokens
// wrapping the warning of a chunk split by bytes.
func (st *streamState) thinkInContent(chunks []timing.Chunk) ([]timing.Chunk, []error) {
	return thinktags.Classify(chunks, st.text.String(), st.total, st.ends, ErrEstimatedTokens)
}

// reasoningWarning compares the tokens of the stream's reasoning chunks
// with the server's usage.completion_tokens_details.reasoning_tokens, when
// the server sent it. A server counts the tokens inside the reasoning
// block, not the markers that open it (vLLM's count_reasoning_tokens,
// exo's is_thinking tokens), while a stream with per-chunk usage credits
// those markers to its first reasoning chunk (they were generated in its
// interval and no chunk showed them): so the stream's count may exceed the
// server's by up to that chunk's tokens less one. Any other difference is
// a Warning wrapping ErrReasoningTokens; nil when they agree.
func reasoningWarning(chunks []timing.Chunk, u *engine.Usage) error {
	if u == nil || u.ReasoningTokens == nil {
		return nil
	}
	server := *u.ReasoningTokens
	stream, first, n := 0, 0, 0
	for _, ch := range chunks {
		if ch.Kind != timing.Reasoning {
			continue
		}
		if n == 0 {
			first = ch.Tokens
		}
		n++
		stream += ch.Tokens
	}
	if stream >= server && stream-server <= max(first-1, 0) {
		return nil
	}
	return fmt.Errorf("%w: the stream's %d reasoning chunks carried %d tokens, usage.completion_tokens_details.reasoning_tokens says %d",
		ErrReasoningTokens, n, stream, server)
}
