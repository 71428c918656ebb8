package benchkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/inferbench/inferbench/capacity"
	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/precision"
	"github.com/inferbench/inferbench/timing"
)

// RunInfo is what every results document says about its run, under
// "meta": what was measured, against what, when, and where the results
// came from.
type RunInfo struct {
	// Tool is "inferbench" (with the program's name) and Version its
	// module version, when known.
	Tool    string `json:"tool"`
	Version string `json:"version,omitempty"`
	// Engine names the engine adapter ("exo", "openai", "sim"); BaseURL
	// its address.
	Engine  string `json:"engine"`
	BaseURL string `json:"base_url,omitempty"`
	// Simulated is true when the engine is the embedded simulated one:
	// every figure is then a model's, not a machine's. Preset names its
	// hardware preset.
	Simulated bool   `json:"simulated"`
	Preset    string `json:"preset,omitempty"`
	// PrefixCache is the embedded engine's prefix cache mode ("radix",
	// "naive"); "" for a real server, whose cache the run cannot see.
	PrefixCache string `json:"prefix_cache,omitempty"`
	// Model is the model measured; Tokenizer says how prompts were
	// counted.
	Model     string `json:"model"`
	Tokenizer string `json:"tokenizer,omitempty"`
	// Started and Finished are RFC 3339 wall-clock times.
	Started  string `json:"started,omitempty"`
	Finished string `json:"finished,omitempty"`
	// Interrupted is true when the run stopped before it was done.
	Interrupted bool `json:"interrupted,omitempty"`
	// Warnings are the run's own (plan cautions, engine notes).
	Warnings []string `json:"warnings,omitempty"`
	// Provenance says where the results came from: the program, the
	// machine, the command line, the run nonce and the server.
	Provenance *Provenance `json:"provenance,omitempty"`
}

// A Document is exo's results file, written at the end of a sweep. Its top
// level is exo's (exo_bench.py's --json-out): "runs" (each Request as an
// ExoRun), "cluster" and "system_metrics", so exo's own analysis reads it;
// inferbench adds "meta" and "summary" (each ByCell Summary as exo-style
// intervals).
type Document struct {
	// Runs are the measured requests, failed ones included (exo drops
	// them; their error fields say what happened).
	Runs []Request
	// Cluster is the cluster snapshot (exo's /state), as the engine
	// reported it.
	Cluster json.RawMessage
	// SystemMetrics summarises each node's sampled metrics over the run:
	// node id → metric → {min, max, mean, samples}.
	SystemMetrics map[string]map[string]energy.MetricSummary
	// Meta says what was measured, against what and how.
	Meta *Meta
	// Summary aggregates each cell over its repeats (Summarize ByCell).
	Summary []Summary
}

// MarshalJSON writes the document in exo's shape.
func (d Document) MarshalJSON() ([]byte, error) {
	out := struct {
		Runs          []ExoRun                                   `json:"runs"`
		Cluster       json.RawMessage                            `json:"cluster,omitempty"`
		SystemMetrics map[string]map[string]energy.MetricSummary `json:"system_metrics,omitempty"`
		Meta          *Meta                                      `json:"meta,omitempty"`
		Summary       []cellRecord                               `json:"summary,omitempty"`
	}{Runs: exoRuns(d.Runs), Cluster: d.Cluster, SystemMetrics: d.SystemMetrics, Meta: d.Meta}
	for _, s := range d.Summary {
		out.Summary = append(out.Summary, s.record())
	}
	return json.Marshal(out)
}

// Meta describes an exo sweep.
type Meta struct {
	RunInfo
	// Plan is the plan as run.
	Plan Plan `json:"plan"`
	// SaturatedBursts are the bursts whose dispatch skew exceeded its
	// bound (Report.CheckBursts); ClientSaturated is true when there is one:
	// the client, not the server, set those bursts' figures.
	SaturatedBursts []BurstHealth `json:"saturated_bursts,omitempty"`
	ClientSaturated bool          `json:"client_saturated,omitempty"`
	// Predicted says the bursts were computed on the embedded engine's
	// virtual clock (package benchkit/predict), never sent.
	Predicted bool `json:"predicted,omitempty"`
}

// LoadMeta describes a load test.
type LoadMeta struct {
	RunInfo
	// Workload and Traffic are the load as asked for; Rates the swept
	// rates ("inf" for infinite).
	Workload Workload `json:"lengths"`
	Traffic  Traffic  `json:"traffic"`
	Rates    []string `json:"rates,omitempty"`
	// Thinking are the thinking settings measured in turn
	// (LoadPlan.Thinking), as the rows label them.
	Thinking []string `json:"thinking,omitempty"`
	// Stream says whether responses were streamed; SLO the objectives.
	Stream bool   `json:"stream"`
	SLO    string `json:"slo,omitempty"`
	// Predicted says the runs were computed on the embedded engine's
	// virtual clock (package benchkit/predict), never sent.
	Predicted bool `json:"predicted,omitempty"`
	// Client is each run's client health (checkRun); ClientSaturated
	// is true when any run's client was the bottleneck.
	Client          []ClientHealth `json:"client_health,omitempty"`
	ClientSaturated bool           `json:"client_saturated"`
	// Segment, when the run sent one segment of a split plan, says which,
	// from what shared start, and on what clocks (docs/DISTRIBUTED.md).
	Segment *SegmentHeader `json:"segment,omitempty"`
}

// A LoadDocument is the results file of a load test. A single run puts
// its summary and requests at the top ("summary", "requests"); a sweep or
// a rate search puts each run under "runs" (every request still carries
// its run and rate) and a search adds "max_rate", a capacity search
// (Load.FindCapacity) "capacity".
type LoadDocument struct {
	Meta     LoadMeta  `json:"meta"`
	Summary  *Summary  `json:"summary,omitempty"`
	Requests []Request `json:"requests,omitempty"`
	// Probes are a single run's head-of-line probes (LoadRun.Probes).
	Probes  []Request `json:"probes,omitempty"`
	Runs    []LoadRun `json:"runs,omitempty"`
	MaxRate *MaxRate  `json:"max_rate,omitempty"`
	// Capacity is where the server saturates: the knee, the capacity at
	// the SLO and each run's state, with the search's cost.
	Capacity *capacity.Result `json:"capacity,omitempty"`
}

// NewLoadDocument lays runs out as LoadDocument describes: one run at the
// top level, several under Runs.
func NewLoadDocument(meta LoadMeta, runs []LoadRun, maxRate *MaxRate) LoadDocument {
	d := LoadDocument{Meta: meta, MaxRate: maxRate}
	if len(runs) == 1 && maxRate == nil {
		s := runs[0].Summary
		d.Summary, d.Requests, d.Probes = &s, runs[0].Requests, runs[0].Probes
		if d.Requests == nil {
			d.Requests = []Request{}
		}
		return d
	}
	d.Runs = runs
	return d
}

// WriteJSON writes a results document (a Document, a LoadDocument, a
// MergedLoad or any value) as indented JSON. Non-finite numbers are a
// programming error upstream (undefined figures are null), so an encoding
// failure is returned, not hidden.
func WriteJSON(w io.Writer, doc any) error {
	if d, ok := doc.(Document); ok && d.Runs == nil {
		d.Runs = []Request{}
		doc = d
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("benchkit: write results JSON: %w", err)
	}
	return nil
}

func toIntervalJSON(iv timing.Interval) intervalJSON {
	j := intervalJSON{Center: finite(iv.Center), Lo: finite(iv.Lo), Hi: finite(iv.Hi), N: iv.N, Confidence: iv.Confidence}
	if iv.N >= 2 {
		j.SD = finite(iv.SD)
	}
	return j
}

// A cellRecord is a ByCell Summary in exo's results file: each interval as
// {center, lo, hi, n}, NaN written as null. Every figure is computed per
// repeat and then summarised over the repeats, as Summary's fields
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
// resolution. For a model that reasons before it answers, ttfa_s is the
// mean client time to the first answer token (TTFT's where a request did
// not reason), reasoning_tokens the mean reasoning tokens of the requests
// that reasoned, answer_tokens the mean answer tokens, and
// j_per_answer_token and server_j_per_answer_token the energies over the
// repeat's answer tokens alone (what an answer costs with its thinking),
// each absent where no repeat has it. The placement fields name
// the placement the cell ran on, with the rows' names for them; a sweep of
// several placements has one record per placement and cell, as a plan of
// several thinking settings has one per setting (thinking) and cell.
type cellRecord struct {
	PlacementSharding     string `json:"placement_sharding,omitempty"`
	PlacementInstanceMeta string `json:"placement_instance_meta,omitempty"`
	PlacementNodes        int    `json:"placement_nodes,omitempty"`
	// Placement is the three above as one label, "pipeline-ring-2n".
	Placement string `json:"placement,omitempty"`
	// Thinking is the cell's thinking setting (Labels.Thinking).
	Thinking        string       `json:"thinking,omitempty"`
	PP              int          `json:"pp"`
	TG              int          `json:"tg"`
	Concurrency     int          `json:"concurrency"`
	Repeats         int          `json:"repeats"`
	Requests        int          `json:"requests"`
	Failed          int          `json:"failed"`
	PromptTPS       intervalJSON `json:"prompt_tps"`
	GenerationTPS   intervalJSON `json:"generation_tps"`
	ExoAggregateTPS intervalJSON `json:"exo_aggregate_tps"`
	ThroughputTPS   intervalJSON `json:"throughput_tps"`
	TTFTS           intervalJSON `json:"ttft_s"`
	EnergyJ         intervalJSON `json:"energy_j"`
	JPerToken       intervalJSON `json:"j_per_token"`
	ServerEnergyJ   intervalJSON `json:"server_energy_j"`
	ServerJPerToken intervalJSON `json:"server_j_per_token"`
	ServerPrefillS  intervalJSON `json:"server_prefill_s"`
	// The client energy's short-window flag and its figures; see above.
	ClientEnergyWindowShort     bool     `json:"client_energy_window_short,omitempty"`
	ClientEnergyShortWindowS    float64  `json:"client_energy_short_window_s,omitempty"`
	ClientEnergySampleIntervalS float64  `json:"client_energy_sample_interval_s,omitempty"`
	PeakMemoryBytes             int64    `json:"peak_memory_bytes"`
	Warnings                    []string `json:"warnings,omitempty"`
	// Precision and Stopped are the cell's targets checked over its
	// repeats and what stopped it (Plan.Until, Summary's fields).
	Precision []precision.Result `json:"precision,omitempty"`
	Stopped   string             `json:"stopped,omitempty"`

	// A model that reasons: see above; each absent where no repeat has it.
	TTFAS                 *intervalJSON `json:"ttfa_s,omitempty"`
	ReasoningTokens       *intervalJSON `json:"reasoning_tokens,omitempty"`
	AnswerTokens          *intervalJSON `json:"answer_tokens,omitempty"`
	JPerAnswerToken       *intervalJSON `json:"j_per_answer_token,omitempty"`
	ServerJPerAnswerToken *intervalJSON `json:"server_j_per_answer_token,omitempty"`
}

// intervalJSON is a repeat-level confidence interval in a results file,
// with the standard deviation of the repeats beside it. Undefined values
// are null.
type intervalJSON struct {
	Center     *float64 `json:"center"`
	Lo         *float64 `json:"lo"`
	Hi         *float64 `json:"hi"`
	SD         *float64 `json:"sd"`
	N          int      `json:"n"`
	Confidence float64  `json:"confidence"`
}

// record converts s for exo's results file.
func (s Summary) record() cellRecord {
	p := s.Labels.Placement
	some := func(iv timing.Interval) *intervalJSON {
		if iv.N == 0 {
			return nil
		}
		j := toIntervalJSON(iv)
		return &j
	}
	c := cellRecord{
		PlacementSharding: p.Sharding, PlacementInstanceMeta: p.InstanceMeta,
		PlacementNodes: p.Nodes, Placement: p.String(), Thinking: s.Labels.Thinking,
		PP: s.Cell.PP, TG: s.Cell.TG, Concurrency: s.Cell.Concurrency,
		Repeats: s.Repeats, Requests: s.Requests, Failed: s.Failed,
		PromptTPS: toIntervalJSON(s.PromptTPS), GenerationTPS: toIntervalJSON(s.GenerationTPS),
		ExoAggregateTPS: toIntervalJSON(s.ExoAggregateTPS), ThroughputTPS: toIntervalJSON(s.ThroughputTPS),
		TTFTS: toIntervalJSON(s.RepeatTTFT), EnergyJ: toIntervalJSON(s.EnergyJ), JPerToken: toIntervalJSON(s.JPerToken),
		ServerEnergyJ: toIntervalJSON(s.ServerEnergyJ), ServerJPerToken: toIntervalJSON(s.ServerJPerToken),
		ServerPrefillS:          toIntervalJSON(s.ServerPrefillS),
		ClientEnergyWindowShort: s.EnergyWindowShort, ClientEnergyShortWindowS: s.ShortWindowS,
		ClientEnergySampleIntervalS: s.SampleIntervalS,
		PeakMemoryBytes:             s.PeakMemoryBytes, Warnings: s.Warnings,
		Precision: s.Precision, Stopped: s.Stopped,
	}
	c.TTFAS, c.ReasoningTokens, c.AnswerTokens = some(s.RepeatTTFA), some(s.RepeatReasoningTokens), some(s.RepeatAnswerTokens)
	c.JPerAnswerToken, c.ServerJPerAnswerToken = some(s.JPerAnswerToken), some(s.ServerJPerAnswerToken)
	return c
}

// Saturation says why the client was the bottleneck: each saturated
// burst's reason, "" when none was.
func (m Meta) Saturation() string { return burstReasons(m.SaturatedBursts) }

// Judge records each run's client health (its summary's, else judged
// from its requests) and whether any run's client was the bottleneck;
// capped says a cap on requests in flight held requests back, so that
// their lag is the server's and is not judged.
func (m *LoadMeta) Judge(runs []LoadRun, capped bool) {
	m.Client, m.ClientSaturated = clientHealths(runs, capped)
}

// Saturation says why the client was the bottleneck: each saturated run's
// reason after its index ("run 0: schedule lag p99 …; run 2: …"), "" when
// none was.
func (m LoadMeta) Saturation() string { return saturationReasons(m.Client) }

// UnmarshalJSON reads a load test's meta, its workload as the random
// lengths it records (the one workload that writes itself today).
func (m *LoadMeta) UnmarshalJSON(b []byte) error {
	type plain LoadMeta
	var p struct {
		plain
		Workload json.RawMessage `json:"lengths"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*m = LoadMeta(p.plain)
	m.Workload = nil
	// Random lengths read back as such; another workload (a trace) is
	// described, not stored, and reads back as none.
	if len(p.Workload) > 0 && bytes.Contains(p.Workload, []byte(`"input_len"`)) {
		var l Lengths
		if err := json.Unmarshal(p.Workload, &l); err != nil {
			return fmt.Errorf("benchkit: the meta's lengths: %w", err)
		}
		m.Workload = l
	}
	return nil
}

// UnmarshalJSON reads exo's results file back: its rows as Requests
// (ExoRun.Request: the per-token gaps come back as their summary alone),
// the cluster, the system metrics and the meta, and the summary
// recomputed from the rows (Summarize ByCell), as it was written.
func (d *Document) UnmarshalJSON(b []byte) error {
	var in struct {
		Runs          []ExoRun                                   `json:"runs"`
		Cluster       json.RawMessage                            `json:"cluster"`
		SystemMetrics map[string]map[string]energy.MetricSummary `json:"system_metrics"`
		Meta          *Meta                                      `json:"meta"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*d = Document{Cluster: in.Cluster, SystemMetrics: in.SystemMetrics, Meta: in.Meta}
	for _, x := range in.Runs {
		d.Runs = append(d.Runs, x.Request())
	}
	if len(d.Runs) > 0 {
		var plan Plan // the plan's targets, checked again
		if in.Meta != nil {
			plan = in.Meta.Plan
		}
		d.Summary = plan.Summarize(d.Runs)
	}
	return nil
}
