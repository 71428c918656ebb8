package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
)

// TestTG1NamesTPOTUndefined: a burst of one-token replies succeeds, its
// TPOT is null (never 0), and stdout and the results' warnings say why
// (benchkit.TG1Note), as serve-load does.
func TestTG1NamesTPOTUndefined(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run.json")
	var stdout, stderr bytes.Buffer
	// --allow-saturated: tg=1 is under test, not the client.
	args := []string{"--allow-saturated", "--num-seqs", "3", "--min-input-len", "40", "--max-input-len", "60",
		"--min-output-len", "1", "--max-output-len", "1", "--seed", "1", "--json-out", out}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), benchkit.TG1Note) {
		t.Errorf("stdout does not name TPOT undefined:\n%s", stdout.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc benchkit.LoadDocument
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(doc.Meta.Warnings, benchkit.TG1Note) {
		t.Errorf("meta.warnings %q lack the note", doc.Meta.Warnings)
	}
	if s := doc.Summary; s == nil || s.Completed != 3 || s.TotalOutputTokens != 3 || s.TPOT.P99 != nil {
		t.Errorf("summary %+v; want 3 completed one-token replies and no TPOT", doc.Summary)
	}
}
