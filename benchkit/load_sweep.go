package benchkit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/inferbench/inferbench/concurrency"
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
	if traffic.Burst > 0 {
		return nil, fmt.Errorf("%w: a burst has no rate to sweep", ErrBadLoad)
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
	if slo == (timing.SLO{}) {
		return MaxRate{}, nil, fmt.Errorf("%w: finding the highest rate needs at least one SLO objective (TTFT, TPOT, ITL or E2E)", ErrBadLoad)
	}
	if traffic.Burst > 0 {
		return MaxRate{}, nil, fmt.Errorf("%w: a burst has no rate to search", ErrBadLoad)
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
	if v, ok := w.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return MaxRate{}, nil, err
		}
	}
	var runs []LoadRun
	measure := func(ctx context.Context, rate float64) (Summary, error) {
		t := traffic
		t.Rate = rate
		run, err := l.run(ctx, len(runs), w, t, slo)
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
