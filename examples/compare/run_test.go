package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/benchkit/predict"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/internal/progtest"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// measure runs the embedded engine under preset p (an open loop of 100
// requests of 16 output tokens at 25 per second) and writes serve-load's results document to
// path.
func measure(t *testing.T, p sim.Preset, seed uint64, path string) {
	srv := sim.NewServer(sim.Options{Preset: p})
	defer srv.Close()
	c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
	if err != nil {
		t.Error(err)
		return
	}
	defer c.CloseIdleConnections()
	l := &benchkit.Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}}
	lengths := benchkit.Lengths{Input: 64, Output: 16, Seed: seed}
	traffic := benchkit.Traffic{Rate: 25, NumRequests: 100, Seed: seed}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Predicted on the engine's own scheduler and virtual clock
	// (benchkit/predict), not sent: under the race detector, with other
	// packages' tests on the same cores, the live client's own delays
	// would bury a 10 % change in the server; the program is what is
	// tested here (benchkit/compare's benchmarks measure live runs).
	res, err := (&predict.Predictor{Load: l, Options: sim.Options{Preset: p}}).Run(ctx, lengths, traffic, timing.SLO{})
	if err != nil {
		t.Error(err)
		return
	}
	meta := benchkit.LoadMeta{RunInfo: benchkit.RunInfo{Engine: "openai", Simulated: true, Preset: p.Name, Model: srv.Model()},
		Workload: lengths, Traffic: traffic, Rates: []string{"25"}, Stream: true}
	var b bytes.Buffer
	if err := benchkit.WriteJSON(&b, benchkit.NewLoadDocument(meta, []benchkit.LoadRun{res}, nil)); err != nil {
		t.Error(err)
		return
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Error(err)
	}
}

// slower is the fast preset at 500 GB/s (a decode step of about 2 ms),
// or, with worse, with every decode step 10 % longer.
func slower(worse bool) sim.Preset {
	p := sim.Fast()
	p.Name, p.Hardware.MemoryBandwidth = "fast-250gbs", 250e9
	if worse {
		p.Name, p.Hardware.MemoryEfficiency = "slow-decode", 1/1.10125
	}
	return p
}

// tpotLine is the table's tpot_mean line.
func tpotLine(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "tpot_mean") {
			return line
		}
	}
	return ""
}

func tpotUnchanged(out string) bool { return strings.HasSuffix(tpotLine(out), "no change detected") }

func runCode(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	err := run(args, &stdout, &stderr)
	if err != nil {
		stderr.WriteString(err.Error())
	}
	return cli.ExitCode(err), stdout.String(), stderr.String()
}

// TestGateExitStatus: B's preset decodes 10 % slower than A's. Compared
// without a gate the program exits 0 and says TPOT is worse; with a 5 %
// gate it exits 4 (cli.ExitRegression) naming the figure; with a 50 %
// gate 0; without --allow preset it refuses, naming the preset (1). A
// pair too noisy to tell the change (a busy machine) is measured again,
// up to three pairs.
func TestGateExitStatus(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	var code int
	var out, errOut string
	for attempt := range 3 {
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); measure(t, slower(false), uint64(1+2*attempt), a) }()
		go func() { defer wg.Done(); measure(t, slower(true), uint64(2+2*attempt), b) }()
		wg.Wait() // bounded: each run's context ends within 60 s
		if t.Failed() {
			t.FailNow()
		}
		code, out, errOut = runCode("--allow", "preset", a, b)
		if !tpotUnchanged(out) {
			break
		}
		t.Logf("pair %d too noisy: %s", attempt, tpotLine(out))
	}
	if code != cli.ExitOK || !strings.Contains(out, "tpot_mean") {
		t.Fatalf("no gate: exit %d, want 0\n%s%s", code, out, errOut)
	}
	progtest.Fits(t, "stdout", out)
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "tpot_mean") && !strings.Contains(line, "worse") {
			t.Errorf("tpot_mean: %q, want worse", line)
		}
	}
	code, out, errOut = runCode(a, b, "--allow", "preset", "--threshold", "5%", "--gate-figures", "tpot_mean")
	if code != cli.ExitRegression || !strings.Contains(errOut, "tpot_mean") || !strings.Contains(out, "REGRESSION") {
		t.Errorf("5 %% gate: exit %d, want %d naming tpot_mean\n%s%s", code, cli.ExitRegression, out, errOut)
	}
	if code, _, errOut := runCode("--threshold", "50%", "--allow", "preset", a, b); code != cli.ExitOK {
		t.Errorf("50 %% gate: exit %d, want 0: %s", code, errOut)
	}
	// Batches of 10 requests have no TTFT p99: a gate on it alone sees
	// nothing.
	if code, out, errOut := runCode("--threshold", "5%", "--gate-figures", "ttft_p99", "--allow", "preset", a, b); code != cli.ExitFailed ||
		!strings.Contains(errOut, "nothing to test") || !strings.Contains(out, "ttft_p99 was not tested") {
		t.Errorf("a gate on an untested figure: exit %d, want 1\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCode(a, b); code != cli.ExitFailed || !strings.Contains(errOut, "preset:") {
		t.Errorf("two presets without --allow: exit %d, %q; want 1 naming the preset", code, errOut)
	}
	code, out, _ = runCode("--format", "json", "--allow", "preset", a, b)
	var doc struct {
		Tests int `json:"tests"`
		Rows  []struct {
			Figure  string `json:"figure"`
			Verdict string `json:"verdict"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || doc.Tests == 0 || len(doc.Rows) == 0 {
		t.Errorf("--format json: exit %d, %v, %+v", code, err, doc)
	}
}

// TestUsage: help exits 0 with the usage on stderr; bad usage exits 2
// with nothing compared; an unreadable file exits 1.
func TestUsage(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		code, out, errOut := runCode(arg)
		if code != cli.ExitOK || out != "" || !strings.Contains(errOut, "-threshold") || !strings.Contains(errOut, "Exit status") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", arg, code, out, errOut)
		}
	}
	for _, args := range [][]string{
		{"a.json"}, {"a", "b", "c"}, {"--threshold", "x", "a", "b"}, {"--threshold", "-5%", "a", "b"},
		{"--format", "csv", "a", "b"}, {"--gate-figures", "tpot_mean", "a", "b"},
		{"--threshold", "5%", "--gate-figures", "nope", "a", "b"}, {"--alpha", "2", "a", "b"}, {"--batches", "1", "a", "b"},
	} {
		if code, _, errOut := runCode(args...); code != cli.ExitUsage {
			t.Errorf("%q: exit %d (%s), want %d", args, code, errOut, cli.ExitUsage)
		}
	}
	if code, _, _ := runCode(filepath.Join(t.TempDir(), "none.json"), "b.json"); code != cli.ExitFailed {
		t.Errorf("a missing file: exit %d, want 1", code)
	}
	code, out, _ := runCode("--list-figures")
	if code != 0 || !strings.Contains(out, "tpot_mean") || !strings.Contains(out, "lower is better") {
		t.Errorf("--list-figures: exit %d, %q", code, out)
	}
}

// TestParseThreshold: percentages and fractions.
func TestParseThreshold(t *testing.T) {
	for in, want := range map[string]float64{"5%": 0.05, "0.05": 0.05, " 12.5 % ": 0.125, "1": 1} {
		if got, err := parseThreshold(in); err != nil || got != want {
			t.Errorf("%q: %g, %v; want %g", in, got, err, want)
		}
	}
	for _, in := range []string{"", "%", "0", "-1%", "NaN", "inf", "2000%", "5%%"} {
		if _, err := parseThreshold(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// FuzzParseThreshold: any value gives a threshold in (0, 10] or an error.
func FuzzParseThreshold(f *testing.F) {
	for _, s := range []string{"5%", "0.05", "1e-3", "10", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseThreshold(s)
		if err == nil && !(v > 0 && v <= 10) {
			t.Fatalf("%q: %g", s, v)
		}
	})
}
