package benchkit

import (
	"bytes"
	"encoding/json"

	"github.com/inferbench/inferbench/engine"
)

// An ExoRun is a Request as a row of exo's result files (exo_bench.py's
// "runs"): every field exo writes, so exo's own analysis reads it, then
// ours. It is a view: Request.Exo writes it and ExoRun.Request reads it
// back (the per-token gaps come back as their summary alone).
type ExoRun struct {
	ElapsedS              float64             `json:"elapsed_s"`
	OutputTextPreview     string              `json:"output_text_preview"`
	Stats                 *engine.ServerStats `json:"stats"`
	PowerUsage            *engine.PowerUsage  `json:"power_usage"`
	ModelID               string              `json:"model_id"`
	ModelShortID          string              `json:"model_short_id"`
	PlacementSharding     string              `json:"placement_sharding,omitempty"`
	PlacementInstanceMeta string              `json:"placement_instance_meta,omitempty"`
	PlacementNodes        int                 `json:"placement_nodes,omitempty"`
	InstanceID            string              `json:"instance_id,omitempty"`
	PPTokens              int                 `json:"pp_tokens"`
	TG                    int                 `json:"tg"`
	RepeatIndex           int                 `json:"repeat_index"`
	Concurrency           int                 `json:"concurrency"`
	ConcurrentIndex       *int                `json:"concurrent_index,omitempty"`
	DownloadDurationS     *float64            `json:"download_duration_s,omitempty"`
	PPTarget              int                 `json:"pp_target"`
	GeneratedTokens       *int                `json:"generated_tokens"`
	RequestIndex          int                 `json:"request_index"`
	Stream                bool                `json:"stream"`
	TTFTS                 *float64            `json:"ttft_s"`
	TPOTS                 *float64            `json:"tpot_s"`
	E2ES                  *float64            `json:"e2e_s"`
	ClientGenerationTPS   *float64            `json:"client_generation_tps"`
	// ITL summarises the per-token gaps.
	ITL               *Quantiles `json:"itl_s"`
	SendOffsetS       float64    `json:"send_offset_s"`
	DispatchSkewS     float64    `json:"dispatch_skew_s"`
	ConnectS          *float64   `json:"connect_s"`
	TTFTFirstChunkS   *float64   `json:"ttft_first_chunk_s"`
	FirstShared       bool       `json:"first_chunk_shared,omitempty"`
	Energy            *Energy    `json:"energy"`
	EnergyWindowShort bool       `json:"energy_window_short,omitempty"`
	Simulated         bool       `json:"simulated,omitempty"`
	Warnings          []Warning  `json:"warnings,omitempty"`
	ErrorKind         string     `json:"error_kind,omitempty"`
	Error             string     `json:"error,omitempty"`
	// Thinking is the request's thinking setting (Labels.Thinking).
	Thinking string `json:"thinking,omitempty"`

	// The figures of a model that reasons (Request's of these names),
	// absent where undefined.
	TTFAS                 *float64 `json:"ttfa_s,omitempty"`
	LastReasoningS        *float64 `json:"last_reasoning_s,omitempty"`
	ReasoningTokens       *int     `json:"reasoning_tokens,omitempty"`
	AnswerTokens          *int     `json:"answer_tokens,omitempty"`
	ServerReasoningTokens *int     `json:"server_reasoning_tokens,omitempty"`
	HiddenTokens          int      `json:"hidden_tokens,omitempty"`
	TPOTAnswerS           *float64 `json:"tpot_answer_s,omitempty"`
	TPOTReasoningS        *float64 `json:"tpot_reasoning_s,omitempty"`
}

// Exo returns r as a row of exo's result files.
func (r Request) Exo() ExoRun {
	x := ExoRun{
		ElapsedS: r.DoneS, OutputTextPreview: r.Preview, Stats: r.Stats, PowerUsage: r.PowerUsage,
		ModelID: r.Model, ModelShortID: r.ModelShortID,
		PlacementSharding: r.Placement.Sharding, PlacementInstanceMeta: r.Placement.InstanceMeta,
		PlacementNodes: r.Placement.Nodes, InstanceID: r.Placement.InstanceID,
		PPTokens: r.PPTokens, TG: r.TGTarget, RepeatIndex: r.Repeat, Concurrency: r.Concurrency,
		ConcurrentIndex: r.ConcurrentIndex, DownloadDurationS: r.Placement.DownloadDurationS,
		PPTarget: r.PPTarget, GeneratedTokens: r.CompletionTokens, RequestIndex: r.Index, Stream: r.Stream,
		TTFTS: r.TTFTS, TPOTS: r.TPOTS, E2ES: r.E2ES, ClientGenerationTPS: r.GenerationTPS,
		SendOffsetS: r.SendOffsetS, DispatchSkewS: r.DispatchSkewS,
		ConnectS: r.ConnectS, TTFTFirstChunkS: r.TTFTFirstChunkS, FirstShared: r.FirstShared,
		Energy: r.Energy, EnergyWindowShort: r.EnergyWindowShort, Simulated: r.Simulated,
		Warnings: r.Warnings, ErrorKind: r.ErrorKind, Error: r.Error, Thinking: r.Thinking,
	}
	x.TTFAS, x.LastReasoningS, x.TPOTAnswerS, x.TPOTReasoningS = r.TTFAS, r.LastReasoningS, r.TPOTAnswerS, r.TPOTReasoningS
	x.ReasoningTokens, x.AnswerTokens, x.ServerReasoningTokens, x.HiddenTokens = r.ReasoningTokens, r.AnswerTokens, r.ServerReasoningTokens, r.HiddenTokens
	if x.ModelShortID == "" {
		x.ModelShortID = r.Model
	}
	if r.ITLS != nil {
		q := quantiles(r.ITLS)
		x.ITL = &q
	}
	return x
}

// Request reads x back as a Request. The per-token gaps are not in x, only
// their summary: the Request has none.
func (x ExoRun) Request() Request {
	r := Request{
		DoneS: x.ElapsedS, Preview: x.OutputTextPreview, Stats: x.Stats, PowerUsage: x.PowerUsage,
		Model: x.ModelID, ModelShortID: x.ModelShortID,
		PPTokens: x.PPTokens, TGTarget: x.TG, ConcurrentIndex: x.ConcurrentIndex,
		PPTarget: x.PPTarget, CompletionTokens: x.GeneratedTokens, Index: x.RequestIndex, Stream: x.Stream,
		TTFTS: x.TTFTS, TPOTS: x.TPOTS, E2ES: x.E2ES, GenerationTPS: x.ClientGenerationTPS,
		SendOffsetS: x.SendOffsetS, DispatchSkewS: x.DispatchSkewS,
		ConnectS: x.ConnectS, TTFTFirstChunkS: x.TTFTFirstChunkS, FirstShared: x.FirstShared,
		Energy: x.Energy, EnergyWindowShort: x.EnergyWindowShort, Simulated: x.Simulated,
		Warnings: x.Warnings, ErrorKind: x.ErrorKind, Error: x.Error,
	}
	r.Repeat, r.Concurrency, r.Thinking = x.RepeatIndex, x.Concurrency, x.Thinking
	r.TTFAS, r.LastReasoningS, r.TPOTAnswerS, r.TPOTReasoningS = x.TTFAS, x.LastReasoningS, x.TPOTAnswerS, x.TPOTReasoningS
	r.ReasoningTokens, r.AnswerTokens, r.ServerReasoningTokens, r.HiddenTokens = x.ReasoningTokens, x.AnswerTokens, x.ServerReasoningTokens, x.HiddenTokens
	r.Placement = Placement{Sharding: x.PlacementSharding, InstanceMeta: x.PlacementInstanceMeta,
		Nodes: x.PlacementNodes, InstanceID: x.InstanceID, DownloadDurationS: x.DownloadDurationS}
	return r
}

// UnmarshalJSON reads a Request in either of its JSON shapes: its own (a
// load test's row) or exo's (ExoRun, told apart by its elapsed_s).
func (r *Request) UnmarshalJSON(b []byte) error {
	if bytes.Contains(b, []byte(`"elapsed_s"`)) {
		var probe struct {
			Elapsed *json.RawMessage `json:"elapsed_s"`
		}
		if err := json.Unmarshal(b, &probe); err != nil {
			return err
		}
		if probe.Elapsed != nil {
			var x ExoRun
			if err := json.Unmarshal(b, &x); err != nil {
				return err
			}
			*r = x.Request()
			return nil
		}
	}
	type plain Request
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = Request(p)
	return nil
}

// exoRuns is requests as exo's rows.
func exoRuns(reqs []Request) []ExoRun {
	out := make([]ExoRun, len(reqs))
	for i, r := range reqs {
		out[i] = r.Exo()
	}
	return out
}
