package benchkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzJSONLReader reads arbitrary bytes as a JSONL file, as a run resumed
// from a file cut by a crash would: the reader never panics, returns one
// record per non-blank line that is not a run header (a *LineError naming
// the line for each that does not decode), and a whole row on a line after
// the damage still reads back exactly.
func FuzzJSONLReader(f *testing.F) {
	whole, err := json.Marshal(fixtureRows()[0])
	if err != nil {
		f.Fatal(err)
	}
	f.Add(append(append([]byte{}, whole...), '\n'))
	f.Add(whole[:len(whole)/2]) // cut mid-line by a crash
	f.Add([]byte("\n\n  \r\n{}\n"))
	f.Add([]byte(`{"pp_tokens": 1} {"pp_tokens": 2}` + "\n"))
	f.Add([]byte(`{"pp_tokens": "x"}` + "\r\n" + `[1,2]` + "\n" + `null`))
	f.Add([]byte(`{"stats": {"peak_memory_usage": {"in_bytes": 5}}, "energy": null, "ttft_s": 1e308}`))
	// A reasoning model's figures, in both shapes, some of them absurd.
	f.Add([]byte(`{"ttfa_s": 0.2, "last_reasoning_s": -1, "reasoning_tokens": -3, "answer_tokens": 1e9, "hidden_tokens": 2}` + "\n" +
		`{"elapsed_s": 1, "ttfa_s": null, "reasoning_tokens": 9223372036854775807, "tpot_answer_s": "x", "energy": {"j_per_answer_token": 0.5}}`))
	f.Add([]byte(`{"run_header":{"program":"serve-load","pid":1,"started":"2026-01-01T00:00:00Z"}}` + "\n" + `{"run_header":null}` + "\n"))
	want := fixtureRows()[0]
	f.Fuzz(func(t *testing.T, data []byte) {
		nonBlank := 0
		for _, line := range bytes.Split(data, []byte("\n")) {
			if _, header := ParseRunHeader(line); len(bytes.TrimSpace(line)) > 0 && !header {
				nonBlank++
			}
		}
		jr := NewJSONLReader(bytes.NewReader(data))
		records, lastLine := 0, 0
		for jr.Scan() {
			records++
			if err := jr.LineErr(); err != nil {
				var le *LineError
				if !errors.As(err, &le) || le.Line <= lastLine {
					t.Fatalf("record %d: line error %v after line %d", records, err, lastLine)
				}
				lastLine = le.Line
				if !cmp.Equal(jr.Request(), Request{}) {
					t.Fatalf("record %d: a line error with a non-zero row", records)
				}
			}
		}
		if err := jr.Err(); err != nil {
			t.Fatalf("read error on in-memory input: %v", err)
		}
		if records != nonBlank {
			t.Fatalf("%d records for %d non-blank lines", records, nonBlank)
		}

		// A whole row written after the damage reads back exactly.
		tail := append(append(append(append([]byte{}, data...), '\n'), whole...), '\n')
		jr = NewJSONLReader(bytes.NewReader(tail))
		var last Request
		var lastErr error
		for jr.Scan() {
			last, lastErr = jr.Request(), jr.LineErr()
		}
		if lastErr != nil {
			t.Fatalf("the whole row after the damage does not decode: %v", lastErr)
		}
		if diff := cmp.Diff(jsonRoundTrip(t, []Request{want})[0], last); diff != "" {
			t.Fatalf("the whole row after the damage (-want +got):\n%s", diff)
		}
	})
}
