package sim

import (
	"math"
	"testing"
)

// TestAttentionOverKV: with Coefficients.AttentionOverKV every token of a
// step is charged PrefillPerPair against every key the cache holds after
// it, other requests' too: a llama.cpp batch of one 512-token chunk beside
// a generating slot of 4,000 tokens costs 513 · (4,000 + 512) pairs, not
// the chunk's own causal 512 · 513 / 2; a lone chunk on 100 cached tokens
// costs n · (100 + n); a decode step of two requests adds 2 · Σ contexts.
// Without it the pairs are each request's own causal ones.
func TestAttentionOverKV(t *testing.T) {
	f := Coefficients{PrefillPerToken: 1e-5, PrefillPerPair: 1e-8, DecodePerRequest: 1e-3}
	p := Fast()
	p.Fitted = &f
	c := cost{p: p, nodes: 1}
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("%s: compute %.9g s, want %.9g", name, got, want)
		}
	}
	for _, over := range []bool{false, true} {
		f.AttentionOverKV = over
		_, comp := c.roofMixed([]int{4000}, []lcChunk{{n: 512, offset: 0}})
		pairs := 512.0 * 513 / 2
		if over {
			pairs = 513 * (4000 + 512)
		}
		near("mixed batch", comp, 1e-3+1e-5*512+1e-8*pairs)
		_, comp = c.roofPrefill(64, 100)
		pairs = 64*100 + 64*65/2
		if over {
			pairs = 64 * (100 + 64)
		}
		near("prefill chunk", comp, 1e-5*64+1e-8*pairs)
		_, comp = c.roofDecode([]int{300, 700})
		want := 2e-3
		if over {
			want += 1e-8 * 2 * 1000
		}
		near("decode step", comp, want)
	}
}
