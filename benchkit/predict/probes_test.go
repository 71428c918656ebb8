package predict

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/timing"
)

// TestPredictProbes: head-of-line probes predicted beside an open loop,
// capped and not, against the same plan sent live. The predicted probes
// are one-token requests, none meant after the last main request's send,
// as many as the live run sent (one a probe period either side, as the
// live loops start apart), with the live probes' prompt lengths; they
// stay out of the main figures, go past the cap on requests in flight,
// and wait for the engine: their TTFT under a saturating load is many
// times that beside a light one, live and predicted.
func TestPredictProbes(t *testing.T) {
	opts := slowSteps()
	type result struct{ live, pred benchkit.LoadRun }
	runs := map[string]result{}
	for name, c := range map[string]struct {
		w       benchkit.Lengths
		traffic benchkit.Traffic
	}{
		"loaded": {benchkit.Lengths{Input: 200, Output: 24}, benchkit.Traffic{Rate: 60, NumRequests: 40, Seed: 3, ProbeRate: 40}},
		"light":  {benchkit.Lengths{Input: 200, Output: 1}, benchkit.Traffic{Rate: 10, NumRequests: 8, Seed: 3, ProbeRate: 40}},
		"capped": {benchkit.Lengths{Input: 200, Output: 24}, benchkit.Traffic{Rate: 60, NumRequests: 30, Seed: 3, ProbeRate: 40, MaxConcurrency: 2}},
	} {
		want, l := live(t, opts, c.w, c.traffic)
		got, err := (&Predictor{Load: l, Options: opts}).Run(context.Background(), c.w, c.traffic, timing.SLO{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		runs[name] = result{want, got}
		checkProbes(t, name, got, want, c.traffic)
	}
	p50 := func(r benchkit.LoadRun) float64 { return *r.Summary.Probes.TTFT.P50 }
	for _, side := range []string{"live", "predicted"} {
		loaded, light := p50(runs["loaded"].pred), p50(runs["light"].pred)
		if side == "live" {
			loaded, light = p50(runs["loaded"].live), p50(runs["light"].live)
		}
		t.Logf("%s probe TTFT p50: %.2f ms under load, %.2f ms beside a light one", side, loaded*1e3, light*1e3)
		if side == "predicted" && loaded < 3*light {
			t.Errorf("predicted probe TTFT p50 %.2f ms under load is not 3× the %.2f ms beside a light one", loaded*1e3, light*1e3)
		}
	}
	// The cap holds the main requests, not the probes.
	c := runs["capped"].pred
	if c.Summary.PeakInFlight > 2 {
		t.Errorf("capped at 2, the main requests had %d in flight", c.Summary.PeakInFlight)
	}
	if inFlight(c.Requests, c.Probes) < 3 {
		t.Error("no probe was in flight beside two main requests: the cap held the probes too")
	}
}

// checkProbes checks one predicted run's probes against the plan and the
// live run's.
func checkProbes(t *testing.T, name string, got, want benchkit.LoadRun, traffic benchkit.Traffic) {
	t.Helper()
	s := got.Summary
	if s.Probes == nil || len(got.Probes) == 0 || s.Probes.Requests != len(got.Probes) || s.Probes.Completed != len(got.Probes) {
		t.Fatalf("%s: %d predicted probes, summary %+v", name, len(got.Probes), s.Probes)
	}
	if d := len(got.Probes) - len(want.Probes); d < -1 || d > 1 {
		t.Errorf("%s: %d probes predicted, %d sent live", name, len(got.Probes), len(want.Probes))
	}
	last, span := 0.0, 0.0
	for _, r := range got.Requests {
		last, span = max(last, r.SendOffsetS), max(span, r.IntendedSendS)
		if r.Probe {
			t.Fatalf("%s: request %d is a probe among the requests", name, r.Index)
		}
	}
	// As many as the live run plans (the schedule's span at the rate,
	// twice it under a cap), less those after the last main send.
	if traffic.MaxConcurrency > 0 {
		span *= 2
	}
	planned := int(math.Floor(span*traffic.ProbeRate+1e-9)) + 1
	if n := min(planned, int(math.Floor(last*traffic.ProbeRate+1e-9))+1); len(got.Probes) != n {
		t.Errorf("%s: %d probes predicted; %d planned, the last main send at %.4f s at %g/s makes %d", name, len(got.Probes), planned, last, traffic.ProbeRate, n)
	}
	if covered := planned > int(math.Floor(last*traffic.ProbeRate+1e-9)); covered == hasWarning(s.Probes.Warnings, "do not cover its end") {
		t.Errorf("%s: the probes cover the main dispatch: %v; warnings %q", name, covered, s.Probes.Warnings)
	}
	pp := func(rs []benchkit.Request) []int {
		var out []int
		for _, r := range rs {
			out = append(out, r.PPTarget)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	if g, w := pp(got.Probes), pp(want.Probes); !slices.Equal(g, w) {
		t.Errorf("%s: probe prompt lengths %v predicted, %v live", name, g, w)
	}
	for _, p := range got.Probes {
		if !p.Probe || !p.Predicted || p.TGTarget != 1 || p.Tokens() != 1 || p.IntendedSendS > last+1e-9 {
			t.Errorf("%s: probe %d: probe %v predicted %v, %d asked, %d got, meant at %.4f s (last main send %.4f s)",
				name, p.Index, p.Probe, p.Predicted, p.TGTarget, p.Tokens(), p.IntendedSendS, last)
		}
	}
	if s.Requests != len(got.Requests) || s.Scheduled != traffic.NumRequests {
		t.Errorf("%s: the summary counts %d requests of %d scheduled beside %d probes", name, s.Requests, s.Scheduled, len(got.Probes))
	}
}

// inFlight is the most main requests and probes in flight at once.
func inFlight(main, probes []benchkit.Request) int {
	type edge struct {
		t float64
		d int
	}
	var es []edge
	for _, r := range slices.Concat(main, probes) {
		es = append(es, edge{r.SendOffsetS, 1}, edge{r.DoneS, -1})
	}
	slices.SortFunc(es, func(a, b edge) int {
		if a.t != b.t {
			if a.t < b.t {
				return -1
			}
			return 1
		}
		return a.d - b.d
	})
	n, peak := 0, 0
	for _, e := range es {
		n += e.d
		peak = max(peak, n)
	}
	return peak
}

func hasWarning(ws []string, part string) bool {
	return slices.ContainsFunc(ws, func(w string) bool { return strings.Contains(w, part) })
}
