package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/internal/progtest"
	"github.com/inferbench/inferbench/twin"
)

// -h writes the usage, with the program's own flags, and exits 0.
func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &stdout, &stderr); err != nil {
		t.Fatalf("-h: %v", err)
	}
	for _, f := range []string{"-out", "-probe-pp", "-held-rate", "-sim-preset"} {
		if !strings.Contains(stderr.String(), f) {
			t.Errorf("the usage does not name %s", f)
		}
	}
}

// Bad usage is refused with exit 2 before anything is sent or written.
func TestBadUsage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "twin.json")
	for _, args := range [][]string{
		{"--tg", "1"}, {"--repeat", "0"}, {"--probe-pp", "0"}, {"--probe-prefixes", "0"}, {"--held-rate", "-1"}, {"--held-rate", "NaN"},
		{"--base", "nope"}, {"--prefill-chunk", "-1"}, {"--out", ""}, {"stray"},
		{"--sim-preset", filepath.Join(t.TempDir(), "missing.json")},
	} {
		err := run(context.Background(), append([]string{"--out", out}, args...), &bytes.Buffer{}, &bytes.Buffer{})
		var ue *cli.UsageError
		if !errors.As(err, &ue) || cli.ExitCode(err) != 2 {
			t.Errorf("%q: %v (exit %d), want a usage error", args, err, cli.ExitCode(err))
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused run wrote the twin file")
	}
}

// Against the embedded engine, a small probe and held-out plan write a
// twin file that loads, with its fidelity, and the table is printed.
func TestFitsEmbedded(t *testing.T) {
	out := filepath.Join(t.TempDir(), "twin.json")
	var stdout, stderr bytes.Buffer
	args := []string{"--out", out, "--probe-pp", "32,96", "--probe-concurrency", "2,4", "--tg", "8", "--repeat", "1",
		"--held-pp", "48", "--held-concurrency", "1,3", "--held-requests", "8"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	tw, err := twin.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if tw.Fidelity == nil || tw.Fidelity.Runs != 3 || !tw.Server.Simulated {
		t.Errorf("the twin file's fidelity %+v, server %+v; want 3 held-out runs of a simulated server", tw.Fidelity, tw.Server)
	}
	progtest.Fits(t, "stdout", stdout.String())
	progtest.Fits(t, "stderr", stderr.String())
	if !strings.Contains(stdout.String(), "ttft_mean") || !strings.Contains(stdout.String(), "decode base") {
		t.Errorf("stdout has no coefficients or fidelity table:\n%s", stdout.String())
	}
}
