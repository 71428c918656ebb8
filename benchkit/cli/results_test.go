package cli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestClaimOutputs: the results files' directory is made, every file is
// locked (a second claim is refused), the previous results document is
// removed while an appended rows file keeps its rows, and an empty path is
// skipped.
func TestClaimOutputs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "dir")
	doc, rows := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.jsonl")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{doc, rows} {
		if err := os.WriteFile(p, []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lock, err := ClaimOutputs("bench", Output{Flag: "json-out", Path: doc}, Output{Flag: "jsonl", Path: rows, Append: true}, Output{Flag: "plot"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(doc); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the previous results document is still there: %v", err)
	}
	if b, err := os.ReadFile(rows); err != nil || string(b) != "old\n" {
		t.Errorf("the appended rows file: %q, %v; want its rows kept", b, err)
	}
	if _, err := ClaimOutputs("other", Output{Flag: "json-out", Path: doc}); !errors.Is(err, ErrOutputInUse) || ExitCode(err) != ExitUsage {
		t.Errorf("a second claim: %v; want ErrOutputInUse, exit 2", err)
	}
	lock.Release()
	fresh := filepath.Join(t.TempDir(), "a", "b", "c.json")
	l2, err := ClaimOutputs("bench", Output{Flag: "json-out", Path: fresh})
	if err != nil {
		t.Fatalf("a path under directories that do not exist yet: %v", err)
	}
	l2.Release()
	if _, err := os.Stat(filepath.Dir(fresh)); err != nil {
		t.Errorf("the directory was not made: %v", err)
	}
	file := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ClaimOutputs("bench", Output{Flag: "json-out", Path: filepath.Join(file, "r.json")}); ExitCode(err) != ExitUsage {
		t.Errorf("a path under a file: %v, want a usage error", err)
	}
}

// TestWriteResults: the document is written whole as indented JSON that
// parses back, and a value JSON cannot hold is an error that leaves no
// file.
func TestWriteResults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	if err := WriteResults(path, map[string]any{"summary": map[string]int{"requests": 3}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Summary struct{ Requests int }
	}
	if err := json.Unmarshal(b, &got); err != nil || got.Summary.Requests != 3 {
		t.Errorf("%s: %v", b, err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := WriteResults(bad, map[string]any{"f": func() {}}); err == nil {
		t.Error("an unencodable document was written without error")
	}
	if _, err := os.Stat(bad); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed write left %s: %v", bad, err)
	}
}
