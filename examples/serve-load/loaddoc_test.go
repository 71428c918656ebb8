package main

import "github.com/inferbench/inferbench/benchkit"

// newLoadDocument is a LoadDocument to decode a results file into. Its
// meta's workload (the "lengths") is an interface, which encoding/json
// decodes only into the value the interface already holds: serve-load's
// is always a benchkit.Lengths.
func newLoadDocument() benchkit.LoadDocument {
	return benchkit.LoadDocument{Meta: benchkit.LoadMeta{Workload: new(benchkit.Lengths)}}
}
