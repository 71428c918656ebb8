package twin

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"gonum.org/v1/gonum/stat"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/timing"
)

// Fidelity is how well a twin predicted runs it was not fitted to: per
// metric, its error over the held-out runs, each run's figure predicted
// (the embedded engine loaded with the twin) against measured (the
// server), as the simulators of the field state theirs.
type Fidelity struct {
	// Runs counts the held-out runs compared (a burst cell over its
	// repeats, or one open-loop run).
	Runs int `json:"runs"`
	// Plans describes the held-out plans.
	Plans []string `json:"plans,omitempty"`
	// Metrics hold one line per metric and statistic.
	Metrics []MetricError `json:"metrics"`
}

// MetricError is a twin's error on one figure over the held-out runs:
//
//	MAPE    = 100/R · Σ |pred_r − meas_r| / meas_r
//	Bias    = 100/R · Σ (pred_r − meas_r) / meas_r
//	Pearson = the correlation of (pred_r) with (meas_r) over the runs
//
// for the R runs where both have the figure.
type MetricError struct {
	// Metric names the figure: "ttft", "tpot", "itl" or "e2e" with its
	// statistic ("ttft_mean", "e2e_p99"), or "output_throughput".
	Metric string `json:"metric"`
	// N counts the runs compared.
	N int `json:"n"`
	// MAPE and Bias are in percent; BiasSign says whether the twin was
	// slower than the server ("over": predicted latencies, or
	// throughput, above the measured) or faster ("under").
	MAPE     float64 `json:"mape_pct"`
	Bias     float64 `json:"bias_pct"`
	BiasSign string  `json:"bias_sign"`
	// Pearson is null with fewer than 3 runs or a figure that does not
	// vary.
	Pearson *float64 `json:"pearson_r"`
}

// figures are one run's summary figures, by metric name.
func figures(s benchkit.Summary) map[string]*float64 {
	m := map[string]*float64{"output_throughput": s.OutputThroughput}
	for name, q := range map[string]benchkit.Quantiles{"ttft": s.TTFT, "tpot": s.TPOT, "itl": s.ITL, "e2e": s.E2E} {
		m[name+"_mean"], m[name+"_p50"], m[name+"_p90"], m[name+"_p99"] = q.Mean, q.P50, q.P90, q.P99
	}
	return m
}

var metricOrder = func() []string {
	var out []string
	for _, n := range []string{"ttft", "tpot", "itl", "e2e"} {
		for _, s := range []string{"mean", "p50", "p90", "p99"} {
			out = append(out, n+"_"+s)
		}
	}
	return append(out, "output_throughput")
}()

// Compare pairs the runs of predicted and measured (rows of the same
// held-out plans: Measure's, whose Labels.Run numbers the runs) and
// returns the twin's error per metric. Runs only one side has are left
// out.
func Compare(predicted, measured []benchkit.Request) Fidelity {
	group := func(rows []benchkit.Request) map[int]map[string]*float64 {
		by := map[int][]benchkit.Request{}
		for _, r := range rows {
			by[r.Run] = append(by[r.Run], r)
		}
		out := map[int]map[string]*float64{}
		for run, rs := range by {
			for i := range rs {
				rs[i].Run = 0
			}
			if s := benchkit.Summarize(rs, benchkit.ByRun, timing.SLO{}); len(s) == 1 {
				out[run] = figures(s[0])
			}
		}
		return out
	}
	p, m := group(clone(predicted)), group(clone(measured))
	var f Fidelity
	for run := range p {
		if _, ok := m[run]; ok {
			f.Runs++
		}
	}
	for _, name := range metricOrder {
		var xs, ys []float64
		for run, pf := range p {
			mf, ok := m[run]
			if !ok || pf[name] == nil || mf[name] == nil || *mf[name] <= 0 {
				continue
			}
			xs, ys = append(xs, *pf[name]), append(ys, *mf[name])
		}
		if len(xs) == 0 {
			continue
		}
		e := MetricError{Metric: name, N: len(xs)}
		for i := range xs {
			d := (xs[i] - ys[i]) / ys[i]
			e.MAPE += 100 * math.Abs(d) / float64(len(xs))
			e.Bias += 100 * d / float64(len(xs))
		}
		switch {
		case e.Bias > 0:
			e.BiasSign = "over"
		case e.Bias < 0:
			e.BiasSign = "under"
		default:
			e.BiasSign = "none"
		}
		if len(xs) >= 3 && stat.Variance(xs, nil) > 0 && stat.Variance(ys, nil) > 0 {
			r := stat.Correlation(xs, ys, nil)
			e.Pearson = &r
		}
		f.Metrics = append(f.Metrics, e)
	}
	return f
}

func clone(rows []benchkit.Request) []benchkit.Request {
	return append([]benchkit.Request(nil), rows...)
}

// WriteTable writes f as a table: one line per metric with its MAPE,
// Pearson r and bias over the held-out runs.
func (f Fidelity) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "metric\truns\tMAPE %%\tPearson r\tbias %%\tbias\t\n")
	for _, e := range f.Metrics {
		r := "-"
		if e.Pearson != nil {
			r = fmt.Sprintf("%.3f", *e.Pearson)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s\t%+.1f\t%s\t\n", e.Metric, e.N, e.MAPE, r, e.Bias, e.BiasSign)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "over %d held-out runs, none of them fitted; over: the twin predicts more than was measured (slower, or more throughput)\n", f.Runs)
	return err
}
