package main

import (
	"encoding/json"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/energy"
)

// exoDocument is exo-bench's results file read as exo's own tools read
// it: exo's keys, each row exo's (benchkit.ExoRun) with every field the
// file holds. (benchkit.Document writes this shape but does not read it
// back whole: its rows come back as Requests without their ITL summary.)
type exoDocument struct {
	Runs          []benchkit.ExoRun                          `json:"runs"`
	Cluster       json.RawMessage                            `json:"cluster"`
	SystemMetrics map[string]map[string]energy.MetricSummary `json:"system_metrics"`
	Meta          *benchkit.Meta                             `json:"meta"`
	Summary       []json.RawMessage                          `json:"summary"`
}

// failed reports whether a row of the file is a failed request's.
func failed(r benchkit.ExoRun) bool { return r.Error != "" }
