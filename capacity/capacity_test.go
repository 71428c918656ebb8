package capacity

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// queue simulates a first-come first-served server of service rate mu
// (deterministic service) fed for seconds at rate lambda, regular arrivals
// or, with src, Poisson ones; slo is the E2E objective a request must
// meet to be good.
func queue(lambda, mu, seconds, slo float64, src *rand.Rand) Point {
	p := Point{Rate: lambda, Latency: math.NaN()}
	free := 0.0
	for t := 0.0; t < seconds; {
		start := max(t, free)
		free = start + 1/mu
		p.Spans = append(p.Spans, Span{Start: t, End: free, OK: true})
		p.Total++
		if free-t <= slo {
			p.Good++
		}
		if src != nil {
			t += src.ExpFloat64() / lambda
		} else {
			t += 1 / lambda
		}
	}
	return p
}

func TestKneeAndCapacityOfAKnownServer(t *testing.T) {
	const mu = 15.0
	var pts []Point
	for _, r := range []float64{40, 5, 20, 10} { // any order
		pts = append(pts, queue(r, mu, 20, 0.5, nil))
	}
	res, err := Analyze(pts, "e2e≤500ms", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Points {
		want := Stable
		if p.Rate > mu {
			want = OverSaturated
		}
		if p.State != want {
			t.Errorf("rate %g against service rate %g: state %q, want %q (growth %g [%g, %g])", p.Rate, mu, p.State, want, p.Growth, p.GrowthLo, p.GrowthHi)
		}
		if p.State == OverSaturated && math.Abs(p.Growth-(p.Rate-mu)) > 0.05*(p.Rate-mu) {
			t.Errorf("rate %g: backlog grows %g/s, want the excess %g/s", p.Rate, p.Growth, p.Rate-mu)
		}
	}
	if k := res.Knee; !k.Bracketed() || k.Lo != 10 || k.Hi != 20 {
		t.Errorf("knee %+v, want bracketed by 10 and 20", k)
	}
	if s := res.ServiceRate; !(s.Lo <= mu && mu <= s.Hi) || s.Hi-s.Lo > 0.2*mu {
		t.Errorf("service rate %+v, want a narrow interval holding %g", s, mu)
	}
	if k := res.Knee.Rate; math.Abs(k-mu) > 0.1*mu {
		t.Errorf("knee estimate %g, want about the service rate %g", k, mu)
	}
	if c := res.Capacity; !c.Bracketed() || c.Lo != 10 || c.Hi != 20 || c.Rate < c.Lo || c.Rate > c.Hi {
		t.Errorf("capacity %+v, want bracketed by 10 and 20 with its estimate inside", c)
	}
	mid := math.Sqrt(10 * 20)
	if len(res.Next) == 0 || math.Abs(res.Next[0]-mid) > 1e-9 {
		t.Errorf("next rates %v, want the bracket's geometric midpoint %g first", res.Next, mid)
	}
}

func TestPoissonOverSaturation(t *testing.T) {
	src := rand.New(rand.NewPCG(1, 2))
	const mu = 20.0
	for _, tc := range []struct {
		rate float64
		want string
	}{{5, Stable}, {10, Stable}, {40, OverSaturated}, {60, OverSaturated}} {
		res, err := Analyze([]Point{queue(tc.rate, mu, 60, 1, src)}, "", Options{})
		if err != nil {
			t.Fatal(err)
		}
		if p := res.Points[0]; p.State != tc.want {
			t.Errorf("Poisson at %g/s against %g/s: %q, want %q (growth %g [%g, %g])", tc.rate, mu, p.State, tc.want, p.Growth, p.GrowthLo, p.GrowthHi)
		}
	}
}

func TestCapacityInterpolatesTheCrossing(t *testing.T) {
	// Attainment 1, 0.95, 0.5 at rates 10, 20, 30 with 1000 requests
	// each: the target 0.9 is crossed at 20 + (0.95−0.9)/(0.95−0.5)·10.
	mk := func(r float64, good int) Point { return Point{Rate: r, Good: good, Total: 1000, Latency: math.NaN()} }
	res, err := Analyze([]Point{mk(10, 1000), mk(20, 950), mk(30, 500)}, "ttft≤1s", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := 20 + (0.95-0.9)/(0.95-0.5)*10
	c := res.Capacity
	if !c.Bracketed() || c.Lo != 20 || c.Hi != 30 || math.Abs(c.Rate-want) > 1e-9 {
		t.Errorf("capacity %+v, want bracketed by 20 and 30 at %g", c, want)
	}
	// Too few requests to tell 0.95 from 0.9: 19 of 20 is unsure, so the
	// bracket reaches down to the rate that surely meets.
	res, err = Analyze([]Point{mk(10, 1000), {Rate: 20, Good: 19, Total: 20}, mk(30, 500)}, "ttft≤1s", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Capacity; c.Lo != 10 || c.Hi != 30 || res.Points[1].Meets != Unsure {
		t.Errorf("capacity %+v with 19/20 at 20/s (%q), want bracketed by 10 and 30, 20/s unsure", c, res.Points[1].Meets)
	}
}

func TestClopperPearsonClosedForms(t *testing.T) {
	// With none good the upper bound is 1 − (α/2)^(1/n); with all good
	// the lower bound is (α/2)^(1/n).
	for _, n := range []int{1, 10, 200} {
		_, lo, hi, _ := attainment(0, n, 0.9, 0.95)
		if want := 1 - math.Pow(0.025, 1/float64(n)); lo != 0 || math.Abs(hi-want) > 1e-9 {
			t.Errorf("0 of %d: [%g, %g], want [0, %g]", n, lo, hi, want)
		}
		_, lo, hi, _ = attainment(n, n, 0.9, 0.95)
		if want := math.Pow(0.025, 1/float64(n)); hi != 1 || math.Abs(lo-want) > 1e-9 {
			t.Errorf("%d of %d: [%g, %g], want [%g, 1]", n, n, lo, hi, want)
		}
	}
}

func TestSlopeInterval(t *testing.T) {
	// y = 2x + 1 with residuals ±0.5 alternating: the slope's interval
	// holds 2 and its half width is t·se by hand.
	xs := []float64{0, 1, 2, 3, 4, 5}
	ys := make([]float64, len(xs))
	for i, x := range xs {
		ys[i] = 2*x + 1 + 0.5*float64(1-2*(i%2))
	}
	b, lo, hi := slope(xs, ys, 0.95)
	if !(lo < 2 && 2 < hi) || math.Abs((lo+hi)/2-b) > 1e-9 {
		t.Errorf("slope %g [%g, %g], want an interval around it holding 2", b, lo, hi)
	}
	exact, lo0, hi0 := slope(xs, []float64{1, 3, 5, 7, 9, 11}, 0.95)
	if exact != 2 || lo0 != 2 || hi0 != 2 {
		t.Errorf("exact line: slope %g [%g, %g], want 2 [2, 2]", exact, lo0, hi0)
	}
}

func TestNotBracketed(t *testing.T) {
	// Every rate keeps up: the knee is above the highest, and the next
	// rate is the ladder's next rung; with a ceiling, the ceiling.
	pts := []Point{queue(2, 100, 10, 1, nil), queue(4, 100, 10, 1, nil)}
	res, err := Analyze(pts, "", Options{Factor: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Knee.Status != "above" || res.Knee.Lo != 4 || len(res.Next) != 1 || res.Next[0] != 12 {
		t.Errorf("knee %+v, next %v; want above 4, next 12", res.Knee, res.Next)
	}
	if res.Capacity.Status != unknown {
		t.Errorf("capacity without an SLO: %+v, want unknown", res.Capacity)
	}
	res, _ = Analyze(pts, "", Options{Factor: 3, Max: 6})
	if len(res.Next) != 1 || res.Next[0] != 6 {
		t.Errorf("next %v under a ceiling of 6, want [6]", res.Next)
	}
	// Every rate over-saturates: the knee is below the lowest.
	res, _ = Analyze([]Point{queue(20, 5, 10, 1, nil), queue(40, 5, 10, 1, nil)}, "", Options{})
	if res.Knee.Status != "below" || res.Knee.Hi != 20 || len(res.Next) == 0 || res.Next[0] != 10 {
		t.Errorf("knee %+v, next %v; want below 20, next 10", res.Knee, res.Next)
	}
}

func TestTooFewRequests(t *testing.T) {
	res, err := Analyze([]Point{{Rate: 1, Spans: []Span{{Start: 0, End: 1, OK: true}, {Start: 1, End: 2, OK: true}}}}, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Points[0]; p.State != TooFew {
		t.Errorf("two requests: %q, want %q", p.State, TooFew)
	}
}

func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		pts  []Point
		opts Options
	}{
		{[]Point{{Rate: 0}}, Options{}},
		{[]Point{{Rate: math.Inf(1)}}, Options{}},
		{[]Point{{Rate: 1, Good: 3, Total: 2}}, Options{}},
		{nil, Options{Confidence: 1}},
		{nil, Options{Bins: 2}},
		{nil, Options{Factor: 1}},
		{nil, Options{Rates: []float64{-1}}},
		{nil, Options{Max: math.NaN()}},
	} {
		if _, err := Analyze(tc.pts, "", tc.opts); !errors.Is(err, ErrBadInput) {
			t.Errorf("Analyze(%+v, %+v): %v, want ErrBadInput", tc.pts, tc.opts, err)
		}
	}
}

func TestOverSaturatedRunsDoNotMeetTheSLO(t *testing.T) {
	// An objective so lax that every run's attainment is 1: the runs past
	// the knee still bound the capacity, which is the knee's bracket.
	const mu = 15.0
	var pts []Point
	for _, r := range []float64{5, 10, 20, 40} {
		pts = append(pts, queue(r, mu, 20, 1e6, nil))
	}
	res, err := Analyze(pts, "e2e≤1000000s", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Points {
		if p.Meets != Meets {
			t.Fatalf("rate %g: %q, want every run to meet the lax objective", p.Rate, p.Meets)
		}
	}
	if c := res.Capacity; !c.Bracketed() || c.Lo != 10 || c.Hi != 20 || c.Rate != res.Knee.Rate {
		t.Errorf("capacity %+v, want the knee's bracket [10, 20] and its estimate %g", c, res.Knee.Rate)
	}
}

func TestNoStepDownFromARunTooShort(t *testing.T) {
	// The lowest run is too short to tell, the next over-saturates: a
	// lower rate would tell even less, so nothing is added below.
	short := Point{Rate: 2, Spans: []Span{{Start: 0, End: 0.1, OK: true}, {Start: 0.5, End: 0.6, OK: true}}, Latency: math.NaN()}
	res, err := Analyze([]Point{short, queue(40, 5, 10, 1, nil)}, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Knee.Status != "below" || len(res.Next) != 0 {
		t.Errorf("knee %+v, next %v; want below 40 and nothing to add", res.Knee, res.Next)
	}
}
