package main

import (
	"bytes"
	"context"
	"image"
	_ "image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit/cli"
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
	if err := run(context.Background(), []string{"--plot", png}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errb.String())
	}
	if f, err := os.Open(png); err != nil {
		t.Errorf("no plot: %v", err)
	} else if _, format, err := image.DecodeConfig(f); err != nil || format != "png" {
		t.Errorf("the plot is not a PNG: %s %v", format, err)
	}
	text := out.String()
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
