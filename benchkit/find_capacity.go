package benchkit

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/inferbench/inferbench/capacity"
	"github.com/inferbench/inferbench/timing"
)

// FindCapacity sweeps offered rates to find where the server saturates
// (package capacity: the knee, the service rate at over-saturation, where
// the latency leaves its floor, and the capacity at slo with its
// interval), running a load test with traffic's other settings at each.
//
// It runs opts.Rates, or a ladder from opts.Start multiplied by
// opts.Factor, until a run over-saturates the server and, when slo sets
// an objective, one surely misses it; then it adds rates where
// capacity.Analyze says (the geometric midpoints of the knee's and the
// capacity's brackets) until both are within opts.Tolerance, no rate is
// left to add, or opts.MaxRuns runs were made. A nil opts means every
// default. Runs are numbered in the order made, as Sweep numbers them;
// the result holds the cost of the search (runs, requests, seconds), and
// warns of each run whose client could not keep its schedule (its lag
// is part of the backlog the state is judged on).
//
// Each run should last long enough for its backlog to tell (a
// Traffic.Duration of a few seconds holds several batches of requests at
// every rate; a NumRequests alone makes the higher rates' runs shorter).
// A run that fails (a bad load, ctx ending) stops the search: the result
// analyses the runs so far, and the error is returned with them.
func (l *Load) FindCapacity(ctx context.Context, w Workload, traffic Traffic, slo timing.SLO, opts *capacity.Options) (capacity.Result, []LoadRun, error) {
	return l.FindCapacityBy(ctx, traffic, slo, opts, func(ctx context.Context, index int, t Traffic) (LoadRun, error) {
		return l.run(ctx, index, w, t, slo)
	})
}

// FindCapacityBy is FindCapacity's search (the same ladder, the same
// classification by capacity.Analyze, the same refinement) with each run
// made by runAt instead of sent: runAt is called with the run's number, from
// 0 in the order made, and traffic at the rate to run; it returns the
// run as Load.Run would (a prediction of it, for package
// benchkit/predict). The result's Seconds are the search's wall time.
func (l *Load) FindCapacityBy(ctx context.Context, traffic Traffic, slo timing.SLO, opts *capacity.Options, runAt func(ctx context.Context, index int, traffic Traffic) (LoadRun, error)) (capacity.Result, []LoadRun, error) {
	var o capacity.Options
	if opts != nil {
		o = *opts
	}
	o, err := o.WithDefaults()
	if err != nil {
		return capacity.Result{}, nil, fmt.Errorf("%w: %w", ErrBadLoad, err)
	}
	if traffic.Burst > 0 || traffic.Users > 0 || traffic.Replay || traffic.RampShape != "" {
		return capacity.Result{}, nil, fmt.Errorf("%w: a burst, a closed loop, a replay or a ramp has no one rate to sweep", ErrBadLoad)
	}
	queue := o.Rates
	if len(queue) == 0 {
		queue = []float64{o.Start}
	}
	for _, r := range queue {
		t := traffic
		t.Rate = r
		if err := t.Validate(); err != nil {
			return capacity.Result{}, nil, err
		}
	}
	name := ""
	if slo != (timing.SLO{}) {
		name = slo.String()
	}
	began := time.Now()
	var runs []LoadRun
	var points []capacity.Point
	analyze := func() capacity.Result {
		res, _ := capacity.Analyze(points, name, o) // the options were checked above
		res.Runs, res.Seconds = len(runs), time.Since(began).Seconds()
		for _, r := range runs {
			res.Requests += r.Summary.Requests
			// A client that fell behind its schedule counts its own lag
			// as backlog: say so beside the state it gave the run.
			if h := r.Summary.Client; h != nil && h.Saturated && r.Summary.RequestRate != nil {
				res.Warnings = append(res.Warnings, fmt.Sprintf("rate %.3g/s: the client was the bottleneck (%s); its lag counts in the backlog", *r.Summary.RequestRate, h.Reason))
			}
		}
		return res
	}
	for len(runs) < o.MaxRuns {
		var rate float64
		if len(queue) > 0 {
			rate, queue = queue[0], queue[1:]
		} else {
			res := analyze()
			if len(res.Next) == 0 {
				break
			}
			rate = res.Next[0]
		}
		t := traffic
		t.Rate = rate
		run, err := runAt(ctx, len(runs), t)
		if len(run.Requests) > 0 || err == nil {
			runs = append(runs, run)
			points = append(points, capacityPoint(run, rate))
		}
		if err != nil {
			return analyze(), runs, err
		}
		l.log(ctx, slog.LevelDebug, "benchkit: capacity run", "rate", rate, "runs", len(runs))
	}
	return analyze(), runs, nil
}

// capacityPoint is run, at the offered rate, as package capacity reads
// it: each request from its intended send to its end, its goodput, and
// its median TTFT (its median E2E when unstreamed) as the latency floor
// figure.
func capacityPoint(run LoadRun, rate float64) capacity.Point {
	p := capacity.Point{Rate: rate, Latency: math.NaN()}
	for _, r := range run.Requests {
		p.Spans = append(p.Spans, capacity.Span{Start: r.IntendedSendS, End: r.DoneS, OK: !r.Failed()})
	}
	if g := run.Summary.Goodput; g != nil {
		p.Good, p.Total = g.Good, g.Total
	}
	switch s := run.Summary; {
	case s.TTFT.P50 != nil:
		p.Latency = *s.TTFT.P50
	case s.E2E.P50 != nil:
		p.Latency = *s.E2E.P50
	}
	return p
}

// measureCapacity runs p's capacity search under the Load's thinking
// setting.
func (l *Load) measureCapacity(ctx context.Context, p LoadPlan) ([]LoadRun, *capacity.Result, error) {
	o := *p.Capacity
	if o.Attainment == 0 {
		o.Attainment = p.Attainment
	}
	res, runs, err := l.FindCapacity(ctx, p.Workload, p.Traffic, p.SLO, &o)
	if len(runs) == 0 && err != nil {
		return nil, nil, err
	}
	return runs, &res, err
}

// withCapacity lays d out with its runs under Runs and the search's
// result beside them.
func withCapacity(d LoadDocument, res *capacity.Result) LoadDocument {
	if res == nil {
		return d
	}
	if d.Summary != nil {
		d.Runs = []LoadRun{{Summary: *d.Summary, Requests: d.Requests}}
		d.Summary, d.Requests = nil, nil
	}
	d.Capacity = res
	return d
}
