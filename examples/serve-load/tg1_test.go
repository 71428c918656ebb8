package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestTG1NamesTPOTUndefined: a run of one-token replies succeeds, its
// TPOT and ITL are null (never 0), and stdout and the results' warnings
// say why, once: the summary of requests that all asked for one token
// carries benchkit's tg=1 note, which the table prints among its notes,
// as offline does.
func TestTG1NamesTPOTUndefined(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run.json")
	var stdout, stderr bytes.Buffer
	// --allow-saturated: tg=1 is under test, not the client.
	args := []string{"--allow-saturated", "--pp", "64", "--tg", "1", "--num-requests", "3", "--seed", "1", "--json-out", out}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if n := strings.Count(stdout.String(), tg1Note); n != 1 {
		t.Errorf("stdout names TPOT undefined %d times, want once:\n%s", n, stdout.String())
	}
	doc := readDoc(t, out)
	if doc.Summary == nil || countNotes(doc.Summary.Warnings) != 1 || countNotes(doc.Meta.Warnings) != 0 {
		t.Errorf("summary %+v, meta.warnings %q; want the note once, in the summary's warnings", doc.Summary, doc.Meta.Warnings)
	}
	if s := doc.Summary; s == nil || s.Completed != 3 || s.TPOT.P99 != nil || s.ITL.P99 != nil || s.TTFT.P99 == nil {
		t.Errorf("summary %+v; want 3 completed, TTFT but no TPOT or ITL", doc.Summary)
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
