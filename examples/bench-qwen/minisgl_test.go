package main

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/inferbench/inferbench/benchkit"
)

// TestProcessResults checks mini-sglang's figures by hand on two
// requests' instants (seconds):
//
//	A: 0, 0.10, 0.15, 0.25, 0.26   gaps 0.10 | 0.05 0.10 0.01
//	B: 0.50, 0.70, 0.72, 0.80      gaps 0.20 | 0.02 0.08
//
// TTFT = the first gaps {0.10, 0.20}; TPOT = the later gaps pooled,
// sorted {0.01, 0.02, 0.05, 0.08, 0.10}; E2E = {0.26, 0.30}; the
// percentiles are sorted[int(n·q)]: for TPOT p50 = s[2], p90 = s[int(4.5)]
// = s[4] (interpolation would give 0.088), for TTFT and E2E p50 = s[1].
// Duration 0.80 − 0 = 0.80 s; 5 + 4 = 9 instants, so 11.25 token/s and
// 2.5 req/s.
func TestProcessResults(t *testing.T) {
	got := processResults([][]float64{{0, 0.10, 0.15, 0.25, 0.26}, {0.50, 0.70, 0.72, 0.80}})
	want := &miniFigures{
		Requests: 2, Tokens: 9,
		TTFTms:    miniDist{Avg: 150, P50: 200, P90: 200, P99: 200, Max: 200},
		TPOTms:    miniDist{Avg: 52, P50: 50, P90: 100, P99: 100, Max: 100},
		E2Es:      miniDist{Avg: 0.28, P50: 0.30, P90: 0.30, P99: 0.30, Max: 0.30},
		DurationS: 0.80, TokensPS: 11.25, ReqPS: 2.5,
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("processResults (-want +got):\n%s", diff)
	}
	if processResults(nil) != nil || processResults([][]float64{{1}}) != nil {
		t.Errorf("no request, or one of a single instant, has figures; client.py fails on both")
	}
}

// TestPrintStatsRanks: with 1000 values 1 … 1000 client.py's percentiles
// are the values at ranks 500, 900 and 990 from 0: 501, 901 and 991.
func TestPrintStatsRanks(t *testing.T) {
	v := make([]float64, 1000)
	for i := range v {
		v[len(v)-1-i] = float64(i + 1) // unsorted on purpose
	}
	got := printStats(v, 1)
	if want := (miniDist{Avg: 500.5, P50: 501, P90: 901, P99: 991, Max: 1000}); got != want {
		t.Errorf("printStats = %+v, want %+v", got, want)
	}
}

// TestTicsOf: a request's instants are its send, its role chunk when the
// server wrote one before the text, each content chunk and the end of the
// response; a failed request has none.
func TestTicsOf(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	r := benchkit.Request{SendOffsetS: 1, TTFTFirstChunkS: f(0.1), TTFTS: f(0.12), ICLS: []float64{0.01, 0.02}, E2ES: f(0.2)}
	approx := cmpopts.EquateApprox(0, 1e-12)
	if got, ok := ticsOf(r); !ok || !cmp.Equal(got, []float64{1, 1.1, 1.12, 1.13, 1.15, 1.2}, approx) {
		t.Errorf("with a role chunk: %v, %v", got, ok)
	}
	r.TTFTFirstChunkS = nil // mini-sglang's server: role and first token in one chunk
	if got, ok := ticsOf(r); !ok || !cmp.Equal(got, []float64{1, 1.12, 1.13, 1.15, 1.2}, approx) {
		t.Errorf("without a role chunk: %v, %v", got, ok)
	}
	// Three tokens on mini-sglang's server: output_length + 2 instants, and
	// its figures: TTFT 120 ms, the gaps 10, 20 and 50 ms pooled.
	m := figuresOf([]benchkit.Request{r, {Error: "boom", ErrorKind: "http"}})
	if m.Tokens != 3+2 || m.LeftOut != 1 || math.Abs(m.TTFTms.Avg-120) > 1e-9 || math.Abs(m.TPOTms.Avg-80.0/3) > 1e-9 || math.Abs(m.TPOTms.Max-50) > 1e-9 {
		t.Errorf("figures %+v", m)
	}
	r.TTFTS = nil
	if _, ok := ticsOf(r); ok {
		t.Errorf("a request without a TTFT has instants")
	}
}
