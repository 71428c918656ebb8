package timing

import (
	"fmt"
	"math"
	"time"
)

// The figures of a model that reasons before it answers.
//
// A chunk's Kind puts its tokens on one of two sides: the reasoning
// (Kind Reasoning) or the answer (every other kind: the reply's text and
// its tool calls, both output the client acts on). Each side has its
// figures beside the whole stream's:
//
//	TTFA            = first answer-side chunk − Start              (Trace.TTFA)
//	LastReasoning   = last reasoning chunk − Start                 (Trace.LastReasoning)
//	ReasoningTokens = Σ tokens of the reasoning chunks             (Trace.ReasoningTokens)
//	AnswerTokens    = Σ tokens of the answer-side chunks           (Trace.AnswerTokens)
//	TPOT of a side  = (time the side's tokens took after its
//	                   first token) / (its tokens − 1)             (Trace.TPOTAnswer, Trace.TPOTReasoning)
//
// so that ReasoningTokens + AnswerTokens = Tokens, and a trace with no
// reasoning chunk has TTFA = TTFT, AnswerTokens = Tokens and TPOTAnswer =
// TPOT, its reasoning figures undefined (not zero).
//
// The time a side's tokens took is ITL's share of each token: a chunk of
// k tokens arriving a gap g after the chunk before it (whatever that one
// carried) took g, k gaps of g/k; the stream's first chunk took the time
// from the first-chunk anchor when there is one, else none (its further
// tokens were generated inside TTFT, where the client cannot see them, and
// count as TPOT counts them: tokens after the first, in no time). The
// side's first token is the first of its first chunk: its own gap, the
// step from the other side to this one, is left out, as TPOT leaves out
// TTFT. When the side's chunk is the stream's last, the time from it to
// End is added, as TPOT adds it (the trailing usage chunk and [DONE]).
// For the usual stream, its reasoning then its answer, one token a chunk:
//
//	TPOTReasoning = (t_last_reasoning − t_first_reasoning) / (reasoning tokens − 1)
//	TPOTAnswer    = (End − t_first_answer) / (answer tokens − 1)
//
// and when the first answer chunk carries k > 1 tokens (a server that
// flushes the closing </think> with the first answer token), its first
// token is placed where ITL places it, g/k after the last reasoning chunk,
// and its k − 1 further tokens keep their gaps.
//
// Tokens the server generated but never sent (Trace.HiddenTokens) are in
// no chunk: they are in no count above and no rate measured from chunk
// arrivals (TPOT, ITL, the generation rate, the TPOT of either side),
// while the time they took stays in the gaps around them. Where they
// usually sit, the <think> before the first chunk and the </think> between
// the reasoning and the answer, that time falls in TTFT and in the answer's
// first gap, which no TPOT counts.

// isReasoning reports whether c is on the reasoning side.
func isReasoning(c Chunk) bool { return c.Kind == Reasoning }

// sideTokens sums the token counts of the chunks on one side, as Tokens
// does: an unknown count taken as 1, saturating at math.MaxInt.
func (t Trace) sideTokens(reasoning bool) int {
	n := 0
	for _, c := range t.Chunks {
		if isReasoning(c) != reasoning {
			continue
		}
		k := max(chunkTokens(c), 0)
		if n > math.MaxInt-k {
			return math.MaxInt
		}
		n += k
	}
	return n
}

// ReasoningTokens returns the tokens of the trace's reasoning chunks (an
// unknown count taken as 1, as Tokens does); 0 when it has none.
func (t Trace) ReasoningTokens() int { return t.sideTokens(true) }

// AnswerTokens returns the tokens of the trace's answer-side chunks: every
// chunk that is not reasoning, the answer's text and its tool calls. For a
// trace without reasoning chunks it is Tokens.
func (t Trace) AnswerTokens() int { return t.sideTokens(false) }

// HasReasoning reports whether a chunk of the trace carried reasoning.
func (t Trace) HasReasoning() bool {
	for _, c := range t.Chunks {
		if isReasoning(c) {
			return true
		}
	}
	return false
}

// TTFA is the time to the first answer token as the client saw it:
//
//	TTFA = first answer-side chunk's arrival − Start
//
// An answer-side chunk is any that is not Reasoning: the reply's text, or
// a tool call, which is output too. For a trace without reasoning chunks
// it is TTFT. It returns ErrUndefined when no answer-side chunk arrived:
// no content, or a stream that ended while reasoning (max_tokens reached
// in the thinking).
func (t Trace) TTFA() (time.Duration, error) {
	for _, c := range t.Chunks {
		if !isReasoning(c) {
			return c.At.Sub(t.Start), nil
		}
	}
	if len(t.Chunks) == 0 {
		return 0, fmt.Errorf("%w: TTFA of a trace with no content chunks", ErrUndefined)
	}
	return 0, fmt.Errorf("%w: TTFA: no answer chunk, the stream ended while reasoning (%d reasoning tokens)", ErrUndefined, t.ReasoningTokens())
}

// LastReasoning is the time to the last reasoning token as the client saw
// it:
//
//	LastReasoning = last Reasoning chunk's arrival − Start
//
// It returns ErrUndefined for a trace without reasoning chunks.
func (t Trace) LastReasoning() (time.Duration, error) {
	for i := len(t.Chunks) - 1; i >= 0; i-- {
		if isReasoning(t.Chunks[i]) {
			return t.Chunks[i].At.Sub(t.Start), nil
		}
	}
	return 0, fmt.Errorf("%w: no reasoning chunk", ErrUndefined)
}

// TPOTAnswer is the time per output token of the answer after its first
// token:
//
//	TPOTAnswer = (time the answer's tokens took after its first) / (answer tokens − 1)
//
// A token's time is its ITL gap: a chunk of k tokens arriving g after the
// chunk before it, whatever that one carried, took g, k gaps of g/k; the
// stream's first chunk took the time from the first-chunk anchor when
// there is one, else none. The answer's first token is the first of its
// first chunk, and its gap (the step from the reasoning to the answer,
// where a hidden </think> falls) is left out, as TPOT leaves out TTFT;
// when the stream ends with an answer chunk, the time from it to End is
// added, as TPOT adds it. For the usual stream, its reasoning then its
// answer, one token a chunk:
//
//	TPOTAnswer = (End − t_first_answer) / (answer tokens − 1)
//
// and a first answer chunk of k > 1 tokens keeps its k − 1 further gaps.
// For a trace without reasoning chunks it is TPOT exactly. It returns
// ErrUndefined with fewer than two answer tokens, and without End when the
// stream ends with an answer chunk.
func (t Trace) TPOTAnswer() (time.Duration, error) { return t.sideTPOT(false) }

// TPOTReasoning is the time per output token of the reasoning after its
// first token, counted as TPOTAnswer counts the answer's: for a stream of
// reasoning then answer, one token a chunk,
//
//	TPOTReasoning = (t_last_reasoning − t_first_reasoning) / (reasoning tokens − 1)
//
// t_first_reasoning being the first-chunk anchor when there is one. It
// returns ErrUndefined for a trace with fewer than two reasoning tokens,
// none included.
func (t Trace) TPOTReasoning() (time.Duration, error) { return t.sideTPOT(true) }

// sideTPOT is the time per output token of one side: the time its tokens
// took after its first token over their number less one.
func (t Trace) sideTPOT(reasoning bool) (time.Duration, error) {
	side := "answer"
	if reasoning {
		side = "reasoning"
	}
	a, anchored := t.anchor()
	var took time.Duration
	n, seen := 0, false
	for i, c := range t.Chunks {
		if isReasoning(c) != reasoning {
			continue
		}
		k := max(chunkTokens(c), 0)
		if n > math.MaxInt-k {
			n = math.MaxInt
		} else {
			n += k
		}
		// The time the chunk's tokens took: from the chunk before, or
		// from the anchor for the first chunk.
		var g time.Duration
		switch {
		case i > 0:
			g = c.At.Sub(t.Chunks[i-1].At)
		case anchored:
			g = c.At.Sub(a)
		}
		if !seen && i > 0 && k > 0 {
			// The side's first token: its gap, the first of the k ITL
			// spreads g over, is not a token after the first.
			g -= firstGap(g, k)
		}
		seen = true
		took += g
	}
	if !seen {
		return 0, fmt.Errorf("%w: TPOT of the %s: no %s chunk", ErrUndefined, side, side)
	}
	if n < 2 {
		return 0, fmt.Errorf("%w: TPOT of the %s needs at least 2 tokens, have %d", ErrUndefined, side, n)
	}
	if last := t.Chunks[len(t.Chunks)-1]; isReasoning(last) == reasoning {
		if t.End.IsZero() {
			return 0, fmt.Errorf("%w: TPOT of the %s of a trace with no End", ErrUndefined, side)
		}
		took += t.End.Sub(last.At)
	}
	return took / time.Duration(n-1), nil
}

// firstGap is the first of the k gaps spread splits g into: g/k, one
// nanosecond longer when k does not divide g.
func firstGap(g time.Duration, k int) time.Duration {
	q := g / time.Duration(k)
	if g%time.Duration(k) > 0 {
		q++
	}
	return q
}
