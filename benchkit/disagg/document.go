package disagg

import (
	"encoding/json"
	"io"
	"slices"

	"github.com/inferbench/inferbench/benchkit"
)

// Meta describes a disaggregation run: the run's core (RunInfo: Model is
// the decode model), the two sides and the link, the plan.
type Meta struct {
	benchkit.RunInfo
	// The two sides, as Pair.Describe writes them, and the link.
	Prefill string `json:"prefill"`
	Decode  string `json:"decode"`
	LinkID  string `json:"link_id,omitempty"`
	// Plan is the plan each phase ran; CompareBaseline whether the
	// baselines were measured.
	Plan            benchkit.Plan `json:"plan"`
	CompareBaseline bool          `json:"compare_baseline"`
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
	rows := make([]Row, len(res.Requests))
	for i, r := range res.Requests {
		rows[i] = rowOf(res.Pair, r)
	}
	return Document{Runs: rows, Cluster: res.Cluster, Meta: meta, Phases: res.Phases, Comparison: Compare(res.Requests)}
}

// WriteJSON writes d as indented JSON.
func WriteJSON(w io.Writer, d Document) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}
