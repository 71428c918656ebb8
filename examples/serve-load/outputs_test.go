package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/internal/progtest"
	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize/hf"
	"github.com/inferbench/inferbench/promptsize/hf/hftest"
)

// TestJSONLAppendsWithRunHeader runs serve-load twice with one --jsonl, as
// its help says it appends: the file holds both runs, each opened by a run
// header line that ParseRunHeader recognises, and every other line is a
// row.
func TestJSONLAppendsWithRunHeader(t *testing.T) {
	var help bytes.Buffer
	_ = run(context.Background(), []string{"-h"}, io.Discard, &help)
	if !strings.Contains(help.String(), "append each request's row") || !strings.Contains(help.String(), "run header") {
		t.Errorf("--jsonl help does not say it appends after a run header:\n%s", help.String())
	}
	jsonl := filepath.Join(t.TempDir(), "rows.jsonl")
	for i := range 2 {
		var stdout, stderr bytes.Buffer
		// --allow-saturated: the JSONL file is under test, not the
		// client's schedule, which a loaded machine may lag past the gate.
		err := run(context.Background(), []string{"--allow-saturated", "--pp", "40", "--tg", "4", "--num-requests", "2", "--seed", strconv.Itoa(i), "--jsonl", jsonl}, &stdout, &stderr)
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i+1, err, stderr.String())
		}
	}
	b, err := os.ReadFile(jsonl)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines, want 6 (header, 2 rows, header, 2 rows):\n%s", len(lines), b)
	}
	for i, line := range lines {
		h, header := benchkit.ParseRunHeader([]byte(line))
		if want := i%3 == 0; header != want {
			t.Errorf("line %d: run header %v, want %v: %s", i+1, header, want, line)
		}
		if header && (h.Program != "serve-load" || h.PID != os.Getpid() || h.Started == "") {
			t.Errorf("line %d: header %+v", i+1, h)
		}
		var r benchkit.Request
		if err := json.Unmarshal([]byte(line), &r); !header && (err != nil || r.Failed() || r.Tokens() != 4) {
			t.Errorf("line %d is not a whole successful row (%v): %s", i+1, err, line)
		}
	}
}

// TestOutputInUseRefused holds --jsonl as another run would: serve-load
// refuses with exit status 2, names the holder, starts nothing and leaves
// the file as it was.
func TestOutputInUseRefused(t *testing.T) {
	dir := t.TempDir()
	jsonl, out := filepath.Join(dir, "rows.jsonl"), filepath.Join(dir, "out.json")
	if err := os.WriteFile(jsonl, []byte("{\"index\":0}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	holder, err := cli.LockOutputs("other-serve-load", jsonl)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	var stdout, stderr bytes.Buffer
	err = run(context.Background(), []string{"--num-requests", "2", "--jsonl", jsonl, "--json-out", out}, &stdout, &stderr)
	if code := cli.ExitCode(err); code != cli.ExitUsage {
		t.Fatalf("exit %d (%v), want %d", code, err, cli.ExitUsage)
	}
	if msg := err.Error(); !strings.Contains(msg, jsonl) || !strings.Contains(msg, "other-serve-load (pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("error %q does not name the file and its holder", msg)
	}
	if strings.Contains(stderr.String(), "measuring") {
		t.Errorf("the refused run started measuring:\n%s", stderr.String())
	}
	if b, _ := os.ReadFile(jsonl); string(b) != "{\"index\":0}\n" {
		t.Errorf("the held JSONL was changed: %q", b)
	}
	if b, _ := os.ReadFile(out); string(b) != "{}\n" {
		t.Errorf("the other run's results JSON was changed: %q", b)
	}
}

// lineWatcher collects a program's stderr (it is the command's Stderr, so
// cmd.Wait returns only once every line has been written to it) and
// reports when a line with a given text has been seen.
type lineWatcher struct {
	mu      sync.Mutex
	buf     strings.Builder
	partial []byte
	wants   map[string]chan struct{}
}

func watchLines(wants ...string) *lineWatcher {
	w := &lineWatcher{wants: map[string]chan struct{}{}}
	for _, s := range wants {
		w.wants[s] = make(chan struct{})
	}
	return w
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		w.buf.WriteString(line + "\n")
		for s, ch := range w.wants {
			if strings.Contains(line, s) {
				close(ch)
				delete(w.wants, s)
			}
		}
	}
}

// seen returns a channel closed once a line containing s was read.
func (w *lineWatcher) seen(s string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch, ok := w.wants[s]; ok {
		return ch
	}
	ch := make(chan struct{})
	close(ch)
	return ch
}

func (w *lineWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String() + string(w.partial)
}

// TestSecondSignalExitsAtOnce runs serve-load as a program against a sim
// whose third request stalls for an hour, with a grace period of ten
// minutes, so the graceful stop that the first SIGINT starts is blocked:
// the first SIGINT goes only once the sim's log says it has received the
// third request, so it is in flight whatever the machine's speed. The second SIGINT must
// end the run at once: status 130, well before the grace period, with the
// two rows measured before intact in the JSONL after their run header,
// and no results JSON; the previous run's results JSON was removed when
// the run started, so none is left looking current.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	bin := progtest.Build(t)
	tokDir := hftest.WriteTokenizer(t)
	tok, err := hf.Load(tokDir)
	if err != nil {
		t.Fatal(err)
	}
	// The sim's log says when it injects the fault: request 3 has reached
	// it and is in flight.
	const injecting = "sim: injecting a fault"
	simLog := watchLines(injecting)
	srv := sim.NewServer(sim.Options{Preset: sim.Fast(), Counter: tok,
		Fault: sim.Fault{Kind: sim.FaultStall, Duration: time.Hour}, FaultEvery: 3,
		Logger: slog.New(slog.NewTextHandler(simLog, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	defer srv.Close()
	dir := t.TempDir()
	jsonl, out := filepath.Join(dir, "rows.jsonl"), filepath.Join(dir, "out.json")
	if err := os.WriteFile(out, []byte(`{"meta":{"model":"an earlier run"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	const grace = 10 * time.Minute
	cmd := testkit.Command(t, grace, bin, "--base-url", srv.VLLMURL, "--model", srv.Model(), "--tokenizer", tokDir,
		"--pp", "64", "--tg", "8", "--num-requests", "10", "--max-concurrency", "1",
		"--timeout", "1h", "--grace", grace.String(), "--jsonl", jsonl, "--json-out", out)
	const first, second = "signal again to exit at once", "exiting now with status 130"
	lines := watchLines(first, second)
	cmd.Stderr = lines
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Requests 1 and 2 succeed and request 3 stalls: wait for two rows,
	// and for request 3 to reach the sim.
	deadline := time.Now().Add(60 * time.Second)
	for n, _ := countKind(jsonl, ""); n < 2; n, _ = countKind(jsonl, "") {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than 2 rows after 60 s; stderr:\n%s", lines)
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-simLog.seen(injecting):
	case <-time.After(time.Until(deadline)):
		t.Fatalf("the sim had not received the third request after 60 s; its log:\n%s\nstderr:\n%s", simLog, lines)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the earlier run's results JSON is still there mid-run: %v", err)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lines.seen(first):
	case <-time.After(60 * time.Second):
		t.Fatalf("the first SIGINT was not acknowledged in 60 s; stderr:\n%s", lines)
	}
	sent := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	// The graceful path would wait for the stalled request up to the
	// grace period; a bound far below it tells the two apart on any
	// machine.
	var werr error
	select {
	case werr = <-waited:
	case <-time.After(grace / 5):
		t.Fatalf("still running %v after the second SIGINT; stderr:\n%s", grace/5, lines)
	}
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.ExitCode() != cli.ExitInterrupted {
		t.Fatalf("exit: %v, want status %d; stderr:\n%s", werr, cli.ExitInterrupted, lines)
	}
	t.Logf("exited %v after the second SIGINT", time.Since(sent).Round(time.Millisecond))
	// cmd.Wait has returned, so every line of stderr has been written.
	select {
	case <-lines.seen(second):
	default:
		t.Errorf("stderr does not say %q:\n%s", second, lines)
	}
	rows := readRows(t, jsonl) // a header, then rows that all decode
	if len(rows) != 2 {
		t.Errorf("%d rows in the JSONL, want the 2 measured before the stall", len(rows))
	}
	for _, r := range rows {
		if r.Failed() {
			t.Errorf("request %d failed (%s: %s)", r.Index, r.ErrorKind, r.Error)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a results JSON exists after the immediate exit: %v", err)
	}
}
