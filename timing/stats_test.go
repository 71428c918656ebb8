package timing

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestAggregateBurst(t *testing.T) {
	// Four requests over a 2 s burst: rates 40, 50, 60 and one undefined
	// (1 token); tokens 80 + 100 + 120 + 1 = 301.
	reqs := []BurstRequest{
		{Tokens: 80, GenerationTPS: 40, RateDefined: true},
		{Tokens: 100, GenerationTPS: 50, RateDefined: true},
		{Tokens: 120, GenerationTPS: 60, RateDefined: true},
		{Tokens: 1},
	}
	b := AggregateBurst(reqs, 2*time.Second)
	want := BurstStats{
		N: 4, ExoAggregateTPS: 60 * 4, TotalTokens: 301, Wall: 2 * time.Second,
		ThroughputTPS: 150.5, MeanTPS: 50, MedianTPS: 50,
	}
	if diff := cmp.Diff(want, b, cmpopts.IgnoreFields(BurstStats{}, "Warnings")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(b.Warnings) != 1 || !errors.Is(b.Warnings[0], ErrUndefined) {
		t.Errorf("warnings %v, want one ErrUndefined", b.Warnings)
	}

	// A failed request adds nothing but still counts in N, and exo's
	// aggregate still multiplies by N: that is the point of showing both.
	b = AggregateBurst([]BurstRequest{{Tokens: 10, GenerationTPS: 100, RateDefined: true}, {Failed: true}}, time.Second)
	if b.ExoAggregateTPS != 200 || b.ThroughputTPS != 10 || b.Failed != 1 || len(b.Warnings) != 1 {
		t.Errorf("with a failure: %+v", b)
	}

	// Nothing defined: NaN, never 0.
	b = AggregateBurst([]BurstRequest{{Tokens: 1}}, 0)
	if !math.IsNaN(b.ExoAggregateTPS) || !math.IsNaN(b.MeanTPS) || !math.IsNaN(b.ThroughputTPS) {
		t.Errorf("undefined aggregates: %+v, want NaN", b)
	}
}

func TestPercentile(t *testing.T) {
	x := []float64{4, 1, 3, 2} // sorted: 1 2 3 4
	tests := []struct{ p, want float64 }{
		{0, 1}, {50, 2.5}, {100, 4},
		{90, 3.7},      // h = 3·0.9 = 2.7 → 3 + 0.7·(4−3)
		{99, 3.97},     // h = 2.97
		{25, 1.75},     // h = 0.75
		{100.0 / 3, 2}, // h = 1
		{200.0 / 3, 3}, // h = 2
		{10, 1.3},      // h = 0.3
	}
	for _, tc := range tests {
		if got := Percentile(x, tc.p); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Percentile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if x[0] != 4 {
		t.Error("Percentile modified its input")
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("Percentile of nothing is not NaN")
	}
	if got := Percentile([]float64{7}, 99); got != 7 {
		t.Errorf("Percentile of one value = %v", got)
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{2, 4, 4, 4, 5, 5, 7, 9, math.NaN()}, 75)
	// Mean 5; sample variance Σ(x−5)² / 7 = 32/7.
	want := Summary{
		N: 8, Mean: 5, StdDev: math.Sqrt(32.0 / 7), Min: 2, Max: 9,
		P50: 4.5, P90: 7.6, P95: 8.3, P99: 8.86,
		Extra: map[float64]float64{75: 5.5},
	}
	if diff := cmp.Diff(want, s, cmpopts.EquateApprox(0, 1e-12), cmpopts.IgnoreFields(Summary{}, "Warnings")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(s.Warnings) != 1 {
		t.Errorf("warnings %v, want one for the NaN", s.Warnings)
	}

	one := Summarize([]float64{3})
	if one.Mean != 3 || !math.IsNaN(one.StdDev) || len(one.Warnings) != 1 || !errors.Is(one.Warnings[0], ErrFewSamples) {
		t.Errorf("one value: %+v", one)
	}
	none := Summarize(nil, 10)
	if none.N != 0 || !math.IsNaN(none.Mean) || !math.IsNaN(none.Extra[10]) || len(none.Warnings) != 1 {
		t.Errorf("no values: %+v", none)
	}
}

func TestConfidenceInterval(t *testing.T) {
	// x = 10, 12, 14: mean 12, s = 2, n = 3, t(0.975, 2) = 4.302652729911275.
	iv := ConfidenceInterval([]float64{10, 12, 14}, 0.95)
	half := 4.302652729911275 * 2 / math.Sqrt(3)
	if math.Abs(iv.Center-12) > 1e-12 || math.Abs(iv.Lo-(12-half)) > 1e-9 || math.Abs(iv.Hi-(12+half)) > 1e-9 {
		t.Errorf("interval = %+v, want 12 ± %v", iv, half)
	}
	if len(iv.Warnings) != 0 {
		t.Errorf("warnings: %v", iv.Warnings)
	}
	// Large n approaches the normal quantile 1.96.
	x := make([]float64, 10001)
	for i := range x {
		x[i] = float64(i % 2) // s ≈ 0.5
	}
	iv = ConfidenceInterval(x, 0.95)
	_, sd := iv.Center, 0.5000250018750938 // sample sd of 5000 ones, 5001 zeros
	if got, want := iv.Hi-iv.Center, 1.96*sd/math.Sqrt(10001); math.Abs(got-want)/want > 1e-3 {
		t.Errorf("half width %v, want ≈ %v", got, want)
	}

	one := ConfidenceInterval([]float64{5}, 0.95)
	if !math.IsInf(one.Lo, -1) || !math.IsInf(one.Hi, 1) || !errors.Is(one.Warnings[0], ErrFewSamples) {
		t.Errorf("one sample: %+v", one)
	}
	none := ConfidenceInterval(nil, 0.9)
	if !math.IsNaN(none.Center) || len(none.Warnings) != 1 {
		t.Errorf("no samples: %+v", none)
	}
}

func TestGoodput(t *testing.T) {
	mk := func(ttft, tpot, e2e float64, itl ...float64) Metrics {
		m := Metrics{TTFT: ms(ttft), TPOT: ms(tpot), E2E: ms(e2e), TTFTDefined: true, TPOTDefined: true, E2EDefined: true}
		for _, v := range itl {
			m.ITL = append(m.ITL, ms(v))
		}
		return m
	}
	slo := SLO{TTFT: ms(100), TPOT: ms(20), ITL: ms(50), E2E: ms(1000)}
	reqs := []Metrics{
		mk(90, 15, 900, 10, 20), // good
		mk(110, 15, 900, 10),    // TTFT too long
		mk(90, 25, 900, 10),     // TPOT too long
		mk(90, 15, 900, 10, 60), // one ITL gap too long
		mk(90, 15, 1100, 10),    // E2E too long
		mk(100, 20, 1000, 50),   // exactly at every bound: good
		{TTFTDefined: false},    // no first token: fails a TTFT objective
		{TTFT: ms(10), TTFTDefined: true, E2E: ms(10), E2EDefined: true}, // one token: TPOT undefined, passes
	}
	g := ComputeGoodput(slo, reqs, 2, 2*time.Second)
	want := Goodput{Good: 3, Total: 10, Fraction: 0.3, Rate: 1.5}
	if diff := cmp.Diff(want, g); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := slo.String(); got != "ttft≤100ms tpot≤20ms itl≤50ms e2e≤1s" {
		t.Errorf("String() = %q", got)
	}
	if got := (SLO{}).String(); got != "none" {
		t.Errorf("empty SLO String() = %q", got)
	}
	// No objectives: every completed request is good, failures are not.
	g = ComputeGoodput(SLO{}, reqs, 2, 0)
	if g.Good != len(reqs) || g.Total != len(reqs)+2 || !math.IsNaN(g.Rate) {
		t.Errorf("no SLO: %+v", g)
	}
}
