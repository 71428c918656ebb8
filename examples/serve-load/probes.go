package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/inferbench/inferbench/benchkit"
)

// writeProbes writes one line per run that sent head-of-line probes
// (--probe-rate): how many, and their TTFT and E2E quantiles in ms, the
// wait the load made an unrelated one-token request take. The probes are
// in none of the table's figures.
func writeProbes(w io.Writer, runs []benchkit.LoadRun) {
	ms := func(v *float64) string {
		if v == nil {
			return "–"
		}
		return fmt.Sprintf("%.3g", *v*1000)
	}
	for _, r := range runs {
		p := r.Summary.Probes
		if p == nil {
			continue
		}
		line := fmt.Sprintf("\nhead-of-line probes beside %s: %d of %d completed (%s); TTFT ms p50 %s p90 %s p99 %s max %s; E2E ms p50 %s p99 %s",
			r.Summary.Traffic, p.Completed, p.Requests, p.Traffic, ms(p.TTFT.P50), ms(p.TTFT.P90), ms(p.TTFT.P99), ms(p.TTFT.Max), ms(p.E2E.P50), ms(p.E2E.P99))
		if len(p.Warnings) > 0 {
			line += " (" + strings.Join(p.Warnings, "; ") + ")"
		}
		fmt.Fprintln(w, line)
	}
}
