package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit/cli"
)

// TestRampFlagsRefused: every ramp or probe flag that cannot be sent is a
// usage error (exit 2) naming what is wrong, before anything starts.
func TestRampFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--ramp", "linear", "--ramp-end-rate", "10", "--ramp-duration", "1s", "--duration", "2s"}, "--ramp starts at one --rate"},
		{[]string{"--ramp", "linear", "--rate", "1,2", "--ramp-end-rate", "10", "--ramp-duration", "1s"}, "no rate list"},
		{[]string{"--ramp-end-rate", "10", "--rate", "1"}, "need --ramp linear or --ramp exponential"},
		{[]string{"--ramp", "cubic", "--rate", "1", "--ramp-end-rate", "10", "--ramp-duration", "1s"}, `ramp shape must be linear or exponential, got "cubic"`},
		{[]string{"--ramp", "exponential", "--rate", "0", "--ramp-end-rate", "10", "--ramp-duration", "1s"}, "cannot start from 0"},
		{[]string{"--ramp", "linear", "--rate", "1", "--ramp-end-rate", "0", "--ramp-duration", "1s"}, "end rate must be a positive"},
		{[]string{"--ramp", "linear", "--rate", "1", "--ramp-end-rate", "5"}, "ramp's length must be positive"},
		{[]string{"--probe-rate", "-1", "--rate", "1"}, "probe rate must be"},
		{[]string{"--probe-rate", "2", "--burst", "4"}, "probes go beside an open loop"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tc.args, &stdout, &stderr)
			if code := cli.ExitCode(err); code != cli.ExitUsage || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("exit %d, %v; want %d and %q", code, err, cli.ExitUsage, tc.want)
			}
		})
	}
}

// TestServeLoadRampAndProbes runs a linear ramp with probes against the
// embedded engine: the title and the table name the ramp, the summary
// has no single offered rate, the results carry the ramp in the meta's
// traffic and the probes apart from the requests, and stdout has the
// probes' line.
func TestServeLoadRampAndProbes(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run.json")
	var stdout, stderr bytes.Buffer
	// --allow-saturated: the ramp is under test, not the client.
	args := []string{"--allow-saturated", "--rate", "0", "--ramp", "linear", "--ramp-end-rate", "40", "--ramp-duration", "500ms",
		"--duration", "800ms", "--num-requests", "0", "--pp", "64", "--tg", "4", "--probe-rate", "20", "--seed", "2", "--json-out", out}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	const ramp = "ramp(linear 0/s→40/s over 500ms)"
	if s := stdout.String(); !strings.Contains(s, "SIMULATED (fast): sim/tiny-1b-8bit, "+ramp) || !strings.Contains(s, "head-of-line probes beside "+ramp) {
		t.Errorf("stdout lacks the ramp's title or the probes' line:\n%s", s)
	}
	doc := readDoc(t, out)
	tr := doc.Meta.Traffic
	if tr.RampShape != "linear" || tr.RampTo != 40 || tr.RampOver.Seconds() != 0.5 || tr.ProbeRate != 20 {
		t.Errorf("meta traffic %+v; want the ramp and the probe rate", tr)
	}
	s := doc.Summary
	if s == nil || s.RequestRate != nil || s.Traffic != ramp || s.Probes == nil {
		t.Fatalf("summary %+v; want no single rate, the ramp and the probes' summary", s)
	}
	if len(doc.Probes) == 0 || s.Probes.Requests != len(doc.Probes) || s.Requests != len(doc.Requests) {
		t.Errorf("%d probes (summary %d), %d requests (summary %d)", len(doc.Probes), s.Probes.Requests, len(doc.Requests), s.Requests)
	}
	for _, p := range doc.Probes {
		if !p.Probe || p.TGTarget != 1 {
			t.Errorf("probe %d: %+v", p.Index, p)
		}
	}
}
