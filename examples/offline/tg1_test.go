package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTG1NamesTPOTUndefined: a burst of one-token replies succeeds, its
// TPOT is null (never 0), and stdout and the results' warnings say why,
// once: the summary of requests that all asked for one token carries
// benchkit's tg=1 note, which offline prints with the summary's other
// warnings, as serve-load does.
func TestTG1NamesTPOTUndefined(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run.json")
	var stdout, stderr bytes.Buffer
	// --allow-saturated: tg=1 is under test, not the client.
	args := []string{"--allow-saturated", "--num-seqs", "3", "--min-input-len", "40", "--max-input-len", "60",
		"--min-output-len", "1", "--max-output-len", "1", "--seed", "1", "--json-out", out}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if n := strings.Count(stdout.String(), tg1Note); n != 1 {
		t.Errorf("stdout names TPOT undefined %d times, want once:\n%s", n, stdout.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	doc := newLoadDocument()
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Summary == nil || countNotes(doc.Summary.Warnings) != 1 || countNotes(doc.Meta.Warnings) != 0 {
		t.Errorf("summary %+v, meta.warnings %q; want the note once, in the summary's warnings", doc.Summary, doc.Meta.Warnings)
	}
	if s := doc.Summary; s == nil || s.Completed != 3 || s.TotalOutputTokens != 3 || s.TPOT.P99 != nil {
		t.Errorf("summary %+v; want 3 completed one-token replies and no TPOT", doc.Summary)
	}
}

// tg1Note opens benchkit's note on tg=1.
const tg1Note = "tg=1: TPOT, ITL and the generation rate are undefined"

// countNotes counts the warnings that are benchkit's tg=1 note.
func countNotes(warnings []string) int {
	n := 0
	for _, w := range warnings {
		if strings.HasPrefix(w, tg1Note) {
			n++
		}
	}
	return n
}
