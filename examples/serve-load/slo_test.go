package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit/cli"
)

// TestSLOOnTTFA: --slo-ttfa sets the objective on the time to the first
// answer token, for a run and for a merge, with the checks of the other
// objectives: milliseconds, not negative, streamed.
func TestSLOOnTTFA(t *testing.T) {
	_, _, slo, err := parse([]string{"--slo-ttfa", "500", "--slo-ttft", "200"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if slo.TTFA != 500*time.Millisecond || slo.String() != "ttft≤200ms ttfa≤500ms" {
		t.Errorf("SLO %+v (%s), want TTFA 500 ms beside TTFT 200 ms", slo, slo)
	}
	if _, _, _, err := parse([]string{"--find-max-rate", "--slo-ttfa", "500"}, &bytes.Buffer{}); err != nil {
		t.Errorf("--find-max-rate with a TTFA objective alone: %v", err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--slo-ttfa", "-1"}, "--slo-ttfa must be a non-negative number"},
		{[]string{"--slo-ttfa", "500", "--stream=false"}, "need --stream"},
		{[]string{"--find-max-rate"}, "--slo-ttfa"},
	} {
		_, _, _, err := parse(c.args, &bytes.Buffer{})
		if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("parse(%q) = %v; want a usage error naming %q", c.args, err, c.want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = run(ctx, []string{"merge", "--slo-ttfa", "-3", "rows.jsonl"}, &bytes.Buffer{}, &bytes.Buffer{})
	if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(fmt.Sprint(err), "non-negative milliseconds, got -3") {
		t.Errorf("merge --slo-ttfa -3: %v; want a usage error naming it", err)
	}
}
