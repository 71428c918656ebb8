package benchkit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/inferbench/inferbench/capacity"
	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/timing"
)

// formatRate writes a rate as a --rate flag takes it: "inf" or the shortest
// decimal.
func formatRate(r float64) string {
	if math.IsInf(r, 1) {
		return "inf"
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}

// Sweep runs one load test per rate, in order, each with traffic's other
// settings (rates replace traffic.Rate; a burst is not swept). Runs are
// numbered from 0 in their rows. It stops at the first run that returns
// an error (a bad load, or ctx ending) and returns the runs so far.
func (l *Load) Sweep(ctx context.Context, w Workload, traffic Traffic, rates []float64, slo timing.SLO) ([]LoadRun, error) {
	if traffic.Burst > 0 || traffic.Users > 0 || traffic.RampShape != "" {
		return nil, fmt.Errorf("%w: a burst, a closed loop or a ramp has no one rate to sweep", ErrBadLoad)
	}
	if len(rates) == 0 {
		return nil, fmt.Errorf("%w: no rates to sweep", ErrBadLoad)
	}
	// Validate every rate before anything is sent.
	for _, r := range rates {
		t := traffic
		t.Rate = r
		if err := t.Validate(); err != nil {
			return nil, err
		}
	}
	var runs []LoadRun
	for i, r := range rates {
		t := traffic
		t.Rate = r
		run, err := l.run(ctx, i, w, t, slo)
		if len(run.Requests) > 0 || err == nil {
			runs = append(runs, run)
		}
		if err != nil {
			return runs, err
		}
	}
	return runs, nil
}

// MaxRate is the outcome of FindMaxRate.
type MaxRate struct {
	// RateRPS is the highest offered rate whose run met the SLOs (0 when
	// none did).
	RateRPS float64 `json:"rate_rps"`
	// Lo and Hi are the final bracket: Lo = RateRPS, Hi the lowest
	// failing rate above it (0 when none failed).
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
	// SLO and Attainment are the predicate: at least Attainment of the
	// requests met every objective of SLO.
	SLO        string  `json:"slo"`
	Attainment float64 `json:"attainment"`
	// Probes is the number of runs measured.
	Probes int `json:"probes"`
}

// FindMaxRate searches the highest rate at which a load test with
// traffic's other settings meets slo, with concurrency.SearchRate (see its
// bracketing and geometric bisection). A run meets the SLO when at least
// attainment of its requests (failed ones counted as not good) met every
// objective; attainment 0 means DefaultSLOAttainment. Every probe's run
// is returned, numbered in order. slo must set at least one objective.
//
// The search assumes that passing is monotone in the rate; it is, in
// expectation, because the schedule at each rate is the same seeded
// draws scaled by 1/rate.
func (l *Load) FindMaxRate(ctx context.Context, w Workload, traffic Traffic, slo timing.SLO, attainment float64, opts *concurrency.SearchOptions) (MaxRate, []LoadRun, error) {
	if v, ok := w.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return MaxRate{}, nil, err
		}
	}
	return l.FindMaxRateBy(ctx, traffic, slo, attainment, opts, func(ctx context.Context, index int, t Traffic) (LoadRun, error) {
		return l.run(ctx, index, w, t, slo)
	})
}

// FindMaxRateBy is FindMaxRate's search (the same bracketing and
// bisection, the same test of each run against slo at attainment) with
// each run made by runAt instead of sent: runAt is called with the run's
// number, from 0 in the order made, and traffic at the rate to run; it
// returns the run as Load.Run would (a prediction of it, for package
// benchkit/predict).
func (l *Load) FindMaxRateBy(ctx context.Context, traffic Traffic, slo timing.SLO, attainment float64, opts *concurrency.SearchOptions, runAt func(ctx context.Context, index int, traffic Traffic) (LoadRun, error)) (MaxRate, []LoadRun, error) {
	if slo == (timing.SLO{}) {
		return MaxRate{}, nil, fmt.Errorf("%w: finding the highest rate needs at least one SLO objective (TTFT, TPOT, ITL or E2E)", ErrBadLoad)
	}
	if traffic.Burst > 0 || traffic.Users > 0 || traffic.RampShape != "" {
		return MaxRate{}, nil, fmt.Errorf("%w: a burst, a closed loop or a ramp has no one rate to search", ErrBadLoad)
	}
	if attainment == 0 {
		attainment = DefaultSLOAttainment
	}
	if math.IsNaN(attainment) || attainment < 0 || attainment > 1 {
		return MaxRate{}, nil, fmt.Errorf("%w: SLO attainment must be in (0, 1], got %g", ErrBadLoad, attainment)
	}
	probe := traffic
	probe.Rate = 1
	if err := probe.Validate(); err != nil {
		return MaxRate{}, nil, err
	}
	var runs []LoadRun
	measure := func(ctx context.Context, rate float64) (Summary, error) {
		t := traffic
		t.Rate = rate
		run, err := runAt(ctx, len(runs), t)
		if len(run.Requests) > 0 || err == nil {
			runs = append(runs, run)
		}
		return run.Summary, err
	}
	res, err := concurrency.SearchRate(ctx, measure, func(s Summary) bool { return s.Meets(attainment) }, opts)
	mr := MaxRate{RateRPS: res.Rate, Lo: res.Lo, Hi: res.Hi, SLO: slo.String(), Attainment: attainment, Probes: len(res.Probes)}
	if err != nil && !errors.Is(err, concurrency.ErrProbeLimit) {
		return mr, runs, err
	}
	return mr, runs, err
}

// A LoadPlan is what Load.Document measures: a workload sent on a traffic,
// at one rate, over a sweep of rates, or in a search for the highest rate
// that meets an SLO.
type LoadPlan struct {
	Workload Workload
	Traffic  Traffic
	// Rates are the offered rates: none runs Traffic as it is (its Rate,
	// or its burst), one runs that rate, several sweep them (Sweep).
	Rates []float64
	// SLO is the objectives each run's goodput is judged against.
	SLO timing.SLO
	// Search, when set, searches the highest rate at which at least
	// Attainment of the requests (0: DefaultSLOAttainment) meet SLO
	// (FindMaxRate), in place of Rates.
	Search     *concurrency.SearchOptions
	Attainment float64
	// Capacity, when set, finds where the server saturates
	// (Load.FindCapacity: the knee and the capacity at SLO, Attainment
	// when its own is 0), in place of Rates.
	Capacity *capacity.Options
	// Thinking, when set, are thinking settings measured in turn: the
	// plan's run, sweep or search under each, with it as every request's
	// Thinking (in place of the Load's Request.Thinking: see Load.Request)
	// and its label on every row; runs are numbered on from one setting
	// to the next. A search takes one setting at most.
	Thinking []engine.Thinking
}

// Document measures p and returns the results document a load test
// writes (serve-load's --json-out), its meta completed from p and the run:
// the workload, traffic, rates and objectives, whether it streamed, the
// start and end, whether ctx ended it, and each run's client health with
// the verdict on saturation. The document holds what was measured even when the error is
// not nil; an error wrapping ErrBadLoad means nothing was sent.
func (l *Load) Document(ctx context.Context, meta LoadMeta, p LoadPlan) (LoadDocument, error) {
	meta.Workload, meta.Traffic, meta.Stream = p.Workload, p.Traffic, !l.NoStream
	if p.SLO != (timing.SLO{}) {
		meta.SLO = p.SLO.String()
	}
	for _, r := range p.Rates {
		meta.Rates = append(meta.Rates, formatRate(r))
	}
	if (p.Search != nil || p.Capacity != nil) && len(p.Thinking) > 1 {
		return NewLoadDocument(meta, nil, nil), fmt.Errorf("%w: a search for the highest rate or the capacity takes one thinking setting, found %d", ErrBadLoad, len(p.Thinking))
	}
	settings := thinkingSettings(p.Thinking, l.Request.Thinking)
	if len(p.Thinking) > 0 {
		for _, th := range settings {
			meta.Thinking = append(meta.Thinking, thinkingLabel(th))
		}
	}
	meta.Started = time.Now().UTC().Format(time.RFC3339)
	var runs []LoadRun
	var maxRate *MaxRate
	var capRes *capacity.Result
	var err error
	saved := l.Request.Thinking
	defer func() { l.Request.Thinking, l.runOffset = saved, 0 }()
	for _, th := range settings {
		l.Request.Thinking, l.runOffset = th, len(runs)
		var rs []LoadRun
		if p.Capacity != nil {
			rs, capRes, err = l.measureCapacity(ctx, p)
		} else {
			rs, maxRate, err = l.measure(ctx, p)
		}
		runs = append(runs, rs...)
		if err != nil {
			break
		}
	}
	meta.Finished = time.Now().UTC().Format(time.RFC3339)
	meta.Interrupted = ctx.Err() != nil
	meta.Judge(runs, p.Traffic.MaxConcurrency > 0 || p.Traffic.Users > 0)
	return withCapacity(NewLoadDocument(meta, runs, maxRate), capRes), err
}

// measure runs p once, under the Load's thinking setting: its run, its
// sweep or its search.
func (l *Load) measure(ctx context.Context, p LoadPlan) (runs []LoadRun, maxRate *MaxRate, err error) {
	switch {
	case p.Search != nil:
		var mr MaxRate
		mr, runs, err = l.FindMaxRate(ctx, p.Workload, p.Traffic, p.SLO, p.Attainment, p.Search)
		if err == nil || errors.Is(err, concurrency.ErrProbeLimit) || errors.Is(err, concurrency.ErrNoPassingRate) {
			maxRate = &mr
		}
	case len(p.Rates) > 1:
		runs, err = l.Sweep(ctx, p.Workload, p.Traffic, p.Rates, p.SLO)
	default:
		t := p.Traffic
		if len(p.Rates) == 1 {
			t.Rate = p.Rates[0]
		}
		var r LoadRun
		r, err = l.Run(ctx, p.Workload, t, p.SLO)
		if len(r.Requests) > 0 {
			runs = []LoadRun{r}
		}
	}
	return runs, maxRate, err
}

// AllRuns returns the document's runs, whichever way it lays them out.
func (d LoadDocument) AllRuns() []LoadRun {
	if d.Summary != nil {
		return []LoadRun{{Summary: *d.Summary, Requests: d.Requests, Probes: d.Probes}}
	}
	return d.Runs
}
