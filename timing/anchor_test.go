package timing

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"time"
)

// TestFirstChunkAnchor checks the anchored figures against hand
// computation: a role chunk at 40 ms (the first token's step), the first
// text at 60 ms carrying 2 tokens (one held back), then 1 token at 80 ms
// and 3 at 110 ms; End at 110 ms. n = 6.
func TestFirstChunkAnchor(t *testing.T) {
	tr := trace(110, []float64{60, 80, 110}, []int{2, 1, 3})
	tr.FirstChunk = at(40)
	m, err := tr.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if !m.TTFTDefined || m.TTFT != ms(60) {
		t.Errorf("TTFT = %v, want the first text at 60ms", m.TTFT)
	}
	if !m.TTFTFirstChunkDefined || m.TTFTFirstChunk != ms(40) {
		t.Errorf("TTFTFirstChunk = %v (defined %v), want 40ms", m.TTFTFirstChunk, m.TTFTFirstChunkDefined)
	}
	// TPOT = (110 − 40) / 5 = 14 ms; ITL: 20 (the held-back token), 20,
	// 10, 10, 10: five gaps whose mean is TPOT.
	if !m.TPOTDefined || m.TPOT != ms(14) {
		t.Errorf("TPOT = %v, want 14ms", m.TPOT)
	}
	want := []time.Duration{ms(20), ms(20), ms(10), ms(10), ms(10)}
	if diff := cmp.Diff(want, m.ITL); diff != "" {
		t.Errorf("ITL (-want +got):\n%s", diff)
	}
	// Generation TPS = 5 / 0.070 s.
	if !m.GenerationTPSDefined || m.GenerationTPS < 71.42 || m.GenerationTPS > 71.43 {
		t.Errorf("generation TPS = %v, want 5/0.07", m.GenerationTPS)
	}

	// With one token in the first content chunk the anchor adds no gap.
	tr2 := trace(30, []float64{10, 20, 30}, nil)
	tr2.FirstChunk = at(9)
	if diff := cmp.Diff([]time.Duration{ms(10), ms(10)}, tr2.ITL()); diff != "" {
		t.Errorf("ITL with k0 = 1 (-want +got):\n%s", diff)
	}

	// Without an anchor TTFTFirstChunk is undefined.
	if _, err := trace(30, []float64{10}, nil).TTFTFirstChunk(); !errors.Is(err, ErrUndefined) {
		t.Errorf("TTFTFirstChunk without an anchor: %v, want ErrUndefined", err)
	}
}

// TestFirstChunkValidate: an anchor before Start or after the first
// content chunk breaks the invariants.
func TestFirstChunkValidate(t *testing.T) {
	tr := trace(30, []float64{10}, nil)
	tr.FirstChunk = at(20)
	if err := tr.Validate(); !errors.Is(err, ErrInvalidTrace) {
		t.Errorf("anchor after the first chunk: %v, want ErrInvalidTrace", err)
	}
	tr.FirstChunk = t0.Add(-time.Millisecond)
	if err := tr.Validate(); !errors.Is(err, ErrInvalidTrace) {
		t.Errorf("anchor before Start: %v, want ErrInvalidTrace", err)
	}
}
