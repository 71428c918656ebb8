package benchkit

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/inferbench/inferbench/precision"
	"github.com/inferbench/inferbench/timing"
)

// loadFigures are the figures a load test's targets (Load.Until) may
// name, each with its samples over completed requests: ITL pools every
// request's gaps.
var loadFigures = map[string]func(Request) []float64{
	"ttft": func(r Request) []float64 { return one(r.TTFTS) },
	"tpot": func(r Request) []float64 { return one(r.TPOTS) },
	"itl":  func(r Request) []float64 { return r.ITLS },
	"e2e":  func(r Request) []float64 { return one(r.E2ES) },
	"ttfa": func(r Request) []float64 { return one(r.TTFAS) },
}

func one(v *float64) []float64 {
	if v == nil {
		return nil
	}
	return []float64{*v}
}

// errTargetsMet is the cause with which a load run stops dispatching once
// every target is met: a clean stop, not an interruption.
var errTargetsMet = errors.New("benchkit: every target met")

// CheckUntil refuses targets (Until) a run of traffic cannot check: an
// unknown figure (a load test knows ttft, tpot, itl, e2e and ttfa), a
// figure an unstreamed run has not, a burst (released at once, it has
// nothing left to stop) or a split plan (each segment would stop on its
// own share). Run checks them too; errors wrap ErrBadLoad.
func (l *Load) CheckUntil(traffic Traffic) error {
	if len(l.Until) == 0 {
		return nil
	}
	for _, t := range l.Until {
		if err := t.Validate(); err != nil {
			return fmt.Errorf("%w: %w", ErrBadLoad, err)
		}
		if _, ok := loadFigures[t.Figure]; !ok {
			return fmt.Errorf("%w: target %s: a load test knows the figures %s", ErrBadLoad, t, strings.Join(sortedKeys(loadFigures), ", "))
		}
		if l.NoStream && t.Figure != "e2e" {
			return fmt.Errorf("%w: target %s: an unstreamed run measures e2e alone", ErrBadLoad, t)
		}
	}
	switch {
	case traffic.Burst > 0:
		return fmt.Errorf("%w: a burst is released at once and cannot stop at a target; give a rate or users", ErrBadLoad)
	case l.Segment.Split():
		return fmt.Errorf("%w: a split plan's segments cannot stop at a target each", ErrBadLoad)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// checkTargets checks every target over the completed rows.
func checkTargets(targets []precision.Target, rows []Request) []precision.Result {
	out := make([]precision.Result, len(targets))
	for i, t := range targets {
		var x []float64
		samples := loadFigures[t.Figure]
		for _, r := range rows {
			if !r.Failed() && samples != nil {
				x = append(x, samples(r)...)
			}
		}
		out[i] = t.Check(x)
	}
	return out
}

// untilWatch checks a run's targets as its requests complete: every
// max(1, n/50) rows of a plan of n, so that a long run checks about fifty
// times, and at most once after all are met.
type untilWatch struct {
	targets     []precision.Target
	every, next int
	met         bool
	// last is the check that met the targets.
	last []precision.Result
}

func newUntilWatch(targets []precision.Target, n int) *untilWatch {
	e := max(1, n/50)
	return &untilWatch{targets: targets, every: e, next: e}
}

// observe reports whether the targets have just been met over rows.
func (u *untilWatch) observe(rows []Request) bool {
	if u == nil || len(u.targets) == 0 || u.met || len(rows) < u.next {
		return false
	}
	u.next = len(rows) + u.every
	u.last = checkTargets(u.targets, rows)
	u.met = precision.AllMet(u.last)
	return u.met
}

// stopped sets why the run stopped and the summary's precision figures:
// the check that met the targets (over the requests complete then, which
// its N counts), else a check over every row of the run.
func (u *untilWatch) stopped(s *Summary, rows []Request) {
	if u == nil || len(u.targets) == 0 {
		return
	}
	s.Precision = checkTargets(u.targets, rows)
	switch {
	case u.met:
		s.Precision, s.Stopped = u.last, precision.StoppedMet
	case s.Interrupted:
		s.Stopped = "interrupted"
	default:
		s.Stopped = precision.StoppedCap
	}
}

// withIntervals is quantiles(x) with the confidence intervals of its
// mean and percentiles at ConfidenceLevel.
func withIntervals(x []float64) Quantiles {
	q := quantiles(x)
	if len(x) < 2 {
		return q
	}
	// Sorted, so that the mean's sums do not depend on the samples'
	// order (a merge of segments pools them in another).
	x = slices.Clone(x)
	slices.Sort(x)
	bounds := func(iv timing.Interval) *[2]float64 {
		if math.IsInf(iv.Lo, 0) || math.IsInf(iv.Hi, 0) || math.IsNaN(iv.Lo) || math.IsNaN(iv.Hi) {
			return nil
		}
		return &[2]float64{iv.Lo, iv.Hi}
	}
	q.MeanCI = bounds(timing.ConfidenceInterval(x, ConfidenceLevel))
	q.P50CI = bounds(timing.PercentileInterval(x, 50, ConfidenceLevel))
	q.P90CI = bounds(timing.PercentileInterval(x, 90, ConfidenceLevel))
	q.P99CI = bounds(timing.PercentileInterval(x, 99, ConfidenceLevel))
	return q
}

// cellFigures are the per-repeat figures a Runner's targets (Plan.Until)
// may name: each repeat's value, as the cell's summary computes it.
var cellFigures = map[string]func(burstFigures) float64{
	"gen_tps":            func(f burstFigures) float64 { return f.burst.MeanTPS },
	"prompt_tps":         func(f burstFigures) float64 { return f.promptTPS },
	"agg_tps":            func(f burstFigures) float64 { return f.burst.ExoAggregateTPS },
	"throughput":         func(f burstFigures) float64 { return f.burst.ThroughputTPS },
	"ttft":               func(f burstFigures) float64 { return f.ttftS },
	"ttfa":               func(f burstFigures) float64 { return f.ttfaS },
	"prefill":            func(f burstFigures) float64 { return f.prefillS },
	"e2e":                func(f burstFigures) float64 { return f.e2eS },
	"j_per_token":        func(f burstFigures) float64 { return f.jPerTok },
	"server_j_per_token": func(f burstFigures) float64 { return f.serverJPerTok },
}

// checkCell checks targets over one cell's requests, each repeat one
// sample.
func checkCell(targets []precision.Target, reqs []Request) []precision.Result {
	repeats := byRepeat(reqs)
	figs := make([]burstFigures, len(repeats))
	for i, b := range repeats {
		figs[i] = figuresOf(b)
	}
	out := make([]precision.Result, len(targets))
	for i, t := range targets {
		var x []float64
		if f := cellFigures[t.Figure]; f != nil {
			for _, fg := range figs {
				x = append(x, f(fg))
			}
		}
		out[i] = t.Check(x)
	}
	return out
}

// maxRepeat is the cap on a cell's repeats: MaxRepeat with targets, else
// Repeat.
func (p Plan) maxRepeat() int {
	if len(p.Until) == 0 {
		return p.repeat()
	}
	return max(p.MaxRepeat, p.repeat())
}

// again reports whether a cell that has done rpt repeats, whose requests
// so far are reqs, repeats once more: up to Repeat always, then until its
// targets are met or MaxRepeat.
func (p Plan) again(rpt int, reqs []Request) bool {
	switch {
	case rpt < p.repeat():
		return true
	case rpt >= p.maxRepeat():
		return false
	}
	return !precision.AllMet(checkCell(p.Until, reqs))
}

// Summarize summarises reqs per cell (Summarize ByCell) and, when the
// plan has targets (Until), checks each cell's: Summary.Precision has
// each target's interval over the cell's repeats, Summary.Stopped says
// "target met", "cap reached" (MaxRepeat repeats with a target not met)
// or "interrupted", and the cell's first warning says so for tables.
func (p Plan) Summarize(reqs []Request) []Summary {
	groups := groupBy(reqs, ByCell)
	out := make([]Summary, len(groups))
	for i, g := range groups {
		out[i] = summarize(g, ByCell, timing.SLO{})
		if len(p.Until) == 0 {
			continue
		}
		s := &out[i]
		s.Precision = checkCell(p.Until, g)
		switch {
		case precision.AllMet(s.Precision):
			s.Stopped = precision.StoppedMet
		case s.Repeats >= p.maxRepeat():
			s.Stopped = precision.StoppedCap
		default:
			s.Stopped = "interrupted"
		}
		note := fmt.Sprintf("%s after %d repeats (at least %d, at most %d): %s", s.Stopped, s.Repeats, p.repeat(), p.maxRepeat(), precision.Describe(s.Precision))
		s.Warnings = append([]string{note}, s.Warnings...)
	}
	return out
}

// checkUntil checks the plan's targets and their cap.
func (p Plan) checkUntil(bad func(format string, args ...any)) {
	if len(p.Until) == 0 {
		if p.MaxRepeat != 0 {
			bad("max_repeat=%d without targets (until): repeat sets the repeats", p.MaxRepeat)
		}
		return
	}
	for _, t := range p.Until {
		if err := t.Validate(); err != nil {
			bad("%v", err)
		} else if _, ok := cellFigures[t.Figure]; !ok {
			bad("target %s: a cell knows the figures %s", t, strings.Join(sortedKeys(cellFigures), ", "))
		}
	}
	if p.MaxRepeat < max(p.repeat(), 2) {
		bad("max_repeat=%d: targets need a cap on the repeats of at least max(repeat, 2)", p.MaxRepeat)
	}
}
