package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	htmlreport "github.com/inferbench/inferbench/benchkit/report"
	"github.com/inferbench/inferbench/internal/browser/browsertest"
	"github.com/inferbench/inferbench/internal/progtest"
)

// keyedCell matches a cell's figure on the page: its index in the
// results file's summary, the field, the text.
var keyedCell = regexp.MustCompile(`data-key="cell(\d+)\.([a-z_]+)">([^<]*)<`)

// runHTML runs exo-bench's default plan on the embedded engine (fast
// preset) with --html and returns the page, the results file and stdout.
func runHTML(t *testing.T, extra ...string) (page string, results []byte, stdout string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sub", "exo.html")
	out, errOut, dir, err := runFast(t, append([]string{"--html", path}, extra...)...)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, errOut)
	}
	h, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	progtest.FetchesNothing(t, string(h))
	b, err := os.ReadFile(filepath.Join(dir, "out.json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(h), b, out
}

// figureMatches reports whether text, "center ±half" or "center", shows
// the interval rec (a results file's {center, lo, hi}) scaled, to the
// digits it prints; a whole-number figure is compared as printed.
func figureMatches(text string, rec json.RawMessage, scale float64) bool {
	var whole float64
	if json.Unmarshal(rec, &whole) == nil {
		return text == strconv.FormatFloat(whole, 'f', -1, 64) || (whole == 0 && text == "—")
	}
	var iv struct{ Center, Hi *float64 }
	if json.Unmarshal(rec, &iv) != nil {
		return false
	}
	if iv.Center == nil {
		return text == "—"
	}
	c, h, withHalf := strings.Cut(text, " ±")
	parts, want := []string{c}, []float64{*iv.Center * scale}
	if iv.Hi != nil && *iv.Hi > *iv.Center {
		if !withHalf {
			return false
		}
		parts, want = append(parts, h), append(want, (*iv.Hi-*iv.Center)*scale)
	}
	// The last digit printed rounds: the half width's where there is
	// one (rounded to its second significant digit, "2100" to hundreds),
	// else the center's.
	tol := roundingOf(parts[len(parts)-1])
	for i, s := range parts {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return false
		}
		if math.Abs(v-want[i]) > tol*1.0001 {
			return false
		}
	}
	return true
}

// TestHTMLPage: the default run with --html writes a page that fetches
// nothing, shows each cell's figures as the results file holds them (by
// data-key), plots the generation rate and the energy per token of each
// cell, and is the page of the results file read back; the help names
// the flag.
func TestHTMLPage(t *testing.T) {
	var help bytes.Buffer
	_ = run(context.Background(), []string{"-h"}, &help, &help)
	progtest.DescribesHTML(t, help.String())
	page, results, stdout := runHTML(t)
	if !strings.Contains(stdout, "page: ") {
		t.Errorf("stdout does not name the page:\n%s", stdout)
	}
	var top struct {
		Summary []map[string]json.RawMessage `json:"summary"`
	}
	if err := json.Unmarshal(results, &top); err != nil {
		t.Fatal(err)
	}
	// The default plan: pp 128 and 256, tg 32, concurrency 1 and 4.
	if len(top.Summary) != 4 {
		t.Fatalf("%d cells in the results file, want 4", len(top.Summary))
	}
	checked := map[string]bool{}
	for _, m := range keyedCell.FindAllStringSubmatch(page, -1) {
		i, _ := strconv.Atoi(m[1])
		field, text := m[2], m[3]
		rec, ok := top.Summary[i][field]
		if !ok {
			t.Errorf("cell%d.%s names no figure of the results file", i, field)
			continue
		}
		scale := 1.0
		if strings.HasSuffix(field, "_s") {
			scale = 1000
		}
		if !figureMatches(text, rec, scale) {
			t.Errorf("cell%d.%s shows %q, the results file %s", i, field, text, rec)
		}
		checked[field] = true
	}
	for _, f := range []string{"prompt_tps", "generation_tps", "exo_aggregate_tps", "throughput_tps", "server_prefill_s", "server_j_per_token", "server_energy_j", "repeats"} {
		if !checked[f] {
			t.Errorf("no cell shows %s by its key", f)
		}
	}
	for _, want := range []string{"SIMULATED", "pipeline-ring-1n", "2 per cell", `aria-label="SIMULATED: Generation rate per cell"`, `aria-label="SIMULATED: Energy per token per cell"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// The results file read back gives the page's figures.
	var doc benchkit.Document
	if err := json.Unmarshal(results, &doc); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := htmlreport.WriteExo(&again, doc, htmlreport.Options{}); err != nil {
		t.Fatal(err)
	}
	if a, b := keyedCell.FindAllString(page, -1), keyedCell.FindAllString(again.String(), -1); strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("the page of the results file read back differs:\n%s\nvs\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	// The text checked above against the results file is what a browser
	// shows, with no error logged and nothing fetched.
	path := filepath.Join(t.TempDir(), "exo.html")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	browsertest.CheckAsShown(t, path)
}

// TestHTMLNoEnergy: a streamed run without node metrics has no energy
// (streamed responses carry no power_usage): the page says so instead
// of drawing an empty plot.
func TestHTMLNoEnergy(t *testing.T) {
	page, _, _ := runHTML(t, "--stream", "--no-system-metrics", "--pp", "64", "--tg", "4", "--concurrency", "1", "--repeat", "1")
	if !strings.Contains(page, "No energy measured") || strings.Contains(page, "Energy per token per cell") {
		t.Error("a run without energy does not say so, or draws its plot")
	}
	if !strings.Contains(page, `data-key="cell0.ttft_s"`) {
		t.Error("a streamed run's page does not show the client's TTFT")
	}
}

// TestHTMLClaimed: --html is claimed like --json-out: a page another run
// holds is refused (exit 2) before anything is sent, and left as it was.
func TestHTMLClaimed(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "r.html")
	if err := os.WriteFile(page, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	holder, err := cli.LockOutputs("other-exo-bench", page)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	_, _, _, err = runFast(t, "--html", page)
	if code := cli.ExitCode(err); code != cli.ExitUsage || err == nil || !strings.Contains(err.Error(), page) {
		t.Fatalf("exit %d (%v), want %d naming %s", code, err, cli.ExitUsage, page)
	}
	if b, _ := os.ReadFile(page); string(b) != "old" {
		t.Errorf("the held page was changed: %q", b)
	}
}

// roundingOf is half the unit of the last digit s shows: of its last
// decimal, or of its last digit before any trailing zeros of a whole
// number of two digits or more ("2100": 50).
func roundingOf(s string) float64 {
	if _, frac, ok := strings.Cut(s, "."); ok {
		return 0.5 * math.Pow(10, -float64(len(frac)))
	}
	zeros := len(s) - len(strings.TrimRight(s, "0"))
	if zeros == len(s) {
		zeros = 0
	}
	return 0.5 * math.Pow(10, float64(zeros))
}
