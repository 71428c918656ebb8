package energy

import (
	"math"
	"time"

	"github.com/inferbench/inferbench/energy/energytest"
)

// t0 is the instant every fixture's second 0 maps to.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// at returns t0 + s seconds.
func at(s float64) time.Time { return t0.Add(time.Duration(math.Round(s * 1e9))) }

// The fixtures live in energytest so that cmd/perf samples the same curves.
var (
	fixtures      = energytest.Fixtures
	windowLengths = energytest.WindowLengths
	placements    = energytest.WindowStarts
)

const span = energytest.Span

// sampled returns f sampled at 1 Hz over [0, span].
func sampled(f energytest.Fixture) PowerTrace {
	p := PowerTrace{Node: f.Name}
	for i := 0; i <= span; i++ {
		p.Samples = append(p.Samples, Sample{At: at(float64(i)), Value: f.P(float64(i))})
	}
	return p
}
