package disagg_test

import (
	"fmt"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/disagg"
)

func ExampleCompare() {
	row := func(phase string, elapsed, ttft float64) benchkit.Request {
		r := benchkit.Request{PPTarget: 4096, TGTarget: 128, DoneS: elapsed, TTFTS: &ttft}
		r.Concurrency, r.Phase = 1, phase
		return r
	}
	cells := disagg.Compare([]benchkit.Request{
		row(disagg.PhaseDisaggregated, 2.0, 0.25), row(disagg.PhaseDisaggregated, 2.2, 0.35),
		row(disagg.PhaseDecodeAlone, 3.15, 0.9),
	})
	for _, c := range cells {
		for _, s := range c.Speedups {
			fmt.Printf("pp=%d: disaggregated vs %s: elapsed %.2fx, TTFT %.2fx\n", c.PP, s.Baseline, *s.Elapsed, *s.TTFT)
		}
	}
	// Output:
	// pp=4096: disaggregated vs decode_alone: elapsed 1.50x, TTFT 3.00x
}
