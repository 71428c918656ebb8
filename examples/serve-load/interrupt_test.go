package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/internal/progtest"
	"github.com/inferbench/inferbench/internal/testkit"
)

// TestSIGTERMWritesEveryRow runs serve-load as a program against its
// embedded engine with a slow preset and an open loop of two requests a
// second, and sends SIGTERM once the first row is in the JSONL: dispatch
// stops, the requests in flight finish within the grace period, every row
// is in the JSONL and in the results JSON (marked interrupted), and the
// exit status is 130.
func TestSIGTERMWritesEveryRow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	bin := progtest.Build(t)
	dir := t.TempDir()
	jsonl, out := filepath.Join(dir, "rows.jsonl"), filepath.Join(dir, "out.json")
	cmd := testkit.Command(t, testkit.Patience, bin, "--sim-preset", "m3-ultra-gemma3-27b-4bit", "--pp", "64", "--tg", "8",
		"--rate", "4", "--num-requests", "40", "--seed", "2", "--jsonl", jsonl, "--json-out", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := func() int { n, _ := countKind(jsonl, ""); return n }
	deadline := time.Now().Add(30 * time.Second)
	for lines() < 1 {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("no row after 30 s; stderr:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != cli.ExitInterrupted {
		t.Fatalf("exit: %v, want status %d; stderr:\n%s", err, cli.ExitInterrupted, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr does not say the run was interrupted:\n%s", stderr.String())
	}
	rows := readRows(t, jsonl)
	doc := readDoc(t, out)
	if len(rows) == 0 || len(rows) >= 40 || len(doc.Requests) != len(rows) {
		t.Errorf("JSONL %d rows, results JSON %d; want equal, at least 1 and fewer than 40", len(rows), len(doc.Requests))
	}
	if !doc.Meta.Interrupted || doc.Summary == nil || !doc.Summary.Interrupted {
		t.Errorf("results not marked interrupted: meta %v, summary %+v", doc.Meta.Interrupted, doc.Summary)
	}
	for _, r := range rows {
		if r.Failed() {
			t.Errorf("request %d failed (%s: %s); requests in flight had a grace period", r.Index, r.ErrorKind, r.Error)
		}
	}
}
