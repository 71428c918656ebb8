package energy

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func counter(max float64, pts ...float64) CounterTrace {
	c := CounterTrace{Node: "c", Max: max}
	for i := 0; i+1 < len(pts); i += 2 {
		c.Samples = append(c.Samples, Sample{At: at(pts[i]), Value: pts[i+1]})
	}
	return c
}

func TestCounterEnergyHandComputed(t *testing.T) {
	tests := []struct {
		name          string
		c             CounterTrace
		w             Window
		joules, bound float64
		samples       int
		warns         []error
	}{
		{
			// Wraps at 100 J: 90 → 10 is +20, 10 → 30 is +20, so the
			// unwrapped counter is 0, 20, 40 at 0, 1, 2 s. E(0.5) = 10,
			// E(1.5) = 30; each edge is off by at most 10 J.
			name: "wraparound", c: counter(100, 0, 90, 1, 10, 2, 30), w: win(0.5, 1.5),
			joules: 20, bound: 20, samples: 1,
		},
		{
			name: "on the readings", c: counter(100, 0, 90, 1, 10, 2, 30), w: win(0, 2),
			joules: 40, bound: 0, samples: 3,
		},
		{
			// Interval powers 10 W and 20 W. E(−1) = 0 − 10·1, E(2.5) =
			// 30 + 20·0.5. Bound 1·(20−10) + 0.5·(20−10).
			name: "past both ends", c: counter(0, 0, 0, 1, 10, 2, 30), w: win(-1, 2.5),
			joules: 50, bound: 15, samples: 3, warns: []error{ErrExtrapolated, ErrExtrapolated},
		},
		{
			// +60 J in 5 s (12 W), then 60 → 50 is a wrap: +90 J in 10 s.
			// 12 W × 10 s = 120 J ≥ 100 J: a second wrap could hide there.
			name: "possible missed wrap", c: counter(100, 0, 0, 5, 60, 15, 50), w: win(0, 15),
			joules: 150, bound: 0, samples: 3, warns: []error{ErrMissedWrap},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.c.Energy(tc.w)
			if err != nil {
				t.Fatal(err)
			}
			got.Warnings = warnKinds(got.Warnings)
			want := Estimate{Joules: tc.joules, Bound: tc.bound, Window: tc.w, Samples: tc.samples, Warnings: tc.warns}
			if d := cmp.Diff(want, got, approx, cmpopts.EquateErrors(), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("Energy (-want +got):\n%s", d)
			}
		})
	}
}

func TestCounterRejectsBadData(t *testing.T) {
	tests := []struct {
		name string
		c    CounterTrace
		want error
	}{
		{"decrease without maximum", counter(0, 0, 50, 1, 10), ErrInvalidTrace},
		{"above maximum", counter(100, 0, 50, 1, 150), ErrInvalidTrace},
		{"negative maximum", counter(-1, 0, 0, 1, 1), ErrInvalidTrace},
		{"one reading", counter(0, 0, 5), ErrTooFewSamples},
		{"no readings", counter(0), ErrInvalidTrace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.c.Energy(win(0, 1)); !errors.Is(err, tc.want) {
				t.Errorf("Energy: error %v, want %v", err, tc.want)
			}
		})
	}
}

// TestCounterMatchesFixtures builds a wrapping counter from each exact
// fixture's closed-form integral and checks that Energy returns the
// fixture's integral: interior readings are exact and the edges
// interpolate a counter whose slope is piecewise constant only for the
// constant fixture, so elsewhere the check is against the bound.
func TestCounterMatchesFixtures(t *testing.T) {
	const wrap = 700 // J: every fixture wraps several times over 30 s
	for _, f := range fixtures() {
		c := CounterTrace{Node: f.Name, Max: wrap}
		for i := 0; i <= span; i++ {
			c.Samples = append(c.Samples, Sample{At: at(float64(i)), Value: math.Mod(f.Integral(0, float64(i)), wrap)})
		}
		for _, l := range windowLengths {
			for _, a := range placements(l) {
				truth := f.Integral(a, a+l)
				got, err := c.Energy(win(a, a+l))
				if err != nil {
					t.Fatal(err)
				}
				diff := math.Abs(got.Joules - truth)
				if f.Name == "constant" && diff > 1e-9*truth {
					t.Errorf("%s [%g, %g]: %.12g J, want %.12g J", f.Name, a, a+l, got.Joules, truth)
				}
				if diff > got.Bound+1e-9*truth {
					t.Errorf("%s [%g, %g]: error %.6g J exceeds the bound %.6g J", f.Name, a, a+l, diff, got.Bound)
				}
			}
			// On whole seconds the counter is read exactly.
			got, err := c.Energy(win(3, 3+math.Ceil(l)))
			if err != nil {
				t.Fatal(err)
			}
			if truth := f.Integral(3, 3+math.Ceil(l)); math.Abs(got.Joules-truth) > 1e-9*truth || got.Bound != 0 {
				t.Errorf("%s [3, %g]: %.12g J ± %g, want %.12g J ± 0", f.Name, 3+math.Ceil(l), got.Joules, got.Bound, truth)
			}
		}
	}
}

func TestCounterPower(t *testing.T) {
	p, warns, err := counter(100, 0, 90, 1, 10, 3, 30).Power()
	if err != nil {
		t.Fatal(err)
	}
	want := PowerTrace{Node: "c", Samples: []Sample{{At: at(0.5), Value: 20}, {At: at(2), Value: 10}}}
	if d := cmp.Diff(want, p, approx); d != "" {
		t.Errorf("Power (-want +got):\n%s", d)
	}
	if len(warns) != 0 {
		t.Errorf("warnings %v, want none", warns)
	}
}
