package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/internal/progtest"
	"github.com/inferbench/inferbench/internal/testkit"
)

// slowArgs makes exo-bench measure its embedded engine with the slow
// preset (about 0.5 s a request) for 40 requests: a run that is still
// under way when the test acts on it, however loaded the machine.
func slowArgs(jsonOut string) []string {
	return []string{"--preset", "m3-ultra-gemma3-27b-4bit", "--pp", "64", "--tg", "16", "--repeat", "40",
		"--concurrency", "1", "--metrics-interval", "0.05", "--json-out", jsonOut}
}

// startUntilFirstRow starts the program (with slowArgs) and waits for its
// first row in jsonl: a row of tg 16, which no earlier run of these tests
// wrote.
func startUntilFirstRow(t *testing.T, cmd *exec.Cmd, jsonl string) *bytes.Buffer {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) // bounded: the process is killed first
	deadline := time.Now().Add(60 * time.Second)
	for !hasSlowRow(jsonl) {
		if time.Now().After(deadline) {
			t.Fatalf("no row after 60 s; stderr:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return &stderr
}

// hasSlowRow reports whether the JSONL file holds a whole row of tg 16.
func hasSlowRow(path string) bool {
	b, _ := os.ReadFile(path)
	jr := benchkit.NewJSONLReader(bytes.NewReader(b))
	for jr.Scan() {
		if jr.LineErr() == nil && jr.Request().TGTarget == 16 {
			return true
		}
	}
	return false
}

// readJSONL reads a JSONL file back with benchkit's reader: every line
// must be a whole row.
func readJSONL(t *testing.T, path string) []benchkit.Request {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.IndexByte(b, 0) >= 0 {
		t.Errorf("%s holds NUL bytes", path)
	}
	jr := benchkit.NewJSONLReader(bytes.NewReader(b))
	var rows []benchkit.Request
	for jr.Scan() {
		if err := jr.LineErr(); err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		rows = append(rows, jr.Request())
	}
	return rows
}

// TestSecondRunSameOutputRefused starts two exo-bench programs with the
// same --json-out at once. The second is refused at once with status 2
// and a message naming the first (program and process id), and starts
// nothing; the first, interrupted later, writes a JSONL whose every line
// is a whole row of its own and a results JSON holding the same rows.
func TestSecondRunSameOutputRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	bin := progtest.Build(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	jsonl := filepath.Join(dir, "out.jsonl")
	first := testkit.Command(t, testkit.Patience, bin, slowArgs(out)...)
	firstErr := startUntilFirstRow(t, first, jsonl)

	second := testkit.Command(t, testkit.Patience, bin, slowArgs(out)...)
	var secondErr bytes.Buffer
	second.Stderr = &secondErr
	err := second.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != cli.ExitUsage {
		t.Fatalf("second run: %v, want exit status %d; stderr:\n%s", err, cli.ExitUsage, secondErr.String())
	}
	msg := secondErr.String()
	for _, want := range []string{out, "in use by another run", "exo-bench (pid " + strconv.Itoa(first.Process.Pid)} {
		if !strings.Contains(msg, want) {
			t.Errorf("second run's message does not name %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "embedded") || strings.Count(msg, "\n") != 1 {
		t.Errorf("the refused run did more than say why, in one line:\n%s", msg)
	}

	if err := first.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = first.Wait()
	if !errors.As(err, &ee) || ee.ExitCode() != cli.ExitInterrupted {
		t.Fatalf("first run: %v, want exit status %d; stderr:\n%s", err, cli.ExitInterrupted, firstErr.String())
	}
	rows := readJSONL(t, jsonl)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc exoDocument
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("results JSON is not valid: %v", err)
	}
	if len(rows) == 0 || len(rows) != len(doc.Runs) {
		t.Errorf("JSONL %d rows, results JSON %d; want equal and at least 1", len(rows), len(doc.Runs))
	}
	for i, r := range rows {
		if r.Failed() || r.Repeat != i {
			t.Errorf("JSONL row %d: repeat %d, error %q; want one run's rows in order", i, r.Repeat, r.Error)
		}
	}
	if _, err := os.Stat(out + cli.LockSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file left after the run: %v", err)
	}
}

// TestKilledRunLeavesNoStaleResults runs exo-bench to the end, then runs
// it again on the same paths and kills it with SIGKILL mid-run: from the
// second run's start no results JSON is there, so none from the first run
// sits beside the second's JSONL looking current; the JSONL holds whole
// rows only; and a third run is not blocked by the killed run's lock.
func TestKilledRunLeavesNoStaleResults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	bin := progtest.Build(t)
	dir := t.TempDir()
	out, jsonl := filepath.Join(dir, "out.json"), filepath.Join(dir, "out.jsonl")
	fast := []string{"--preset", "fast", "--pp", "64", "--tg", "8", "--repeat", "1", "--concurrency", "1",
		"--metrics-interval", "0.05", "--json-out", out}
	var stderr bytes.Buffer
	if err := run(context.Background(), fast, &bytes.Buffer{}, &stderr); err != nil {
		t.Fatalf("first run: %v\n%s", err, stderr.String())
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("first run wrote no results JSON: %v", err)
	}

	killed := testkit.Command(t, testkit.Patience, bin, slowArgs(out)...)
	startUntilFirstRow(t, killed, jsonl)
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("mid-run, the first run's results JSON is still beside the new JSONL: %v", err)
	}
	if err := killed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = killed.Wait()
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after kill -9, a results JSON is beside the killed run's JSONL: %v", err)
	}
	for i, r := range readJSONL(t, jsonl) {
		if r.TGTarget != 16 {
			t.Errorf("row %d of the killed run's JSONL is not its own: tg %d", i, r.TGTarget)
		}
	}

	stderr.Reset()
	if err := run(context.Background(), fast, &bytes.Buffer{}, &stderr); err != nil {
		t.Fatalf("run after the kill: %v\n%s", err, stderr.String())
	}
	if rows := readJSONL(t, jsonl); len(rows) != 1 {
		t.Errorf("the JSONL after the third run has %d rows, want its 1", len(rows))
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("the third run wrote no results JSON: %v", err)
	}
}
