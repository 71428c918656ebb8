package benchkit

import (
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// NewRequest is the one way a measured request becomes a Request, for
// every driver: asked holds what the driver asked for and where the
// request belongs (its Labels, Index, PPTarget, TGTarget, Model,
// ModelShortID, Stream, Simulated and plan fields), p is the prompt sent
// (its verified count and warnings) and q what concurrency measured (the
// engine's result or error and the intended, send and end offsets).
// allowEOS says the request was allowed to stop early, so a short reply
// is not warned about.
//
// The rules are the same for every driver: completion tokens come from
// the server's usage, else the streamed chunks, else the server stats, and
// are null when none of them counted (an unstreamed reply without usage);
// the server's prompt count is usage.prompt_tokens, else the stats', and
// differs from the client's (when p has one: Tokens > 0) only with a
// WarnPromptMismatch warning; the reasoning and answer tokens are the
// stream's, and differ from the server's reasoning_tokens only with a
// WarnReasoningMismatch warning; a
// server that reported an implausible count or rate (error kind
// implausible_usage) leaves every figure that rests on its counts null.
func NewRequest(asked Request, p promptsize.Prompt, q concurrency.Result[engine.Result], allowEOS bool) Request {
	r := asked
	res := q.Value
	r.PPTokens = p.Tokens
	r.ResponseID, r.FinishReason = res.ResponseID, res.FinishReason
	r.RequestID, r.ServerRequestID, r.Resent = res.RequestID, res.ServerRequestID, res.Resent
	if res.Model != "" && res.Model != r.Model {
		r.ServedModel = res.Model
	}
	r.IntendedSendS, r.SendOffsetS, r.DoneS = q.Intended.Seconds(), q.Sent.Seconds(), q.Done.Seconds()
	r.Stats, r.PowerUsage = res.ServerStats, res.Power
	r.Preview = preview(res.Text)
	r.Warnings = nil
	if res.Connect != nil {
		r.ConnectS = finite(res.Connect.Seconds())
	}
	for _, w := range res.Warnings {
		r.warn(WarnEngine, w.Error())
	}
	for _, w := range p.Warnings {
		r.warn(WarnPrompt, w.Error())
	}
	if q.Err != nil {
		r.ErrorKind, r.Error = string(engine.KindOf(q.Err)), q.Err.Error()
	}
	switch {
	case res.Usage != nil:
		n := res.Usage.PromptTokens
		r.ServerPromptTokens = &n
	case res.ServerStats != nil:
		n := res.ServerStats.PromptTokens
		r.ServerPromptTokens = &n
	}
	if res.Usage != nil {
		if n, ok := res.Usage.Cached(); ok {
			r.CachedTokens = &n
		}
	}
	implausible := engine.KindOf(q.Err) == engine.KindImplausibleUsage
	if implausible {
		r.Stats = nil
	} else if n, ok := resultTokens(res); ok {
		r.CompletionTokens = &n
	}
	r.setTiming(res.Trace, implausible)
	if !implausible {
		r.setServerReasoning(res.Usage, len(res.Trace.Chunks) > 0, q.Err == nil)
	}
	if f, ok := serverFirstToken(r.Stats); ok && r.TTFTS != nil {
		r.TTFTBeyondServerS = finite(*r.TTFTS - f.Seconds())
	}
	if r.Stats != nil && r.E2ES != nil {
		if d := serverTotal(r.Stats); d != nil {
			r.E2EBeyondServerS = finite(*r.E2ES - d.Seconds())
		}
	}
	if q.Err == nil {
		if r.ServerPromptTokens != nil && r.PPTokens > 0 && *r.ServerPromptTokens != r.PPTokens {
			r.warn(WarnPromptMismatch, fmt.Sprintf("server counted %d prompt tokens, the client %d: the client's tokenizer or chat template differs from the engine's", *r.ServerPromptTokens, r.PPTokens))
		}
		if !allowEOS && r.CompletionTokens != nil && r.Tokens() < r.TGTarget {
			r.warn(WarnShortGeneration, fmt.Sprintf("%d tokens generated, %d asked for", r.Tokens(), r.TGTarget))
		}
	}
	return r
}

// setTiming fills the client's figures from the trace; implausible leaves
// out those that rest on the server's counts.
func (r *Request) setTiming(tr timing.Trace, implausible bool) {
	if tr.Start.IsZero() {
		return
	}
	m, err := tr.Metrics()
	if err != nil {
		r.warn(WarnTrace, err.Error())
		return
	}
	if m.E2EDefined {
		r.E2ES = finite(m.E2E.Seconds())
	}
	if len(tr.Chunks) == 0 {
		return
	}
	if m.TTFTDefined {
		r.TTFTS = finite(m.TTFT.Seconds())
	}
	if m.TTFTFirstChunkDefined {
		r.TTFTFirstChunkS = finite(m.TTFTFirstChunk.Seconds())
	}
	if m.TTFADefined {
		r.TTFAS = finite(m.TTFA.Seconds())
	}
	if m.LastReasoningDefined {
		r.LastReasoningS = finite(m.LastReasoning.Seconds())
	}
	r.SharedInstants = tr.SharedInstants()
	r.FirstShared = tr.FirstContentShared()
	if implausible {
		return
	}
	r.HiddenTokens = m.HiddenTokens
	answer := m.AnswerTokens
	r.AnswerTokens = &answer
	if m.ReasoningDefined {
		n := m.ReasoningTokens
		r.ReasoningTokens = &n
	}
	if m.TPOTAnswerDefined {
		r.TPOTAnswerS = finite(m.TPOTAnswer.Seconds())
	}
	if m.TPOTReasoningDefined {
		r.TPOTReasoningS = finite(m.TPOTReasoning.Seconds())
	}
	if m.TPOTDefined {
		r.TPOTS = finite(m.TPOT.Seconds())
	}
	if m.GenerationTPSDefined {
		r.GenerationTPS = finite(m.GenerationTPS)
	}
	r.ITLS = timing.Seconds(m.ITL)
	r.ICLS = timing.Seconds(m.ICL)
}

// setServerReasoning keeps the server's count of reasoning tokens (u's
// reasoning_tokens). A reply not streamed takes its reasoning and answer
// tokens from it (a count of 0 leaves the reasoning null: none); a stream
// keeps its own, and a count of its that differs from the server's, with
// its hidden tokens or without, is warned about when the request
// succeeded.
func (r *Request) setServerReasoning(u *engine.Usage, streamed, ok bool) {
	if u == nil || u.ReasoningTokens == nil {
		return
	}
	n := *u.ReasoningTokens
	r.ServerReasoningTokens = &n
	if !streamed {
		if n > 0 {
			r.ReasoningTokens = &n
		}
		if r.CompletionTokens != nil && *r.CompletionTokens >= n {
			a := *r.CompletionTokens - n
			r.AnswerTokens = &a
		}
		return
	}
	stream := 0
	if r.ReasoningTokens != nil {
		stream = *r.ReasoningTokens
	}
	if !ok || n == stream || n == stream+r.HiddenTokens {
		return
	}
	hidden := ""
	if r.HiddenTokens > 0 {
		hidden = fmt.Sprintf(" (and %d tokens counted but never sent)", r.HiddenTokens)
	}
	r.warn(WarnReasoningMismatch, fmt.Sprintf("server counted %d reasoning tokens, the stream carried %d%s: the adapter did not tell the server's reasoning from its answer, or the server counts otherwise", n, stream, hidden))
}

func (r *Request) warn(code, msg string) {
	r.Warnings = append(r.Warnings, Warning{Code: code, Message: msg})
}

// Metrics rebuilds the request's client figures, as timing.SLO.Met and
// timing.ComputeGoodput take them.
func (r Request) Metrics() timing.Metrics {
	var m timing.Metrics
	m.Tokens = r.Tokens()
	if r.TTFTS != nil {
		m.TTFT, m.TTFTDefined = seconds(*r.TTFTS), true
	}
	if r.TPOTS != nil {
		m.TPOT, m.TPOTDefined = seconds(*r.TPOTS), true
	}
	if r.E2ES != nil {
		m.E2E, m.E2EDefined = seconds(*r.E2ES), true
	}
	if r.TTFAS != nil {
		m.TTFA, m.TTFADefined = seconds(*r.TTFAS), true
	}
	if r.LastReasoningS != nil {
		m.LastReasoning, m.LastReasoningDefined = seconds(*r.LastReasoningS), true
	}
	if r.ReasoningTokens != nil {
		m.ReasoningTokens, m.ReasoningDefined = *r.ReasoningTokens, true
	}
	if r.AnswerTokens != nil {
		m.AnswerTokens = *r.AnswerTokens
	}
	if r.TPOTAnswerS != nil {
		m.TPOTAnswer, m.TPOTAnswerDefined = seconds(*r.TPOTAnswerS), true
	}
	if r.TPOTReasoningS != nil {
		m.TPOTReasoning, m.TPOTReasoningDefined = seconds(*r.TPOTReasoningS), true
	}
	m.HiddenTokens = r.HiddenTokens
	if r.GenerationTPS != nil {
		m.GenerationTPS, m.GenerationTPSDefined = *r.GenerationTPS, true
	}
	for _, g := range r.ITLS {
		m.ITL = append(m.ITL, seconds(g))
	}
	for _, g := range r.ICLS {
		m.ICL = append(m.ICL, seconds(g))
	}
	return m
}

// resultTokens is a result's completion tokens by the rule of NewRequest;
// ok is false when nothing counted them.
func resultTokens(res engine.Result) (n int, ok bool) {
	switch {
	case res.Usage != nil:
		return res.Usage.CompletionTokens, true
	case len(res.Trace.Chunks) > 0:
		return res.Trace.Tokens(), true
	case res.ServerStats != nil:
		return res.ServerStats.GenerationTokens, true
	}
	return 0, false
}

// resultAnswerTokens is a result's answer tokens by the rule of
// NewRequest: the stream's, else the server's completion tokens less its
// reasoning tokens; ok is false when neither says.
func resultAnswerTokens(res engine.Result) (n int, ok bool) {
	if len(res.Trace.Chunks) > 0 {
		return res.Trace.AnswerTokens(), true
	}
	if u := res.Usage; u != nil && u.ReasoningTokens != nil && u.CompletionTokens >= *u.ReasoningTokens {
		return u.CompletionTokens - *u.ReasoningTokens, true
	}
	return 0, false
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// finite returns a pointer to v, or nil when v is NaN or infinite, for
// JSON fields where an undefined figure is null.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// quantiles summarises x; all null for no sample.
func quantiles(x []float64) Quantiles {
	if len(x) == 0 {
		return Quantiles{}
	}
	s := timing.Summarize(x)
	return Quantiles{N: s.N, Mean: finite(s.Mean), P50: finite(s.P50), P90: finite(s.P90), P99: finite(s.P99), Max: finite(s.Max)}
}

func preview(s string) string {
	if utf8.RuneCountInString(s) <= previewRunes {
		return s
	}
	i, n := 0, 0
	for i = range s {
		if n == previewRunes {
			break
		}
		n++
	}
	return s[:i]
}
