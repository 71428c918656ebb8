package timing

import (
	"fmt"
	"time"
)

// The first-chunk anchor.
//
// Some servers write their first chunk of a stream (a role announcement
// with no text) in the same step that produced the first generated token,
// before that token's text can be shown: vLLM and SGLang send the role
// chunk with the first engine output, llama.cpp with its first decoded
// token. When the text of the first tokens is then held back (a reasoning
// parser that swallows "<think>", a partial UTF-8 sequence, a lone space
// a detokenizer keeps until the next token), the first content chunk
// arrives a step or more later carrying k0 > 1 tokens. Trace.FirstChunk
// records that earlier instant, the anchor a. With it:
//
//	TTFTFirstChunk = a − Start
//	TPOT           = (End − a) / (n − 1)
//	ITL            = k0 − 1 gaps spread over (first content chunk − a),
//	                 then k gaps of g/k for each later chunk, as without it
//
// so TPOT and ITL count the same n − 1 intervals from the same first
// instant, and the mean of ITL is TPOT but for the time after the last
// chunk. TTFT stays the first content chunk's (first text). Without an
// anchor the first content chunk is the first instant: its k0 − 1 further
// tokens were generated at instants the client cannot see and ITL has
// n − k0 gaps.

// anchor returns the trace's first-chunk anchor when it is usable: set,
// not before Start and not after the first content chunk.
func (t Trace) anchor() (time.Time, bool) {
	if t.FirstChunk.IsZero() || len(t.Chunks) == 0 {
		return time.Time{}, false
	}
	if t.FirstChunk.Before(t.Start) || t.FirstChunk.After(t.Chunks[0].At) {
		return time.Time{}, false
	}
	return t.FirstChunk, true
}

// validateFirstChunk checks FirstChunk's place: not before Start, not after
// the first content chunk.
func (t Trace) validateFirstChunk() error {
	if t.FirstChunk.IsZero() {
		return nil
	}
	if t.FirstChunk.Before(t.Start) {
		return fmt.Errorf("%w: FirstChunk is %v before Start", ErrInvalidTrace, t.Start.Sub(t.FirstChunk))
	}
	if len(t.Chunks) > 0 && t.FirstChunk.After(t.Chunks[0].At) {
		return fmt.Errorf("%w: FirstChunk is %v after the first content chunk", ErrInvalidTrace, t.FirstChunk.Sub(t.Chunks[0].At))
	}
	return nil
}

// TTFTFirstChunk is the time to the server's first chunk, for a trace with
// a first-chunk anchor (see Trace.FirstChunk):
//
//	TTFTFirstChunk = FirstChunk − Start
//
// It is the instant the server produced its first token when its text was
// held back. It returns ErrUndefined for a trace without an anchor.
func (t Trace) TTFTFirstChunk() (time.Duration, error) {
	a, ok := t.anchor()
	if !ok {
		return 0, fmt.Errorf("%w: no first-chunk anchor (the server's first chunk was its first content chunk, or the server writes none apart)", ErrUndefined)
	}
	return a.Sub(t.Start), nil
}

// anchoredTPOT is TPOT from the anchor a: (End − a) / (n − 1).
func (t Trace) anchoredTPOT(a time.Time) (time.Duration, error) {
	n := t.Tokens()
	if n < 2 {
		return 0, fmt.Errorf("%w: TPOT needs at least 2 tokens, have %d", ErrUndefined, n)
	}
	if t.End.IsZero() {
		return 0, fmt.Errorf("%w: TPOT of a trace with no End", ErrUndefined)
	}
	return t.End.Sub(a) / time.Duration(n-1), nil
}

// anchoredITL is ITL from the anchor a: the first content chunk's k0 − 1
// further tokens spread over the gap from a, then every later chunk's.
func (t Trace) anchoredITL(a time.Time) []time.Duration {
	for _, c := range t.Chunks {
		if c.Tokens < 0 {
			return nil
		}
	}
	total := t.Tokens()
	if total > MaxTraceTokens || total < 2 {
		return nil
	}
	out := make([]time.Duration, 0, total-1)
	prev := a
	for i, c := range t.Chunks {
		k := chunkTokens(c)
		if i == 0 {
			k--
		}
		out = spread(out, c.At.Sub(prev), k)
		prev = c.At
	}
	return out
}

// spread appends k gaps that sum to g exactly: g/k each, the first g%k of
// them one nanosecond longer.
func spread(out []time.Duration, g time.Duration, k int) []time.Duration {
	if k <= 0 {
		return out
	}
	q, r := g/time.Duration(k), g%time.Duration(k)
	for j := 0; j < k; j++ {
		d := q
		if time.Duration(j) < r {
			d++
		}
		out = append(out, d)
	}
	return out
}
