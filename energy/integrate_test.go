package energy

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func trace(pts ...float64) PowerTrace {
	p := PowerTrace{Node: "n"}
	for i := 0; i+1 < len(pts); i += 2 {
		p.Samples = append(p.Samples, Sample{At: at(pts[i]), Value: pts[i+1]})
	}
	return p
}

func win(a, b float64) Window { return Window{Start: at(a), End: at(b)} }

// warnKinds maps warnings to the sentinels they wrap, for comparison.
func warnKinds(ws []error) []error {
	var out []error
	for _, w := range ws {
		for _, s := range []error{ErrExtrapolated, ErrSingleSample, ErrNoSamplesInWindow, ErrGap, ErrMissedWrap, ErrUndefined, ErrBelowIdle} {
			if errors.Is(w, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

var approx = cmpopts.EquateApprox(0, 1e-9)

func TestIntegrateHandComputed(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name          string
		p             PowerTrace
		w             Window
		joules, bound float64
		samples       int
		warns         []error
	}{
		{
			// P(0.5) = 15, P(1.5) = 20: 0.5·(15+20)/2 + 0.5·20 = 18.75.
			// Bound: range 0.5·max(17.5−10, 20−17.5) = 3.75 on the first
			// piece, 0 on the flat one; curvature M = 2·(0−10)/2 = 10 on
			// both intervals: 5·(0.375 − 0.875/3) + 5·(0.125 − 0.125/3).
			name: "edges interpolated", p: trace(0, 10, 1, 20, 2, 20), w: win(0.5, 1.5),
			joules: 18.75, bound: 3.75 + 5*(0.375-0.875/3) + 5*(0.125-0.125/3), samples: 1,
		},
		{
			// (10+20)/2 + (20+20)/2 = 35; range 1·5, curvature 2·10/12.
			name: "aligned", p: trace(0, 10, 1, 20, 2, 20), w: win(0, 2),
			joules: 35, bound: 5 + 2*10.0/12, samples: 3,
		},
		{
			// 1 s held at 100 W, then 0.5·(100+150)/2; bound 1·(200−100)
			// held, 0.5·max(125−100, 200−125) covered, no curvature.
			name: "starts before the trace", p: trace(10, 100, 11, 200), w: win(9, 10.5),
			joules: 162.5, bound: 137.5, samples: 1, warns: []error{ErrExtrapolated},
		},
		{
			name: "entirely after the trace", p: trace(0, 10, 1, 30), w: win(3, 4),
			joules: 30, bound: 20, samples: 0, warns: []error{ErrExtrapolated},
		},
		{
			name: "single sample", p: trace(0, 42), w: win(5, 7),
			joules: 84, bound: inf, samples: 0, warns: []error{ErrSingleSample},
		},
		{
			name: "zero-length window", p: trace(0, 10, 1, 30), w: win(0.5, 0.5),
			joules: 0, bound: 0, samples: 0,
		},
		{
			// Intervals of 1, 1, 1, 5 s: the 5 s one is over 3 × the median.
			name: "gap", p: trace(0, 10, 1, 10, 2, 10, 3, 10, 8, 10), w: win(0.5, 7.5),
			joules: 70, bound: 0, samples: 3, warns: []error{ErrGap},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Integrate(tc.p, tc.w)
			if err != nil {
				t.Fatal(err)
			}
			want := Estimate{Joules: tc.joules, Bound: tc.bound, Window: tc.w, Samples: tc.samples, Warnings: tc.warns}
			got.Warnings = warnKinds(got.Warnings)
			if d := cmp.Diff(want, got, approx, cmpopts.EquateErrors(), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("Integrate (-want +got):\n%s", d)
			}
		})
	}
}

func TestExoWindowEnergyHandComputed(t *testing.T) {
	flat := trace(0, 10, 1, 10, 2, 10, 3, 10, 4, 10)
	tests := []struct {
		name    string
		p       PowerTrace
		w       Window
		joules  float64
		samples int
		warns   []error
	}{
		// Samples at 1, 2, 3 s: 2 s × 10 W; the 0.5 s at each edge is lost.
		{name: "edges dropped", p: flat, w: win(0.5, 3.5), joules: 20, samples: 3},
		{name: "no sample inside", p: flat, w: win(0.2, 0.8), joules: 0, warns: []error{ErrNoSamplesInWindow}},
		{name: "one sample", p: trace(0, 10, 1, 20, 2, 20), w: win(0.5, 1.5), joules: 20, samples: 1, warns: []error{ErrSingleSample}},
		{name: "aligned", p: trace(0, 10, 1, 20, 2, 20), w: win(0, 2), joules: 35, samples: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ExoWindowEnergy(tc.p, tc.w)
			if err != nil {
				t.Fatal(err)
			}
			if !math.IsNaN(got.Bound) {
				t.Errorf("Bound = %v, want NaN (exo's method states none)", got.Bound)
			}
			got.Bound = 0
			got.Warnings = warnKinds(got.Warnings)
			want := Estimate{Joules: tc.joules, Window: tc.w, Samples: tc.samples, Warnings: tc.warns}
			if d := cmp.Diff(want, got, approx, cmpopts.EquateErrors(), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("ExoWindowEnergy (-want +got):\n%s", d)
			}
		})
	}
}

func TestIntegrateRejectsBadData(t *testing.T) {
	tests := []struct {
		name string
		p    PowerTrace
		w    Window
		want error
	}{
		{"empty", PowerTrace{}, win(0, 1), ErrInvalidTrace},
		{"unsorted", trace(1, 10, 0, 10), win(0, 1), ErrInvalidTrace},
		{"duplicate instant", trace(0, 10, 0, 20), win(0, 1), ErrInvalidTrace},
		{"negative", trace(0, -1, 1, 10), win(0, 1), ErrInvalidTrace},
		{"NaN", trace(0, math.NaN(), 1, 10), win(0, 1), ErrInvalidTrace},
		{"infinite", trace(0, math.Inf(1), 1, 10), win(0, 1), ErrInvalidTrace},
		{"zero instant", PowerTrace{Samples: []Sample{{Value: 1}}}, win(0, 1), ErrInvalidTrace},
		{"window reversed", trace(0, 10, 1, 10), win(1, 0), ErrInvalidWindow},
		{"window unset", trace(0, 10, 1, 10), Window{}, ErrInvalidWindow},
		{"window of centuries", trace(0, 10, 1, 10), Window{Start: t0.AddDate(-300, 0, 0), End: t0}, ErrInvalidWindow},
		{"interval of centuries", PowerTrace{Samples: []Sample{{At: t0.AddDate(-300, 0, 0), Value: 1}, {At: t0, Value: 1}}}, win(0, 1), ErrInvalidTrace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Integrate(tc.p, tc.w); !errors.Is(err, tc.want) {
				t.Errorf("Integrate: error %v, want %v", err, tc.want)
			}
			if _, err := ExoWindowEnergy(tc.p, tc.w); !errors.Is(err, tc.want) {
				t.Errorf("ExoWindowEnergy: error %v, want %v", err, tc.want)
			}
		})
	}
}

// TestIntegrateFixtures checks Integrate on every fixture, window length
// and placement: exact where the 1 Hz samples hold every breakpoint, and
// within the reported Bound everywhere.
func TestIntegrateFixtures(t *testing.T) {
	for _, f := range fixtures() {
		tr := sampled(f)
		for _, l := range windowLengths {
			for _, a := range placements(l) {
				truth := f.Integral(a, a+l)
				got, err := Integrate(tr, win(a, a+l))
				if err != nil {
					t.Fatal(err)
				}
				if len(got.Warnings) != 0 {
					t.Errorf("%s [%g, %g]: unexpected warnings %v", f.Name, a, a+l, got.Warnings)
				}
				diff := math.Abs(got.Joules - truth)
				if f.Exact && diff > 1e-9*truth {
					t.Errorf("%s [%g, %g]: %.12g J, want exactly %.12g J", f.Name, a, a+l, got.Joules, truth)
				}
				if diff > got.Bound+1e-9*truth {
					t.Errorf("%s [%g, %g]: error %.6g J exceeds the bound %.6g J", f.Name, a, a+l, diff, got.Bound)
				}
			}
		}
	}
}

// TestSplitAddsUp checks that the phases of a split add up to the whole
// window, on every fixture, and a hand-computed split.
func TestSplitAddsUp(t *testing.T) {
	pre, gen, err := Split(trace(0, 10, 2, 30), win(0, 2), at(1))
	if err != nil {
		t.Fatal(err)
	}
	// P(1) = 20: prefill (10+20)/2 = 15, generation (20+30)/2 = 25.
	if d := cmp.Diff([]float64{15, 25}, []float64{pre.Joules, gen.Joules}, approx); d != "" {
		t.Errorf("split (-want +got):\n%s", d)
	}
	for _, f := range fixtures() {
		tr := sampled(f)
		for _, a := range placements(5) {
			w := win(a, a+5)
			whole, err := Integrate(tr, w)
			if err != nil {
				t.Fatal(err)
			}
			pre, gen, err := Split(tr, w, at(a+1.7))
			if err != nil {
				t.Fatal(err)
			}
			if got := pre.Joules + gen.Joules; math.Abs(got-whole.Joules) > 1e-9*whole.Joules {
				t.Errorf("%s [%g, %g]: prefill + generation = %.12g J, whole window %.12g J", f.Name, a, a+5, got, whole.Joules)
			}
		}
	}
}

func TestSplitClamps(t *testing.T) {
	pre, gen, err := Split(trace(0, 10, 2, 30), win(0, 2), at(3))
	if err != nil {
		t.Fatal(err)
	}
	if pre.Joules != 40 || gen.Joules != 0 {
		t.Errorf("split at 3 s of [0, 2]: prefill %g J, generation %g J; want 40 and 0", pre.Joules, gen.Joules)
	}
	if d := cmp.Diff([]error{ErrExtrapolated}, warnKinds(gen.Warnings), cmpopts.EquateErrors()); d != "" {
		t.Errorf("generation warnings (-want +got):\n%s", d)
	}
}
