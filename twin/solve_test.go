package twin

import (
	"math"
	"strings"
	"testing"
)

// Records whose every piece is memory-bound cannot split the step
// overhead from the bases; the fit then leaves out a term of that
// collinear set, and still fits the prefill's cached term, which the
// records' offsets identify.
func TestSolveDropsOnlyCollinearTerms(t *testing.T) {
	truth := make([]float64, nCols)
	truth[cOver], truth[cDecodeBase], truth[cDecodeCtx] = 1e-4, 1e-3, 1e-8
	truth[cPrefillBase], truth[cPrefillCached] = 1e-3, 3e-8
	var rows [][nCols]float64
	var ts []float64
	add := func(r [nCols]float64) {
		t := 0.0
		for c := range nCols {
			t += r[c] * truth[c]
		}
		rows, ts = append(rows, r), append(ts, t)
	}
	for _, steps := range []float64{3, 7, 15} {
		for _, ctx := range []float64{100, 1000, 5000} {
			var r [nCols]float64
			r[cOver], r[cDecodeBase], r[cDecodeCtx] = steps, steps, steps*ctx
			add(r)
		}
	}
	for _, off := range []float64{0, 500, 2000, 8000} {
		var r [nCols]float64
		r[cOver], r[cPrefillBase], r[cPrefillCached] = 1, 1, off
		add(r)
	}
	free := make([]bool, nCols)
	for c := range free {
		free[c] = true
	}
	th, set, notes := solve(rows, ts, free, make([]float64, nCols))
	if !set[cPrefillCached] || math.Abs(th[cPrefillCached]/truth[cPrefillCached]-1) > 1e-6 {
		t.Errorf("prefill_per_cached_token = %g (set %v), want %g; notes %q", th[cPrefillCached], set[cPrefillCached], truth[cPrefillCached], notes)
	}
	if math.Abs(th[cDecodeCtx]/truth[cDecodeCtx]-1) > 1e-6 {
		t.Errorf("decode_per_context_token = %g, want %g", th[cDecodeCtx], truth[cDecodeCtx])
	}
	// The bases hold the overhead they cannot be told from.
	if got, want := th[cDecodeBase]+th[cOver], truth[cDecodeBase]+truth[cOver]; math.Abs(got/want-1) > 1e-6 {
		t.Errorf("decode base + overhead = %g, want %g", got, want)
	}
	for _, n := range notes {
		if strings.HasPrefix(n, colNames[cPrefillCached]) {
			t.Errorf("a note leaves out the cached term the offsets identify: %q", n)
		}
	}
}
