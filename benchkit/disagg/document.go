package disagg

import (
	"encoding/json"
	"io"
	"slices"

	"github.com/inferbench/inferbench/benchkit"
)

// Meta describes a disaggregation run.
type Meta struct {
	// Tool names the program; Engine the adapter ("exo") and BaseURL the
	// API's address.
	Tool    string `json:"tool"`
	Engine  string `json:"engine"`
	BaseURL string `json:"base_url,omitempty"`
	// Simulated is true against the embedded engine: every figure is then
	// a model's, not a machine's. Preset names its hardware preset.
	Simulated bool   `json:"simulated"`
	Preset    string `json:"preset,omitempty"`
	// The two sides, as Pair.Describe writes them, and the link.
	Prefill string `json:"prefill"`
	Decode  string `json:"decode"`
	LinkID  string `json:"link_id,omitempty"`
	// Tokenizer says how prompts were counted.
	Tokenizer       string        `json:"tokenizer,omitempty"`
	Plan            benchkit.Plan `json:"plan"`
	CompareBaseline bool          `json:"compare_baseline"`
	// Started and Finished are RFC 3339 wall-clock times.
	Started     string   `json:"started,omitempty"`
	Finished    string   `json:"finished,omitempty"`
	Interrupted bool     `json:"interrupted,omitempty"`
	Warnings    []string `json:"warnings,omitempty"`
	// Provenance says where the results came from: the build, the
	// platform, the command line with secrets redacted, the run nonce and
	// the tokenizer's hashes.
	Provenance *benchkit.Provenance `json:"provenance,omitempty"`
}

// A Document is the results file of a disaggregation run: exo's
// "runs" (a bare array in exo's prefill_decode_bench.py, here under the key
// exo_bench.py uses, with its "cluster"), and inferbench's "meta",
// "phases" with their remote-prefill checks, and "comparison".
type Document struct {
	Runs       []Row           `json:"runs"`
	Cluster    json.RawMessage `json:"cluster,omitempty"`
	Meta       Meta            `json:"meta"`
	Phases     []PhaseReport   `json:"phases"`
	Comparison []Comparison    `json:"comparison"`
}

// NewDocument lays a result out for a file: meta (its LinkID,
// Interrupted and Warnings completed from res, its Decode from res.Pair
// when the run chose the decode placement), the rows, the phases and
// Compare of the rows.
func NewDocument(meta Meta, res Result) Document {
	if res.Pair.Decode.Instance.ID != "" {
		meta.Decode = res.Pair.Describe("decode")
	}
	if meta.LinkID == "" {
		meta.LinkID = res.LinkID
	}
	meta.Interrupted = meta.Interrupted || res.Interrupted
	meta.Warnings = append(slices.Clip(meta.Warnings), res.Warnings...)
	return Document{Runs: res.Rows, Cluster: res.Cluster, Meta: meta, Phases: res.Phases, Comparison: Compare(res.Rows)}
}

// WriteJSON writes d as indented JSON.
func WriteJSON(w io.Writer, d Document) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}
