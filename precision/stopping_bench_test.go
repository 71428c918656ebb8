package precision

import (
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkStoppedCoverage measures what checking a target as samples
// arrive does to its interval: samples come one at a time from a known
// distribution (exponential, mean 1; its p90 is ln 10), the target is
// checked every max(1, cap/50) samples as a load run checks it, and at the
// stop the interval is compared with the truth. It reports the share of
// stopped runs whose interval held the truth (coverage, against the
// nominal level), the share that stopped at the target before the cap,
// and the mean samples used.
//
//	go test -run '^$' -bench BenchmarkStoppedCoverage -benchtime 2000x ./precision/
func BenchmarkStoppedCoverage(b *testing.B) {
	for _, c := range []struct {
		name  string
		t     Target
		truth float64
	}{
		{"mean-5pct", Target{"x", "mean", 0.05, 0.95}, 1},
		{"p90-10pct", Target{"x", "p90", 0.10, 0.95}, math.Log(10)},
	} {
		b.Run(c.name, func(b *testing.B) {
			const limit = 5000
			src := rand.New(rand.NewPCG(7, 11))
			held, stopped, used := 0, 0, 0
			for range b.N {
				var x []float64
				every, met := max(1, limit/50), false
				var r Result
				for len(x) < limit && !met {
					x = append(x, src.ExpFloat64())
					if len(x)%every == 0 || len(x) == limit {
						r = c.t.Check(x)
						met = r.Met
					}
				}
				if met {
					stopped++
				}
				used += len(x)
				if r.Lo != nil && r.Hi != nil && *r.Lo <= c.truth && c.truth <= *r.Hi {
					held++
				}
			}
			b.ReportMetric(float64(held)/float64(b.N), "coverage")
			b.ReportMetric(float64(stopped)/float64(b.N), "stopped-early")
			b.ReportMetric(float64(used)/float64(b.N), "samples")
		})
	}
}
