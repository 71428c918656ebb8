package main

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/benchkit/predict"
	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/timing"
)

// checkPredict refuses --predict where a prediction cannot stand for the
// run: another server than the embedded engine's vLLM API, and plans the
// engine's prediction does not model.
func (o options) checkPredict(settings int) error {
	if !o.predict {
		return nil
	}
	if err := o.target.CheckPredict(); err != nil {
		return err
	}
	switch {
	case o.split.seg.Split() || settings > 0:
		return cli.Usagef("--predict predicts a whole plan without --segment or thinking controls")
	}
	return nil
}

// predictPlan computes plan's runs on the embedded engine's virtual clock
// (benchkit/predict) instead of sending them, one run per rate or the
// capacity search's runs, and hands each row to the Load's sinks as a run
// would.
func predictPlan(ctx context.Context, tg *cli.Target, load *benchkit.Load, meta benchkit.LoadMeta, plan benchkit.LoadPlan) (benchkit.LoadDocument, error) {
	opts, ok := tg.SimOptions()
	if !ok {
		return benchkit.LoadDocument{}, errors.New("--predict: the embedded engine is not started")
	}
	meta.Workload, meta.Traffic, meta.Stream, meta.Predicted = plan.Workload, plan.Traffic, !load.NoStream, true
	if plan.SLO != (timing.SLO{}) {
		meta.SLO = plan.SLO.String()
	}
	meta.Started = time.Now().UTC().Format(time.RFC3339)
	if plan.Capacity != nil {
		return predictCapacity(ctx, load, opts, meta, plan)
	}
	if plan.Search != nil {
		return predictMaxRate(ctx, load, opts, meta, plan)
	}
	rates := plan.Rates
	if len(rates) == 0 {
		rates = []float64{plan.Traffic.Rate}
	}
	var runs []benchkit.LoadRun
	var err error
	for i, r := range rates {
		t := plan.Traffic
		if len(plan.Rates) > 0 {
			t.Rate = r
			meta.Rates = append(meta.Rates, rateString(r))
		}
		var run benchkit.LoadRun
		run, err = (&predict.Predictor{Load: load, Options: opts, RunIndex: i, BurstGap: time.Microsecond}).Run(ctx, plan.Workload, t, plan.SLO)
		if err != nil {
			break
		}
		for _, row := range slices.Concat(run.Requests, run.Probes) {
			for _, s := range load.Sinks {
				err = errors.Join(err, s.Add(row))
			}
		}
		runs = append(runs, run)
		if err != nil {
			break
		}
	}
	meta.Finished = time.Now().UTC().Format(time.RFC3339)
	if len(plan.Rates) <= 1 {
		meta.Rates = nil
		for _, r := range plan.Rates {
			meta.Rates = append(meta.Rates, rateString(r))
		}
	}
	return benchkit.NewLoadDocument(meta, runs, nil), err
}

// predictCapacity predicts plan's capacity search (Load.FindCapacity's
// search, each run predicted) and lays the document out as a measured
// search's: its runs under Runs, the search's result beside them.
func predictCapacity(ctx context.Context, load *benchkit.Load, opts sim.Options, meta benchkit.LoadMeta, plan benchkit.LoadPlan) (benchkit.LoadDocument, error) {
	o := *plan.Capacity
	if o.Attainment == 0 {
		o.Attainment = plan.Attainment
	}
	res, runs, err := (&predict.Predictor{Load: load, Options: opts}).FindCapacity(ctx, plan.Workload, plan.Traffic, plan.SLO, &o)
	for _, run := range runs {
		for _, row := range slices.Concat(run.Requests, run.Probes) {
			for _, s := range load.Sinks {
				err = errors.Join(err, s.Add(row))
			}
		}
	}
	meta.Finished = time.Now().UTC().Format(time.RFC3339)
	doc := benchkit.NewLoadDocument(meta, runs, nil)
	if doc.Summary != nil {
		doc.Runs = []benchkit.LoadRun{{Summary: *doc.Summary, Requests: doc.Requests}}
		doc.Summary, doc.Requests = nil, nil
	}
	if len(runs) > 0 {
		doc.Capacity = &res
	}
	return doc, err
}

// predictMaxRate predicts plan's search for the highest rate meeting its
// SLO (Load.FindMaxRate's search, each run predicted) and lays the
// document out as a measured search's.
func predictMaxRate(ctx context.Context, load *benchkit.Load, opts sim.Options, meta benchkit.LoadMeta, plan benchkit.LoadPlan) (benchkit.LoadDocument, error) {
	mr, runs, err := (&predict.Predictor{Load: load, Options: opts}).FindMaxRate(ctx, plan.Workload, plan.Traffic, plan.SLO, plan.Attainment, plan.Search)
	for _, run := range runs {
		for _, row := range slices.Concat(run.Requests, run.Probes) {
			for _, s := range load.Sinks {
				err = errors.Join(err, s.Add(row))
			}
		}
	}
	meta.Finished = time.Now().UTC().Format(time.RFC3339)
	var maxRate *benchkit.MaxRate
	if err == nil || errors.Is(err, concurrency.ErrProbeLimit) || errors.Is(err, concurrency.ErrNoPassingRate) {
		maxRate = &mr
	}
	return benchkit.NewLoadDocument(meta, runs, maxRate), err
}

// rateString is a rate as a document's meta writes it ("inf" for all at
// once).
func rateString(r float64) string {
	if math.IsInf(r, 1) {
		return "inf"
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}
