package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/internal/progtest"
)

func TestFindCapacityBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--find-capacity", "--find-max-rate", "--slo-e2e", "100"}, "two searches"},
		{[]string{"--find-capacity", "--burst", "4"}, "no --burst or --users"},
		{[]string{"--find-capacity", "--rate", "2,inf"}, "--rate inf"},
		{[]string{"--find-capacity", "--capacity-runs", "0"}, "--capacity-runs must be at least 1"},
		{[]string{"--find-capacity", "--capacity-tolerance", "0"}, "--capacity-tolerance must be a positive number"},
		{[]string{"--find-capacity", "--search-factor", "1"}, "--search-factor must be a finite number above 1"},
	} {
		_, _, _, err := parse(tc.args, &bytes.Buffer{})
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q) = %v, want a usage error saying %q", tc.args, err, tc.want)
		}
	}
	o, rates, _, err := parse([]string{"--find-capacity", "--rate", "2,4"}, &bytes.Buffer{})
	if err != nil || rates != nil || len(o.capacity.rates) != 2 {
		t.Errorf("--find-capacity --rate 2,4: %v, rates %v, first rates %v; want the list as the search's first rates", err, rates, o.capacity.rates)
	}
}

// TestFindCapacityOutputs runs a short capacity search against the
// embedded engine: the JSON carries the result beside every run, with
// the search's cost, and the table marks each run's state and says where
// the knee is.
func TestFindCapacityOutputs(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of load")
	}
	p := sim.Fast()
	p.Hardware.StepOverhead = 10 * time.Millisecond
	srv := sim.NewServer(sim.Options{Preset: p, MaxRunning: 4})
	defer srv.Close()
	common := []string{"--allow-saturated", "--base-url", srv.VLLMURL, "--model", srv.Model(), "--pp", "64", "--tg", "16",
		"--num-requests", "0", "--duration", "1s", "--seed", "1", "--slo-e2e", "600",
		"--find-capacity", "--rate", "8,32", "--capacity-runs", "3", "--no-server-metrics"}
	out := filepath.Join(t.TempDir(), "capacity.json")
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), append(common, "--json-out", out), &stdout, &stderr); err != nil && !errors.Is(err, cli.ErrRequestsFailed) {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	progtest.Fits(t, "stdout", stdout.String())
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	doc := newLoadDocument()
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	c := doc.Capacity
	if c == nil {
		t.Fatal("no capacity in the results")
	}
	requests := 0
	for i, r := range doc.Runs {
		requests += r.Summary.Requests
		if r.Requests[0].Run != i {
			t.Errorf("run %d numbered %d", i, r.Requests[0].Run)
		}
	}
	if c.Runs != len(doc.Runs) || c.Requests != requests || len(c.Points) != len(doc.Runs) || c.Runs < 2 || c.Runs > 3 || !(c.Seconds > 0) {
		t.Errorf("capacity counts %d runs, %d requests, %d points, %g s; the document has %d runs, %d requests (want 2 or 3 runs)",
			c.Runs, c.Requests, len(c.Points), c.Seconds, len(doc.Runs), requests)
	}
	if c.SLO != "e2e≤600ms" || c.Attainment != 0.9 {
		t.Errorf("capacity judged against %q at %g, want e2e≤600ms at 0.9", c.SLO, c.Attainment)
	}
	table := stdout.String()
	for _, want := range []string{"saturation", "knee (the throughput stops following the offered rate)", "capacity at e2e≤600ms for 90% of requests", "capacity search over"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table says nothing of %q:\n%s", want, table)
		}
	}
}
