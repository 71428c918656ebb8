package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/internal/progtest"
	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/workload"
)

// testTrace is the built-in sample's file, given as a --trace.
const testTrace = "synthetic_qwen_traceA_1k.jsonl"

// shortRun is the test's replay: 40 rows (about 7 s of the sample) at
// scales 0.05 and 0.1, so under 2 s each after the 1-s lead-in.
var shortRun = []string{"--trace", testTrace, "--rows", "40", "--scales", "0.05,0.1"}

// shortArgs is shortRun and then extra.
func shortArgs(extra ...string) []string { return append(slices.Clip(shortRun), extra...) }

func readDocument(t *testing.T, path string) document {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d document
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestReplayScales replays 40 rows at two scales against the embedded
// engine: both scales complete, each request goes at start + 1 s + scale
// × its row's timestamp with the row's lengths, the server counts every
// prompt as the row's input length, and mini-sglang's figures in the
// results are those of the requests' own instants.
func TestReplayScales(t *testing.T) {
	out := filepath.Join(t.TempDir(), "q.json")
	var stdout, stderr bytes.Buffer
	// The figures, not the client's schedule, are under test: a loaded
	// machine may lag a request past the saturation gate.
	if err := run(context.Background(), shortArgs("--json-out", out, "--allow-saturated"), &stdout, &stderr); err != nil {
		t.Fatalf("run = %v\n%s", err, stderr.String())
	}
	rows, _, err := workload.ReadAll(mustOpen(t, testTrace), testTrace, &workload.Options{Limit: 40})
	if err != nil {
		t.Fatal(err)
	}
	d := readDocument(t, out)
	if len(d.Runs) != 2 || d.Rows != 40 {
		t.Fatalf("%d runs of %d rows; want 2 of 40", len(d.Runs), d.Rows)
	}
	for k, r := range d.Runs {
		s := summary(r.Load)
		if r.Scale != []float64{0.05, 0.1}[k] || s.Completed != 40 || s.Requests != 40 || s.Traffic != "replay" {
			t.Fatalf("run %d: scale %g, %d/%d completed, traffic %q", k, r.Scale, s.Completed, s.Requests, s.Traffic)
		}
		reqs := r.Load.AllRuns()[0].Requests
		for _, q := range reqs {
			row := rows[q.Index]
			want := 1 + r.Scale*row.At.Seconds()
			if q.ServerPromptTokens == nil || *q.ServerPromptTokens != row.Input || q.PPTarget != row.Input || q.TGTarget != row.Output || q.Tokens() != row.Output {
				t.Errorf("scale %g, request %d: trace %d in %d out; server prompt %v, asked %d, generated %d", r.Scale, q.Index, row.Input, row.Output, q.ServerPromptTokens, q.PPTarget, q.Tokens())
			}
			if math.Abs(q.IntendedSendS-want) > 1e-6 {
				t.Errorf("scale %g, request %d: due at %g s, want 1 + %g × %g", r.Scale, q.Index, q.IntendedSendS, r.Scale, row.At.Seconds())
			}
		}
		if diff := cmp.Diff(figuresOf(reqs), r.Mini, cmpopts.EquateApprox(0, 1e-9)); diff != "" || r.Mini.Requests != 40 {
			t.Errorf("scale %g: mini-sglang's figures (-recomputed +written):\n%s", r.Scale, diff)
		}
	}
	progtest.Fits(t, "stdout", stdout.String())
	progtest.Fits(t, "stderr", stderr.String())
	for _, want := range []string{"scale 0.05: 40/40", "scale 0.1: 40/40", "every scale, mini-sglang's figure | ours", "Why mini-sglang's figures and ours differ", "SIMULATED"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestExitStatuses: the exit status follows cli.Outcome: failed requests
// exit 1 (and are left out of mini-sglang's figures), a client too slow
// for the schedule exits 3 and an interrupt 130, with the scales finished
// before it written.
func TestExitStatuses(t *testing.T) {
	t.Run("failed requests", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "q.json")
		h := hooks{target: func(tg *cli.Target) {
			tg.Sim.Fault, tg.Sim.FaultEvery = sim.Fault{Kind: sim.FaultCutWithoutDone}, 4
		}}
		var stdout, stderr bytes.Buffer
		err := runWith(context.Background(), shortArgs("--json-out", out, "--allow-saturated"), &stdout, &stderr, h)
		if cli.ExitCode(err) != cli.ExitFailed || !errors.Is(err, cli.ErrRequestsFailed) {
			t.Fatalf("run = %v; want some requests failed (exit 1)", err)
		}
		for _, r := range readDocument(t, out).Runs {
			if s := summary(r.Load); s.Failed == 0 || r.Mini == nil || r.Mini.LeftOut != s.Failed || r.Mini.Requests != s.Completed {
				t.Errorf("scale %g: %d failed, mini-sglang's figures %+v", r.Scale, s.Failed, r.Mini)
			}
		}
	})
	t.Run("saturated", func(t *testing.T) {
		// 40 ms before each send, against gaps of about 9 ms.
		var stdout, stderr bytes.Buffer
		err := runWith(context.Background(), shortRun, &stdout, &stderr, hooks{wrap: progtest.SlowClient(40 * time.Millisecond)})
		if cli.ExitCode(err) != cli.ExitSaturated || !strings.Contains(err.Error(), "scale 0.05") {
			t.Fatalf("run = %v; want the client saturated (exit 3), by scale", err)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "q.json")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var stdout, stderr bytes.Buffer
		err := runWith(ctx, shortArgs("--json-out", out, "--allow-saturated"), &stdout, &stderr, hooks{afterScale: func(int) { cancel() }})
		if cli.ExitCode(err) != cli.ExitInterrupted {
			t.Fatalf("run = %v; want interrupted (exit 130)", err)
		}
		if d := readDocument(t, out); len(d.Runs) != 1 || d.Runs[0].Scale != 0.05 {
			t.Errorf("%d runs written; want the first scale's", len(d.Runs))
		}
		if !strings.Contains(stdout.String(), "scale 0.05: 40/40") || strings.Contains(stdout.String(), "scale 0.1:") {
			t.Errorf("stdout does not hold the first scale alone:\n%s", stdout.String())
		}
	})
}

// TestBadFlags: every bad command line is a usage error (exit 2) and
// nothing reaches the server.
func TestBadFlags(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "not expected", http.StatusTeapot)
	}))
	defer srv.Close()
	for _, args := range [][]string{
		{"--scales", "0"},
		{"--scales", "0.4,,1"},
		{"--scales", "fast"},
		{"--rows", "-1"},
		{"--trace", "no-such-file.jsonl"},
		{"--trace", "../../workload/testdata/synthetic_burstgpt.csv"},
		{"--base-url", srv.URL, "--model", "m"}, // no --tokenizer
		{"--sim-preset", "nope"},
		{"--grace", "-1s"},
		{"stray"},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, &stdout, &stderr); cli.ExitCode(err) != cli.ExitUsage {
			t.Errorf("run(%q) = %v; want a usage error (exit 2)", args, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server got %d requests from bad command lines; want 0", n)
	}
}

// TestHelpExitsZero: -h writes the usage on stderr and exits 0.
func TestHelpExitsZero(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), []string{arg}, &stdout, &stderr); err != nil {
			t.Errorf("%s: %v, want nil (exit 0)", arg, err)
		}
		if !strings.Contains(stderr.String(), "-scales") || stdout.Len() > 0 {
			t.Errorf("%s: stderr %q, stdout %q; want the usage on stderr only", arg, stderr.String(), stdout.String())
		}
	}
}

// TestDefaultIsBenchQwen: with no flags the run is bench_qwen.py's: the
// built-in sample, its first 1,000 rows at the six
// scales, each first request at 1 s and the last at 1 s + scale × the
// span. Nothing is run: that takes about 13 minutes.
func TestDefaultIsBenchQwen(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parse(nil, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if !o.builtIn || o.trace != sampleName || o.format != workload.Bailian || o.blockSize != 16 {
		t.Fatalf("default trace %s (%s, blocks of %d)", o.trace, o.format, o.blockSize)
	}
	if diff := cmp.Diff([]float64{0.4, 0.5, 0.6, 0.7, 0.8, 1.6}, o.scales); diff != "" {
		t.Errorf("scales (-want +got):\n%s", diff)
	}
	span := 0.0
	for i, rows := range o.scaled {
		if len(rows) != 1000 || rows[0].At != time.Second {
			t.Fatalf("scale %g: %d rows, the first at %v", o.scales[i], len(rows), rows[0].At)
		}
		last := (rows[len(rows)-1].At - time.Second).Seconds() / o.scales[i]
		if i > 0 && math.Abs(last-span) > 1e-3 {
			t.Errorf("scale %g: span %g s, scale %g's %g s", o.scales[i], last, o.scales[0], span)
		}
		span = last
	}
	if span < 150 || span > 190 {
		t.Errorf("the sample's first 1,000 rows span %g s; want about 170 (6 requests/s)", span)
	}
}

// TestBuiltBinaryRunsAnywhere: the sample travels inside the program, so
// the built binary, run from a directory outside the repository with no
// --trace, replays it and exits 0 (with --rows and --scales short: the
// default run takes about 13 minutes), writing its results there.
func TestBuiltBinaryRunsAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the program")
	}
	bin := progtest.Build(t)
	dir := t.TempDir()
	cmd := testkit.Command(t, testkit.Patience, bin, "--rows", "20", "--scales", "0.1", "--json-out", "q.json", "--allow-saturated")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v (exit %d)\n%s", err, cmd.ProcessState.ExitCode(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "synthetic_qwen_traceA_1k.jsonl (built in)") {
		t.Errorf("stdout does not name the built-in sample:\n%s", stdout.String())
	}
	d := readDocument(t, filepath.Join(dir, "q.json"))
	if d.Trace != sampleName || d.Rows != 20 || len(d.Runs) != 1 || summary(d.Runs[0].Load).Completed != 20 {
		t.Errorf("results: trace %q, %d rows, %d runs", d.Trace, d.Rows, len(d.Runs))
	}
}
