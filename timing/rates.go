package timing

import (
	"fmt"
	"time"
)

// PrefillTPS is the prompt processing rate exo reports as prompt_tps:
//
//	prefill TPS = prompt tokens / prefill seconds
//
// The prefill time is the server's (request admitted → first token) or,
// measured by a client, TTFT. It returns ErrUndefined for a non-positive
// duration and an error for a negative token count.
func PrefillTPS(promptTokens int, prefill time.Duration) (float64, error) {
	if promptTokens < 0 {
		return 0, fmt.Errorf("timing: prefill TPS of %d prompt tokens: want ≥ 0", promptTokens)
	}
	if prefill <= 0 {
		return 0, fmt.Errorf("%w: prefill TPS over a span of %v", ErrUndefined, prefill)
	}
	return float64(promptTokens) / prefill.Seconds(), nil
}

// GenerationTPS is the decode rate exo reports as generation_tps:
//
//	generation TPS = (n − 1) / (t_last − t_first)
//
// where n is the number of generated tokens and span = t_last − t_first is
// the time from the first generated token to the last. The first token is
// excluded because it belongs to prefill: n tokens bound n − 1 intervals.
// With n < 2 there is no interval and with span ≤ 0 no time: the rate is
// undefined and the error wraps ErrUndefined.
func GenerationTPS(n int, span time.Duration) (float64, error) {
	if n < 2 {
		return 0, fmt.Errorf("%w: generation TPS needs at least 2 tokens, have %d", ErrUndefined, n)
	}
	if span <= 0 {
		return 0, fmt.Errorf("%w: generation TPS of %d tokens over a span of %v", ErrUndefined, n, span)
	}
	return float64(n-1) / span.Seconds(), nil
}

// Metrics are the client-side figures of one request, derived from its
// Trace by Trace.Metrics. A figure that is undefined for the trace is left
// zero, its Defined flag false, and a Warning says why.
type Metrics struct {
	// Tokens is the number of generated tokens (Trace.Tokens).
	Tokens int
	// TTFT, E2E and TPOT as defined by the Trace methods of those names.
	TTFT, E2E, TPOT time.Duration
	// TTFTDefined, E2EDefined and TPOTDefined say whether the figure has a
	// value.
	TTFTDefined, E2EDefined, TPOTDefined bool
	// TTFTFirstChunk is the time to the server's first chunk when the
	// trace has a first-chunk anchor (Trace.TTFTFirstChunk); TTFT is then
	// still the time to the first text.
	TTFTFirstChunk        time.Duration
	TTFTFirstChunkDefined bool
	// GenerationTPS is (Tokens − 1) / (t_last − t_first) on the client's
	// clock: the formula of GenerationTPS applied to chunk arrivals,
	// t_first being the first-chunk anchor when the trace has one.
	GenerationTPS        float64
	GenerationTPSDefined bool
	// OutputTPS is Tokens / E2E: the request's tokens per second of its
	// whole lifetime, prefill included.
	OutputTPS        float64
	OutputTPSDefined bool
	// ITL are the per-token gaps (Trace.ITL) and ICL the per-chunk gaps
	// (Trace.ICL).
	ITL, ICL []time.Duration
	// TTFA is the time to the first answer token (Trace.TTFA): TTFT for
	// a trace without reasoning chunks, undefined when no answer chunk
	// came (a stream that ended while reasoning).
	TTFA        time.Duration
	TTFADefined bool
	// ReasoningTokens and AnswerTokens split Tokens by the side of the
	// chunks that carried them (Trace.ReasoningTokens, AnswerTokens; a
	// tool call is answer-side output): they sum to Tokens.
	// ReasoningDefined is true when a chunk carried reasoning: without
	// one the reasoning figures (ReasoningTokens, LastReasoning,
	// TPOTReasoning) are undefined, not zero, and AnswerTokens is Tokens.
	ReasoningTokens, AnswerTokens int
	ReasoningDefined              bool
	// LastReasoning is the time to the last reasoning token
	// (Trace.LastReasoning).
	LastReasoning        time.Duration
	LastReasoningDefined bool
	// TPOTAnswer and TPOTReasoning are the time per output token of each
	// side after its first token (Trace.TPOTAnswer, TPOTReasoning), beside
	// TPOT, the whole stream's. Without reasoning chunks TPOTAnswer is
	// TPOT.
	TPOTAnswer, TPOTReasoning               time.Duration
	TPOTAnswerDefined, TPOTReasoningDefined bool
	// HiddenTokens are the tokens the server counted but never sent
	// (Trace.HiddenTokens): in none of the figures above, which count
	// only the tokens the chunks carried, and reported here.
	HiddenTokens int
	// Warnings explain undefined figures and estimated token counts.
	Warnings []error
}

// Metrics computes every client-side figure of the trace. It fails only
// when the trace breaks its invariants (Validate); undefined figures are
// reported through the Defined flags and Warnings.
func (t Trace) Metrics() (Metrics, error) {
	if err := t.Validate(); err != nil {
		return Metrics{}, err
	}
	m := Metrics{Tokens: t.Tokens(), ITL: t.ITL(), ICL: t.ICL()}
	warn := func(err error) { m.Warnings = append(m.Warnings, err) }
	unknown := 0
	for _, c := range t.Chunks {
		if c.Tokens == 0 {
			unknown++
		}
	}
	if unknown > 0 {
		warn(fmt.Errorf("timing: %d of %d chunks had no token count and were taken as one token each", unknown, len(t.Chunks)))
	}
	var err error
	if m.TTFT, err = t.TTFT(); err == nil {
		m.TTFTDefined = true
	} else {
		warn(err)
	}
	if m.E2E, err = t.E2E(); err == nil {
		m.E2EDefined = true
	} else {
		warn(err)
	}
	if m.TTFTFirstChunk, err = t.TTFTFirstChunk(); err == nil {
		m.TTFTFirstChunkDefined = true
	}
	if m.TPOT, err = t.TPOT(); err == nil {
		m.TPOTDefined = true
	} else {
		warn(err)
	}
	if len(t.Chunks) > 0 {
		first := t.Chunks[0].At
		if a, ok := t.anchor(); ok {
			first = a
		}
		span := t.Chunks[len(t.Chunks)-1].At.Sub(first)
		if m.GenerationTPS, err = GenerationTPS(m.Tokens, span); err == nil {
			m.GenerationTPSDefined = true
		} else {
			warn(err)
		}
	}
	if m.E2EDefined && m.E2E > 0 {
		m.OutputTPS = float64(m.Tokens) / m.E2E.Seconds()
		m.OutputTPSDefined = true
	}
	m.sides(t, warn)
	return m, nil
}

// sides fills the figures of the reasoning and the answer. A trace
// without reasoning warns of nothing it lacks: its TTFA and TPOTAnswer
// are TTFT and TPOT, whose warnings say why when they are undefined.
func (m *Metrics) sides(t Trace, warn func(error)) {
	m.ReasoningTokens, m.AnswerTokens = t.ReasoningTokens(), t.AnswerTokens()
	m.ReasoningDefined = t.HasReasoning()
	m.HiddenTokens = t.HiddenTokens
	if m.HiddenTokens > 0 {
		warn(fmt.Errorf("timing: the server counted %d tokens it never sent: no chunk carried them, so TPOT, ITL and the generation rate count only the %d tokens sent", m.HiddenTokens, m.Tokens))
	}
	var err error
	if m.TTFA, err = t.TTFA(); err == nil {
		m.TTFADefined = true
	} else if m.ReasoningDefined {
		warn(err)
	}
	if m.TPOTAnswer, err = t.TPOTAnswer(); err == nil {
		m.TPOTAnswerDefined = true
	} else if m.ReasoningDefined && m.TTFADefined {
		warn(err)
	}
	if !m.ReasoningDefined {
		return
	}
	m.LastReasoning, _ = t.LastReasoning()
	m.LastReasoningDefined = true
	if m.TPOTReasoning, err = t.TPOTReasoning(); err == nil {
		m.TPOTReasoningDefined = true
	} else {
		warn(err)
	}
}
