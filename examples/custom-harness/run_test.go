package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit/cli"
)

func TestNoFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), nil, &stdout, &stderr); err != nil {
		t.Fatalf("run() = %v; stderr:\n%s", err, stderr.String())
	}
	if first, _, _ := strings.Cut(stderr.String(), "\n"); !strings.Contains(first, "embedded simulated engine") {
		t.Errorf("first stderr line %q does not name the embedded simulated engine", first)
	}
	for _, want := range []string{"request 3: TTFT", "burst of 4", "prewarmed true", "energy:"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
}

func TestBadArgs(t *testing.T) {
	err := run(context.Background(), []string{"--n", "8"}, new(bytes.Buffer), new(bytes.Buffer))
	if code := cli.ExitCode(err); code != cli.ExitUsage {
		t.Errorf("run(--n 8) = %v (exit %d); want a usage error", err, code)
	}
}

// TestHelp: -h, -help and --help are help (exit 0), nothing else is.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"-help"}, {"--help"}} {
		var w bytes.Buffer
		if !helpRequested(args, &w) || !strings.Contains(w.String(), "usage: custom-harness") {
			t.Errorf("%q: not help, or no usage: %q", args, w.String())
		}
	}
	for _, args := range [][]string{nil, {"--n", "8"}, {"-h", "x"}} {
		var w bytes.Buffer
		if helpRequested(args, &w) || w.Len() > 0 {
			t.Errorf("%q taken for help", args)
		}
	}
}

// TestShort keeps the harness what its doc promises: under 60 lines.
func TestShort(t *testing.T) {
	b, err := os.ReadFile("harness.go")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n > 60 {
		t.Errorf("harness.go has %d lines; the example promises at most 60", n)
	}
}
