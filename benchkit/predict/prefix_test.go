package predict

import (
	"context"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/timing"
)

// TestPredictSharedPrefix: a Load whose prompts share a prefix of 256
// tokens (Load.SharedPrefix) before their salts, sent live to the
// embedded engine with its prefix cache and predicted with the same
// plan: the prediction builds the prompts as the Load does, so each
// request finds the same cached tokens as the live one (none for the
// first, the shared prefix's blocks for the others), and its TTFT and
// E2E agree within agree's tolerances.
func TestPredictSharedPrefix(t *testing.T) {
	opts := slowSteps()
	w := benchkit.Lengths{Input: 320, Output: 16}
	traffic := benchkit.Traffic{Rate: 20, NumRequests: 24, Seed: 7}
	srvLoad := func(l *benchkit.Load) { l.SharedPrefix = 256 }
	want, l := liveWith(t, opts, w, traffic, srvLoad)
	got, err := (&Predictor{Load: l, Options: opts}).Run(context.Background(), w, traffic, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	byIndex := map[int]benchkit.Request{}
	for _, r := range want.Requests {
		byIndex[r.Index] = r
	}
	hits := 0
	for _, p := range got.Requests {
		lv := byIndex[p.Index]
		pc, lc := cached(p), cached(lv)
		if pc != lc {
			t.Errorf("request %d: %d cached tokens predicted, %d live", p.Index, pc, lc)
		}
		if pc >= 192 {
			hits++
		}
	}
	if hits < len(got.Requests)/2 {
		t.Errorf("%d of %d predicted requests served at least 192 of the 256 shared tokens from the cache: the prefix is not shared", hits, len(got.Requests))
	}
	agree(t, got, want, opts.Preset.DecodeStep([]int{1024}))
}

// cached is r's cached prompt tokens, 0 where the server reported none.
func cached(r benchkit.Request) int {
	if r.CachedTokens == nil {
		return 0
	}
	return *r.CachedTokens
}
