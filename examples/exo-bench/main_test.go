package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	_ "image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/internal/progtest"
	"golang.org/x/perf/benchfmt"
)

// runFast runs exo-bench against the embedded engine with the fast preset
// and small lengths, writing its files under a temporary directory. It
// passes --allow-saturated: these tests are not about the client's
// health, and a loaded machine may skew a burst past the gate's bound.
func runFast(t *testing.T, extra ...string) (stdout, stderr string, dir string, err error) {
	t.Helper()
	dir = t.TempDir()
	args := append([]string{"--allow-saturated", "--preset", "fast", "--json-out", filepath.Join(dir, "out.json"), "--metrics-interval", "0.05"}, extra...)
	var o, e bytes.Buffer
	err = run(context.Background(), args, &o, &e)
	return o.String(), e.String(), dir, err
}

func TestDefaultRunWritesExactRows(t *testing.T) {
	out, errOut, dir, err := runFast(t, "--pp", "64,200", "--tg", "8", "--concurrency", "1,3", "--repeat", "2")
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, errOut)
	}
	if !strings.HasPrefix(out, "exo-bench: no --host: measuring the embedded simulated engine") || !strings.Contains(out, "every figure is simulated") {
		t.Errorf("stdout does not start by saying the engine is simulated:\n%s", out)
	}
	progtest.Fits(t, "stdout", out)
	progtest.Fits(t, "stderr", errOut)
	b, err := os.ReadFile(filepath.Join(dir, "out.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc exoDocument
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	// 2 pp × (1 + 3) × 2 repeats.
	if len(doc.Runs) != 16 {
		t.Fatalf("%d rows, want 16", len(doc.Runs))
	}
	for _, r := range doc.Runs {
		if failed(r) {
			t.Errorf("row failed: %s", r.Error)
			continue
		}
		if r.PPTokens != r.PPTarget || r.Stats == nil || r.Stats.GenerationTokens != r.TG || r.Stats.PromptTokens != r.PPTokens {
			t.Errorf("row pp %d/%d, stats %+v", r.PPTokens, r.PPTarget, r.Stats)
		}
		if !r.Simulated || r.Energy == nil {
			t.Errorf("row simulated %v energy %v", r.Simulated, r.Energy)
		}
	}
	if doc.Meta == nil || !doc.Meta.Simulated || len(doc.SystemMetrics) == 0 || len(doc.Cluster) == 0 {
		t.Errorf("meta %+v, system metrics %d nodes, cluster %d bytes", doc.Meta, len(doc.SystemMetrics), len(doc.Cluster))
	}
	// The JSONL file has a run header with the provenance, then one line
	// per row.
	jl, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(jl), "\n")
	if h, ok := benchkit.ParseRunHeader([]byte(first)); !ok || h.Provenance == nil || h.Provenance.GoVersion == "" || len(h.Provenance.Command) == 0 {
		t.Errorf("JSONL line 1 is not a run header with the provenance: %.300s", first)
	}
	if doc.Meta.Provenance == nil || doc.Meta.Provenance.Server == nil || len(doc.Meta.Provenance.Server.Nodes) == 0 {
		t.Errorf("results JSON: provenance %+v, want the cluster's node identities", doc.Meta.Provenance)
	}
	if n := strings.Count(string(jl), "\n"); n != 17 {
		t.Errorf("JSONL has %d lines, want a header and 16 rows", n)
	}
}

func TestStdoutIsOnlyJSON(t *testing.T) {
	out, errOut, _, err := runFast(t, "--pp", "64", "--tg", "4", "--concurrency", "1", "--repeat", "1", "--stdout", "--stream")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &top); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
	}
	for _, k := range []string{"runs", "cluster", "system_metrics"} {
		if _, ok := top[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if !strings.Contains(errOut, "every figure is simulated") {
		t.Errorf("stderr does not say the engine is simulated:\n%s", errOut)
	}
}

func TestBenchfmtIsReadable(t *testing.T) {
	out, errOut, _, err := runFast(t, "--pp", "64", "--tg", "4", "--concurrency", "1,2", "--repeat", "2", "--format", "benchfmt")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	rd := benchfmt.NewReader(strings.NewReader(out), "stdout")
	results := 0
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Errorf("benchfmt syntax error: %v", rec)
		case *benchfmt.Result:
			results++
			if v, ok := rec.Value("prompt-tok"); !ok || v != 64 {
				t.Errorf("%s: prompt-tok %v", rec.Name, v)
			}
		}
	}
	if results != 4 {
		t.Errorf("%d results, want one per repeat of each cell (4)\n%s", results, out)
	}
}

func TestDryRunListsPlacements(t *testing.T) {
	out, errOut, dir, err := runFast(t, "--dry-run", "--max-nodes", "2")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	if !strings.Contains(out, "placement(s) of") || !strings.Contains(out, "Pipeline") {
		t.Errorf("dry run output:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dry run wrote results: %v", err)
	}
}

func TestBadUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--tg", "0"}, "tg=0"},
		{[]string{"--pp", "2"}, "below the chat template's overhead"},
		{[]string{"--repeat", "0"}, "--repeat=0"},
		{[]string{"--concurrency", "0"}, "concurrency=0"},
		{[]string{"--format", "xml"}, `--format="xml"`},
		{[]string{"--metrics-interval", "0.01"}, "--metrics-interval"},
		{[]string{"--pp", "x"}, "not an integer"},
		{[]string{"--host", "127.0.0.1"}, "--model is required"},
		{[]string{"--host", "127.0.0.1", "--model", "m"}, "--tokenizer DIR is required"},
		{[]string{"--tokenizer", "/nonexistent"}, "--tokenizer /nonexistent"},
		{[]string{"--preset", "nope"}, `--preset: sim: unknown preset "nope"`},
		{[]string{"--sharding", "diagonal"}, "--sharding"},
	}
	for _, tc := range tests {
		_, _, dir, err := runFast(t, tc.args...)
		var u *cli.UsageError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want a usage error saying %q", tc.args, err, tc.want)
		}
		if code := exitCode(err, &bytes.Buffer{}); code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		if _, err := os.Stat(filepath.Join(dir, "out.json")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%v: results written for bad usage", tc.args)
		}
	}
}

func TestPlotIsAPNG(t *testing.T) {
	png := filepath.Join(t.TempDir(), "plots", "gen.png")
	_, errOut, _, err := runFast(t, "--pp", "64", "--tg", "4", "--concurrency", "1,2,4", "--plot", png)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	f, err := os.Open(png)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, format, err := image.DecodeConfig(f)
	if err != nil || format != "png" || cfg.Width < 300 || cfg.Height < 200 {
		t.Errorf("plot: %v, format %q, %dx%d; want a PNG of at least 300x200", err, format, cfg.Width, cfg.Height)
	}
}

func TestPowerPlot(t *testing.T) {
	png := filepath.Join(t.TempDir(), "power.png")
	_, errOut, _, err := runFast(t, "--pp", "64", "--tg", "16", "--stream", "--plot-power", png)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	f, err := os.Open(png)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, format, err := image.DecodeConfig(f); err != nil || format != "png" {
		t.Errorf("power plot: %v, format %q", err, format)
	}
	// Without node metrics there is nothing to plot: bad usage, said up front.
	_, _, _, err = runFast(t, "--plot-power", png, "--no-system-metrics")
	var u *cli.UsageError
	if !errors.As(err, &u) {
		t.Errorf("--plot-power with --no-system-metrics: %v, want a usage error", err)
	}
}

// TestTG1NamesTPOTUndefined: tg=1 runs as in serve-load and offline; its
// TPOT and client generation rate are null, never 0, and the run says why,
// once: the plan's tg=1 note (benchkit.Plan.Warnings), logged on stderr
// and kept among the results' warnings.
func TestTG1NamesTPOTUndefined(t *testing.T) {
	_, errOut, dir, err := runFast(t, "--pp", "64", "--tg", "1", "--concurrency", "1,2", "--repeat", "1", "--stream")
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, errOut)
	}
	if n := strings.Count(errOut, tg1Note); n != 1 {
		t.Errorf("stderr names the undefined figures (%q) %d times, want once:\n%s", tg1Note, n, errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, "out.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc exoDocument
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Runs) != 3 {
		t.Fatalf("%d rows, want 3", len(doc.Runs))
	}
	for _, r := range doc.Runs {
		if failed(r) || r.TTFTS == nil || r.TPOTS != nil || r.ClientGenerationTPS != nil {
			t.Errorf("row: error %q, ttft %v, tpot %v, client generation tps %v; want a measured TTFT and null TPOT and rate",
				r.Error, r.TTFTS, r.TPOTS, r.ClientGenerationTPS)
		}
	}
	notes := 0
	for _, w := range doc.Meta.Warnings {
		if strings.HasPrefix(w, "benchkit: "+tg1Note) {
			notes++
		}
	}
	if notes != 1 {
		t.Errorf("results warnings %q hold the tg=1 note %d times, want once", doc.Meta.Warnings, notes)
	}
}

// tg1Note opens benchkit's note on tg=1.
const tg1Note = "tg=1: TPOT, ITL and the generation rate are undefined"
