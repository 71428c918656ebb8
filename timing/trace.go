package timing

import (
	"fmt"
	"math"
	"time"
)

// A Chunk is one piece of streamed content as the client read it.
type Chunk struct {
	// At is the instant the chunk's bytes arrived, with its monotonic
	// reading: the kernel's receive instant where the reader has one (the
	// engine adapters do on Linux), else time.Now when the read returned,
	// not later.
	At time.Time
	// Tokens is the number of tokens the chunk carried, from the server's
	// usage deltas or from counting its text. Zero means unknown: the
	// chunk is then taken as one token and Metrics says so in a Warning.
	// A count comes from the server and may lie: Validate rejects a
	// negative one and any trace of more than MaxTraceTokens tokens.
	Tokens int
	// Kind says what the chunk carried: the answer (the zero value), the
	// model's reasoning streamed apart from it, or a tool call. A chunk
	// carries one kind; a server's chunk that carries two is split into
	// two chunks at the same instant.
	Kind ChunkKind
}

// A ChunkKind says what a streamed chunk carried. Every kind is generated
// tokens: counted, timed, never dropped.
type ChunkKind uint8

const (
	// Answer is the reply's text (delta.content), the zero value.
	Answer ChunkKind = iota
	// Reasoning is the model's thinking, streamed apart from the answer:
	// delta.reasoning_content (SGLang, llama.cpp, DeepSeek, vLLM < 0.11),
	// delta.reasoning (vLLM >= 0.11, Ollama's OpenAI API), Ollama's native
	// message.thinking, a harmony model's analysis channel.
	Reasoning
	// ToolCall is a streamed tool call (delta.tool_calls): generated
	// tokens of the answer that are not its text.
	ToolCall
)

// String returns "answer", "reasoning" or "tool_call".
func (k ChunkKind) String() string {
	switch k {
	case Answer:
		return "answer"
	case Reasoning:
		return "reasoning"
	case ToolCall:
		return "tool_call"
	}
	return fmt.Sprintf("ChunkKind(%d)", uint8(k))
}

// MaxTraceTokens is the most generated tokens a Trace may carry: 2^20
// (1,048,576), past the longest generation any served model allows in one
// request. ITL allocates one gap per token, so this bounds its memory at
// 8 MiB a trace whatever a server claims; Validate (and so Metrics)
// rejects a trace above it with ErrInvalidTrace, and ITL returns nil for
// one. Callers that take counts from a server should reject implausible
// ones long before this (package engine's MaxPlausibleCount does).
const MaxTraceTokens = 1 << 20

// A Trace is one request as the client saw it. All instants should carry
// monotonic clock readings (values from time.Now); differences are taken
// with time.Time.Sub, which uses them.
//
// The invariants, checked by Validate: Start is set; Headers, when set, is
// not before Start; chunks are in non-decreasing order of At, none before
// Start (nor before Headers, when set); End, when set, is not before the
// last chunk; no chunk has a negative token count; the chunks carry at
// most MaxTraceTokens tokens in all; HiddenTokens is neither negative nor
// above MaxTraceTokens.
type Trace struct {
	// Start is when the request began to be written to the connection.
	Start time.Time
	// Headers is when the response headers arrived. Zero if they never did.
	Headers time.Time
	// Chunks are the content chunks in order of arrival. Chunks that carry
	// no content (role announcements, keep-alives, the final usage block)
	// are not content chunks and do not belong here.
	Chunks []Chunk
	// End is when the response was completely read, or when reading
	// stopped on an error. Zero while the request is in flight.
	End time.Time
	// FirstChunk is when the server's first chunk arrived, for a server
	// that writes it (a role announcement without text) with its first
	// generated token and may hold that token's text back (vLLM, SGLang,
	// llama.cpp). Zero when there is no such anchor. When set it is not
	// before Start nor after the first content chunk; TPOT and ITL then
	// count from it (see TTFTFirstChunk).
	FirstChunk time.Time
	// HiddenTokens is the number of tokens the server generated and
	// counted (in usage.completion_tokens) but never sent in any chunk:
	// Ollama's OpenAI API drops a thinking model's <think> and </think>.
	// They are in no chunk, so they are kept out of the rates the client
	// measures from chunk arrivals, and reported. 0 when none are known.
	HiddenTokens int
}

// Validate reports whether t keeps the Trace invariants. The error wraps
// ErrInvalidTrace and says which instant is out of place.
func (t Trace) Validate() error {
	if t.Start.IsZero() {
		return fmt.Errorf("%w: Start is not set", ErrInvalidTrace)
	}
	if !t.Headers.IsZero() && t.Headers.Before(t.Start) {
		return fmt.Errorf("%w: Headers is %v before Start", ErrInvalidTrace, t.Start.Sub(t.Headers))
	}
	prev, prevName := t.Start, "Start"
	if !t.Headers.IsZero() {
		prev, prevName = t.Headers, "Headers"
	}
	for i, c := range t.Chunks {
		if c.At.Before(prev) {
			return fmt.Errorf("%w: chunk %d is %v before %s (chunks must be in order of arrival)", ErrInvalidTrace, i, prev.Sub(c.At), prevName)
		}
		if c.Tokens < 0 {
			return fmt.Errorf("%w: chunk %d has %d tokens, want ≥ 0", ErrInvalidTrace, i, c.Tokens)
		}
		if c.Tokens > MaxTraceTokens {
			return fmt.Errorf("%w: chunk %d has %d tokens, more than MaxTraceTokens (%d)", ErrInvalidTrace, i, c.Tokens, MaxTraceTokens)
		}
		prev, prevName = c.At, fmt.Sprintf("chunk %d", i)
	}
	if !t.End.IsZero() && t.End.Before(prev) {
		return fmt.Errorf("%w: End is %v before %s", ErrInvalidTrace, prev.Sub(t.End), prevName)
	}
	if err := t.validateFirstChunk(); err != nil {
		return err
	}
	if t.HiddenTokens < 0 || t.HiddenTokens > MaxTraceTokens {
		return fmt.Errorf("%w: HiddenTokens is %d, want 0 to MaxTraceTokens (%d)", ErrInvalidTrace, t.HiddenTokens, MaxTraceTokens)
	}
	if n := t.Tokens(); n > MaxTraceTokens {
		return fmt.Errorf("%w: the chunks carry %d tokens, more than MaxTraceTokens (%d)", ErrInvalidTrace, n, MaxTraceTokens)
	}
	return nil
}

// Tokens returns the number of generated tokens the trace carries: the sum
// of the chunks' token counts, an unknown count (0) taken as 1. The sum
// saturates at math.MaxInt rather than wrapping, so absurd counts stay
// absurd, and negative counts (which Validate rejects) are taken as 0.
func (t Trace) Tokens() int {
	n := 0
	for _, c := range t.Chunks {
		k := max(chunkTokens(c), 0)
		if n > math.MaxInt-k {
			return math.MaxInt
		}
		n += k
	}
	return n
}

func chunkTokens(c Chunk) int {
	if c.Tokens == 0 {
		return 1
	}
	return c.Tokens
}

// TTFT is the time to first token as the client saw it:
//
//	TTFT = first content chunk's arrival − Start
//
// It returns ErrUndefined when no content arrived.
func (t Trace) TTFT() (time.Duration, error) {
	if len(t.Chunks) == 0 {
		return 0, fmt.Errorf("%w: TTFT of a trace with no content chunks", ErrUndefined)
	}
	return t.Chunks[0].At.Sub(t.Start), nil
}

// E2E is the end-to-end latency of the request:
//
//	E2E = End − Start
//
// It returns ErrUndefined when End is not set.
func (t Trace) E2E() (time.Duration, error) {
	if t.End.IsZero() {
		return 0, fmt.Errorf("%w: E2E of a trace with no End", ErrUndefined)
	}
	return t.End.Sub(t.Start), nil
}

// TPOT is the time per output token after the first:
//
//	TPOT = (E2E − TTFT) / (n − 1)
//
// where n is Tokens(). With n < 2 there is no second token and TPOT is
// undefined (ErrUndefined). The numerator includes any time after the last
// token until End (the trailing usage chunk and [DONE]), as vLLM's and
// SGLang's benchmarks do. A trace with a first-chunk anchor counts from
// it instead: (End − FirstChunk) / (n − 1) (see TTFTFirstChunk).
func (t Trace) TPOT() (time.Duration, error) {
	if a, ok := t.anchor(); ok {
		return t.anchoredTPOT(a)
	}
	n := t.Tokens()
	if n < 2 {
		return 0, fmt.Errorf("%w: TPOT needs at least 2 tokens, have %d", ErrUndefined, n)
	}
	ttft, err := t.TTFT()
	if err != nil {
		return 0, err
	}
	e2e, err := t.E2E()
	if err != nil {
		return 0, err
	}
	return (e2e - ttft) / time.Duration(n-1), nil
}

// ICL returns the inter-chunk latencies: the gaps between consecutive
// content chunks,
//
//	ICL[i] = Chunks[i+1].At − Chunks[i].At
//
// one per chunk after the first, whatever the chunks carried. It is what a
// benchmark that treats every chunk as a token reports as ITL.
func (t Trace) ICL() []time.Duration {
	if len(t.Chunks) < 2 {
		return nil
	}
	out := make([]time.Duration, 0, len(t.Chunks)-1)
	for i := 1; i < len(t.Chunks); i++ {
		out = append(out, t.Chunks[i].At.Sub(t.Chunks[i-1].At))
	}
	return out
}

// SharedInstants returns how many content chunks share their instant with
// the content chunk after them. A reader stamps what one read returns with
// one instant, so two chunks with one instant came in one read: the server
// sent them together, or the client read the earlier only after the later
// had arrived (it fell a whole gap behind). Either way the earlier one's
// instant is an upper bound on its arrival, and the gap between the two,
// which ICL and ITL report as zero, is unknown. A first chunk among them
// makes TTFT an upper bound (FirstContentShared).
//
// Only Chunks count: the first-chunk anchor (FirstChunk, a role chunk
// that a server such as vLLM writes with its first token) is not a
// content chunk, and its sharing a read with the first content chunk,
// which is how such a server writes them, is not counted.
func (t Trace) SharedInstants() int {
	n := 0
	for i := 1; i < len(t.Chunks); i++ {
		if t.Chunks[i].At.Equal(t.Chunks[i-1].At) {
			n++
		}
	}
	return n
}

// FirstContentShared reports whether the first content chunk came in one
// read with the second: Chunks[0].At equals Chunks[1].At. Two content
// chunks are two tokens or steps of the server, generated at different
// instants (an adapter merges the pieces of one step, such as SGLang's
// reasoning and content chunks of one decode step, into one chunk), so the
// first arrived up to a whole gap before the instant the read gives it,
// and no instant of the trace says when: TTFT is an upper bound, which
// nothing in the trace can correct. It is false for a trace of fewer than
// two content chunks.
//
// A first-chunk anchor that came in the same read as the first content
// chunk (FirstChunk equal to Chunks[0].At: a role chunk and the first
// token flushed together, as vLLM and SGLang write them) does not make
// it true: the anchor is not a content chunk, and that read hides no
// gap. When the anchor came in an earlier read and the first two content
// chunks share a later one, it is true (TTFT is an upper bound) while
// TTFTFirstChunk, the time to the first token, is not affected.
func (t Trace) FirstContentShared() bool {
	return len(t.Chunks) > 1 && t.Chunks[1].At.Equal(t.Chunks[0].At)
}

// ITL returns the inter-token latencies, per token. A chunk of k tokens
// that arrives a gap g after the previous chunk contributes k gaps of g/k:
// its tokens are taken to have been generated evenly over the gap. The
// first chunk contributes nothing: its first token's latency is TTFT, and
// any further tokens it carries were generated inside TTFT at instants the
// client cannot see. So len(ITL) = Tokens() − tokens of the first chunk,
// and the gaps sum to t_last − t_first exactly (up to nanosecond rounding).
//
// This keeps ITL honest when a server batches tokens into chunks: counting
// a chunk of 4 tokens as one token would report one gap four times too long
// and hide three short ones.
//
// A trace with a first-chunk anchor has n − 1 gaps: the first chunk's
// further tokens are spread over the gap from FirstChunk (see
// TTFTFirstChunk).
//
// ITL allocates one gap per token, so a trace that Validate rejects for its
// token counts (a negative count, more than MaxTraceTokens in all) has no
// ITL: it returns nil rather than size memory from a server's claim.
func (t Trace) ITL() []time.Duration {
	if !t.countsBounded() {
		return nil
	}
	if a, ok := t.anchor(); ok {
		return t.anchoredITL(a)
	}
	if len(t.Chunks) < 2 {
		return nil
	}
	out := make([]time.Duration, 0, t.Tokens()-chunkTokens(t.Chunks[0]))
	for i := 1; i < len(t.Chunks); i++ {
		k := chunkTokens(t.Chunks[i])
		g := t.Chunks[i].At.Sub(t.Chunks[i-1].At)
		// Spread g over k gaps so that they sum to g exactly: the first
		// g%k gaps get one extra nanosecond.
		q, r := g/time.Duration(k), g%time.Duration(k)
		for j := 0; j < k; j++ {
			d := q
			if time.Duration(j) < r {
				d++
			}
			out = append(out, d)
		}
	}
	return out
}

// countsBounded reports whether the chunks' token counts are fit to size
// memory from: none negative, at most MaxTraceTokens in all.
func (t Trace) countsBounded() bool {
	for _, c := range t.Chunks {
		if c.Tokens < 0 {
			return false
		}
	}
	return t.Tokens() <= MaxTraceTokens
}
