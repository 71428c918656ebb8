package benchkit

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// TestTrafficRampChecks refuses every ramp and probe setting that cannot
// be sent, with ErrBadLoad, and describes and hashes the ramps it takes.
func TestTrafficRampChecks(t *testing.T) {
	ok := Traffic{Rate: 1, RampShape: "linear", RampTo: 10, RampOver: time.Second, Duration: 2 * time.Second}
	for name, bad := range map[string]Traffic{
		"shape":        {Rate: 1, RampShape: "log", RampTo: 10, RampOver: time.Second, NumRequests: 5},
		"no shape":     {Rate: 1, RampTo: 10, RampOver: time.Second, NumRequests: 5},
		"no end":       {Rate: 1, RampShape: "linear", RampOver: time.Second, NumRequests: 5},
		"inf end":      {Rate: 1, RampShape: "linear", RampTo: math.Inf(1), RampOver: time.Second, NumRequests: 5},
		"no length":    {Rate: 1, RampShape: "linear", RampTo: 10, NumRequests: 5},
		"exp from 0":   {Rate: 0, RampShape: "exponential", RampTo: 10, RampOver: time.Second, NumRequests: 5},
		"inf start":    {Rate: math.Inf(1), RampShape: "linear", RampTo: 10, RampOver: time.Second, NumRequests: 5},
		"burst":        {Burst: 4, RampShape: "linear", RampTo: 10, RampOver: time.Second},
		"replay":       {Replay: true, RampShape: "linear", RampTo: 10, RampOver: time.Second},
		"no bound":     {Rate: 1, RampShape: "linear", RampTo: 10, RampOver: time.Second},
		"probe NaN":    {Rate: 1, NumRequests: 5, ProbeRate: math.NaN()},
		"probe < 0":    {Rate: 1, NumRequests: 5, ProbeRate: -1},
		"probe burst":  {Burst: 4, ProbeRate: 1},
		"probe closed": {Users: 2, NumRequests: 4, ProbeRate: 1},
	} {
		if err := bad.Validate(); !errors.Is(err, ErrBadLoad) {
			t.Errorf("%s: %+v.Validate() = %v; want ErrBadLoad", name, bad, err)
		}
	}
	if err := ok.Validate(); err != nil {
		t.Errorf("%+v: %v", ok, err)
	}
	from0 := ok
	from0.Rate = 0
	if err := from0.Validate(); err != nil {
		t.Errorf("a linear ramp from 0: %v", err)
	}
	if got, want := ok.String(), "ramp(linear 1/s→10/s over 1s)"; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
	if _, isRamp := ok.Arrivals().(concurrency.Ramp); !isRamp {
		t.Errorf("Arrivals() = %T; want a concurrency.Ramp", ok.Arrivals())
	}
	// Every ramp setting and the probes are in the plan's hash and in the
	// JSON the meta carries.
	l := &Load{Model: "m", Nonce: "n"}
	w := Lengths{Input: 10, Output: 2}
	base := l.PlanHash(0, w, ok)
	for _, change := range []func(*Traffic){
		func(t *Traffic) { t.RampShape = "exponential" },
		func(t *Traffic) { t.RampTo = 11 },
		func(t *Traffic) { t.RampOver = 2 * time.Second },
		func(t *Traffic) { t.Rate = 2 },
		func(t *Traffic) { t.ProbeRate = 1 },
	} {
		c := ok
		change(&c)
		if l.PlanHash(0, w, c) == base {
			t.Errorf("%+v has the plan hash of %+v", c, ok)
		}
	}
	b, _ := json.Marshal(Traffic{Rate: 1, RampShape: "exponential", RampTo: 8, RampOver: time.Second, NumRequests: 3, ProbeRate: 2})
	for _, key := range []string{`"ramp_shape":"exponential"`, `"ramp_to":8`, `"ramp_over_ns":1000000000`, `"probe_rate":2`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("traffic JSON %s lacks %s", b, key)
		}
	}
}

// TestLoadRamp sends a linear ramp from 20 to 200 requests/s over 1 s,
// then 0.5 s at 200/s, to the embedded engine, and counts the requests
// actually sent (their send offsets, not the schedule) in three windows
// against Λ, the ramp's integral: 32.5, 77.5 and 100 expected. Each count
// of a Poisson ramp is Poisson, so within 4.5 √m of its mean, less the
// few requests a busy machine sends late into the next window. A constant rate of the same number (about 70 in
// each) falls outside the first window's bound, and one of the start rate
// (10 in the first) or the end rate outside the others: the test fails
// unless the load follows the ramp. The run says it has no single
// offered rate.
func TestLoadRamp(t *testing.T) {
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer srv.Close()
	c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	l := &Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}, Simulated: true}
	tr := Traffic{Rate: 20, RampShape: "linear", RampTo: 200, RampOver: time.Second, Duration: 1500 * time.Millisecond, Seed: 3}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := l.Run(ctx, Lengths{Input: 40, Output: 2}, tr, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	s := run.Summary
	if s.RequestRate != nil || s.Traffic != "ramp(linear 20/s→200/s over 1s)" {
		t.Errorf("summary rate %v, traffic %q; want null and the ramp", s.RequestRate, s.Traffic)
	}
	r, _ := tr.ramp()
	edges := []time.Duration{0, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond}
	counts := make([]int, len(edges)-1)
	var maxLag float64
	for _, q := range run.Requests {
		if q.Failed() {
			t.Fatalf("request %d failed: %s", q.Index, q.Error)
		}
		if q.Rate != nil {
			t.Errorf("request %d has rate %v; a ramp's rows have none", q.Index, *q.Rate)
		}
		if q.Index == 0 {
			continue // the start's, by convention
		}
		maxLag = max(maxLag, q.SendOffsetS-q.IntendedSendS)
		for w := range counts {
			if sec := q.SendOffsetS; sec >= edges[w].Seconds() && sec < edges[w+1].Seconds() {
				counts[w]++
			}
		}
	}
	for w, got := range counts {
		want := r.Expected(edges[w+1]) - r.Expected(edges[w])
		if math.Abs(float64(got)-want) > 4.5*math.Sqrt(want) {
			t.Errorf("[%v, %v): %d requests sent, expected %.1f ± %.1f", edges[w], edges[w+1], got, want, 4.5*math.Sqrt(want))
		}
	}
	t.Logf("sent per window %v over %d requests (largest lag %.3fs); %s", counts, len(run.Requests), maxLag, s.Traffic)
}
