package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit/cli"
)

// TestJSONOutLockedAndReplacedWhole: while another run holds --json-out,
// offline is refused with status 2 naming it and leaves the file alone;
// once free, a run replaces the previous file with its own whole results
// and leaves no temporary or lock file beside it.
func TestJSONOutLockedAndReplacedWhole(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	if err := os.WriteFile(out, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	holder, err := cli.LockOutputs("other-offline", out)
	if err != nil {
		t.Fatal(err)
	}
	// --allow-saturated: the lock is under test, not the burst's skew,
	// which a loaded machine may push past the gate.
	args := []string{"--allow-saturated", "--num-seqs", "2", "--min-input-len", "40", "--max-input-len", "60", "--min-output-len", "4", "--max-output-len", "8", "--json-out", out}
	var stdout, stderr bytes.Buffer
	err = run(context.Background(), args, &stdout, &stderr)
	if code := cli.ExitCode(err); code != cli.ExitUsage || !strings.Contains(err.Error(), "other-offline (pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("while held: exit %d, %v; want %d naming the holder", code, err, cli.ExitUsage)
	}
	if b, _ := os.ReadFile(out); string(b) != "{}\n" {
		t.Errorf("the held file was changed: %q", b)
	}
	holder.Release()

	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	doc := newLoadDocument()
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Requests) != 2 {
		t.Errorf("results: %v, %d requests; want 2", err, len(doc.Requests))
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only out.json", names)
	}
}
