package benchkit

import (
	"strconv"
	"strings"

	"github.com/inferbench/inferbench/engine"
)

// A Request is one measured request: what was asked, what came back, how
// each figure was measured, and the labels that place it in its run. Every
// driver emits it (the Runner's cells, a Load's runs, SendBurst's burst,
// disaggregation's phases), built by one function (NewRequest), so a
// figure means the same whichever driver measured it. Summaries group
// Requests (Summarize); results files are views of them: its own JSON is a
// load test's "requests" row, ExoRun is exo's "runs" row, and WriteCSV,
// WriteBenchfmt and the tables read them.
//
// Durations are in seconds; offsets are from the run's start instant (a
// burst's release). Figures a request does not have (TTFT of an
// unstreamed request, TPOT of a one-token reply, a server count the server
// did not send, the energy of a run without a power source) are null,
// never 0. So are the figures of a request whose server reported an
// implausible count or rate (error kind implausible_usage): stats,
// completion tokens, TPOT, the generation rate and the gaps, which all
// rest on the server's counts; the error names the number and its bound.
type Request struct {
	// Labels place the request: its run and rate, placement, burst,
	// repeat, phase, session and turn, and its thinking setting.
	Labels
	// Index is the request's place in its run's schedule or burst (the
	// dispatch order), from 0.
	Index int `json:"index"`
	// ResponseID is the server's id of the response (its body's "id").
	ResponseID string `json:"response_id"`
	// RequestID is the id the client sent with the request (its
	// X-Request-Id header, engine.Result.RequestID), unique per request;
	// ServerRequestID the X-Request-Id the server answered with, when it
	// sent one. docs/REQUEST-IDS.md says how to find a request in a
	// server's logs with them.
	RequestID       string `json:"request_id,omitempty"`
	ServerRequestID string `json:"server_request_id,omitempty"`
	// Resent counts the times the request was written again on another
	// connection because the reused one it went out on had been closed
	// by the server before any byte of an answer (engine.Result.Resent);
	// SendOffsetS is the attempt that carried it.
	Resent int `json:"resent,omitempty"`
	// PPTarget is the prompt length asked for; PPTokens the client's
	// verified count of the whole templated prompt sent (promptsize);
	// ServerPromptTokens the server's count (usage.prompt_tokens, else
	// the server stats' prompt_tokens).
	PPTarget           int  `json:"pp_target"`
	PPTokens           int  `json:"pp_tokens"`
	ServerPromptTokens *int `json:"server_prompt_tokens"`
	// CachedTokens is how many of the prompt's tokens the server served
	// from its prefix cache (usage.prompt_tokens_details.cached_tokens);
	// null when it did not say.
	CachedTokens *int `json:"cached_tokens"`
	// TGTarget is the generation length asked for (max_tokens);
	// CompletionTokens what came back: the server's usage, else the
	// streamed chunks' tokens, else the server stats' generation_tokens.
	TGTarget         int  `json:"tg_target"`
	CompletionTokens *int `json:"completion_tokens"`
	// IntendedSendS is when the schedule meant the request to go,
	// SendOffsetS when its bytes began to go out (the engine's send
	// instant, after any dial), DoneS when its response ended.
	IntendedSendS float64 `json:"intended_send_s"`
	SendOffsetS   float64 `json:"send_offset_s"`
	DoneS         float64 `json:"done_s"`
	// ConnectS is how long the request waited for a new connection (DNS,
	// dial, TLS: engine.Result.Connect) before its send instant; null
	// when it went out on a connection already open or the engine cannot
	// tell. The wait is part of the schedule lag, not of TTFTS or E2ES.
	ConnectS *float64 `json:"connect_s"`
	// TTFTS, TPOTS and E2ES are the client's time to first token, time
	// per output token after the first, (E2E − TTFT)/(n − 1), and
	// end-to-end latency (timing.Trace's formulas), from the send
	// instant.
	TTFTS *float64 `json:"ttft_s"`
	TPOTS *float64 `json:"tpot_s"`
	E2ES  *float64 `json:"e2e_s"`
	// The figures of a model that reasons before it answers, from the
	// kinds of the streamed chunks (timing.Trace's formulas; a tool call
	// is answer-side output). They are absent (null) where undefined, so
	// the row of a request that did not reason has only TTFAS, the time
	// to the first answer token (then TTFTS), AnswerTokens (the streamed
	// tokens) and TPOTAnswerS (then TPOTS).
	//
	// LastReasoningS is the time to the last reasoning token.
	// ReasoningTokens and AnswerTokens split the streamed tokens by side
	// (the stream's own count, as the chunks carried them); a reply not
	// streamed has them from the server's usage, when it said how many
	// of its completion tokens were reasoning. ServerReasoningTokens is
	// that count (usage.completion_tokens_details.reasoning_tokens): a
	// stream whose count differs carries a WarnReasoningMismatch warning.
	// HiddenTokens are the tokens the server counted but never sent
	// (timing.Trace.HiddenTokens: Ollama's <think> and </think>), in no
	// rate measured from the chunks. TPOTAnswerS and TPOTReasoningS are
	// the time per output token of each side after its first token,
	// beside TPOTS, the whole stream's.
	TTFAS                 *float64 `json:"ttfa_s,omitempty"`
	LastReasoningS        *float64 `json:"last_reasoning_s,omitempty"`
	ReasoningTokens       *int     `json:"reasoning_tokens,omitempty"`
	AnswerTokens          *int     `json:"answer_tokens,omitempty"`
	ServerReasoningTokens *int     `json:"server_reasoning_tokens,omitempty"`
	HiddenTokens          int      `json:"hidden_tokens,omitempty"`
	TPOTAnswerS           *float64 `json:"tpot_answer_s,omitempty"`
	TPOTReasoningS        *float64 `json:"tpot_reasoning_s,omitempty"`
	// TTFTBeyondServerS is TTFTS less the server's own time to the first
	// token as its response timed it (queue + load + prefill of Stats:
	// llama.cpp's prompt_ms, Ollama's load and prompt_eval durations);
	// E2EBeyondServerS is E2ES less the server's own time for the whole
	// request (Ollama's total_duration, TGI's x-total-time, llama.cpp's
	// prompt_ms + predicted_ms). Absent where either side is unknown.
	// They hold what the server's timers leave out: with llama.cpp the
	// wait for a free slot, the chat template and tokenization, and the
	// HTTP path and the network (the summary's server_timings estimates
	// the wait from them: this less http_path_est_s); with Ollama and TGI
	// the HTTP path, the network and what precedes their clocks.
	TTFTBeyondServerS *float64 `json:"ttft_beyond_server_s,omitempty"`
	E2EBeyondServerS  *float64 `json:"e2e_beyond_server_s,omitempty"`
	// TTFTFirstChunkS is the time to the server's first chunk when that
	// chunk marks the first token before its text (a role chunk:
	// timing.Trace.FirstChunk); null when the server wrote nothing before
	// the text.
	TTFTFirstChunkS *float64 `json:"ttft_first_chunk_s"`
	// SharedInstants counts the chunks that share their instant with the
	// next one (timing.Trace.SharedInstants): the gap after each, zero in
	// ITLS, is unknown. FirstShared says the first content chunk shared
	// its read with the next content chunk: TTFTS is then an upper bound.
	SharedInstants int  `json:"shared_instants"`
	FirstShared    bool `json:"first_chunk_shared,omitempty"`
	// ITLS are the per-token gaps (a chunk of k tokens arriving g after
	// the previous one gives k gaps of g/k) and ICLS the per-chunk gaps;
	// null for unstreamed requests.
	ITLS []float64 `json:"itl_s"`
	ICLS []float64 `json:"icl_s"`
	// GenerationTPS is (n − 1) / (t_last − t_first) on the client's clock,
	// from streamed chunk arrivals.
	GenerationTPS *float64 `json:"client_generation_tps,omitempty"`
	// Stream says whether the response was streamed; FinishReason is the
	// server's.
	Stream       bool   `json:"stream"`
	FinishReason string `json:"finish_reason,omitempty"`
	// Simulated marks requests measured against the embedded engine.
	Simulated bool `json:"simulated,omitempty"`
	// Predicted marks requests never sent: computed on the embedded
	// engine's virtual clock (package benchkit/predict), every instant
	// the schedule's.
	Predicted bool `json:"predicted,omitempty"`
	// Probe marks a head-of-line probe (Traffic.ProbeRate): a one-token
	// request sent beside the load, never in its figures; Index is then
	// the probe's own number in its run.
	Probe bool `json:"probe,omitempty"`
	// Warnings are quality notes, each with a stable code.
	Warnings []Warning `json:"warnings,omitempty"`
	// ErrorKind is engine.KindOf of the error; Error its message, "" for
	// a request that succeeded.
	ErrorKind string `json:"error_kind,omitempty"`
	Error     string `json:"error"`
	// Stats are the server's own figures (exo's generation_stats), null
	// when it reported none or reported implausible numbers; PowerUsage
	// its power_usage block (exo), null when absent.
	Stats      *engine.ServerStats `json:"stats"`
	PowerUsage *engine.PowerUsage  `json:"power_usage"`
	// Energy is the client's integral of sampled power over the request's
	// window (or its burst's, shared by the burst's requests); null
	// without a power source. EnergyWindowShort is set when that window
	// is shorter than ShortWindowFactor sample intervals.
	Energy            *Energy `json:"energy"`
	EnergyWindowShort bool    `json:"energy_window_short,omitempty"`
	// Model is the model id the request named, ModelShortID a short name
	// for it; Preview the start of the generated text (64 characters).
	Model        string `json:"model,omitempty"`
	ModelShortID string `json:"model_short_id,omitempty"`
	Preview      string `json:"output_text_preview,omitempty"`
	// ServedModel is the model the server says answered, when it is not
	// Model (llama.cpp serves its one model under any name).
	ServedModel string `json:"served_model,omitempty"`
	// DispatchSkewS is the dispatch skew of the request's burst (the
	// largest send offset less the smallest); ConcurrentIndex its place in
	// the order the burst's requests completed (exo's concurrent_index),
	// set in bursts of more than one.
	DispatchSkewS   float64 `json:"dispatch_skew_s,omitempty"`
	ConcurrentIndex *int    `json:"concurrent_index,omitempty"`
	// PlanFields name the plan, the segment and the shared timeline.
	PlanFields
}

// Failed reports whether the request failed.
func (r Request) Failed() bool { return r.Error != "" }

// Tokens is the completion tokens, 0 when they are null.
func (r Request) Tokens() int {
	if r.CompletionTokens == nil {
		return 0
	}
	return *r.CompletionTokens
}

// Cell is the request's (pp, tg, concurrency) cell: its targets and its
// burst's size.
func (r Request) Cell() Cell {
	return Cell{PP: r.PPTarget, TG: r.TGTarget, Concurrency: r.Concurrency}
}

// Labels place a request in what was measured. A driver sets those it
// has; the others stay zero and are left out of the JSON.
type Labels struct {
	// Run numbers the run in a sweep or search (from 0); Rate is its
	// offered rate (null when infinite or a burst).
	Run  int      `json:"run"`
	Rate *float64 `json:"rate"`
	// Placement is the instance the request ran on (exo).
	Placement Placement `json:"placement,omitzero"`
	// Concurrency is the size of the request's burst; Repeat the repeat
	// of its cell, from 0.
	Concurrency int `json:"concurrency,omitempty"`
	Repeat      int `json:"repeat,omitempty"`
	// Phase names the phase of a benchmark of several (disaggregation).
	Phase string `json:"phase,omitempty"`
	// Session and Turn place a request in a multi-turn session.
	Session string `json:"session,omitempty"`
	Turn    int    `json:"turn,omitempty"`
	// Thinking is the thinking control the request carried
	// (engine.Request.Thinking): "on" or "off", "effort=<level>",
	// "budget=<tokens>", joined by commas; "" for none. Requests of
	// different settings are never summarised together.
	Thinking string `json:"thinking,omitempty"`
}

// Placement describes the instance a request ran on (exo's sharding,
// instance kind and node count).
type Placement struct {
	Sharding     string `json:"sharding,omitempty"`
	InstanceMeta string `json:"instance_meta,omitempty"`
	Nodes        int    `json:"nodes,omitempty"`
	InstanceID   string `json:"instance_id,omitempty"`
	// DownloadDurationS is how long the model's download took, when the
	// run downloaded it.
	DownloadDurationS *float64 `json:"download_duration_s,omitempty"`
}

// A Warning is a quality note on a request: a stable Code to act on and a
// Message for people. Nothing matches a warning by its message.
type Warning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (w Warning) String() string { return w.Message }

// Warning codes of a Request.
const (
	// WarnPromptMismatch: the server counted the prompt differently from
	// the client (its tokenizer or chat template is not the engine's).
	WarnPromptMismatch = "prompt_mismatch"
	// WarnShortGeneration: fewer tokens came back than were asked for.
	WarnShortGeneration = "short_generation"
	// WarnTrace: the stream's timing broke its invariants and no client
	// figure could be computed from it.
	WarnTrace = "trace"
	// WarnEngine: the adapter's own note (engine.Result.Warnings).
	WarnEngine = "engine"
	// WarnPrompt: the prompt builder's note (promptsize.Prompt.Warnings).
	WarnPrompt = "prompt"
	// WarnClientCounted: the completion tokens were counted by the client
	// in the reply's text, the server having sent no count.
	WarnClientCounted = "client_counted"
	// WarnReasoningMismatch: the stream's reasoning tokens differ from
	// the server's reasoning_tokens (the stream's, with its hidden tokens
	// or without, is neither): the adapter did not tell the server's
	// reasoning from its answer, or the server counts otherwise.
	WarnReasoningMismatch = "reasoning_mismatch"
)

// HasWarning reports whether the request carries a warning with code.
func (r Request) HasWarning(code string) bool {
	for _, w := range r.Warnings {
		if w.Code == code {
			return true
		}
	}
	return false
}

// Quantiles summarise a sample, in its unit (seconds for latencies): mean
// and percentiles by timing.Percentile (linear interpolation, numpy's
// default, as vLLM reports them). Undefined figures (no sample) are null.
type Quantiles struct {
	N    int      `json:"n"`
	Mean *float64 `json:"mean"`
	P50  *float64 `json:"p50"`
	P90  *float64 `json:"p90"`
	P99  *float64 `json:"p99"`
	Max  *float64 `json:"max"`
	// MeanCI, P50CI, P90CI and P99CI are the [lo, hi] confidence
	// intervals at ConfidenceLevel of those figures, where a load test's
	// summary gives them: the mean's Student-t, each percentile's from
	// the order statistics (timing.PercentileInterval). Absent where the
	// sample cannot bound the figure on both sides (a p99 of fewer than
	// 368 samples).
	MeanCI *[2]float64 `json:"mean_ci,omitempty"`
	P50CI  *[2]float64 `json:"p50_ci,omitempty"`
	P90CI  *[2]float64 `json:"p90_ci,omitempty"`
	P99CI  *[2]float64 `json:"p99_ci,omitempty"`
}

// Energy is the client-side energy of a request's window, from sampled
// power integrated with the trapezoid rule over exactly [start, end] (edge
// values interpolated; package energy documents the method and its error
// bound).
type Energy struct {
	// WindowS is the length of the integrated window in seconds.
	WindowS float64 `json:"window_s"`
	// Joules is the energy over the window, summed over nodes, less the
	// idle baseline when one was subtracted.
	Joules float64 `json:"joules"`
	// AvgWatts is Joules / WindowS.
	AvgWatts float64 `json:"avg_watts"`
	// PrefillJoules and GenerationJoules split Joules at the first
	// generated token; null when the split instant is unknown.
	PrefillJoules    *float64 `json:"prefill_joules"`
	GenerationJoules *float64 `json:"generation_joules"`
	// JPerPromptToken is the prefill energy / prompt tokens, null without
	// a split. JPerGeneratedToken is the generation energy / generated
	// tokens with a split, the whole energy / generated tokens without.
	JPerPromptToken    *float64 `json:"j_per_prompt_token"`
	JPerGeneratedToken *float64 `json:"j_per_generated_token"`
	// JPerAnswerToken is the same energy over the answer's tokens alone
	// (Request.AnswerTokens): what an answer token costs with the
	// thinking before it. Absent where a request's answer tokens are not
	// known; JPerGeneratedToken where no request reasoned.
	JPerAnswerToken *float64 `json:"j_per_answer_token,omitempty"`
	// Shared is true when the window is a whole burst's, shared by all
	// its requests: add it once per burst, not once per request.
	Shared bool `json:"shared,omitempty"`
	// BaselineW is the idle power subtracted, 0 if none.
	BaselineW float64 `json:"baseline_w,omitempty"`
	// ErrorBoundJ bounds the integration error that follows from the
	// sampling interval; null when nothing bounds it (a single sample).
	ErrorBoundJ *float64 `json:"error_bound_j"`
	// Source says where the figure comes from: "client", the client's
	// integral of the power it sampled (the server's own figure, exo's
	// power_usage, is the request's PowerUsage).
	Source string `json:"source,omitempty"`
	// SampleIntervalS is the time resolution of the samples integrated:
	// the longer of the polling interval and the span each sample is a
	// mean over.
	SampleIntervalS float64 `json:"sample_interval_s,omitempty"`
}

// previewRunes is how much of the generated text a Request keeps.
const previewRunes = 64

// String formats the placement as "<sharding>-<instance kind>-<nodes>n" in
// lower case with exo's "Mlx" prefix dropped: "pipeline-ring-2n",
// "tensor-jaccl-4n". It is the value of the placement= key of benchfmt
// names and the label of table lines and plot series; requests of
// different placements are never summarised together. A placement with no
// sharding, kind or nodes formats as "".
func (p Placement) String() string {
	if p.Sharding == "" && p.InstanceMeta == "" && p.Nodes == 0 {
		return ""
	}
	part := func(s string) string {
		s = strings.ToLower(strings.TrimPrefix(s, "Mlx"))
		s = strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' {
				return r
			}
			return '_'
		}, s)
		if s == "" {
			return "none"
		}
		return s
	}
	return part(p.Sharding) + "-" + part(p.InstanceMeta) + "-" + strconv.Itoa(p.Nodes) + "n"
}
