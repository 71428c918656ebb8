package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/internal/testkit"
)

// The fault matrix of serve-load against the sim's vLLM API: each fault
// goes into every second request, and the kind its rows must carry,
// unstreamed and streamed ("" where the request must succeed).
func faultMatrix() []struct {
	fault                sim.Fault
	wantJSON, wantStream engine.Kind
} {
	return []struct {
		fault                sim.Fault
		wantJSON, wantStream engine.Kind
	}{
		{sim.Fault{Kind: sim.FaultStatus500}, engine.KindStatus, engine.KindStatus},
		{sim.Fault{Kind: sim.FaultStatus503}, engine.KindStatus, engine.KindStatus},
		// A reset before any byte of an answer, on the keep-alive
		// connection the request reused, is a server that had closed it:
		// the request goes out again on another connection (into the
		// sim's next, healthy, slot), and its row says so (resent).
		{sim.Fault{Kind: sim.FaultResetBeforeHeader}, engine.KindNone, engine.KindNone},
		{sim.Fault{Kind: sim.FaultResetMidStream, After: 2}, engine.KindTruncated, engine.KindTruncated},
		{sim.Fault{Kind: sim.FaultCutWithoutDone, After: 2}, engine.KindMalformed, engine.KindTruncated},
		{sim.Fault{Kind: sim.FaultMalformedChunk, After: 1}, engine.KindMalformed, engine.KindMalformed},
		{sim.Fault{Kind: sim.FaultErrorEvent, After: 1}, engine.KindStatus, engine.KindStreamError},
		{sim.Fault{Kind: sim.FaultStall, After: 1, Duration: stallFor}, engine.KindTimeout, engine.KindTimeout},
		{sim.Fault{Kind: sim.FaultSlowDrip, Duration: 200 * time.Microsecond}, engine.KindNone, engine.KindNone},
		{sim.Fault{Kind: sim.FaultWrongContentType}, engine.KindMalformed, engine.KindMalformed},
		{sim.Fault{Kind: sim.FaultOversizedLine, After: 1}, engine.KindNone, engine.KindMalformed},
		{sim.Fault{Kind: sim.FaultUnknownModel}, engine.KindStatus, engine.KindStatus},
		{sim.Fault{Kind: sim.FaultEmptyBody}, engine.KindMalformed, engine.KindMalformed},
	}
}

// The fault matrix's --timeout. Only the stall case needs it to fire: the
// stall lasts stallFor, which no bound here comes near (the sim ends it
// when the client goes away), while the case's healthy requests, a few
// milliseconds of simulated work each, end within stallTimeout unless the
// machine is heavily loaded; when one does not, the case is run again
// with a longer timeout (healthyTimedOut). Every other case gets
// caseTimeout, which its requests never come near: a 2 MiB body decoded
// under the race detector, or a slow drip, takes seconds on a loaded
// machine, and must not be cut.
const (
	stallTimeout = 2 * time.Second
	caseTimeout  = time.Minute
	stallFor     = 10 * time.Minute
	// maxStallTimeout bounds the retries of the stall case, each with
	// twice the timeout of the one before.
	maxStallTimeout = 16 * stallTimeout
)

// healthyTimedOut says whether a healthy request of a fault matrix run (an
// even index) timed out: the machine ran it slower than the stall case's
// bound, so the case tested nothing and is run again.
func healthyTimedOut(t *testing.T, jsonl string) bool {
	t.Helper()
	for _, r := range readRows(t, jsonl) {
		if r.Index%2 == 0 && engine.Kind(r.ErrorKind) == engine.KindTimeout {
			return true
		}
	}
	return false
}

// requestTimeout is the --timeout for a run with fault f.
func requestTimeout(f sim.Fault) time.Duration {
	if f.Kind == sim.FaultStall {
		return stallTimeout
	}
	return caseTimeout
}

func TestFaultMatrixCoversEveryKind(t *testing.T) {
	var have []sim.FaultKind
	for _, c := range faultMatrix() {
		have = append(have, c.fault.Kind)
	}
	if diff := cmp.Diff(sim.FaultKinds(), have); diff != "" {
		t.Errorf("fault matrix and sim.FaultKinds differ (-sim +matrix):\n%s", diff)
	}
}

// waitGoroutines waits (boundedly) until no more goroutines run than
// before. The bound is not what is measured: it only has to outlast the
// slowest exit of a goroutine on a loaded machine, and a passing test
// waits no longer than that exit.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines run, %d before:\n%s", runtime.NumGoroutine(), before, buf[:n])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readRows reads a --jsonl file written by one run: its first line must
// be a run header and every other line must decode as a row.
func readRows(t *testing.T, path string) []benchkit.Request {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []benchkit.Request
	for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		if _, header := benchkit.ParseRunHeader(line); header != (i == 0) {
			t.Errorf("JSONL line %d: run header %v, want one on line 1 only", i+1, header)
		}
		if len(line) == 0 || i == 0 {
			continue
		}
		var r benchkit.Request
		if err := json.Unmarshal(line, &r); err != nil {
			t.Errorf("JSONL line %d does not decode: %v", i+1, err)
		}
		rows = append(rows, r)
	}
	return rows
}

// readDoc reads a --json-out file, which must be valid JSON.
func readDoc(t *testing.T, path string) benchkit.LoadDocument {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := newLoadDocument()
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("results JSON is not valid: %v", err)
	}
	return doc
}

// TestServeLoadFaultMatrix runs serve-load against the sim's vLLM API for
// every fault, streamed and not: four requests one at a time, the second
// and fourth faulted. Faulted requests must be rows with the expected error
// kind and a message, healthy ones must succeed, the run must go to the
// end, the JSONL must hold one line per request, the results JSON must be
// valid and hold every row, the exit status must be 1 (0 where the fault
// is harmless), and no goroutine may outlive the run.
func TestServeLoadFaultMatrix(t *testing.T) {
	for _, fc := range faultMatrix() {
		for _, stream := range []bool{false, true} {
			want := fc.wantJSON
			if stream {
				want = fc.wantStream
			}
			t.Run(fmt.Sprintf("%s/stream=%v", fc.fault.Kind, stream), func(t *testing.T) {
				before := runtime.NumGoroutine()
				var jsonl, out string
				var err error
				for timeout := requestTimeout(fc.fault); ; timeout *= 2 {
					srv := sim.NewServer(sim.Options{Preset: sim.Fast(), Nodes: 1, Fault: fc.fault, FaultEvery: 2})
					dir := t.TempDir()
					jsonl, out = filepath.Join(dir, "rows.jsonl"), filepath.Join(dir, "out.json")
					var stdout, stderr bytes.Buffer
					err = run(context.Background(), []string{"--base-url", srv.VLLMURL, "--model", srv.Model(),
						"--pp", "40", "--tg", "4", "--num-requests", "4", "--max-concurrency", "1", "--timeout", timeout.String(),
						fmt.Sprintf("--stream=%v", stream), "--jsonl", jsonl, "--json-out", out}, &stdout, &stderr)
					srv.Close()
					if !healthyTimedOut(t, jsonl) || timeout >= maxStallTimeout {
						break
					}
					// The bound is too short for this machine now, which is
					// not what the case tests: the case is run again.
					t.Logf("a healthy request took longer than %v; again with %v", timeout, 2*timeout)
				}
				wantCode := cli.ExitFailed
				if want == engine.KindNone {
					wantCode = cli.ExitOK
				}
				if code := cli.ExitCode(err); code != wantCode {
					t.Errorf("exit status %d (err %v), want %d", code, err, wantCode)
				}
				rows := readRows(t, jsonl)
				if len(rows) != 4 {
					t.Fatalf("JSONL has %d rows, want one per request (4)", len(rows))
				}
				for _, r := range rows {
					// Each replay moves the sim's faulted slots by one: the
					// first faulted request was resent, others may be.
					if reset := fc.fault.Kind == sim.FaultResetBeforeHeader; reset && r.Index == 1 && r.Resent == 0 || !reset && r.Resent > 0 {
						t.Errorf("request %d: resent %d times", r.Index, r.Resent)
					}
					faulted := r.Index%2 == 1
					switch {
					case faulted && engine.Kind(r.ErrorKind) != want:
						t.Errorf("request %d (faulted): kind %q, want %q; error %q", r.Index, r.ErrorKind, want, r.Error)
					case faulted && want != engine.KindNone && !strings.Contains(r.Error, "engine:"):
						t.Errorf("request %d (faulted): error message %q does not say what failed", r.Index, r.Error)
					case !faulted && (r.Failed() || r.Tokens() != 4):
						t.Errorf("request %d (healthy): %d tokens, error %s: %s", r.Index, r.Tokens(), r.ErrorKind, r.Error)
					}
				}
				doc := readDoc(t, out)
				if diff := cmp.Diff(rows, doc.Requests, sortByIndex()); diff != "" {
					t.Errorf("results JSON rows differ from the JSONL (-jsonl +json):\n%s", diff)
				}
				waitGoroutines(t, before)
			})
		}
	}
}

func sortByIndex() cmp.Option {
	return cmp.Transformer("byIndex", func(rs []benchkit.Request) map[int]benchkit.Request {
		m := map[int]benchkit.Request{}
		for _, r := range rs {
			m[r.Index] = r
		}
		return m
	})
}

// waitFor polls cond until it holds or 30 seconds pass: a bound on a
// wait, not a measurement, so it is far above how long the condition
// takes on a loaded machine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// countKind counts the rows of a JSONL file (possibly still being
// written) and those whose error kind is kind.
func countKind(path string, kind engine.Kind) (lines, ofKind int) {
	b, _ := os.ReadFile(path)
	for _, line := range bytes.Split(b, []byte("\n")) {
		var r benchkit.Request
		if _, header := benchkit.ParseRunHeader(line); header || json.Unmarshal(line, &r) != nil {
			continue
		}
		lines++
		if engine.Kind(r.ErrorKind) == kind {
			ofKind++
		}
	}
	return lines, ofKind
}

// TestServeLoadServerRestarted stops the server while an open-loop run is
// under way and starts a new one on the same port once a request has
// found nothing listening: every scheduled request is a row, those that
// met the dead port are connect errors (those cut by the stop, reset or
// truncated), and requests after the restart succeed again.
func TestServeLoadServerRestarted(t *testing.T) {
	before := runtime.NumGoroutine()
	opts := sim.Options{Preset: sim.Fast(), Nodes: 1}
	srv := sim.NewServer(opts)
	addr := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "rows.jsonl")
	done := make(chan error, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		// --allow-saturated: a restart, not the client's schedule, is
		// under test (a loaded machine may lag a send past the gate).
		done <- run(context.Background(), []string{"--allow-saturated", "--base-url", srv.VLLMURL, "--model", srv.Model(),
			"--pp", "40", "--tg", "4", "--num-requests", "12", "--rate", "10", "--seed", "1",
			"--jsonl", jsonl, "--json-out", filepath.Join(dir, "out.json")}, &stdout, &stderr)
	}()
	waitFor(t, "two rows", func() bool { n, _ := countKind(jsonl, ""); return n >= 2 })
	srv.Close()
	waitFor(t, "a connect error", func() bool { _, n := countKind(jsonl, engine.KindConnect); return n >= 1 })
	second, err := sim.Start(context.Background(), addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	err = testkit.RecvWithin(t, done, testkit.Patience)
	if code := cli.ExitCode(err); code != cli.ExitFailed {
		t.Errorf("exit status %d (err %v), want %d", code, err, cli.ExitFailed)
	}
	rows := readRows(t, jsonl)
	if len(rows) != 12 {
		t.Fatalf("%d rows, want 12", len(rows))
	}
	for _, r := range rows {
		switch engine.Kind(r.ErrorKind) {
		case engine.KindNone, engine.KindConnect, engine.KindReset, engine.KindTruncated:
		default:
			t.Errorf("request %d: kind %q: %s", r.Index, r.ErrorKind, r.Error)
		}
	}
	if last := rows[len(rows)-1]; last.Failed() {
		t.Errorf("the last request, sent after the restart, failed: %s", last.Error)
	}
	doc := readDoc(t, filepath.Join(dir, "out.json"))
	if len(doc.Requests) != 12 {
		t.Errorf("results JSON holds %d rows, want 12", len(doc.Requests))
	}
	second.Close()
	waitGoroutines(t, before)
}
