package concurrency_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/concurrency"
)

// gapMoments draws n gaps (arrivals 1 … n) and returns their mean in
// seconds and their coefficient of variation (sample standard deviation /
// mean).
func gapMoments(a concurrency.Arrivals, n int) (mean, cv float64) {
	gaps := make([]float64, n)
	var prev time.Duration
	for i := range n {
		gap, ok := a.Next(prev, i+1)
		if !ok {
			panic("arrivals stopped")
		}
		prev += gap
		gaps[i] = gap.Seconds()
	}
	var sum float64
	for _, g := range gaps {
		sum += g
	}
	mean = sum / float64(n)
	var ss float64
	for _, g := range gaps {
		ss += (g - mean) * (g - mean)
	}
	return mean, math.Sqrt(ss/float64(n-1)) / mean
}

// TestArrivalMoments checks the mean gap and the coefficient of variation
// (CV) of 10 000 seeded draws against the distribution's.
//
// The bound. For a gamma of shape k (k = 1 is the exponential) the true mean
// gap is μ = 1/rate and the CV is c = 1/√k. The sample mean of n draws has
// standard error σ/√n, i.e. a relative error of c/√n. The sample CV ĉ has,
// by the delta method (skewness γ = 2/√k, kurtosis κ = 3 + 6/k),
//
//	Var(ĉ) ≈ (c²/n)·((κ − 1)/4 − c·γ + c²) = (k + 1) / (2k²n),
//
// which is 1/n for the exponential. Both estimators are close to normal at
// n = 10 000, so each test allows 4 standard errors: a correct sampler
// lands outside with probability about 6·10⁻⁵ per check, while a wrong
// scale (mean off by a factor k) or a wrong shape lands far outside. The
// draws are seeded, so the outcome is the same on every run.
func TestArrivalMoments(t *testing.T) {
	const n = 10000
	tests := []struct {
		a    concurrency.Arrivals
		rate float64
		k    float64 // gamma shape; 1 for Poisson
	}{
		{concurrency.Poisson{Rate: 10, Src: rand.NewPCG(1, 2)}, 10, 1},
		{concurrency.Poisson{Rate: 0.5, Src: rand.NewPCG(3, 4)}, 0.5, 1},
		{concurrency.Gamma{Rate: 50, Burstiness: 0.25, Src: rand.NewPCG(5, 6)}, 50, 0.25},
		{concurrency.Gamma{Rate: 50, Burstiness: 1, Src: rand.NewPCG(7, 8)}, 50, 1},
		{concurrency.Gamma{Rate: 50, Burstiness: 4, Src: rand.NewPCG(9, 10)}, 50, 4},
		{concurrency.Gamma{Rate: 20, Src: rand.NewPCG(11, 12)}, 20, 1}, // Burstiness 0 means 1
	}
	for _, tc := range tests {
		t.Run(tc.a.(interface{ String() string }).String(), func(t *testing.T) {
			mean, cv := gapMoments(tc.a, n)
			wantMean, wantCV := 1/tc.rate, 1/math.Sqrt(tc.k)
			meanSE := wantCV / math.Sqrt(n) // relative
			cvSE := math.Sqrt((tc.k + 1) / (2 * tc.k * tc.k * n))
			if rel := math.Abs(mean/wantMean - 1); rel > 4*meanSE {
				t.Errorf("mean gap %.6gs, expected %.6gs within 4 SE (%.3g relative); off by %.3g", mean, wantMean, 4*meanSE, rel)
			}
			if d := math.Abs(cv - wantCV); d > 4*cvSE {
				t.Errorf("CV %.4g, expected %.4g within 4 SE (%.3g); off by %.3g", cv, wantCV, 4*cvSE, d)
			}
		})
	}
}

// TestSeededScheduleReproduces: two runs from the same seed give the same
// schedule exactly; another seed gives another; gamma of shape 1 draws
// exactly Poisson's gaps from the same seed.
func TestSeededScheduleReproduces(t *testing.T) {
	sched := func(a concurrency.Arrivals) []time.Duration {
		offs, why, warns := concurrency.Schedule(a, 200, 0)
		if why != concurrency.StopCount || len(warns) != 0 {
			t.Fatalf("stopped by %v with %v; expected count, no warnings", why, warns)
		}
		return offs
	}
	a := sched(concurrency.Poisson{Rate: 100, Src: rand.NewPCG(42, 7)})
	b := sched(concurrency.Poisson{Rate: 100, Src: rand.NewPCG(42, 7)})
	c := sched(concurrency.Poisson{Rate: 100, Src: rand.NewPCG(43, 7)})
	g := sched(concurrency.Gamma{Rate: 100, Burstiness: 1, Src: rand.NewPCG(42, 7)})
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, different schedules (-first +second):\n%s", diff)
	}
	if cmp.Equal(a, c) {
		t.Error("different seeds gave the same schedule")
	}
	if diff := cmp.Diff(a, g); diff != "" {
		t.Errorf("gamma(burstiness=1) differs from poisson on the same seed (-poisson +gamma):\n%s", diff)
	}
	for i := 1; i < len(a); i++ {
		if a[i] < a[i-1] {
			t.Fatalf("schedule decreases at %d: %v then %v", i, a[i-1], a[i])
		}
	}
	if a[0] != 0 {
		t.Errorf("first arrival at %v, expected the start", a[0])
	}
}

func TestSchedule(t *testing.T) {
	tests := []struct {
		name   string
		a      concurrency.Arrivals
		count  int
		within time.Duration
		want   []time.Duration
		why    concurrency.StopReason
		warns  int
	}{
		// 100/s: arrival n at n·10 ms; 40 ms is at the bound, so not sent.
		{"constant to duration", concurrency.Constant{Rate: 100}, 0, ms(40), []time.Duration{0, ms(10), ms(20), ms(30)}, concurrency.StopDuration, 0},
		{"constant to count", concurrency.Constant{Rate: 100}, 3, time.Second, []time.Duration{0, ms(10), ms(20)}, concurrency.StopCount, 0},
		// 3/s: n/3 s rounded per arrival, no accumulated rounding:
		// 333333333 ns, 666666667 ns, then exactly 1 s.
		{"constant no drift", concurrency.Constant{Rate: 3}, 4, 0, []time.Duration{0, 333333333, 666666667, time.Second}, concurrency.StopCount, 0},
		{"constant zero rate", concurrency.Constant{}, 5, 0, nil, concurrency.StopArrivals, 0},
		{"poisson zero rate", concurrency.Poisson{}, 5, 0, nil, concurrency.StopArrivals, 0},
		{"gamma negative rate", concurrency.Gamma{Rate: -1}, 5, 0, nil, concurrency.StopArrivals, 0},
		{"replay ends", concurrency.Replay{Offsets: []time.Duration{ms(5), ms(5), ms(12)}}, 10, 0, []time.Duration{ms(5), ms(5), ms(12)}, concurrency.StopArrivals, 0},
		{"replay negative gap", concurrency.Replay{Offsets: []time.Duration{ms(5), ms(3), ms(12)}}, 10, 0, []time.Duration{ms(5), ms(5), ms(12)}, concurrency.StopArrivals, 1},
		{"func", concurrency.ArrivalsFunc(func(prev time.Duration, n int) (time.Duration, bool) {
			return time.Duration(n) * time.Millisecond, n < 4 // gaps 0, 1, 2, 3 ms
		}), 0, time.Second, []time.Duration{0, ms(1), ms(3), ms(6)}, concurrency.StopArrivals, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, why, warns := concurrency.Schedule(tc.a, tc.count, tc.within)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("offsets (-want +got):\n%s", diff)
			}
			if why != tc.why || len(warns) != tc.warns {
				t.Errorf("stopped by %v with %d warnings %v; expected %v with %d", why, len(warns), warns, tc.why, tc.warns)
			}
		})
	}
}

func TestScheduleNeedsBound(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Schedule without a bound did not panic")
		}
	}()
	concurrency.Schedule(concurrency.Constant{Rate: 1}, 0, 0)
}

func TestArrivalsString(t *testing.T) {
	tests := []struct {
		a    interface{ String() string }
		want string
	}{
		{concurrency.Poisson{Rate: 10}, "poisson(rate=10/s)"},
		{concurrency.Gamma{Rate: 10, Burstiness: 0.5}, "gamma(rate=10/s, burstiness=0.5)"},
		{concurrency.Gamma{Rate: 2.5}, "gamma(rate=2.5/s, burstiness=1)"},
		{concurrency.Constant{Rate: 4}, "constant(rate=4/s)"},
		{concurrency.Replay{Offsets: []time.Duration{0, time.Second, 1500 * time.Millisecond}}, "replay(3 arrivals over 1.5s)"},
		{concurrency.Replay{}, "replay(0 arrivals over 0s)"},
	}
	for _, tc := range tests {
		if got := tc.a.String(); got != tc.want {
			t.Errorf("String() = %q, expected %q", got, tc.want)
		}
	}
}

// FuzzSchedule checks the invariants of every schedule: offsets never
// decrease, stay below the duration bound, and never outnumber the count.
func FuzzSchedule(f *testing.F) {
	f.Add(uint64(1), 10.0, 0.5, 50, int64(time.Second))
	f.Add(uint64(2), 1e6, 1.0, 1000, int64(0))
	f.Add(uint64(3), 1e-3, 30.0, 5, int64(time.Hour))
	f.Fuzz(func(t *testing.T, seed uint64, rate, burstiness float64, count int, within int64) {
		count = count % 2000
		if count <= 0 && within <= 0 {
			count = 10
		}
		for _, a := range []concurrency.Arrivals{
			concurrency.Poisson{Rate: rate, Src: rand.NewPCG(seed, 0)},
			concurrency.Gamma{Rate: rate, Burstiness: burstiness, Src: rand.NewPCG(seed, 1)},
			concurrency.Constant{Rate: rate},
		} {
			offs, _, warns := concurrency.Schedule(a, count, time.Duration(within))
			if len(warns) != 0 {
				t.Errorf("%v: warnings %v", a, warns)
			}
			if count > 0 && len(offs) > count {
				t.Errorf("%v: %d offsets, count %d", a, len(offs), count)
			}
			for i, o := range offs {
				if o < 0 || (within > 0 && o >= time.Duration(within)) || (i > 0 && o < offs[i-1]) {
					t.Fatalf("%v: offset %d = %v out of order or bounds (within %v)", a, i, o, time.Duration(within))
				}
			}
		}
	})
}
