package benchkit

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/inferbench/inferbench/energy"
)

// A Document is the results file written at the end of a run. Its top level
// is exo's (exo_bench.py's --json-out): "runs", "cluster" and
// "system_metrics", so exo's own analysis reads it; inferbench adds "meta"
// and "summary".
type Document struct {
	// Runs are the measured rows, failed ones included (exo drops them;
	// their error fields say what happened).
	Runs []Row `json:"runs"`
	// Cluster is the cluster snapshot (exo's /state: nodeIdentities,
	// topology, nodeMemory, nodeSystem), as the engine reported it.
	Cluster json.RawMessage `json:"cluster,omitempty"`
	// SystemMetrics summarises each node's sampled metrics over the run:
	// node id → metric → {min, max, mean, samples}.
	SystemMetrics map[string]map[string]energy.MetricSummary `json:"system_metrics,omitempty"`
	// Meta says what was measured, against what and how.
	Meta *Meta `json:"meta,omitempty"`
	// Summary aggregates each cell over its repeats.
	Summary []CellRecord `json:"summary,omitempty"`
}

// Meta describes a run.
type Meta struct {
	// Tool is "inferbench" and Version its module version, when known.
	Tool    string `json:"tool"`
	Version string `json:"version,omitempty"`
	// Engine names the engine measured ("exo", "openai", "sim").
	Engine string `json:"engine"`
	// BaseURL is the engine's address.
	BaseURL string `json:"base_url,omitempty"`
	// Simulated is true when the engine is the embedded simulated one:
	// every figure in the document is then a model's, not a machine's.
	Simulated bool `json:"simulated"`
	// Preset names the simulated hardware preset.
	Preset string `json:"preset,omitempty"`
	// Model is the model measured.
	Model string `json:"model"`
	// Tokenizer says how prompt lengths were counted.
	Tokenizer string `json:"tokenizer,omitempty"`
	// Plan is the plan as run.
	Plan Plan `json:"plan"`
	// Started and Finished are RFC 3339 wall-clock times.
	Started  string `json:"started,omitempty"`
	Finished string `json:"finished,omitempty"`
	// Interrupted is true when the run stopped before its plan was done.
	Interrupted bool `json:"interrupted,omitempty"`
	// Warnings are the run's own warnings (plan cautions, engine notes).
	Warnings []string `json:"warnings,omitempty"`
	// Provenance says where the results came from.
	Provenance *Provenance `json:"provenance,omitempty"`
	// SaturatedBursts are the bursts whose dispatch skew exceeded its
	// bound (CheckBursts); ClientSaturated is true when there is one:
	// the client, not the server, set those bursts' figures.
	SaturatedBursts []BurstHealth `json:"saturated_bursts,omitempty"`
	ClientSaturated bool          `json:"client_saturated,omitempty"`
}

// A CellRecord is a CellSummary in the results file: each interval as
// {center, lo, hi, n}, NaN written as null. Every figure is computed per
// repeat and then summarised over the repeats, as CellSummary's fields
// say: prompt_tps and generation_tps are per-repeat means of the
// per-request rates, exo_aggregate_tps is max(per-request generation TPS)
// × N, throughput_tps is Σ generated tokens / burst wall time, ttft_s the
// mean client TTFT, energy_j the client energy of the repeat and
// j_per_token that over its generated tokens. server_energy_j is the
// server's own energy of each repeat (exo's power_usage.total_energy_joules
// of the burst's longest request, every node of the cluster) and
// server_j_per_token that over the repeat's generated tokens, both n = 0
// where the server reported none; server_prefill_s is the per-repeat mean
// of the server's prompt_tokens / prompt_tps. client_energy_window_short
// is true when some repeat's client energy window was shorter than
// ShortWindowFactor sample intervals (its rows carry energy_window_short,
// and tables leave energy_j out); client_energy_short_window_s is then the
// shortest such window and client_energy_sample_interval_s the samples'
// resolution. The placement fields name
// the placement the cell ran on, with the rows' names for them; a sweep of
// several placements has one record per placement and cell.
type CellRecord struct {
	PlacementSharding     string `json:"placement_sharding,omitempty"`
	PlacementInstanceMeta string `json:"placement_instance_meta,omitempty"`
	PlacementNodes        int    `json:"placement_nodes,omitempty"`
	// Placement is the three above as one label, "pipeline-ring-2n".
	Placement       string       `json:"placement,omitempty"`
	PP              int          `json:"pp"`
	TG              int          `json:"tg"`
	Concurrency     int          `json:"concurrency"`
	Repeats         int          `json:"repeats"`
	Requests        int          `json:"requests"`
	Failed          int          `json:"failed"`
	PromptTPS       IntervalJSON `json:"prompt_tps"`
	GenerationTPS   IntervalJSON `json:"generation_tps"`
	ExoAggregateTPS IntervalJSON `json:"exo_aggregate_tps"`
	ThroughputTPS   IntervalJSON `json:"throughput_tps"`
	TTFTS           IntervalJSON `json:"ttft_s"`
	EnergyJ         IntervalJSON `json:"energy_j"`
	JPerToken       IntervalJSON `json:"j_per_token"`
	ServerEnergyJ   IntervalJSON `json:"server_energy_j"`
	ServerJPerToken IntervalJSON `json:"server_j_per_token"`
	ServerPrefillS  IntervalJSON `json:"server_prefill_s"`
	// The client energy's short-window flag and its figures; see above.
	ClientEnergyWindowShort     bool     `json:"client_energy_window_short,omitempty"`
	ClientEnergyShortWindowS    float64  `json:"client_energy_short_window_s,omitempty"`
	ClientEnergySampleIntervalS float64  `json:"client_energy_sample_interval_s,omitempty"`
	PeakMemoryBytes             int64    `json:"peak_memory_bytes"`
	Warnings                    []string `json:"warnings,omitempty"`
}

// IntervalJSON is a repeat-level confidence interval in a results file,
// with the standard deviation of the repeats beside it. Undefined values
// are null.
type IntervalJSON struct {
	Center     *float64 `json:"center"`
	Lo         *float64 `json:"lo"`
	Hi         *float64 `json:"hi"`
	SD         *float64 `json:"sd"`
	N          int      `json:"n"`
	Confidence float64  `json:"confidence"`
}

// Record converts s for a results file.
func (s CellSummary) Record() CellRecord {
	return CellRecord{
		PlacementSharding: s.Placement.Sharding, PlacementInstanceMeta: s.Placement.InstanceMeta,
		PlacementNodes: s.Placement.Nodes, Placement: s.Placement.String(),
		PP: s.Cell.PP, TG: s.Cell.TG, Concurrency: s.Cell.Concurrency,
		Repeats: s.Repeats, Requests: s.Requests, Failed: s.Failed,
		PromptTPS: intervalJSON(s.PromptTPS), GenerationTPS: intervalJSON(s.GenerationTPS),
		ExoAggregateTPS: intervalJSON(s.ExoAggregateTPS), ThroughputTPS: intervalJSON(s.ThroughputTPS),
		TTFTS: intervalJSON(s.TTFTS), EnergyJ: intervalJSON(s.EnergyJ), JPerToken: intervalJSON(s.JPerToken),
		ServerEnergyJ: intervalJSON(s.ServerEnergyJ), ServerJPerToken: intervalJSON(s.ServerJPerToken),
		ServerPrefillS:          intervalJSON(s.ServerPrefillS),
		ClientEnergyWindowShort: s.EnergyWindowShort, ClientEnergyShortWindowS: s.ShortWindowS,
		ClientEnergySampleIntervalS: s.SampleIntervalS,
		PeakMemoryBytes:             s.PeakMemoryBytes, Warnings: s.Warnings,
	}
}

// WriteJSON writes d as indented JSON. Non-finite numbers in rows are a
// programming error upstream (rows hold null for undefined figures), so an
// encoding failure is returned, not hidden.
func WriteJSON(w io.Writer, d Document) error {
	if d.Runs == nil {
		d.Runs = []Row{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return fmt.Errorf("benchkit: write results JSON: %w", err)
	}
	return nil
}
