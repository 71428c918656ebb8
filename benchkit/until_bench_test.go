package benchkit

import (
	"context"
	"testing"
	"time"

	"github.com/inferbench/inferbench/precision"
	"github.com/inferbench/inferbench/timing"
)

// BenchmarkUntil measures what a target margin of error costs against the
// embedded engine: the requests and seconds of a run stopped by its
// target (or by its cap), beside a fixed-length run of as many requests
// (the same precision, had its length been known beforehand) and a
// fixed-length run of the whole cap (what a run without a target sends).
// Each reports requests, seconds and the achieved margin (%) of the
// target's figure (the targeted run's as checked when it stopped; -1 for
// no interval); met is 1 when the targeted run stopped at its target.
//
//	go test -run '^$' -bench BenchmarkUntil -benchtime 1x ./benchkit/
func BenchmarkUntil(b *testing.B) {
	for _, c := range []struct {
		name, until string
		cap         int
	}{
		{"e2e.mean-5pct", "e2e.mean:5%", 1000},
		{"ttft.p90-10pct", "ttft.p90:10%", 1000},
		{"ttft.p99-5pct-cap300", "ttft.p99:5%", 300},
	} {
		b.Run(c.name, func(b *testing.B) {
			target := mustTargets(b, c.until)
			w := Lengths{Input: 64, Output: 8, RangeRatio: 0.5, Seed: 3}
			measure := func(n int, until []precision.Target) (requests int, secs, margin float64, met bool) {
				l := simLoad(b)
				l.Until = until
				start := time.Now()
				run, err := l.Run(context.Background(), w, Traffic{Rate: 400, NumRequests: n, Seed: 1}, timing.SLO{})
				if err != nil {
					b.Fatal(err)
				}
				secs = time.Since(start).Seconds()
				r := checkTargets(target, run.Requests)[0]
				if len(run.Summary.Precision) > 0 {
					r = run.Summary.Precision[0] // the check that stopped it
				}
				margin = -1 // no interval
				if r.Margin != nil {
					margin = *r.Margin * 100
				}
				return len(run.Requests), secs, margin, run.Summary.Stopped == precision.StoppedMet
			}
			var sums [9]float64
			for range b.N {
				n, s, m, met := measure(c.cap, target)
				fn, fs, fm, _ := measure(n, nil)
				cn, cs, cm, _ := measure(c.cap, nil)
				for i, v := range []float64{float64(n), s, m, float64(fn), fs, fm, float64(cn), cs, cm} {
					sums[i] += v
				}
				b.ReportMetric(map[bool]float64{true: 1}[met], "met")
			}
			for i, unit := range []string{"until-req", "until-s", "until-margin-%", "fixed-same-req", "fixed-same-s", "fixed-same-margin-%",
				"fixed-cap-req", "fixed-cap-s", "fixed-cap-margin-%"} {
				b.ReportMetric(sums[i]/float64(b.N), unit)
			}
		})
	}
}
