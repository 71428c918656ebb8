package benchkit

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// probeRun runs w at tr against the embedded engine with a running batch
// of 2, and fails t on an error.
func runWithProbes(t *testing.T, w Lengths, tr Traffic) LoadRun {
	t.Helper()
	srv := sim.NewServer(sim.Options{Preset: sim.Fast(), MaxRunning: 2})
	defer srv.Close()
	c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	var sunk []Request
	l := &Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}, Simulated: true,
		Sinks: []Sink{SinkFunc(func(r Request) error { sunk = append(sunk, r); return nil })}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := l.Run(ctx, w, tr, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(sunk), len(run.Requests)+len(run.Probes); got != want {
		t.Errorf("the sinks got %d rows; want the %d requests and %d probes", got, len(run.Requests), len(run.Probes))
	}
	return run
}

// TestLoadProbes sends probes at 40/s beside a load that saturates the
// embedded engine's running batch of 2 (120 requests/s of 30 tokens, about
// 30 ms each, so a capacity near 60/s: a queue that grows for the whole
// schedule), and beside a light one (10/s of one token). A probe waits
// behind the queue for its one token, so its median TTFT under the heavy
// load is many times its TTFT beside the light one (a millisecond or two:
// the bound asks for 5× and 20 ms more). The probes are in no figure of
// the load: the requests' summary counts only its requests, and
// summarising every row (as a JSONL reader does) gives the same.
func TestLoadProbes(t *testing.T) {
	sched := Traffic{Duration: 400 * time.Millisecond, Seed: 5, ProbeRate: 40}
	heavy, light := sched, sched
	heavy.Rate, light.Rate = 120, 10
	loaded := runWithProbes(t, Lengths{Input: 40, Output: 30}, heavy)
	idle := runWithProbes(t, Lengths{Input: 40, Output: 1}, light)

	median := func(run LoadRun) float64 {
		t.Helper()
		p := run.Summary.Probes
		if p == nil || p.TTFT.P50 == nil || p.E2E.P50 == nil {
			t.Fatalf("no probe summary or no probe TTFT: %+v", p)
		}
		return *p.TTFT.P50
	}
	busy, free := median(loaded), median(idle)
	if busy < 5*free || busy < free+0.020 {
		t.Errorf("probe median TTFT %.4fs under a saturating load, %.4fs beside a light one; expected ≥ 5× and ≥ 20 ms more", busy, free)
	}
	t.Logf("probe median TTFT: %.4fs under load, %.4fs without; %d and %d probes", busy, free, len(loaded.Probes), len(idle.Probes))

	for _, run := range []LoadRun{loaded, idle} {
		s := run.Summary
		if len(run.Probes) < 10 || s.Probes.Requests != len(run.Probes) || s.Probes.Completed != len(run.Probes) {
			t.Errorf("%d probes, summary of %d (%d completed); expected about 16, all completed", len(run.Probes), s.Probes.Requests, s.Probes.Completed)
		}
		for _, p := range run.Probes {
			if !p.Probe || p.TGTarget != 1 || p.Tokens() != 1 {
				t.Errorf("probe %d: probe %v, %d tokens asked, %d got; expected a one-token probe", p.Index, p.Probe, p.TGTarget, p.Tokens())
			}
		}
		for _, q := range run.Requests {
			if q.Probe {
				t.Fatalf("request %d is a probe among the requests", q.Index)
			}
		}
		if s.Requests != len(run.Requests) || s.Scheduled != len(run.Requests) {
			t.Errorf("summary counts %d requests of %d scheduled; the run has %d requests beside %d probes", s.Requests, s.Scheduled, len(run.Requests), len(run.Probes))
		}
		all := Summarize(slices.Concat(run.Requests, run.Probes), ByRun, timing.SLO{})
		if len(all) != 1 || all[0].Requests != s.Requests || *all[0].TTFT.P50 != *s.TTFT.P50 || *all[0].E2E.P99 != *s.E2E.P99 {
			t.Errorf("summarising requests and probes together gave %+v; expected the requests' own figures", all)
		}
	}
	// The probes' last intended send is within the main schedule's span.
	last := loaded.Probes[0].IntendedSendS
	for _, p := range loaded.Probes {
		last = max(last, p.IntendedSendS)
	}
	if span := 0.4; last > span+0.05 {
		t.Errorf("a probe was meant to go at %.3fs, after the main dispatch (%.1fs)", last, span)
	}
}
