package benchkit

import (
	"github.com/inferbench/inferbench/engine"
)

// A Row is one measured request: what was asked, what came back, and how
// each figure was measured. Its JSON form keeps every field of a run in
// exo's result files (exo_bench.py's "runs"), so exo's own analysis reads
// it, and adds ours after them.
//
// Figures that are undefined for a request (TPOT of a one-token reply, the
// energy of a run without a power source) are null, never 0. So are the
// figures of a request whose server reported an implausible count or rate
// (error kind implausible_usage): stats, generated tokens, TPOT, the
// client generation rate and ITL, which all rest on the server's counts;
// the error names the number and its bound.
type Row struct {
	// ElapsedS is the request's wall time in seconds on the client's
	// clock: from the burst's shared release instant to the end of its
	// response (for a single request, from its send to its end). exo's
	// elapsed_s.
	ElapsedS float64 `json:"elapsed_s"`
	// OutputTextPreview is the start of the generated text.
	OutputTextPreview string `json:"output_text_preview"`
	// Stats are the server's own figures (exo's generation_stats), null
	// when the server reported none or reported implausible numbers.
	Stats *engine.ServerStats `json:"stats"`
	// PowerUsage is the server's power_usage block, null when absent.
	PowerUsage *engine.PowerUsage `json:"power_usage"`
	// ModelID is the full model id; ModelShortID the short one.
	ModelID      string `json:"model_id"`
	ModelShortID string `json:"model_short_id"`
	// Placement describes the instance the request ran on (exo).
	PlacementSharding     string `json:"placement_sharding,omitempty"`
	PlacementInstanceMeta string `json:"placement_instance_meta,omitempty"`
	PlacementNodes        int    `json:"placement_nodes,omitempty"`
	InstanceID            string `json:"instance_id,omitempty"`
	// PPTokens is the client's verified count of the whole templated
	// prompt (promptsize); TG the tokens asked for.
	PPTokens int `json:"pp_tokens"`
	TG       int `json:"tg"`
	// RepeatIndex counts the repeats of a cell from 0.
	RepeatIndex int `json:"repeat_index"`
	// Concurrency is the burst size; ConcurrentIndex the request's place
	// in the order the burst's requests completed (exo's meaning), set on
	// rows of bursts larger than 1.
	Concurrency     int  `json:"concurrency"`
	ConcurrentIndex *int `json:"concurrent_index,omitempty"`
	// DownloadDurationS is how long the model download took, when the run
	// downloaded it.
	DownloadDurationS *float64 `json:"download_duration_s,omitempty"`

	// PPTarget is the prompt length asked for. PPTokens equals it unless
	// the row failed before the prompt was built.
	PPTarget int `json:"pp_target"`
	// GeneratedTokens is the client's count of generated tokens: the
	// streamed chunks' tokens, else the usage block's completion_tokens,
	// else the server stats' generation_tokens. Null when the error kind
	// is implausible_usage: the counts cannot be trusted.
	GeneratedTokens *int `json:"generated_tokens"`
	// RequestIndex is the request's index within its burst (dispatch
	// order, from 0).
	RequestIndex int `json:"request_index"`
	// Stream says whether the response was streamed; only streamed rows
	// have client TTFT, TPOT and ITL.
	Stream bool `json:"stream"`
	// TTFTS, TPOTS and E2ES are the client's time to first token, time per
	// output token ((E2E − TTFT) / (n − 1)) and end-to-end latency, in
	// seconds (timing.Trace's formulas).
	TTFTS *float64 `json:"ttft_s"`
	TPOTS *float64 `json:"tpot_s"`
	E2ES  *float64 `json:"e2e_s"`
	// ClientGenerationTPS is (n − 1) / (t_last − t_first) on the client's
	// clock, from streamed chunk arrivals.
	ClientGenerationTPS *float64 `json:"client_generation_tps"`
	// ITL summarises the per-token inter-token latencies (timing.Trace.ITL)
	// in seconds; null for unstreamed rows.
	ITL *Quantiles `json:"itl_s"`
	// SendOffsetS is when the request's bytes began to go out, in seconds
	// after the burst's release instant.
	SendOffsetS float64 `json:"send_offset_s"`
	// DispatchSkewS is the burst's dispatch skew: the largest send offset
	// minus the smallest, the same on every row of a burst.
	DispatchSkewS float64 `json:"dispatch_skew_s"`
	// Energy is the client's integral of sampled power over the request's
	// window (or the burst's, shared by its rows); null without a source.
	Energy *Energy `json:"energy"`
	// EnergyWindowShort is set when the client's energy window is shorter
	// than ShortWindowFactor sample intervals: too short for the samples
	// to resolve, so tables leave the figure out (the row keeps it).
	EnergyWindowShort bool `json:"energy_window_short,omitempty"`
	// Simulated marks rows measured against the embedded simulated engine.
	Simulated bool `json:"simulated,omitempty"`
	// Warnings are quality notes: a server prompt count that differs from
	// pp_tokens, fewer tokens than asked, undefined rates.
	Warnings []string `json:"warnings,omitempty"`
	// ErrorKind is engine.KindOf of the request's error, Error its message;
	// both empty for a successful request.
	ErrorKind string `json:"error_kind,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Failed reports whether the row records a failed request.
func (r Row) Failed() bool { return r.Error != "" }

// Quantiles summarise a sample of durations, in seconds.
type Quantiles struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// Energy is the client-side energy of a row's window, from sampled power
// integrated with the trapezoid rule over exactly [start, end] (edge values
// interpolated; package energy documents the method and its error bound).
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
	// Shared is true when the window is a whole burst's, shared by all
	// its rows: add it once per burst, not once per row.
	Shared bool `json:"shared,omitempty"`
	// BaselineW is the idle power subtracted, 0 if none.
	BaselineW float64 `json:"baseline_w,omitempty"`
	// ErrorBoundJ bounds the integration error that follows from the
	// sampling interval (package energy states the assumptions); null
	// when nothing bounds it (a single sample).
	ErrorBoundJ *float64 `json:"error_bound_j"`
	// Source says where the figure comes from: "client", the client's
	// integral of the power it sampled (the server's own figure, exo's
	// power_usage, is the row's power_usage).
	Source string `json:"source,omitempty"`
	// SampleIntervalS is the time resolution of the samples integrated:
	// the longer of the polling interval and the span each sample is a
	// mean over.
	SampleIntervalS float64 `json:"sample_interval_s,omitempty"`
}

// ShortWindowFactor is how many sample intervals a client energy window
// must span for tables to show its figure: a shorter window holds too few
// samples to resolve (a burst of 1.2 s against 1 s samples).
const ShortWindowFactor = 3
