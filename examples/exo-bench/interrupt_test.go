package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/internal/progtest"
	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize/hf"
	"github.com/inferbench/inferbench/promptsize/hf/hftest"
)

// jsonlLines counts the complete row lines of a file that may still be
// written (its run header line is not a row).
func jsonlLines(path string) int {
	b, _ := os.ReadFile(path)
	n := bytes.Count(b, []byte("\n"))
	if first, _, ok := bytes.Cut(b, []byte("\n")); ok {
		if _, header := benchkit.ParseRunHeader(first); header {
			n--
		}
	}
	return n
}

// TestInterruptWritesRowsAndCleansUp runs exo-bench as a program against
// a sim with a slow preset, and sends it SIGINT once its first row is in
// the JSONL: it must stop sending, let the request in flight finish,
// write every measured row to the JSONL and the results JSON (marked
// interrupted), delete the instance it created, and exit with status 130.
func TestInterruptWritesRowsAndCleansUp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	bin := progtest.Build(t)
	tokDir := hftest.WriteTokenizer(t)
	tok, err := hf.Load(tokDir)
	if err != nil {
		t.Fatal(err)
	}
	// About 0.5 s per request of 16 tokens: the sweep of 40 would take
	// 20 s, so it is still under way when the signal arrives, however
	// slowly a loaded machine runs this test's polling loop.
	srv := sim.NewServer(sim.Options{Preset: sim.M3UltraGemma27B(), Nodes: 1, NoInstance: true, LoadDelay: -1, Counter: tok})
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	dir := t.TempDir()
	jsonl, out := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "out.json")
	cmd := testkit.Command(t, testkit.Patience, bin, "--host", u.Hostname(), "--port", u.Port(), "--model", srv.Model(), "--tokenizer", tokDir,
		"--pp", "64", "--tg", "16", "--repeat", "40", "--max-nodes", "1", "--settle-timeout", "0",
		"--pause-repeat", "0", "--pause-group", "0", "--metrics-interval", "0.05", "--json-out", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for jsonlLines(jsonl) < 1 {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("no row after 30 s; stderr:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want status 130; stderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr does not say the run was interrupted:\n%s", stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc exoDocument
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("results JSON is not valid: %v", err)
	}
	lines := jsonlLines(jsonl)
	if len(doc.Runs) != lines || lines < 1 || lines >= 40 {
		t.Errorf("results JSON has %d rows, the JSONL %d; want equal, at least 1 and fewer than 40", len(doc.Runs), lines)
	}
	if doc.Meta == nil || !doc.Meta.Interrupted {
		t.Errorf("results JSON not marked interrupted: %+v", doc.Meta)
	}
	for i, r := range doc.Runs {
		if failed(r) {
			t.Errorf("row %d failed (%s: %s); the request in flight had a grace period to finish", i, r.ErrorKind, r.Error)
		}
	}
	c, err := exo.New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	if ins, err := c.Instances(context.Background()); err != nil || len(ins) != 0 {
		t.Errorf("instances left on the cluster: %v (err %v)", ins, err)
	}
}
