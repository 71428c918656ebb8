package openai

import (
	"fmt"
	"math"
	"strings"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/timing"
)

// The markers of a reasoning block that a server whose reasoning parser is
// off leaves in the content (Qwen3, DeepSeek R1 and V3.1, GLM, Kimi).
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// thinkEnd returns the end of the reasoning block at the start of text:
// the byte after its "</think>", or total (the whole stream) when the
// block is never closed; ok is false when text has none. A block starts
// with "<think>" after nothing but white space, or, when the chat
// template opened it in the prompt (DeepSeek R1's and Qwen3 thinking
// models' templates end with "<think>\n"), runs from the start to a
// "</think>" with no "<think>" before it.
func thinkEnd(text string, total int) (end int, ok bool) {
	if strings.HasPrefix(strings.TrimLeft(text, " \t\r\n"), thinkOpen) {
		open := strings.Index(text, thinkOpen) + len(thinkOpen)
		if i := strings.Index(text[open:], thinkClose); i >= 0 {
			return open + i + len(thinkClose), true
		}
		return total, true
	}
	i := strings.Index(text, thinkClose)
	if i < 0 || strings.Contains(text[:i], thinkOpen) {
		return 0, false
	}
	return i + len(thinkClose), true
}

// thinkInContent finds a reasoning block in the content of a stream whose
// server sent no reasoning field (see thinkEnd) and makes its chunks
// timing.Reasoning. A chunk that holds the end of the block and answer
// text after it is two chunks at its instant, when it carried two tokens
// or more: the reasoning part's count is in proportion to its bytes (at
// least one each side), an estimate a Warning wrapping ErrEstimatedTokens
// names; a chunk of one token stays an answer chunk. Tool-call chunks are
// left as they are.
func (st *streamState) thinkInContent(chunks []timing.Chunk) ([]timing.Chunk, []error) {
	text := st.text.String()
	end, ok := thinkEnd(text, st.total)
	if !ok || len(chunks) == 0 {
		return chunks, nil
	}
	var (
		out   []timing.Chunk
		warns []error
	)
	for i, ch := range chunks {
		s, e := 0, st.ends[i]
		if i > 0 {
			s = st.ends[i-1]
		}
		switch {
		case ch.Kind != timing.Answer, s >= end:
		case e <= end:
			ch.Kind = timing.Reasoning
		case ch.Tokens >= 2:
			r := int(math.Round(float64(ch.Tokens) * float64(end-s) / float64(e-s)))
			r = min(max(r, 1), ch.Tokens-1)
			warns = append(warns, fmt.Errorf("%w: content chunk %d of %d tokens holds the end of a %s … %s block and the answer after it: it is split at its instant into %d reasoning and %d answer tokens by their bytes (%d and %d)",
				ErrEstimatedTokens, i, ch.Tokens, thinkOpen, thinkClose, r, ch.Tokens-r, end-s, e-end))
			out = append(out, timing.Chunk{At: ch.At, Tokens: r, Kind: timing.Reasoning})
			ch.Tokens -= r
		}
		out = append(out, ch)
	}
	return out, warns
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
