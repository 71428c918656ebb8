package disagg

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine"
)

func f64(v float64) *float64 { return &v }

// disaggRow makes a row of phase with the given figures; ttft < 0 leaves
// TTFT unset (an unstreamed row).
func disaggRow(phase string, elapsed, ttft, ptps, gtps float64) benchkit.Request {
	r := benchkit.Request{PPTarget: 2048, PPTokens: 2048, TGTarget: 16, DoneS: elapsed,
		Stats: &engine.ServerStats{PromptTPS: ptps, GenerationTPS: gtps, PromptTokens: 2048, GenerationTokens: 16}}
	r.Concurrency, r.Phase = 1, phase
	if ttft >= 0 {
		r.TTFTS = f64(ttft)
	}
	return r
}

func TestCompare(t *testing.T) {
	failed := disaggRow(PhaseDecodeAlone, 99, 99, 1, 1)
	failed.Error = "boom"
	rows := []benchkit.Request{
		disaggRow(PhasePrefillAlone, 1.5, 0.5, 4000, 40),
		disaggRow(PhaseDisaggregated, 1.0, 0.2, 10000, 50),
		disaggRow(PhaseDisaggregated, 2.0, 0.4, 6000, 30),
		disaggRow(PhaseDecodeAlone, 3.0, 0.9, 2000, 40),
		failed,
	}
	// A second cell, streamed in no phase: TTFT undefined.
	other := disaggRow(PhaseDisaggregated, 4, -1, 1000, 20)
	other.PPTarget = 4096
	rows = append(rows, other, func() benchkit.Request { r := disaggRow(PhaseDecodeAlone, 5, -1, 500, 10); r.PPTarget = 4096; return r }())

	got := Compare(rows)
	// Hand-computed: disaggregated means elapsed 1.5, TTFT 0.3, prompt
	// 8000, gen 40.
	want := []Comparison{
		{PP: 2048, TG: 16, Concurrency: 1,
			Phases: []PhaseFigures{
				{Phase: PhaseDisaggregated, Requests: 2, ElapsedS: f64(1.5), TTFTS: f64(0.3), PromptTPS: f64(8000), GenerationTPS: f64(40)},
				{Phase: PhaseDecodeAlone, Requests: 1, Failed: 1, ElapsedS: f64(3), TTFTS: f64(0.9), PromptTPS: f64(2000), GenerationTPS: f64(40)},
				{Phase: PhasePrefillAlone, Requests: 1, ElapsedS: f64(1.5), TTFTS: f64(0.5), PromptTPS: f64(4000), GenerationTPS: f64(40)},
			},
			Speedups: []Speedup{
				{Baseline: PhaseDecodeAlone, Elapsed: f64(2), TTFT: f64(3), PromptTPS: f64(4), GenerationTPS: f64(1)},
				{Baseline: PhasePrefillAlone, Elapsed: f64(1), TTFT: f64(0.5 / 0.3), PromptTPS: f64(2), GenerationTPS: f64(1)},
			}},
		{PP: 4096, TG: 16, Concurrency: 1,
			Phases: []PhaseFigures{
				{Phase: PhaseDisaggregated, Requests: 1, ElapsedS: f64(4), PromptTPS: f64(1000), GenerationTPS: f64(20)},
				{Phase: PhaseDecodeAlone, Requests: 1, ElapsedS: f64(5), PromptTPS: f64(500), GenerationTPS: f64(10)},
			},
			Speedups: []Speedup{{Baseline: PhaseDecodeAlone, Elapsed: f64(1.25), PromptTPS: f64(2), GenerationTPS: f64(2)}}},
	}
	approx := cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) })
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("Compare (-want +got):\n%s", diff)
	}
}

func TestCompareWithoutDisaggregatedPhase(t *testing.T) {
	got := Compare([]benchkit.Request{disaggRow(PhaseDecodeAlone, 1, 0.1, 100, 10)})
	if len(got) != 1 || len(got[0].Speedups) != 0 || len(got[0].Phases) != 1 {
		t.Errorf("got %+v, want one cell with one phase and no speedup", got)
	}
}
