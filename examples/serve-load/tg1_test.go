package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
)

// TestTG1NamesTPOTUndefined: a run of one-token replies succeeds, its
// TPOT and ITL are null (never 0), and stdout and the results' warnings
// say why (benchkit.TG1Note), as offline does.
func TestTG1NamesTPOTUndefined(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run.json")
	var stdout, stderr bytes.Buffer
	// --allow-saturated: tg=1 is under test, not the client.
	args := []string{"--allow-saturated", "--pp", "64", "--tg", "1", "--num-requests", "3", "--seed", "1", "--json-out", out}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), benchkit.TG1Note) {
		t.Errorf("stdout does not name TPOT undefined:\n%s", stdout.String())
	}
	doc := readDoc(t, out)
	if !slices.Contains(doc.Meta.Warnings, benchkit.TG1Note) {
		t.Errorf("meta.warnings %q lack the note", doc.Meta.Warnings)
	}
	if s := doc.Summary; s == nil || s.Completed != 3 || s.TPOT.P99 != nil || s.ITL.P99 != nil || s.TTFT.P99 == nil {
		t.Errorf("summary %+v; want 3 completed, TTFT but no TPOT or ITL", doc.Summary)
	}
}
