package benchkit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAppendJSONL appends two runs to a file whose last line a killed run
// cut: the cut line stays a line of its own, each run begins with a whole
// header, and JSONLReader skips the headers, reports the cut line as a
// line error, and says which run each row belongs to.
func TestAppendJSONL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	rows := fixtureRows()[:2]
	whole, _ := jsonLine(rows[0])
	if err := os.WriteFile(path, append(whole, whole[:len(whole)/2]...), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, prog := range []string{"run-a", "run-b"} {
		h := RunHeader{Program: prog, PID: os.Getpid(), Started: time.Now().UTC().Format(time.RFC3339Nano)}
		j, err := AppendJSONL(path, h)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Add(rows[i]); err != nil {
			t.Fatal(err)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines, want 6 (row, cut row, header, row, header, row):\n%s", len(lines), b)
	}
	for _, i := range []int{2, 4} {
		if _, ok := ParseRunHeader([]byte(lines[i])); !ok {
			t.Errorf("line %d is not a whole run header: %s", i+1, lines[i])
		}
	}
	jr := NewJSONLReader(bytes.NewReader(b))
	var progs []string
	var lineErrs int
	for jr.Scan() {
		if jr.LineErr() != nil {
			lineErrs++
			continue
		}
		p := "none"
		if h := jr.Header(); h != nil {
			p = h.Program
			if h.PID != os.Getpid() || h.Started == "" {
				t.Errorf("header %+v: want this process and a start time", *h)
			}
		}
		progs = append(progs, p)
	}
	if lineErrs != 1 || strings.Join(progs, ",") != "none,run-a,run-b" {
		t.Errorf("rows of runs %v and %d line errors; want none,run-a,run-b and 1", progs, lineErrs)
	}
}

func jsonLine(r Request) ([]byte, error) {
	var buf bytes.Buffer
	err := NewJSONLSink(&buf).Add(r)
	return buf.Bytes(), err
}

// TestParseRunHeader tells headers from rows, including a row whose text
// mentions run_header.
func TestParseRunHeader(t *testing.T) {
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{`{"run_header":{"program":"serve-load","pid":7,"started":"2026-01-02T03:04:05Z"}}`, true},
		{`  {"run_header": {}}  `, true},
		{`{"run_header": null}`, false},
		{`{"error": "server said \"run_header\""}`, false},
		{`{"run_header": 3}`, false},
		{`"run_header"`, false},
		{`{"pp_tokens": 1}`, false},
	} {
		if _, ok := ParseRunHeader([]byte(tc.line)); ok != tc.ok {
			t.Errorf("ParseRunHeader(%s) = %v, want %v", tc.line, ok, tc.ok)
		}
	}
}
