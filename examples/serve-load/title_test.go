package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit/cli"
)

// TestTitleNamesTheTraffic: the table's title names the traffic sent: an
// infinite rate as such (never "rate=0/s"), one rate by its process, a
// sweep by its number of rates.
func TestTitleNamesTheTraffic(t *testing.T) {
	for _, tc := range []struct{ rate, want string }{
		{"inf", "sim/tiny-1b-8bit, rate inf: all at once"},
		{"20", "sim/tiny-1b-8bit, poisson(rate=20/s)"},
		{"20,40", "sim/tiny-1b-8bit, sweep of 2 rates"},
	} {
		var stdout, stderr bytes.Buffer
		// --allow-saturated: the title is under test, not the client.
		args := []string{"--allow-saturated", "--rate", tc.rate, "--num-requests", "3", "--pp", "64", "--tg", "2", "--seed", "1"}
		if err := run(context.Background(), args, &stdout, &stderr); err != nil {
			t.Fatalf("--rate %s: %v\n%s", tc.rate, err, stderr.String())
		}
		title, _, _ := strings.Cut(stdout.String(), "\n")
		if !strings.HasSuffix(title, tc.want) || strings.Contains(title, "rate=0") {
			t.Errorf("--rate %s: title %q, want it to end %q", tc.rate, title, tc.want)
		}
	}
}

// TestFindMaxRateAtSearchMax: when the ceiling itself meets the SLO, the
// report says the search reached --search-max and the highest rate was
// not found, rather than naming a failing probe that never ran.
func TestFindMaxRateAtSearchMax(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"--allow-saturated", "--find-max-rate", "--slo-ttft", "60000", "--search-start", "2", "--search-max", "8",
		"--num-requests", "3", "--pp", "64", "--tg", "2", "--seed", "1"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, "the search reached --search-max 8 requests/s") || !strings.Contains(out, "not found") || strings.Contains(out, "did not;") {
		t.Errorf("the report does not say the search hit its ceiling:\n%s", out)
	}
	if title, _, _ := strings.Cut(out, "\n"); !strings.Contains(title, "search for the highest rate") {
		t.Errorf("title %q does not name the search", title)
	}
}

// TestClosedLoopFlags: --users runs a closed loop of --num-requests,
// titled as one, and refuses what a closed loop has no use for.
func TestClosedLoopFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"--users", "3", "--think", "1ms", "--num-requests", "6", "--pp", "40", "--tg", "4", "--allow-saturated"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "closed(users=3, think=1ms)") || !strings.Contains(stdout.String(), "6/6") {
		t.Errorf("stdout does not show a closed loop of 3 users and 6 requests:\n%s", stdout.String())
	}
	for _, args := range [][]string{{"--users", "2", "--burst", "4"}, {"--users", "2", "--rate", "4"}, {"--think", "1s"}, {"--users", "-1"}} {
		if err := run(context.Background(), args, io.Discard, io.Discard); cli.ExitCode(err) != cli.ExitUsage {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}
