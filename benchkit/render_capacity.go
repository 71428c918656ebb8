package benchkit

import (
	"fmt"
	"math"
	"strings"

	"github.com/inferbench/inferbench/capacity"
)

// capacityGrid adds a capacity search's column to the load table's head
// and lines (one per summary of sums) and its lines before the notes;
// nothing when res is nil. A predicted search's lines say so.
func capacityGrid(res *capacity.Result, predicted bool, sums []Summary, head []string, lines [][]string, notes []string) ([]string, []string) {
	if res == nil {
		return head, notes
	}
	for i, s := range sums {
		lines[i] = append(lines[i], capacityCol(s, res))
	}
	cn := capacityNotes(res)
	if predicted {
		last := len(cn) - len(res.Warnings) - 1 // the search's cost
		for i := range last {
			cn[i] = "predicted " + cn[i]
		}
		cn[last] = strings.Replace(cn[last], "offered rates measured", "offered rates predicted", 1)
	}
	return append(head, "saturation"), append(cn, notes...)
}

// capacityCol is a load run's state in a capacity search (capacity.Stable,
// OverSaturated, …), marked "← knee" on the lowest over-saturated rate and
// "← capacity" on the highest rate of the capacity's bracket; "-" for a
// run the result does not hold.
func capacityCol(s Summary, res *capacity.Result) string {
	if s.RequestRate == nil {
		return "-"
	}
	r := *s.RequestRate
	for _, p := range res.Points {
		if math.Abs(p.Rate-r) > 1e-9*r {
			continue
		}
		col := p.State
		if res.Knee.Bracketed() && r == res.Knee.Hi {
			col += " ← knee"
		}
		if res.Capacity.Bracketed() && r == res.Capacity.Lo {
			col += " ← capacity"
		}
		return col
	}
	return "-"
}

// capacityNotes are the lines under the table of a capacity search: the
// knee, the service rate, where the latency leaves its floor, the
// capacity at the SLO, and what the search cost.
func capacityNotes(res *capacity.Result) []string {
	notes := []string{
		fmt.Sprintf("knee (the throughput stops following the offered rate): %s; the server's throughput at over-saturation %s",
			res.Knee, serviceRateString(res.ServiceRate, res.Confidence)),
		fmt.Sprintf("latency leaves its floor: %s", res.LatencyKnee),
	}
	if res.SLO != "" {
		notes = append(notes, fmt.Sprintf("capacity at %s for %.0f%% of requests, sustained: %s", res.SLO, res.Attainment*100, res.Capacity))
	}
	notes = append(notes, fmt.Sprintf("brackets are offered rates measured on each side; the search made %d runs, %d requests in %.1f s", res.Runs, res.Requests, res.Seconds))
	return append(notes, res.Warnings...)
}

func serviceRateString(iv capacity.Interval, conf float64) string {
	if iv.Status != "bracketed" {
		return "unknown (no run over-saturated)"
	}
	return fmt.Sprintf("%.3g/s (%.0f%% interval %.3g–%.3g)", iv.Rate, conf*100, iv.Lo, iv.Hi)
}
