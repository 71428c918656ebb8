package twin

import (
	"context"
	"fmt"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// ProbeOptions shape the probe plan. The zero value is a plan of about
// 40 requests.
type ProbeOptions struct {
	// Lengths are the prompt lengths, in tokens, each sent alone (nil
	// means {64, 256, 1024}).
	Lengths []int
	// Concurrency are the burst sizes of equal-length requests (nil
	// means {2, 4, 8, 16}), at BurstLength tokens (0 means the first
	// of Lengths).
	Concurrency []int
	BurstLength int
	// TG is every request's generation length (0 means 32).
	TG int
	// Repeat is how many times each is measured (0 means 3).
	Repeat int
	// RequestTimeout bounds each request (0: none beyond ctx).
	RequestTimeout time.Duration
	// Simulated marks the rows as measured against the embedded engine.
	Simulated bool
}

// Plans are the probe's two Runner plans: the lengths alone, then the
// bursts. Both stream (the fit reads the tokens' instants) and salt every
// prompt (no request reuses another's prefix).
func (o ProbeOptions) Plans() []benchkit.Plan {
	lengths, conc := o.Lengths, o.Concurrency
	if len(lengths) == 0 {
		lengths = []int{64, 256, 1024}
	}
	if len(conc) == 0 {
		conc = []int{2, 4, 8, 16}
	}
	bl := o.BurstLength
	if bl <= 0 {
		bl = lengths[0]
	}
	tg, rep := o.TG, o.Repeat
	if tg <= 0 {
		tg = 32
	}
	if rep <= 0 {
		rep = 3
	}
	return []benchkit.Plan{
		{PP: lengths, TG: []int{tg}, AllCombinations: true, Concurrency: []int{1}, Repeat: rep, Stream: true, Salt: true},
		{PP: []int{bl}, TG: []int{tg}, Concurrency: conc, Repeat: rep, Stream: true, Salt: true},
	}
}

// Probe runs the probe plan against eng (ProbeOptions.Plans: a few
// prompt lengths each sent alone, then a few concurrencies as bursts of
// equal-length requests) and returns its rows, numbered by plan in
// Labels.Run, for Fit.
func Probe(ctx context.Context, eng engine.Engine, model string, b *promptsize.Builder, opts ProbeOptions) ([]benchkit.Request, error) {
	return Measure(ctx, eng, model, b, HeldOut{Bursts: opts.Plans(), RequestTimeout: opts.RequestTimeout, Simulated: opts.Simulated})
}

// HeldOut is a set of runs to measure on both the server and the twin,
// never fitted: Runner plans and open-loop loads.
type HeldOut struct {
	// Bursts are Runner plans: every cell is one run.
	Bursts []benchkit.Plan
	// Loads are open-loop (or closed-loop) runs of a Load.
	Loads []LoadRun
	// RequestTimeout bounds each request (0: none beyond ctx).
	RequestTimeout time.Duration
	// Simulated marks the rows as measured against the embedded engine.
	Simulated bool
}

// LoadRun is one Load run: a workload on a traffic.
type LoadRun struct {
	Workload benchkit.Workload
	Traffic  benchkit.Traffic
}

// Describe names the held-out runs, for Fidelity.Plans.
func (h HeldOut) Describe() []string {
	var out []string
	for _, p := range h.Bursts {
		out = append(out, fmt.Sprintf("bursts pp=%v tg=%v concurrency=%v repeat=%d", p.PP, p.TG, p.Concurrency, max(p.Repeat, 1)))
	}
	for _, l := range h.Loads {
		w := fmt.Sprintf("%T", l.Workload)
		if ln, ok := l.Workload.(benchkit.Lengths); ok {
			w = fmt.Sprintf("lengths in=%d out=%d range=%g", ln.Input, ln.Output, ln.RangeRatio)
		}
		shape := l.Traffic.Burstiness
		if shape == 0 {
			shape = 1 // Poisson
		}
		out = append(out, fmt.Sprintf("load %s at %.3g/s (burstiness %g) requests=%d", w, l.Traffic.Rate, shape, l.Traffic.NumRequests))
	}
	return out
}

// Measure runs h against eng and returns every row, Labels.Run numbering
// the runs in order (each cell of each plan, then each load), so that
// the rows of the same plans measured elsewhere pair with them (Compare).
func Measure(ctx context.Context, eng engine.Engine, model string, b *promptsize.Builder, h HeldOut) ([]benchkit.Request, error) {
	var out []benchkit.Request
	run := 0
	for _, p := range h.Bursts {
		r := &benchkit.Runner{Engine: eng, Model: model, Builder: b, RequestTimeout: h.RequestTimeout, Simulated: h.Simulated,
			Sleep: func(context.Context, time.Duration) error { return nil }}
		rep, err := r.Run(ctx, p)
		if err != nil {
			return out, err
		}
		cells := map[[3]int]int{}
		for _, q := range rep.Requests {
			k := [3]int{q.PPTarget, q.TGTarget, q.Concurrency}
			if _, ok := cells[k]; !ok {
				cells[k] = run
				run++
			}
			q.Run = cells[k]
			out = append(out, q)
		}
	}
	for _, l := range h.Loads {
		ld := &benchkit.Load{Engine: eng, Model: model, Builder: b, RequestTimeout: h.RequestTimeout, Simulated: h.Simulated}
		lr, err := ld.Run(ctx, l.Workload, l.Traffic, timing.SLO{})
		if err != nil {
			return out, err
		}
		for _, q := range lr.Requests {
			q.Run = run
			out = append(out, q)
		}
		run++
	}
	return out, nil
}
