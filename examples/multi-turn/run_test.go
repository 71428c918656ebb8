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
	"strconv"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/internal/progtest"
)

// TestDefaultExercise: with no flags the program runs the sessions against
// the embedded engine with its prefix cache on and off; with it on the
// last round's TTFT stays near the first's, with it off TTFT rises round
// by round with the history; every turn's prompt count is the server's
// (the run would fail otherwise).
func TestDefaultExercise(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulated sessions in real time")
	}
	var out, errb bytes.Buffer
	png := filepath.Join(t.TempDir(), "ttft.png")
	if err := run(context.Background(), []string{"--plot", png, "--json-out", filepath.Join(t.TempDir(), "multi-turn.json")}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errb.String())
	}
	if f, err := os.Open(png); err != nil {
		t.Errorf("no plot: %v", err)
	} else if _, format, err := image.DecodeConfig(f); err != nil || format != "png" {
		t.Errorf("the plot is not a PNG: %s %v", format, err)
	}
	text := out.String()
	progtest.Fits(t, "stdout", text)
	progtest.Fits(t, "stderr", errb.String())
	for _, want := range []string{"prefix cache radix: 4 sessions × 5 turns", "prefix cache naive", "20/20"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	_, table, ok := strings.Cut(text, "TTFT p50 per turn")
	if !ok {
		t.Fatalf("no side-by-side table:\n%s", text)
	}
	var radix, naive []float64
	for _, line := range strings.Split(table, "\n")[2:] {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		if _, err := strconv.Atoi(f[0]); err != nil {
			continue // the note under the table
		}
		a, err1 := strconv.ParseFloat(f[1], 64)
		b, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("row %q", line)
		}
		radix, naive = append(radix, a), append(naive, b)
	}
	if len(radix) != 5 {
		t.Fatalf("%d rounds in the table, want 5:\n%s", len(radix), table)
	}
	// The figures are the embedded engine's, in real time on a shared
	// machine: the checks keep wide margins (the example's run shows
	// radix's round 5 at about 1.05× its round 1, naive's at 4.7×).
	if r := radix[4] / radix[0]; r > 2 {
		t.Errorf("radix: round 5's TTFT %.2f ms is %.2f× round 1's; the cache should keep it near flat", radix[4], r)
	}
	if naive[4] < 2*radix[4] {
		t.Errorf("round 5: naive %.2f ms, radix %.2f ms; want the naive cache's to be far longer", naive[4], radix[4])
	}
	for k := 1; k < 5; k++ {
		if naive[k] <= naive[k-1] {
			t.Errorf("naive: round %d's TTFT %.2f ms did not rise from %.2f ms", k+1, naive[k], naive[k-1])
		}
	}
	if naive[4] < 2*naive[0] {
		t.Errorf("naive: round 5's TTFT %.2f ms, round 1's %.2f ms; want it to grow with the history", naive[4], naive[0])
	}
}

// TestBadFlags: a bad flag is a usage error before anything starts.
func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--turns", "0"}, {"extra"}, {"--think", "-1s"}, {"--base-url", "http://127.0.0.1:1", "--prefix-cache", "naive"}} {
		var out, errb bytes.Buffer
		if err := run(context.Background(), args, &out, &errb); cli.ExitCode(err) != cli.ExitUsage {
			t.Errorf("%v: err %v, want a usage error", args, err)
		}
	}
}

// TestJSONOut: --json-out is written as every program's results document
// is (cli.WriteResults), into a directory it makes, and parses back: one
// run per cache mode, each with its summary over the run, one summary per
// turn with the measured and theoretical hit rates, and every turn's row.
func TestJSONOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out", "multi-turn.json")
	args := []string{"--sim-preset", "fast", "--sessions", "2", "--turns", "3", "--user-tokens", "40", "--output-len", "4",
		"--plot", "", "--json-out", path}
	var out, errb bytes.Buffer
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errb.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc benchkit.SessionsDocument
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("the document does not parse: %v\n%.400s", err, b)
	}
	if !doc.Meta.Simulated || doc.Meta.Sessions.Count != 2 || doc.Meta.Sessions.Turns != 3 || doc.Meta.Sessions.UserTokens != 40 {
		t.Errorf("meta %+v", doc.Meta)
	}
	if len(doc.Runs) != 2 || doc.Runs[0].PrefixCache != "radix" || doc.Runs[1].PrefixCache != "naive" {
		t.Fatalf("%d runs, want radix then naive: %+v", len(doc.Runs), doc.Runs)
	}
	for _, r := range doc.Runs {
		if r.Summary.Requests != 6 || r.Summary.Completed != 6 || len(r.Requests) != 6 {
			t.Errorf("%s: summary of %d requests (%d completed), %d rows; want 6", r.PrefixCache, r.Summary.Requests, r.Summary.Completed, len(r.Requests))
		}
		if len(r.Turns) != 3 {
			t.Fatalf("%s: %d turn summaries, want 3", r.PrefixCache, len(r.Turns))
		}
		for k, s := range r.Turns {
			if s.Turn != k+1 || s.Requests != 2 || s.TheoreticalHitRate == nil {
				t.Errorf("%s: turn summary %d: turn %d, %d requests, theoretical hit rate %v", r.PrefixCache, k, s.Turn, s.Requests, s.TheoreticalHitRate)
			}
		}
		// Turn 1 shares nothing but the system prompt; later turns resend
		// their history, which the radix cache serves and the naive one not.
		// (A server that caches nothing reports no cached tokens: no
		// measured rate.)
		last := r.Turns[2]
		switch {
		case r.PrefixCache == "radix" && (last.PrefixHitRate == nil || *last.PrefixHitRate <= 0.5):
			t.Errorf("radix: turn 3's hit rate %v; its history is most of its prompt", last.PrefixHitRate)
		case r.PrefixCache == "naive" && last.PrefixHitRate != nil && *last.PrefixHitRate != 0:
			t.Errorf("naive: turn 3's hit rate %.3f, want none", *last.PrefixHitRate)
		}
	}
	if !strings.Contains(errb.String(), path) {
		t.Errorf("stderr does not name the results file:\n%s", errb.String())
	}
}

// TestPredict: --predict computes the default exercise (4 sessions of 5
// turns, prefix cache on and off) on the virtual clock: the tables are
// labelled predicted, the document and every row say so, and the shape
// the live exercise shows holds (with the cache off TTFT grows with the
// history, with it on it stays near the first turn's).
func TestPredict(t *testing.T) {
	out := filepath.Join(t.TempDir(), "multi-turn.json")
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"--predict", "--plot", "", "--json-out", out}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s%s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{"PREDICTED, prefix cache radix: 4 sessions × 5 turns", "PREDICTED, prefix cache naive", "PREDICTED TTFT p50 per turn", "20/20"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc benchkit.SessionsDocument
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.Meta.Predicted || len(doc.Runs) != 2 {
		t.Fatalf("meta predicted %v, %d runs; want true and 2", doc.Meta.Predicted, len(doc.Runs))
	}
	ttft := map[string][]float64{}
	for _, r := range doc.Runs {
		if len(r.Requests) != 20 {
			t.Fatalf("%s: %d rows, want 20", r.PrefixCache, len(r.Requests))
		}
		for _, row := range r.Requests {
			if !row.Predicted || row.Failed() || row.TTFTS == nil {
				t.Fatalf("%s: row %+v: want a predicted turn with a TTFT", r.PrefixCache, row)
			}
		}
		for _, s := range r.Turns {
			ttft[r.PrefixCache] = append(ttft[r.PrefixCache], *s.TTFT.P50)
		}
	}
	radix, naive := ttft["radix"], ttft["naive"]
	if len(radix) != 5 || len(naive) != 5 {
		t.Fatalf("turn summaries: radix %v, naive %v; want 5 each", radix, naive)
	}
	if radix[4] > 1.5*radix[0] || naive[4] < 2*naive[0] {
		t.Errorf("TTFT p50 by turn: radix %v, naive %v; want radix near flat, naive growing", radix, naive)
	}
	stdout.Reset()
	if err := run(context.Background(), []string{"--predict", "--round-barrier", "--turns", "2", "--prefix-cache", "radix", "--plot", "", "--json-out", ""}, &stdout, &stderr); err != nil ||
		!strings.Contains(stdout.String(), "PREDICTED, prefix cache radix: 4 sessions × 2 turns") {
		t.Errorf("--predict --round-barrier: %v\n%s", err, stdout.String())
	}
	for _, args := range [][]string{
		{"--predict", "--base-url", "http://127.0.0.1:1"},
		{"--predict", "--round-barrier", "--max-active", "2"},
		{"--predict", "--thinking", "on"},
	} {
		err := run(context.Background(), append(args, "--plot", "", "--json-out", ""), &stdout, &stderr)
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--predict") {
			t.Errorf("%v: error %v, want a usage error about --predict", args, err)
		}
	}
}
