package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/precision"
)

// TestUntil: --until stops a run once its targets are met, before the
// --num-requests cap, and a run whose target the cap cannot reach goes to
// the cap; the table and the results JSON say which, with the margins.
func TestUntil(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, c := range []struct {
		until, num, stopped, note string
	}{
		{"e2e.mean:10%", "400", precision.StoppedMet, "target met after"},
		{"ttft.p99:5%", "40", precision.StoppedCap, "cap reached after 40 of 40 scheduled requests: ttft.p99 ± none"},
	} {
		out := filepath.Join(t.TempDir(), "run.json")
		var stdout, stderr bytes.Buffer
		args := []string{"--allow-saturated", "--sim-preset", "fast", "--input-len", "64", "--output-len", "8", "--range-ratio", "0.5",
			"--rate", "200", "--num-requests", c.num, "--seed", "1", "--until", c.until, "--json-out", out}
		if err := run(ctx, args, &stdout, &stderr); err != nil {
			t.Fatalf("%s: %v\n%s", c.until, err, stderr.String())
		}
		if !strings.Contains(stdout.String(), c.note) {
			t.Errorf("%s: the table does not say %q:\n%s", c.until, c.note, stdout.String())
		}
		s := readDoc(t, out).Summary
		if s == nil || s.Stopped != c.stopped || len(s.Precision) != 1 || s.Precision[0].Met != (c.stopped == precision.StoppedMet) {
			t.Fatalf("%s: summary %+v; want stopped %q", c.until, s, c.stopped)
		}
		if c.stopped == precision.StoppedMet && (s.Requests >= 400 || *s.Precision[0].Margin > 0.10) {
			t.Errorf("%s: %d requests, margin %g; want fewer than the cap of 400, within 10 %%", c.until, s.Requests, *s.Precision[0].Margin)
		}
	}
}

// TestUntilBadFlags: a target the run cannot check is a usage error
// before anything is sent.
func TestUntilBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--until", "ttft.p99"}, "FIGURE.STAT:MARGIN%"},
		{[]string{"--until", "ttft.p99:5%,gen_tps.mean:5%"}, "a load test knows the figures"},
		{[]string{"--until", "ttft.p50:5%", "--stream=false"}, "measures e2e alone"},
		{[]string{"--until", "e2e.p50:5%", "--burst", "4"}, "burst"},
	} {
		_, _, _, err := parse(c.args, &bytes.Buffer{})
		if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("parse(%q) = %v; want a usage error naming %q", c.args, err, c.want)
		}
	}
}
