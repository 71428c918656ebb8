// Package thinktags reads a reasoning block that a server running no
// reasoning parser leaves in a stream's content: a "<think>" … "</think>"
// block at the start of the text (Qwen3, DeepSeek R1 and V3.1, GLM, Kimi),
// or a "</think>" with no opening when the chat template opened the block
// in the prompt. The adapters' stream readers (engine/openai, engine/exo)
// hand it the chunks they built and the bytes of text after each, and it
// makes the block's chunks timing.Reasoning.
package thinktags

import (
	"fmt"
	"math"
	"strings"

	"github.com/inferbench/inferbench/timing"
)

// The markers of a reasoning block.
const (
	Open  = "<think>"
	Close = "</think>"
)

// End returns the end of the reasoning block at the start of text: the
// byte after its "</think>", or total (the whole stream, of which text may
// be a kept prefix) when the block is never closed; ok is false when text
// has none. A block starts with "<think>" after nothing but white space,
// or, when the chat template opened it in the prompt (DeepSeek R1's and
// Qwen3 thinking models' templates end with "<think>\n"), runs from the
// start to a "</think>" with no "<think>" before it.
func End(text string, total int) (end int, ok bool) {
	if strings.HasPrefix(strings.TrimLeft(text, " \t\r\n"), Open) {
		open := strings.Index(text, Open) + len(Open)
		if i := strings.Index(text[open:], Close); i >= 0 {
			return open + i + len(Close), true
		}
		return total, true
	}
	i := strings.Index(text, Close)
	if i < 0 || strings.Contains(text[:i], Open) {
		return 0, false
	}
	return i + len(Close), true
}

// Classify finds a reasoning block (see End) in text, the first bytes of
// a stream of total bytes, and makes the chunks that carried it
// timing.Reasoning; ends[i] is the stream's byte count after chunks[i]
// (one per chunk). The markers are the block's, so their tokens are
// reasoning tokens. A chunk that holds the end of the block and answer
// text after it is two chunks at its instant, when it carried two tokens
// or more: the reasoning part's count is in proportion to its bytes (at
// least one each side), an estimate a warning wrapping estimated names; a
// chunk of one token stays an answer chunk. Tool-call chunks, and chunks
// already of another kind, are left as they are. chunks is changed in
// place when nothing is split; the result is the chunks to keep.
func Classify(chunks []timing.Chunk, text string, total int, ends []int, estimated error) ([]timing.Chunk, []error) {
	end, ok := End(text, total)
	if !ok || len(chunks) == 0 || len(ends) != len(chunks) {
		return chunks, nil
	}
	var (
		out   []timing.Chunk
		warns []error
	)
	for i, ch := range chunks {
		s, e := 0, ends[i]
		if i > 0 {
			s = ends[i-1]
		}
		switch {
		case ch.Kind != timing.Answer, s >= end:
		case e <= end:
			ch.Kind = timing.Reasoning
		case ch.Tokens >= 2:
			r := int(math.Round(float64(ch.Tokens) * float64(end-s) / float64(e-s)))
			r = min(max(r, 1), ch.Tokens-1)
			warns = append(warns, fmt.Errorf("%w: content chunk %d of %d tokens holds the end of a %s … %s block and the answer after it: it is split at its instant into %d reasoning and %d answer tokens by their bytes (%d and %d)",
				estimated, i, ch.Tokens, Open, Close, r, ch.Tokens-r, end-s, e-end))
			out = append(out, timing.Chunk{At: ch.At, Tokens: r, Kind: timing.Reasoning})
			ch.Tokens -= r
		}
		out = append(out, ch)
	}
	return out, warns
}
