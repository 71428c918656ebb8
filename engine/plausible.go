package engine

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/inferbench/inferbench/timing"
)

// CountMargin is how far a server-reported completion count may exceed the
// request's MaxTokens before it is implausible: max(CountMarginTokens,
// MaxTokens × CountMarginRatio). Servers count a stop token or a final
// empty step in some versions, so an exact bound would reject honest
// answers; a count past the margin is a server bug or a hostile server, and
// either way no rate may be computed from it.
const (
	CountMarginTokens = 16
	CountMarginRatio  = 0.25
)

// MaxPlausibleCount is the largest completion-token count a server may
// report for a request that asked for at most maxTokens tokens: maxTokens
// plus the margin (see CountMargin), never more than NoMaxTokensBound.
// When maxTokens is 0 (no bound asked) it is NoMaxTokensBound.
func MaxPlausibleCount(maxTokens int) int {
	if maxTokens <= 0 || maxTokens >= NoMaxTokensBound {
		return NoMaxTokensBound
	}
	m := int(float64(maxTokens) * CountMarginRatio)
	if m < CountMarginTokens {
		m = CountMarginTokens
	}
	return min(maxTokens+m, NoMaxTokensBound)
}

// NoMaxTokensBound bounds a reported completion count when the request set
// no MaxTokens, and any count at all: no served model generates this many
// tokens in one request. It is timing.MaxTraceTokens (2^20), so a count
// that passes CheckCount is one a timing.Trace may carry.
const NoMaxTokensBound = timing.MaxTraceTokens

// CheckCount returns an *Error of KindImplausibleUsage when a count the
// server reported (what names it, e.g. "usage.completion_tokens") is
// negative or above limit; nil otherwise. The message names both numbers.
func CheckCount(what string, n, limit int) error {
	switch {
	case n < 0:
		return &Error{Kind: KindImplausibleUsage, Op: "check server counts",
			Err: fmt.Errorf("%s = %d is negative", what, n)}
	case n > limit:
		return &Error{Kind: KindImplausibleUsage, Op: "check server counts",
			Err: fmt.Errorf("%s = %d exceeds the plausible bound %d", what, n, limit)}
	}
	return nil
}

// CheckRising returns an *Error of KindImplausibleUsage when a cumulative
// count the server reported falls: prev is the last value seen, n the new
// one.
func CheckRising(what string, prev, n int) error {
	if n < prev {
		return &Error{Kind: KindImplausibleUsage, Op: "check server counts",
			Err: fmt.Errorf("%s fell from %d to %d", what, prev, n)}
	}
	return nil
}

// MaxKeptText is the most bytes of generated text a Result keeps (in
// Result.Text). A server that streams more than any plausible answer, say
// 200 MB for 16 tokens, must not make the client hold it all: adapters
// stop appending past this bound and go on counting tokens from the
// stream, and the request is flagged by its counts, not by its memory.
const MaxKeptText = 1 << 20

// MaxPlausibleRate is the largest token rate, in tokens per second, a
// server may report (exo's prompt_tps and generation_tps): 1e7 tok/s, a
// hundred times the fastest prefill one node reaches today (about 1e5
// tok/s for a small model on a datacenter accelerator) and far beyond any
// decode rate. A rate above it, negative, NaN or infinite is a broken or
// hostile server's, not a measurement.
const MaxPlausibleRate = 1e7

// CheckRate returns an *Error of KindImplausibleUsage when a rate the
// server reported (what names it, e.g. "generation_stats.generation_tps")
// is negative, NaN, infinite or above MaxPlausibleRate; nil otherwise. 0
// is plausible: exo writes it for a rate it could not define. The message
// names both numbers.
func CheckRate(what string, v float64) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return &Error{Kind: KindImplausibleUsage, Op: "check server counts",
			Err: fmt.Errorf("%s = %v is not a finite rate (plausible: 0 to %g tok/s)", what, v, MaxPlausibleRate)}
	case v < 0:
		return &Error{Kind: KindImplausibleUsage, Op: "check server counts",
			Err: fmt.Errorf("%s = %g tok/s is negative", what, v)}
	case v > MaxPlausibleRate:
		return &Error{Kind: KindImplausibleUsage, Op: "check server counts",
			Err: fmt.Errorf("%s = %g tok/s exceeds the plausible bound %g tok/s", what, v, MaxPlausibleRate)}
	}
	return nil
}

// Prompt-token allowances of MaxPlausiblePromptCount: what a chat template
// may add to a prompt beyond its messages' text. PromptTemplateAllowance
// covers the template's own text (a default system prompt, a date line,
// tool instructions); PromptMessageAllowance each message's role header
// and special tokens.
const (
	PromptTemplateAllowance = 4096
	PromptMessageAllowance  = 64
)

// MaxPlausiblePromptCount is the largest prompt-token count a server may
// report for a request of msgs: every byte of every message's content as a
// token of its own (no tokenizer makes a token of less than one byte of
// its input; byte-level BPE and byte fallback make one of exactly one),
// plus PromptMessageAllowance a message and PromptTemplateAllowance. It
// bounds usage.prompt_tokens and exo's generation_stats.prompt_tokens.
func MaxPlausiblePromptCount(msgs []Message) int {
	n := PromptTemplateAllowance
	for _, m := range msgs {
		n += len(m.Content) + PromptMessageAllowance
	}
	return n
}

// MaxPlausiblePromptTokens is the largest prompt-token count a server may
// report for req: MaxPlausiblePromptCount(req.Messages) for a chat
// request; for a text completion len(Prompt.Tokens) or len(Prompt.Text)
// (a token of at least a byte, as above) plus PromptTemplateAllowance, for
// the special tokens a server may add (a BOS).
func MaxPlausiblePromptTokens(req Request) int {
	if p := req.Prompt; p != nil {
		return len(p.Tokens) + len(p.Text) + PromptTemplateAllowance
	}
	return MaxPlausiblePromptCount(req.Messages)
}

// MaxTokenBytes is the most bytes of text one generated token may decode
// to. The longest tokens of today's vocabularies (runs of spaces, dashes
// or code indentation) are well under 256 bytes; 1024 leaves room.
const MaxTokenBytes = 1024

// MaxPlausibleTextBytes is the most generated text a request that asked
// for at most maxTokens tokens can plausibly receive:
// MaxPlausibleCount(maxTokens) × MaxTokenBytes. A server that sends more
// sent text no count of tokens it was allowed could produce; adapters
// report it as KindImplausibleUsage (see CheckText).
func MaxPlausibleTextBytes(maxTokens int) int {
	return MaxPlausibleCount(maxTokens) * MaxTokenBytes
}

// CheckText returns an *Error of KindImplausibleUsage when n bytes of
// generated text exceed MaxPlausibleTextBytes(maxTokens); nil otherwise.
// The message names both numbers.
func CheckText(n, maxTokens int) error {
	if limit := MaxPlausibleTextBytes(maxTokens); n > limit {
		return &Error{Kind: KindImplausibleUsage, Op: "check server counts",
			Err: fmt.Errorf("the server sent %d bytes of generated text, more than the plausible bound %d (%d tokens of at most %d bytes for max_tokens %d)",
				n, limit, MaxPlausibleCount(maxTokens), MaxTokenBytes, maxTokens)}
	}
	return nil
}

// A KeptText holds the start of a response's generated text, at most
// MaxKeptText bytes of it, and counts every byte received. Adapters write
// each piece of streamed content to it and set Result.Text from String;
// Received is what the server sent, for CheckText. The zero value is ready
// to use.
type KeptText struct {
	b        strings.Builder
	received int
}

// Write keeps as much of p as fits within MaxKeptText, cut at a UTF-8
// boundary, and counts all of it; once something was cut, nothing more is
// kept. It never fails.
func (k *KeptText) Write(p []byte) (int, error) {
	k.b.Write(keepPrefix(p, k.room()))
	k.received += len(p)
	return len(p), nil
}

// WriteString is Write of a string.
func (k *KeptText) WriteString(s string) (int, error) {
	k.b.WriteString(keepPrefix(s, k.room()))
	k.received += len(s)
	return len(s), nil
}

// room is how many more bytes may be kept: none once anything was cut,
// so that the kept text is always a prefix of what was received.
func (k *KeptText) room() int {
	if k.Truncated() {
		return 0
	}
	return MaxKeptText - k.b.Len()
}

// keepPrefix returns the longest prefix of p of at most room bytes that
// does not split a UTF-8 sequence p carries whole.
func keepPrefix[T ~string | ~[]byte](p T, room int) T {
	if len(p) <= room {
		return p
	}
	if room <= 0 {
		return p[:0]
	}
	p = p[:room]
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if c := p[i]; utf8.RuneStart(c) {
			need := 1
			switch {
			case c >= 0xF0:
				need = 4
			case c >= 0xE0:
				need = 3
			case c >= 0xC0:
				need = 2
			}
			if len(p)-i < need {
				p = p[:i]
			}
			break
		}
	}
	return p
}

// String returns the kept text.
func (k *KeptText) String() string { return k.b.String() }

// Received returns how many bytes were written in all.
func (k *KeptText) Received() int { return k.received }

// Truncated reports whether less was kept than received.
func (k *KeptText) Truncated() bool { return k.b.Len() < k.received }

// TruncatedWarning returns the warning a Result carries when its Text is
// only the start of what the server sent; nil when nothing was cut.
func (k *KeptText) TruncatedWarning() error {
	if !k.Truncated() {
		return nil
	}
	return fmt.Errorf("engine: kept the first %d of %d bytes of generated text (MaxKeptText)", k.b.Len(), k.received)
}
