package timing

import (
	"errors"
	"testing"
	"time"
)

// FuzzTrace builds traces from arbitrary event sequences: each pair of bytes
// is (gap in µs, tokens). Flag bit 4 scales every token count by 2^56, as a
// server that reports usage of 1e18 does. Whatever the input, ITL and
// Metrics must not panic nor size memory from an absurd count, Metrics must
// reject exactly the traces Validate rejects, and valid traces must keep
// the invariants the formulas promise.
func FuzzTrace(f *testing.F) {
	f.Add([]byte{10, 1, 5, 4, 0, 2}, uint8(3), uint8(0))
	f.Add([]byte{}, uint8(0), uint8(0))
	f.Add([]byte{0, 0, 0, 0}, uint8(1), uint8(1))
	f.Add([]byte{255, 3}, uint8(0), uint8(2))
	// Counts of 2^56 and 2^58 tokens: ITL used to ask makeslice for that
	// many gaps and panic ("cap out of range").
	f.Add([]byte{10, 1, 5, 4}, uint8(3), uint8(4))
	// A negative count after a positive first chunk: ITL used to ask for
	// a negative capacity and panic.
	f.Add([]byte{10, 3, 5, 255}, uint8(3), uint8(0))
	f.Fuzz(func(t *testing.T, ev []byte, endGap uint8, flags uint8) {
		start := time.Unix(1000, 0)
		tr := Trace{Start: start}
		now := start
		for i := 0; i+1 < len(ev); i += 2 {
			gap := time.Duration(int8(ev[i])) * time.Microsecond // negative gaps make unsorted traces
			now = now.Add(gap)
			k := int(int8(ev[i+1])) % 8
			if flags&4 != 0 {
				k <<= 56
			}
			tr.Chunks = append(tr.Chunks, Chunk{At: now, Tokens: k})
		}
		if flags&1 == 0 {
			tr.End = now.Add(time.Duration(endGap) * time.Microsecond)
		}
		if flags&2 != 0 {
			tr.Headers = start.Add(time.Duration(endGap) * time.Microsecond)
		}
		if itl := tr.ITL(); len(itl) > MaxTraceTokens {
			t.Fatalf("ITL has %d gaps, more than MaxTraceTokens", len(itl))
		}
		verr := tr.Validate()
		m, err := tr.Metrics()
		if (verr == nil) != (err == nil) {
			t.Fatalf("Validate() = %v but Metrics() error = %v", verr, err)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidTrace) {
				t.Fatalf("Metrics error %v does not wrap ErrInvalidTrace", err)
			}
			return
		}
		if m.Tokens < len(tr.Chunks) {
			t.Fatalf("tokens %d < chunks %d", m.Tokens, len(tr.Chunks))
		}
		if len(tr.Chunks) > 0 {
			first := chunkTokens(tr.Chunks[0])
			if len(m.ITL) != m.Tokens-first {
				t.Fatalf("len(ITL) = %d, want tokens − first chunk = %d", len(m.ITL), m.Tokens-first)
			}
			var sum time.Duration
			for _, g := range m.ITL {
				if g < 0 {
					t.Fatalf("negative ITL gap %v", g)
				}
				sum += g
			}
			if span := tr.Chunks[len(tr.Chunks)-1].At.Sub(tr.Chunks[0].At); sum != span {
				t.Fatalf("ITL sums to %v, want the chunk span %v", sum, span)
			}
			if len(m.ICL) != len(tr.Chunks)-1 {
				t.Fatalf("len(ICL) = %d, want %d", len(m.ICL), len(tr.Chunks)-1)
			}
		}
		if m.TPOTDefined && (m.TPOT < 0 || m.Tokens < 2) {
			t.Fatalf("TPOT %v defined with %d tokens", m.TPOT, m.Tokens)
		}
		if m.GenerationTPSDefined && !(m.GenerationTPS > 0) {
			t.Fatalf("generation TPS %v defined but not positive", m.GenerationTPS)
		}
		if m.TTFTDefined && m.E2EDefined && m.TTFT > m.E2E {
			t.Fatalf("TTFT %v > E2E %v", m.TTFT, m.E2E)
		}
	})
}
