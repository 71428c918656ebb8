package concurrency_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/inferbench/inferbench/concurrency"
)

// threshold is a synthetic system: its p99 latency is 50 ms up to the
// knee and jumps to 200 ms and more past it (queueing), so an SLO of
// p99 ≤ 100 ms passes exactly up to the knee.
func threshold(knee float64) (func(context.Context, float64) (float64, error), func(float64) bool) {
	measure := func(_ context.Context, rate float64) (float64, error) {
		if rate <= knee {
			return 0.050, nil
		}
		return 0.200 + (rate - knee), nil
	}
	return measure, func(p99 float64) bool { return p99 <= 0.100 }
}

func rates[M any](ps []concurrency.Probe[M]) []float64 {
	var r []float64
	for _, p := range ps {
		r = append(r, p.Rate)
	}
	return r
}

// TestSearchRateByHand follows a small search step by step: knee 5/s,
// start 1, factor 2, tolerance 0.25. Bracketing probes 1, 2, 4 (pass) and
// 8 (fail). Bisection: √(4·8) = 5.657 fails, bracket [4, 5.657] is 41 %
// wide; √(4·5.657) = 4.757 passes, bracket [4.757, 5.657] is 18.9 % wide,
// within 25 %: the answer is 4.757.
func TestSearchRateByHand(t *testing.T) {
	measure, ok := threshold(5)
	res, err := concurrency.SearchRate(testCtx(t), measure, ok, &concurrency.SearchOptions{Start: 1, Factor: 2, Tolerance: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	mid1 := math.Sqrt(32)
	mid2 := math.Sqrt(4 * mid1)
	want := []float64{1, 2, 4, 8, mid1, mid2}
	if diff := cmp.Diff(want, rates(res.Probes), cmpopts.EquateApprox(1e-12, 0)); diff != "" {
		t.Errorf("probed rates (-want +got):\n%s", diff)
	}
	var pass []bool
	for _, p := range res.Probes {
		pass = append(pass, p.Pass)
	}
	if diff := cmp.Diff([]bool{true, true, true, false, false, true}, pass); diff != "" {
		t.Errorf("pass (-want +got):\n%s", diff)
	}
	if res.Rate != mid2 || res.Lo != mid2 || res.Hi != mid1 {
		t.Errorf("rate %v, bracket [%v, %v]; expected %v, [%v, %v]", res.Rate, res.Lo, res.Hi, mid2, mid2, mid1)
	}
}

// TestSearchRateFindsKnee: for knees across four decades the answer passes,
// lies within the tolerance below the knee, and every probe is recorded
// with the right verdict.
func TestSearchRateFindsKnee(t *testing.T) {
	for _, knee := range []float64{0.3, 7, 37, 1234} {
		measure, ok := threshold(knee)
		opts := &concurrency.SearchOptions{Start: 1, Min: 0.01, Tolerance: 0.02, MaxProbes: 40}
		res, err := concurrency.SearchRate(testCtx(t), measure, ok, opts)
		if err != nil {
			t.Fatalf("knee %v: %v", knee, err)
		}
		if !(res.Rate <= knee && res.Rate >= knee/(1+opts.Tolerance)) {
			t.Errorf("knee %v: found %v, expected within [%v, %v]", knee, res.Rate, knee/(1+opts.Tolerance), knee)
		}
		if (res.Hi-res.Lo)/res.Lo > opts.Tolerance || res.Hi <= knee {
			t.Errorf("knee %v: final bracket [%v, %v] not within tolerance or not failing above", knee, res.Lo, res.Hi)
		}
		for _, p := range res.Probes {
			if p.Pass != (p.Rate <= knee) || p.Measurement != func() float64 { m, _ := measure(nil, p.Rate); return m }() {
				t.Errorf("knee %v: probe %+v recorded wrongly", knee, p)
			}
		}
	}
}

func TestSearchRateErrors(t *testing.T) {
	measure, ok := threshold(5)
	errMeasure := errors.New("server gone")
	tests := []struct {
		name    string
		measure func(context.Context, float64) (float64, error)
		opts    *concurrency.SearchOptions
		want    error
		rates   []float64
		rate    float64
	}{
		{"start fails, no floor", measure, &concurrency.SearchOptions{Start: 8}, concurrency.ErrNoPassingRate, []float64{8}, 0},
		{"floor fails", measure, &concurrency.SearchOptions{Start: 80, Min: 10}, concurrency.ErrNoPassingRate, []float64{80, 40, 20, 10}, 0},
		// 1, 2, 4 pass, 8 fails, then √32 fails and the budget of 5 is spent.
		{"probe limit", measure, &concurrency.SearchOptions{MaxProbes: 5}, concurrency.ErrProbeLimit, []float64{1, 2, 4, 8, math.Sqrt(32)}, 4},
		{"measure error", func(_ context.Context, r float64) (float64, error) {
			if r > 3 {
				return 0, errMeasure
			}
			return 0, nil
		}, nil, errMeasure, []float64{1, 2, 4}, 2},
		// Max passes: it is the answer, no error.
		{"ceiling passes", measure, &concurrency.SearchOptions{Max: 3}, nil, []float64{1, 2, 3}, 3},
		{"bad factor", measure, &concurrency.SearchOptions{Factor: 1}, nil, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := concurrency.SearchRate(testCtx(t), tc.measure, ok, tc.opts)
			switch {
			case tc.name == "bad factor":
				if err == nil || len(res.Probes) != 0 {
					t.Errorf("err %v, %d probes; expected a configuration error before any probe", err, len(res.Probes))
				}
				return
			case tc.want == nil && err != nil, tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("err %v; expected %v", err, tc.want)
			}
			if diff := cmp.Diff(tc.rates, rates(res.Probes), cmpopts.EquateApprox(1e-12, 0)); diff != "" {
				t.Errorf("probed rates (-want +got):\n%s", diff)
			}
			if res.Rate != tc.rate {
				t.Errorf("rate %v; expected %v", res.Rate, tc.rate)
			}
		})
	}
}

// TestSearchRateDownward: start above the knee, bracket down to it.
func TestSearchRateDownward(t *testing.T) {
	measure, ok := threshold(5)
	res, err := concurrency.SearchRate(testCtx(t), measure, ok, &concurrency.SearchOptions{Start: 64, Min: 1, Tolerance: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	// 64, 32, 16, 8 fail, 4 passes; then as in TestSearchRateByHand.
	want := []float64{64, 32, 16, 8, 4, math.Sqrt(32), math.Sqrt(4 * math.Sqrt(32))}
	if diff := cmp.Diff(want, rates(res.Probes), cmpopts.EquateApprox(1e-12, 0)); diff != "" {
		t.Errorf("probed rates (-want +got):\n%s", diff)
	}
}

func TestSearchRateCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(testCtx(t))
	measure := func(_ context.Context, rate float64) (float64, error) {
		if rate >= 4 {
			cancel()
		}
		return 0, nil
	}
	res, err := concurrency.SearchRate(ctx, measure, func(float64) bool { return true }, nil)
	if !errors.Is(err, context.Canceled) || len(res.Probes) != 3 || res.Rate != 4 {
		t.Errorf("err %v, %d probes, rate %v; expected Canceled after 3 probes, rate 4", err, len(res.Probes), res.Rate)
	}
}
