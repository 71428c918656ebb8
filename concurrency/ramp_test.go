package concurrency_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/inferbench/inferbench/concurrency"
)

// TestRampCounts draws 200 seeded schedules of each ramp over 2 × Over and
// checks the arrivals in each of 8 windows, summed over the schedules,
// against 200 · (Λ(b) − Λ(a)).
//
// The bound. For a Poisson ramp the count in [a, b) of one schedule is
// Poisson with mean m = Λ(b) − Λ(a); the sum over 200 independent
// schedules is Poisson with mean 200m, so within 4.5 √(200m) with
// probability about 1 − 7·10⁻⁶ per window (normal approximation; 200m is
// in the hundreds at least). A ramp drawn at its mean rate, or one that
// reached End at once, is off by tens of standard errors in the first
// windows; an inverse Λ⁻¹ off by a factor shifts every window.
func TestRampCounts(t *testing.T) {
	const schedules = 200
	ramps := []concurrency.Ramp{
		{Start: 2, End: 40, Over: 4 * time.Second},
		{Start: 0, End: 30, Over: 3 * time.Second},
		{Start: 40, End: 5, Over: 4 * time.Second}, // down
		{Start: 1, End: 64, Over: 4 * time.Second, Exponential: true},
		{Start: 50, End: 2, Over: 2 * time.Second, Exponential: true}, // down
		{Start: 10, End: 10, Over: time.Second, Exponential: true},    // flat
	}
	for ri, r := range ramps {
		t.Run(r.String(), func(t *testing.T) {
			span := 2 * r.Over
			const windows = 8
			got := make([]int, windows)
			for s := range schedules {
				r.Src = rand.NewPCG(uint64(ri), uint64(s))
				offs, _, _ := concurrency.Schedule(r, 0, span)
				for _, o := range offs[1:] { // the first is the start's, by convention
					got[int(o*windows/span)]++
				}
				if offs[0] != 0 {
					t.Fatalf("first arrival at %v, expected the start", offs[0])
				}
			}
			for w := range windows {
				a, b := span*time.Duration(w)/windows, span*time.Duration(w+1)/windows
				want := schedules * (r.Expected(b) - r.Expected(a))
				if d := math.Abs(float64(got[w]) - want); d > 4.5*math.Sqrt(want) {
					t.Errorf("window [%v, %v): %d arrivals over %d schedules, expected %.1f ± %.1f (4.5 SD)", a, b, got[w], schedules, want, 4.5*math.Sqrt(want))
				}
			}
		})
	}
}

// TestRampBurstiness maps each gap of a ramp through Λ (Λ(tₙ) − Λ(tₙ₋₁),
// the gap in the ramp's own time) and checks those 10 000 gaps' mean (1)
// and coefficient of variation (1/√k) within 4 standard errors, as
// TestArrivalMoments does for Gamma: the ramp is a time change of a
// renewal process of unit rate.
func TestRampBurstiness(t *testing.T) {
	const n = 10000
	for _, k := range []float64{0.25, 1, 4} {
		r := concurrency.Ramp{Start: 5, End: 500, Over: 10 * time.Second, Burstiness: k, Exponential: k == 4, Src: rand.NewPCG(7, uint64(k*100))}
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			offs, _, _ := concurrency.Schedule(r, n+1, 0)
			gaps := make([]float64, n)
			var sum float64
			for i := range n {
				gaps[i] = r.Expected(offs[i+1]) - r.Expected(offs[i])
				sum += gaps[i]
			}
			mean := sum / n
			var ss float64
			for _, g := range gaps {
				ss += (g - mean) * (g - mean)
			}
			cv := math.Sqrt(ss/(n-1)) / mean
			wantCV := 1 / math.Sqrt(k)
			if d := math.Abs(mean - 1); d > 4*wantCV/math.Sqrt(n) {
				t.Errorf("mean gap in Λ time %.4f, expected 1 within %.3g", mean, 4*wantCV/math.Sqrt(n))
			}
			if d, se := math.Abs(cv-wantCV), math.Sqrt((k+1)/(2*k*k*n)); d > 4*se {
				t.Errorf("CV %.4f, expected %.4f within %.3g", cv, wantCV, 4*se)
			}
		})
	}
}

// TestRampRate checks λ and Λ at the ends and after the ramp, and that Λ
// is λ's integral (a midpoint sum over the ramp).
func TestRampRate(t *testing.T) {
	for _, r := range []concurrency.Ramp{
		{Start: 2, End: 10, Over: 4 * time.Second},
		{Start: 1, End: 16, Over: 4 * time.Second, Exponential: true},
		{Start: 9, End: 0, Over: 3 * time.Second},
	} {
		if got := r.Rate(0); got != r.Start {
			t.Errorf("%v: rate at 0 is %g, expected %g", r, got, r.Start)
		}
		if got := r.Rate(r.Over); got != r.End {
			t.Errorf("%v: rate at Over is %g, expected %g", r, got, r.End)
		}
		if got := r.Rate(10 * r.Over); got != r.End {
			t.Errorf("%v: rate after Over is %g, expected %g", r, got, r.End)
		}
		const steps = 10000
		var sum float64
		h := r.Over / steps
		for i := range steps {
			sum += r.Rate(h*time.Duration(i)+h/2) * h.Seconds()
		}
		if got := r.Expected(r.Over); math.Abs(got-sum) > 1e-6*sum {
			t.Errorf("%v: Λ(Over) = %g, expected ∫λ = %g", r, got, sum)
		}
		after := r.Expected(r.Over+time.Second) - r.Expected(r.Over)
		if math.Abs(after-r.End) > 1e-9 {
			t.Errorf("%v: Λ grows by %g in the second after the ramp, expected End = %g", r, after, r.End)
		}
	}
}

// TestRampEnds checks that a ramp down to 0 ends its schedule with about
// Λ(Over) arrivals, and that a ramp that cannot give a rate schedules
// nothing.
func TestRampEnds(t *testing.T) {
	r := concurrency.Ramp{Start: 100, End: 0, Over: 2 * time.Second, Src: rand.NewPCG(1, 1)}
	offs, why, _ := concurrency.Schedule(r, 0, time.Hour)
	if why != concurrency.StopArrivals {
		t.Errorf("a ramp down to 0 stopped by %v, expected its arrivals to end", why)
	}
	if want := r.Expected(r.Over); math.Abs(float64(len(offs)-1)-want) > 4.5*math.Sqrt(want) {
		t.Errorf("%d arrivals, expected 1 + Poisson(%g)", len(offs), want)
	}
	if last := offs[len(offs)-1]; last > r.Over {
		t.Errorf("last arrival at %v, after the ramp ended at %v", last, r.Over)
	}
	for _, bad := range []concurrency.Ramp{
		{Start: 0, End: 10, Over: time.Second, Exponential: true},
		{Start: 1, End: 10},
		{Start: -1, End: 10, Over: time.Second},
		{Start: 1, End: math.Inf(1), Over: time.Second},
		{Start: 1, End: math.NaN(), Over: time.Second},
		{Over: time.Second},
	} {
		if _, ok := bad.Next(0, 0); ok {
			t.Errorf("%+v scheduled an arrival, expected none", bad)
		}
	}
}
