package benchkit_test

import (
	"context"
	"fmt"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// A run's steady-state figures beside its whole-run ones: Steady is a
// Summary of its own over the window between the ramp-up and the drain
// (docs/STEADY-STATE.md). Warmup sends and drops requests first.
func ExampleLoad_steady() {
	ctx := context.Background()
	c, srv := embedded()
	defer srv.Close()
	defer c.CloseIdleConnections()
	l := &benchkit.Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}, Warmup: 4}
	run, err := l.Run(ctx, benchkit.Lengths{Input: 128, Output: 16}, benchkit.Traffic{Rate: 50, NumRequests: 40}, timing.SLO{TTFT: 2e9})
	if err != nil {
		panic(err)
	}
	s, st := run.Summary, run.Summary.Steady
	fmt.Printf("%s: %d rows, %d warm-up requests dropped\n", s.Traffic, len(run.Requests), s.Warmup)
	fmt.Printf("window by the %s rule, inside the run: %t\n", st.SteadyRule, *st.WindowStartS >= 0 && *st.WindowEndS <= s.DurationS)
	fmt.Printf("both have output throughput, TTFT p99, goodput and achieved rate: %t\n",
		s.OutputThroughput != nil && st.OutputThroughput != nil && s.TTFT.P99 != nil && st.TTFT.P99 != nil &&
			s.Goodput != nil && st.Goodput != nil && s.AchievedRate != nil && st.AchievedRate != nil)
	// Output:
	// poisson(rate=50/s): 40 rows, 4 warm-up requests dropped
	// window by the ramp_to_drain rule, inside the run: true
	// both have output throughput, TTFT p99, goodput and achieved rate: true
}
