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
// WarnPromptMismatch warning; a
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
	r.SharedInstants = tr.SharedInstants()
	r.FirstShared = tr.FirstContentShared()
	if implausible {
		return
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
