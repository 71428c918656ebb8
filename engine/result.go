package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/inferbench/inferbench/timing"
)

// A Result is what one Complete call measured and received.
//
// Fields the server did not report are nil (ServerStats, Usage, Power) or
// empty, never zeros that look like measurements.
type Result struct {
	// Trace is the request as the client saw it: Start is the instant the
	// request began to be written, Headers when the response headers
	// arrived, Chunks each streamed content chunk with its arrival instant
	// and token count, End when the response was completely read.
	Trace timing.Trace
	// Connect is how long the request waited for a new connection to be
	// opened for it (DNS, dial and TLS handshake) before Trace.Start: the
	// time from asking the transport for a connection to getting one that
	// had never carried a request. Nil when the request went out on a
	// connection already open (pooled, or opened by a prewarm), and when
	// the engine cannot tell. Trace.Start is after the dial, so TTFT and
	// E2E do not include it; a client whose clock starts before the
	// request is issued (vLLM's benchmark) would add it.
	Connect *time.Duration
	// Text is the generated text (the concatenation of streamed content).
	Text string
	// ResponseID is the server's id of the response, from its body (exo:
	// the command id, usable with /v1/cancel/{id} while the request runs;
	// vLLM: "chatcmpl-" + RequestID).
	ResponseID string
	// RequestID is the id the client sent with the request (the
	// X-Request-Id header): unique per request, so that a request can be
	// found in the server's logs. Empty when the engine sends none.
	RequestID string
	// ServerRequestID is the X-Request-Id header of the answer, when the
	// server sent one (vLLM with --enable-request-id-headers echoes
	// RequestID).
	ServerRequestID string
	// Resent counts the times the request was written again on another
	// connection because the reused one it went out on had been closed by
	// the server before any byte of an answer (llama.cpp's server closes
	// its connection after every stream while answering keep-alive).
	// Trace.Start is the instant of the attempt that carried it. 0 when
	// it went out once.
	Resent int
	// Model is the model the server says produced the response.
	Model string
	// FinishReason is the server's reason for stopping: "length", "stop",
	// "tool_calls", "content_filter", "function_call" or "error". Empty if
	// the server sent none.
	FinishReason string
	// ServerStats are the server's own timing figures (exo's
	// generation_stats). Nil when the server reports none.
	ServerStats *ServerStats
	// Usage is the OpenAI usage block. Nil when the server sent none (exo's
	// non-streaming bench responses never do).
	Usage *Usage
	// Power is exo's power_usage block (non-streaming bench requests only).
	// Nil when the server sent none.
	Power *PowerUsage
	// Warnings report quality problems that did not fail the request: a
	// stream whose chunk token counts had to be estimated, server and
	// client token counts that disagree, a generation rate the server could
	// not define but reported as 0.
	Warnings []error
}

// PrefixCacheHit says how much of a prompt the server found in its prefix
// cache, as exo reports it in generation_stats.prefix_cache_hit.
type PrefixCacheHit string

// The prefix cache outcomes exo reports. An engine may report other
// strings; they are kept as they are.
const (
	// PrefixCacheNone: no cached prefix matched, or the cache was off.
	PrefixCacheNone PrefixCacheHit = "none"
	// PrefixCachePartial: a prefix matched and only the rest was prefilled.
	// prompt_tps is then the rate over the uncached tokens while
	// prompt_tokens still counts the whole prompt.
	PrefixCachePartial PrefixCacheHit = "partial"
	// PrefixCacheExact: all but the last token matched. prompt_tps is the
	// rate stored with the cache entry, not a new measurement.
	PrefixCacheExact PrefixCacheHit = "exact"
)

// ServerStats are the figures an engine reports about its own work on one
// request: exo's generation_stats, which the bench endpoint returns in its
// JSON body and the streaming endpoints send as a ": generation_stats {...}"
// comment. The formulas are exo's:
//
//	PromptTPS     = prefilled tokens / prefill seconds
//	GenerationTPS = (GenerationTokens − 1) / (t_last token − t_first token)
//
// where exo prefills all uncached prompt tokens but the last, and writes 0
// for GenerationTPS when fewer than two tokens or a zero span leave the rate
// undefined.
//
// ServerStats decodes both of exo's spellings of peak memory
// ({"inBytes": N} in JSON bodies, {"in_bytes": N} in stream comments) and
// encodes the JSON-body form, so a decoded value re-encodes as exo's own
// result files hold it.
type ServerStats struct {
	// PromptTPS is the server's prefill rate in tokens per second.
	PromptTPS float64
	// GenerationTPS is the server's decode rate in tokens per second.
	GenerationTPS float64
	// PromptTokens is the length of the whole templated prompt, cached
	// tokens included.
	PromptTokens int
	// GenerationTokens is the number of sampled tokens, the last included.
	GenerationTokens int
	// PeakMemoryBytes is the reported peak memory. exo computes it as the
	// MLX allocator peak × 1.073741824 (its from_gb conversion) and, on its
	// batch engine, never resets it between requests.
	PeakMemoryBytes int64
	// PrefixCacheHit is the prefix cache outcome ("none" when absent).
	PrefixCacheHit PrefixCacheHit

	// The fields below are what servers other than exo report about one
	// request, each nil (and absent from the JSON) where the server
	// reports nothing of the kind. exo's own generation_stats has none of
	// them, so its wire form is unchanged.

	// Source names the server whose figures these are, as the adapter
	// knows it: "llama.cpp", "ollama", "tgi". Empty for exo's
	// generation_stats, the original form.
	Source string
	// CachedTokens is the number of prompt tokens the server took from
	// its prefix cache (llama.cpp's timings.cache_n).
	CachedTokens *int
	// Queue is how long the request waited before the server began it
	// (TGI's x-queue-time).
	Queue *time.Duration
	// Prefill is the server's prompt processing time (llama.cpp's
	// timings.prompt_ms, Ollama's prompt_eval_duration). Both exclude the
	// cached part of the prompt; Ollama's includes the wait for one of its
	// parallel slots and the tokenization.
	Prefill *time.Duration
	// Decode is the server's generation time (llama.cpp's
	// timings.predicted_ms, from the first sampled token to the last;
	// Ollama's eval_duration).
	Decode *time.Duration
	// Inference is prefill and decode together where the server does not
	// split them (TGI's x-inference-time).
	Inference *time.Duration
	// Load is the time the server spent loading the model for this
	// request (Ollama's load_duration).
	Load *time.Duration
	// Total is the server's whole time for the request (Ollama's
	// total_duration, TGI's x-total-time).
	Total *time.Duration
}

// statsWire is ServerStats as exo spells it on the wire, with the other
// servers' figures after it (seconds, omitted when unknown).
type statsWire struct {
	PromptTPS        float64        `json:"prompt_tps"`
	GenerationTPS    float64        `json:"generation_tps"`
	PromptTokens     int            `json:"prompt_tokens"`
	GenerationTokens int            `json:"generation_tokens"`
	PeakMemoryUsage  *memoryWire    `json:"peak_memory_usage,omitempty"`
	PrefixCacheHit   PrefixCacheHit `json:"prefix_cache_hit,omitempty"`
	Source           string         `json:"source,omitempty"`
	CachedTokens     *int           `json:"cached_tokens,omitempty"`
	QueueS           *float64       `json:"queue_s,omitempty"`
	PrefillS         *float64       `json:"prefill_s,omitempty"`
	DecodeS          *float64       `json:"decode_s,omitempty"`
	InferenceS       *float64       `json:"inference_s,omitempty"`
	LoadS            *float64       `json:"load_s,omitempty"`
	TotalS           *float64       `json:"total_s,omitempty"`
}

// seconds is d in seconds, nil for nil.
func seconds(d *time.Duration) *float64 {
	if d == nil {
		return nil
	}
	s := d.Seconds()
	return &s
}

// duration is s seconds as a Duration, nil for nil.
func duration(s *float64) *time.Duration {
	if s == nil {
		return nil
	}
	d := time.Duration(math.Round(*s * float64(time.Second)))
	return &d
}

type memoryWire struct {
	InBytes  *int64 `json:"inBytes,omitempty"`
	InBytes2 *int64 `json:"in_bytes,omitempty"`
}

// MarshalJSON encodes s as exo's JSON bodies do, with
// "peak_memory_usage": {"inBytes": N}; another server's stats (Source set)
// leave peak_memory_usage out when it reported none.
func (s ServerStats) MarshalJSON() ([]byte, error) {
	b := s.PeakMemoryBytes
	hit := s.PrefixCacheHit
	if hit == "" {
		hit = PrefixCacheNone
	}
	mem := &memoryWire{InBytes: &b}
	if s.Source != "" && b == 0 {
		mem = nil // another server's stats: no peak memory was reported
	}
	return json.Marshal(statsWire{
		PromptTPS:        s.PromptTPS,
		GenerationTPS:    s.GenerationTPS,
		PromptTokens:     s.PromptTokens,
		GenerationTokens: s.GenerationTokens,
		PeakMemoryUsage:  mem,
		PrefixCacheHit:   hit,
		Source:           s.Source,
		CachedTokens:     s.CachedTokens,
		QueueS:           seconds(s.Queue),
		PrefillS:         seconds(s.Prefill),
		DecodeS:          seconds(s.Decode),
		InferenceS:       seconds(s.Inference),
		LoadS:            seconds(s.Load),
		TotalS:           seconds(s.Total),
	})
}

// UnmarshalJSON decodes exo's generation_stats in either casing of
// peak_memory_usage. A missing prefix_cache_hit decodes as "none", exo's
// default.
func (s *ServerStats) UnmarshalJSON(data []byte) error {
	var w statsWire
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("engine: decoding generation_stats: %w", err)
	}
	*s = ServerStats{
		PromptTPS:        w.PromptTPS,
		GenerationTPS:    w.GenerationTPS,
		PromptTokens:     w.PromptTokens,
		GenerationTokens: w.GenerationTokens,
		PrefixCacheHit:   w.PrefixCacheHit,
		Source:           w.Source,
		CachedTokens:     w.CachedTokens,
		Queue:            duration(w.QueueS),
		Prefill:          duration(w.PrefillS),
		Decode:           duration(w.DecodeS),
		Inference:        duration(w.InferenceS),
		Load:             duration(w.LoadS),
		Total:            duration(w.TotalS),
	}
	if s.PrefixCacheHit == "" {
		s.PrefixCacheHit = PrefixCacheNone
	}
	if m := w.PeakMemoryUsage; m != nil {
		switch {
		case m.InBytes != nil:
			s.PeakMemoryBytes = *m.InBytes
		case m.InBytes2 != nil:
			s.PeakMemoryBytes = *m.InBytes2
		}
	}
	return nil
}

// ParseGenerationStats decodes the payload of exo's ": generation_stats"
// stream comment or the generation_stats object of a bench JSON body. It
// requires a JSON object: null, which exo sends when no chunk carried stats,
// is an error wrapping ErrNoStats.
func ParseGenerationStats(payload []byte) (ServerStats, error) {
	p := bytes.TrimSpace(payload)
	if len(p) == 0 || bytes.Equal(p, []byte("null")) {
		return ServerStats{}, fmt.Errorf("engine: generation_stats is %q, want a JSON object: %w", excerpt(p, 32), ErrNoStats)
	}
	if p[0] != '{' {
		return ServerStats{}, fmt.Errorf("engine: generation_stats starts with %q, want a JSON object", excerpt(p, 32))
	}
	var s ServerStats
	if err := json.Unmarshal(p, &s); err != nil {
		return ServerStats{}, err
	}
	return s, nil
}

// Usage is the OpenAI usage block: token counts the server tokenized and
// generated. It decodes and encodes the wire form, with CachedTokens taken
// from prompt_tokens_details.cached_tokens.
type Usage struct {
	// PromptTokens is the number of prompt tokens (prompt_tokens), cached
	// ones included.
	PromptTokens int
	// CompletionTokens is the number of generated tokens
	// (completion_tokens).
	CompletionTokens int
	// TotalTokens is their sum as the server reports it (total_tokens).
	TotalTokens int
	// CachedTokens is the number of prompt tokens the server served from
	// its prefix cache (prompt_tokens_details.cached_tokens), so that
	// PromptTokens − *CachedTokens were prefilled. Nil when the server did
	// not say: no prompt_tokens_details, or a null cached_tokens (vLLM
	// reports it only with --enable-prompt-tokens-details, SGLang with
	// --enable-cache-report), which is not the same as 0 (nothing cached).
	CachedTokens *int
	// ReasoningTokens is the number of the completion tokens the model
	// spent reasoning (completion_tokens_details.reasoning_tokens), as the
	// server counts them. Nil when the server did not say, which is not
	// the same as 0 (no reasoning).
	ReasoningTokens *int
}

// Cached returns *CachedTokens and true, or 0 and false when the server
// did not report it.
func (u Usage) Cached() (int, bool) {
	if u.CachedTokens == nil {
		return 0, false
	}
	return *u.CachedTokens, true
}

type usageWire struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens *int `json:"cached_tokens"`
	} `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *struct {
		ReasoningTokens *int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details,omitempty"`
}

// MarshalJSON encodes u in the OpenAI wire form, with prompt_tokens_details
// only when CachedTokens is set and completion_tokens_details only when
// ReasoningTokens is.
func (u Usage) MarshalJSON() ([]byte, error) {
	w := usageWire{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if u.CachedTokens != nil {
		n := *u.CachedTokens
		w.PromptTokensDetails = &struct {
			CachedTokens *int `json:"cached_tokens"`
		}{&n}
	}
	if u.ReasoningTokens != nil {
		n := *u.ReasoningTokens
		w.CompletionTokensDetails = &struct {
			ReasoningTokens *int `json:"reasoning_tokens"`
		}{&n}
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes the OpenAI wire form. A missing or null
// prompt_tokens_details or cached_tokens leaves CachedTokens nil, and
// likewise completion_tokens_details.reasoning_tokens ReasoningTokens.
func (u *Usage) UnmarshalJSON(data []byte) error {
	var w usageWire
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("engine: decoding usage: %w", err)
	}
	*u = Usage{PromptTokens: w.PromptTokens, CompletionTokens: w.CompletionTokens, TotalTokens: w.TotalTokens}
	if w.PromptTokensDetails != nil {
		u.CachedTokens = w.PromptTokensDetails.CachedTokens
	}
	if w.CompletionTokensDetails != nil {
		u.ReasoningTokens = w.CompletionTokensDetails.ReasoningTokens
	}
	return nil
}

// PowerUsage is exo's power_usage block: the server's own integral of node
// power over one non-streaming bench request. exo samples every node's
// sys_power at the start, every second, when prefill ends and at the end,
// and integrates with the trapezoid rule:
//
//	node energy = ∫ sys_power dt over [0, elapsed]
//	TotalEnergyJoules = Σ node energy
//	TotalAvgSysPowerWatts = TotalEnergyJoules / ElapsedSeconds
//
// splitting each integral at the prefill boundary for the phase fields.
// Phase fields are nil when exo never marked the boundary. The type mirrors
// the wire form (all keys snake_case) and lives here so that engine does not
// depend on package energy.
type PowerUsage struct {
	ElapsedSeconds             float64     `json:"elapsed_seconds"`
	TotalAvgSysPowerWatts      float64     `json:"total_avg_sys_power_watts"`
	TotalEnergyJoules          float64     `json:"total_energy_joules"`
	PrefillSeconds             *float64    `json:"prefill_seconds"`
	GenerationSeconds          *float64    `json:"generation_seconds"`
	PrefillEnergyJoules        *float64    `json:"prefill_energy_joules"`
	GenerationEnergyJoules     *float64    `json:"generation_energy_joules"`
	PrefillAvgSysPowerWatts    *float64    `json:"prefill_avg_sys_power_watts"`
	GenerationAvgSysPowerWatts *float64    `json:"generation_avg_sys_power_watts"`
	Nodes                      []NodePower `json:"nodes"`
}

// NodePower is one node's part of a PowerUsage.
type NodePower struct {
	NodeID                 string   `json:"node_id"`
	Samples                int      `json:"samples"`
	AvgSysPower            float64  `json:"avg_sys_power"`
	PrefillAvgSysPower     *float64 `json:"prefill_avg_sys_power"`
	GenerationAvgSysPower  *float64 `json:"generation_avg_sys_power"`
	PrefillEnergyJoules    *float64 `json:"prefill_energy_joules"`
	GenerationEnergyJoules *float64 `json:"generation_energy_joules"`
}

// A Model is one model an engine can serve, as its model list reports it.
type Model struct {
	// ID is the id to put in Request.Model (exo: the full Hugging Face id).
	ID string
	// Name is a short display name (exo: the part after the last "/").
	// Empty when the engine gives none.
	Name string
	// OwnedBy is the owner the engine reports (owned_by).
	OwnedBy string
	// ContextLength is the model's context window in tokens; 0 if unknown.
	ContextLength int
}
