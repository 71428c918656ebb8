package benchkit

import (
	"fmt"
	"math"
	"strconv"

	"github.com/inferbench/inferbench/precision"
)

// intervalLegend heads the load table's grid of intervals.
const intervalLegend = "95 % confidence intervals, ± their larger side in ms (mean: Student-t over the requests;\n" +
	"percentiles: order statistics, distribution-free; none: too few samples to bound it; docs/PRECISION.md)"

// noIntervalNote says, under a load table, which of its figures have no
// interval.
const noIntervalNote = "no interval: ok/sent, dur s, req/s, out tok/s and goodput count one whole run (repeat it for one)"

// loadGrids are the tables under a load test's table: the intervals of
// its figures, then the server's.
var loadGrids = append([]func([]Summary) ([]string, [][]string, string){intervalGrid}, serverGrids...)

// intervalGrid is the load table's grid of intervals: a line per summary
// with the ± of every latency figure the main table prints.
func intervalGrid(sums []Summary) (head []string, lines [][]string, legend string) {
	thinking := reasoned(sums)
	head = []string{"traffic", "ttft ms mean/p50/p99", "tpot ms mean/p50/p99", "itl ms p50/p99", "e2e ms p50/p99", "skew/lag ms p99"}
	if thinking {
		head = append(head, "ttfa ms mean/p50/p99", "tpot answer ms p50/p99")
	}
	for _, s := range sums {
		line := []string{
			s.Traffic,
			pmCI(s.TTFT.Mean, s.TTFT.MeanCI) + "/" + pmCI(s.TTFT.P50, s.TTFT.P50CI) + "/" + pmCI(s.TTFT.P99, s.TTFT.P99CI),
			pmCI(s.TPOT.Mean, s.TPOT.MeanCI) + "/" + pmCI(s.TPOT.P50, s.TPOT.P50CI) + "/" + pmCI(s.TPOT.P99, s.TPOT.P99CI),
			pmCI(s.ITL.P50, s.ITL.P50CI) + "/" + pmCI(s.ITL.P99, s.ITL.P99CI),
			pmCI(s.E2E.P50, s.E2E.P50CI) + "/" + pmCI(s.E2E.P99, s.E2E.P99CI),
			pmCI(s.DispatchSkew.P99, s.DispatchSkew.P99CI) + "/" + pmCI(s.ScheduleLag.P99, s.ScheduleLag.P99CI),
		}
		if thinking {
			line = append(line, pmCI(s.TTFA.Mean, s.TTFA.MeanCI)+"/"+pmCI(s.TTFA.P50, s.TTFA.P50CI)+"/"+pmCI(s.TTFA.P99, s.TTFA.P99CI),
				pmCI(s.TPOTAnswer.P50, s.TPOTAnswer.P50CI)+"/"+pmCI(s.TPOTAnswer.P99, s.TPOTAnswer.P99CI))
		}
		lines = append(lines, line)
	}
	return head, lines, intervalLegend
}

// pmCI is a figure's interval in a table, in ms: "±" and its larger side,
// "none" when it has none, "-" when the figure itself is undefined.
func pmCI(v *float64, ci *[2]float64) string {
	switch {
	case v == nil:
		return "-"
	case ci == nil:
		return "none"
	}
	h := math.Max(*v-ci[0], ci[1]-*v) * 1e3
	prec := 3
	switch {
	case h >= 10:
		prec = 0
	case h >= 1:
		prec = 1
	case h >= 0.1:
		prec = 2
	}
	return "±" + strconv.FormatFloat(h, 'f', prec, 64)
}

// stopNote is the table's note on a run with targets: what stopped it
// and each target's achieved margin; "" without targets.
func stopNote(s Summary) string {
	if s.Stopped == "" {
		return ""
	}
	return fmt.Sprintf("%s after %d of %d scheduled requests: %s", s.Stopped, s.Requests, s.Scheduled, precision.Describe(s.Precision))
}
