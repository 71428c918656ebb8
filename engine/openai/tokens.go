package openai

import (
	"context"
	"fmt"
	"strings"

	"github.com/inferbench/inferbench/timing"
)

// A tokenSpan is a run of content chunks whose token total the server
// stated: chunks [lo, hi) end at a chunk with per-chunk usage, whose
// cumulative completion_tokens less the previous one's is total, or run to
// the end of the stream, whose total is the final usage's count less the
// last per-chunk one (−1 without a final usage). The tokens of a span
// were generated with its chunks: none of them belongs to another span.
type tokenSpan struct {
	lo, hi int
	total  int
	last   bool // the span that ends the stream
}

// attribute sets the token count of each content chunk and returns the
// warnings that qualify them. anchored says the trace has a first-chunk
// anchor (Trace.FirstChunk).
//
// What the stream itself states comes first, a re-count of the text only
// after. Every content chunk carried at least one token: a detokenizer
// writes text only for a token it decoded. The chunks with per-chunk usage
// cut the stream into spans (tokenSpan) whose totals are the server's; in
// a span of L chunks and T tokens:
//
//   - T = L: one token each, exactly (Ollama, llama.cpp, mlx_lm.server
//     and TGI write one chunk per token), whatever counting the text would
//     find: re-tokenizing generated text is not the model's tokenization
//     (",\n\n" may be one token of the model's and two of a counter's);
//   - in the span that ends the stream, with finish_reason "stop" and
//     T > L, one token is the end of sequence, which has no text: it goes
//     to the last chunk (Ollama's eval_count and vLLM's completion_tokens
//     count it), so that one chunk per token with an end of sequence is
//     exact too;
//   - one chunk: it carried all T;
//   - else the S = T − L tokens beyond one a chunk are placed, and only
//     they: with a counter (Options.CountText or Counter), where counting
//     the text finds extra tokens (chunk i's count is
//     max(1, K_i − tokens given to the span's chunks before i), K_i the
//     tokens counted in the span's text up to chunk i's end). When the
//     count finds more than S, S is shared in proportion to what it found
//     per chunk; when fewer, what remains goes to the span's first chunk
//     in the span that ends the stream (text held back before the first
//     chunk, a reasoning marker a parser swallowed), to its last chunk
//     otherwise (whose usage covered text-less chunks before it). Without
//     a counter S is shared by text length. A Warning wrapping
//     ErrEstimatedTokens says the counts are estimates;
//   - T < L: the server's count is below the chunks'; each counts one,
//     the excess is taken from the next spans' totals, and a Warning says
//     so (ErrEstimatedTokens for a per-chunk usage that did not grow,
//     ErrTokenMismatch when the counts cannot add up to the server's).
//
// Tokens after the last chunk with usage, when it is the last chunk (vLLM's
// end of sequence on a text-less chunk), go to it. Without any final count
// the chunks' counts come from counting their text (ErrEstimatedTokens),
// else each is 0, unknown (ErrUnknownTokens).
//
// The first chunk held several tokens only as far as the stream says so:
// when its span is itself alone. Then, without an anchor, a Warning
// wrapping ErrHiddenFirstTokens says TTFT may be late; an estimate that
// puts several tokens in it says so in its own warning, and no more.
func (c *Client) attribute(ctx context.Context, st *streamState, chunks []timing.Chunk, finish string, anchored bool) []error {
	n := len(chunks)
	if n == 0 {
		return nil
	}
	var spans []tokenSpan
	prev, lo := 0, 0
	for i, u := range st.usage {
		if u >= 0 {
			spans = append(spans, tokenSpan{lo: lo, hi: i + 1, total: u - prev})
			prev, lo = u, i+1
		}
	}
	tail := tokenSpan{lo: lo, hi: n, total: -1, last: true}
	if st.final != nil {
		tail.total = st.final.CompletionTokens - prev
	}
	spans = append(spans, tail)

	withUsage := len(spans) - 1
	// The first-chunk anchor came before the first text: the token it
	// marks had no text, and the first text chunk carries it.
	early := anchored && !st.first.IsZero() && st.first.Before(chunks[0].At)
	var (
		warns    []error
		counted  []int // K_i of countChunks, −1 where unknown; nil without a counter
		countErr error
		asked    bool
	)
	count := func() []int {
		if !asked {
			asked = true
			if counted, countErr = c.countChunks(ctx, st); countErr != nil {
				counted = nil
			}
		}
		return counted
	}
	var (
		debt     int  // tokens counted beyond a span's total, owed by the next
		clamped  int  // chunks with usage that the usage gave no token
		byCount  int  // chunks whose surplus was placed by counting their text
		byLength int  // chunks whose surplus was shared by text length
		noTotal  int  // chunks counted without any total from the server
		surplus  int  // tokens placed in those two ways
		over     int  // tokens the count found beyond the surplus
		first    = -1 // tokens the stream states the first chunk carried
		firstEst bool // the first chunk's count of several is an estimate
		eosEst   bool // an estimated span ended on an end of sequence
	)
	for _, sp := range spans {
		L := sp.hi - sp.lo
		if L == 0 {
			// Tokens after the last chunk, which had usage: none of them
			// has text (vLLM's end of sequence).
			give := sp.total - debt
			debt = max(0, -give)
			if give > 0 {
				chunks[n-1].Tokens += give
			}
			continue
		}
		for i := sp.lo; i < sp.hi; i++ {
			chunks[i].Tokens = 1
		}
		if sp.total < 0 {
			// No final usage: the count decides, or nothing does.
			K := count()
			if K != nil {
				floorCounts(chunks, K, sp.lo, sp.hi)
			}
			for i := sp.lo; i < sp.hi; i++ {
				if K == nil || K[i] < 0 {
					chunks[i].Tokens = 0
				} else {
					noTotal++
				}
			}
			firstEst = firstEst || sp.lo == 0 && chunks[0].Tokens > 1
			continue
		}
		if !sp.last && sp.total < L {
			clamped += L - max(sp.total, 0)
		}
		T := sp.total - debt
		eos := 0
		if sp.last && finish == "stop" && T > L {
			eos = 1 // the end of sequence, after the last text
		}
		S := T - eos - L
		debt = max(0, -S)
		if sp.last && st.fieldReasoning && S > 0 {
			// A stream whose reasoning came in a field of its own: the
			// tokens no chunk's usage covers and no text shows are the
			// markers the server's parser swallowed (see hide).
			S = hide(st, chunks, sp, S, early, count, &byCount, &surplus, &over)
		}
		switch {
		case S <= 0:
			// One token a chunk: all the stream can hold.
		case L == 1:
			chunks[sp.lo].Tokens += S
		default:
			surplus += S
			eosEst = eosEst || eos == 1
			K := count()
			covered := K != nil
			for i := sp.lo; covered && i < sp.hi; i++ {
				covered = K[i] >= 0
			}
			if !covered {
				idx := make([]int, 0, L)
				for i := sp.lo; i < sp.hi; i++ {
					idx = append(idx, i)
				}
				apportion(chunks, idx, st.ends, L+S)
				byLength += L
				break
			}
			byCount += L
			floorCounts(chunks, K, sp.lo, sp.hi)
			extra := make([]int, L)
			E := 0
			for i := range extra {
				extra[i] = chunks[sp.lo+i].Tokens - 1
				E += extra[i]
			}
			switch {
			case E >= S:
				over += E - S
				for i, s := range share(extra, S) {
					chunks[sp.lo+i].Tokens = 1 + s
				}
			case sp.last:
				chunks[sp.lo].Tokens += S - E
			default:
				chunks[sp.hi-1].Tokens += S - E
			}
		}
		if sp.lo == 0 {
			if L == 1 {
				first = chunks[0].Tokens
			} else {
				firstEst = chunks[0].Tokens > 1
			}
		}
		chunks[sp.hi-1].Tokens += eos
	}

	if countErr != nil {
		warns = append(warns, fmt.Errorf("%w: counting the text of %d chunks: %w", ErrUnknownTokens, n-withUsage, countErr))
	}
	if st.hidden > 0 {
		how := "no CountText or Counter is set, so every token beyond one a chunk is taken as hidden: a chunk that carried several tokens would be counted here instead"
		if counted != nil {
			how = "counting the chunks' text found no place for them"
		}
		warns = append(warns, fmt.Errorf("%w: usage.completion_tokens counts %d tokens that came in no chunk of a stream whose reasoning came in a field of its own (the markers that open and close it, which the server's reasoning parser swallows, and what it trims after them); Trace.HiddenTokens holds them, out of the chunks' counts and the rates measured from them; %s",
			ErrHiddenTokens, st.hidden, how))
	}
	if clamped > 0 {
		warns = append(warns, fmt.Errorf("%w: %d chunks carried text while usage.completion_tokens did not grow; each was counted as one token", ErrEstimatedTokens, clamped))
	}
	beyond := "beyond one a chunk"
	if eosEst {
		beyond = "beyond one a chunk and the end of sequence (given to the last)"
	}
	firstNote := ""
	if firstEst && !anchored {
		k := chunks[0].Tokens
		firstNote = fmt.Sprintf("; the estimate puts %d tokens in the first content chunk: if it carried them, TTFT is late by up to %d decode steps, as no earlier chunk marks when the first was generated", k, k-1)
	}
	if byCount > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%d of %d content chunks carried no usage and the server's count leaves %d tokens %s; where they fell comes from counting the chunks' text", byCount, n, surplus, beyond)
		if over > 0 {
			fmt.Fprintf(&b, ", which found %d more (re-tokenized text is not the model's tokenization): the %d were shared in proportion to what it found", over, surplus)
		}
		b.WriteString(firstNote)
		warns = append(warns, fmt.Errorf("%w: %s", ErrEstimatedTokens, b.String()))
	}
	if byLength > 0 {
		warns = append(warns, fmt.Errorf("%w: %d of %d content chunks carried no usage and no CountText or Counter is set; the %d tokens the server's count leaves %s were shared among them by text length: the token total and TPOT are exact, per-token ITL is approximate%s", ErrEstimatedTokens, byLength, n, surplus, beyond, firstNote))
	}
	if noTotal > 0 {
		warns = append(warns, fmt.Errorf("%w: %d of %d content chunks carried no usage and the server sent no final usage; their counts come from counting their text%s", ErrEstimatedTokens, noTotal, n, firstNote))
	}
	unknown := 0
	for _, ch := range chunks {
		if ch.Tokens == 0 {
			unknown++
		}
	}
	if unknown > 0 {
		why := "no CountText or Counter is set"
		if countErr != nil {
			why = "counting their text failed"
		}
		warns = append(warns, fmt.Errorf("%w: %d of %d content chunks carried no usage, %s and the server sent no final usage; each counts as one token, so the token total and TPOT are not known", ErrUnknownTokens, unknown, n, why))
	}
	if st.final != nil && debt > 0 {
		total := 0
		for _, ch := range chunks {
			total += ch.Tokens
		}
		warns = append(warns, fmt.Errorf("%w: the %d content chunks add up to %d tokens, at least one each; usage.completion_tokens says %d", ErrTokenMismatch, n, total, st.final.CompletionTokens))
	}
	if first > 1 && !anchored {
		warns = append(warns, fmt.Errorf("%w: the first content chunk carried %d tokens and no earlier chunk marks when the first was generated; TTFT may be late by up to %d decode steps and ITL has %d fewer gaps than tokens",
			ErrHiddenFirstTokens, first, first-1, first))
	}
	return warns
}

// hide places the surplus S of the span that ends a stream whose
// reasoning came in a field of its own, and returns what is left for the
// usual rules (0). The server's reasoning parser swallows the markers
// that open and close the reasoning (<think> and </think>, a harmony
// model's channel headers) and, in Ollama's, the whitespace after them:
// tokens usage.completion_tokens counts and no chunk shows. So:
//
//   - when the first-chunk anchor came before the first text (early), the
//     anchor's token is the first chunk's, as on every stream;
//   - with a counter, the tokens counting the text finds beyond one a
//     chunk go where it finds them (at most S, shared in proportion as
//     usual), and the rest is hidden;
//   - without one, the rest is hidden: these servers write a chunk per
//     token but for what they swallow.
//
// The hidden tokens go to st.hidden, not to any chunk.
func hide(st *streamState, chunks []timing.Chunk, sp tokenSpan, S int, early bool,
	count func() []int, byCount, surplus, over *int) int {
	if sp.lo == 0 && early {
		chunks[0].Tokens++
		S--
	}
	if S <= 0 {
		return 0
	}
	L := sp.hi - sp.lo
	if K := count(); K != nil {
		covered := true
		for i := sp.lo; covered && i < sp.hi; i++ {
			covered = K[i] >= 0
		}
		if covered {
			saved := make([]int, L)
			for i := range saved {
				saved[i] = chunks[sp.lo+i].Tokens
			}
			floorCounts(chunks, K, sp.lo, sp.hi)
			extra := make([]int, L)
			E := 0
			for i := range extra {
				// What the count found beyond what the chunk already had
				// (the anchor's token).
				extra[i] = max(0, chunks[sp.lo+i].Tokens-saved[i])
				chunks[sp.lo+i].Tokens = saved[i]
				E += extra[i]
			}
			if E > 0 {
				*byCount += L
				*surplus += min(E, S)
				*over += max(0, E-S)
				for i, s := range share(extra, min(E, S)) {
					chunks[sp.lo+i].Tokens += s
				}
				S -= min(E, S)
			}
		}
	}
	st.hidden += S
	return 0
}

// floorCounts sets the counts of chunks [lo, hi) from the cumulative
// counts K of the text (K[lo−1] the count before the span, 0 for lo = 0):
// chunk i gets max(1, K_i − K_{lo−1} − the tokens given to the span's
// chunks before it). A chunk in which no counted token ends (one that
// spans into the next chunk) gets one, and the next one less. Chunks whose
// K is −1 are left as they are.
func floorCounts(chunks []timing.Chunk, K []int, lo, hi int) {
	base := 0
	if lo > 0 {
		base = max(K[lo-1], 0)
	}
	given := 0
	for i := lo; i < hi; i++ {
		if K[i] < 0 {
			continue
		}
		t := max(1, K[i]-base-given)
		chunks[i].Tokens = t
		given += t
	}
}

// apportion gives the chunks at idx left tokens in all, at least one each,
// the rest in proportion to each chunk's text length (largest remainder).
func apportion(chunks []timing.Chunk, idx []int, ends []int, left int) {
	size := make([]int, len(idx))
	for j, i := range idx {
		size[j] = ends[i]
		if i > 0 {
			size[j] -= ends[i-1]
		}
	}
	for j, s := range share(size, left-len(idx)) {
		chunks[idx[j]].Tokens = 1 + s
	}
}

// share divides extra in proportion to the weights w (equally when they
// are all 0) into whole parts by largest remainder, ties to the earlier.
func share(w []int, extra int) []int {
	out := make([]int, len(w))
	if len(w) == 0 || extra <= 0 {
		return out
	}
	all := 0
	for _, x := range w {
		all += x
	}
	rems := make([]float64, len(w))
	given := 0
	for j, x := range w {
		var s float64
		if all > 0 {
			s = float64(extra) * float64(x) / float64(all)
		} else {
			s = float64(extra) / float64(len(w))
		}
		whole := int(s)
		out[j] = whole
		given += whole
		rems[j] = s - float64(whole)
	}
	for ; given < extra; given++ {
		best := 0
		for j := range rems {
			if rems[j] > rems[best] {
				best = j
			}
		}
		out[best]++
		rems[best] = -1
	}
	return out
}
