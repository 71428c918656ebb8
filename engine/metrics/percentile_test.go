package metrics

import (
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// histOf buckets observations as a server does (each into the first bucket
// whose bound is not below it, cumulative counts) and adds them to the sum
// in the order given.
func histOf(layout, obs []float64) Hist {
	h := Hist{Family: "h"}
	for _, le := range layout {
		h.Buckets = append(h.Buckets, Bucket{UpperBound: le})
	}
	h.Buckets = append(h.Buckets, Bucket{UpperBound: math.Inf(1)})
	for _, x := range obs {
		for i := range h.Buckets {
			if x <= h.Buckets[i].UpperBound {
				h.Buckets[i].Count++
			}
		}
		h.Sum += x
		h.Count++
	}
	return h
}

var (
	layoutVLLMLatency = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	layoutVLLMITL     = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	layoutVLLMTTFT    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	layoutSGLangQueue = []float64{0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30}
)

// numbers finds the figures in a formatted percentile.
var numbers = regexp.MustCompile(`[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|Inf)`)

// TestPercentileProperty: over random histograms whose every observation is
// known, each percentile's bucket and feasible interval hold the true order
// statistic, a point is printed only inside the interval, and no figure
// printed lies outside it.
func TestPercentileProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 2026))
	tgi := make([]float64, 35)
	for i := range tgi {
		tgi[i] = 0.0001 * math.Pow(1.5, float64(i+1))
	}
	layouts := [][]float64{layoutVLLMLatency, layoutVLLMITL, layoutVLLMTTFT, layoutSGLangQueue, tgi, {1}, {-1, 0, 1}}
	draws := []func(l []float64) float64{
		func([]float64) float64 { return math.Exp(rng.NormFloat64()*1.5 - 3) },
		func([]float64) float64 { return rng.ExpFloat64() * 0.001 },
		func(l []float64) float64 { return l[rng.IntN(len(l))] }, // on a bound
		func(l []float64) float64 { return l[len(l)-1] * (1 + rng.Float64()) },
		func([]float64) float64 { return 0 },
	}
	points, checked := 0, 0
	for iter := range 3000 {
		layout := layouts[rng.IntN(len(layouts))]
		if iter%5 == 0 { // a random layout
			layout = nil
			for b := rng.Float64() * 0.01; len(layout) < 1+rng.IntN(12); b += rng.Float64() * b * 3 {
				layout = append(layout, b)
			}
		}
		n := 1 + rng.IntN(300)
		// A mixture of up to three of the draws, or one constant.
		mix := []func([]float64) float64{draws[rng.IntN(len(draws))], draws[rng.IntN(len(draws))], draws[rng.IntN(len(draws))]}
		obs := make([]float64, n)
		constant := rng.IntN(8) == 0
		for i := range obs {
			if constant && i > 0 {
				obs[i] = obs[0]
				continue
			}
			obs[i] = mix[rng.IntN(len(mix))](layout)
			if layout[0] < 0 {
				obs[i] -= rng.Float64() * 2 // negative observations, where the layout allows them
			}
		}
		h := histOf(layout, obs)
		sorted := slices.Clone(obs)
		slices.Sort(sorted)
		qs := slices.Clone(quantileQs)
		for range 5 {
			qs = append(qs, rng.Float64())
		}
		for i := 1; i <= n; i += 1 + n/7 {
			qs = append(qs, float64(i)/float64(n)) // q·N an integer: x₍ᵢ₎ exactly
		}
		for _, q := range qs {
			p, ok := h.Quantile(q)
			if !ok {
				t.Fatalf("no p%v of %d observations", q, n)
			}
			k := max(int(math.Ceil(q*float64(n)-1e-9)), 1)
			x := sorted[k-1]
			name := "iteration " + strconv.Itoa(iter)
			checkHolds(t, name, p, x)
			checkPrinted(t, name, p)
			checked++
			if p.Point {
				points++
			}
		}
		if t.Failed() {
			t.Fatalf("layout %v, observations %v", layout, obs)
		}
	}
	// The rule prints points, not only intervals.
	if points < checked/10 {
		t.Errorf("%d points printed of %d percentiles", points, checked)
	}
}

// checkPrinted: every figure Format writes, at full precision, lies within
// [Min, Max], and the interpolated point is written only when Point.
func checkPrinted(t *testing.T, name string, p Percentile) {
	t.Helper()
	s := p.Format(1, 17)
	for _, m := range numbers.FindAllString(s, -1) {
		v, err := strconv.ParseFloat(m, 64)
		if err != nil {
			t.Fatalf("%s: %q in %q: %v", name, m, s, err)
		}
		if v < p.Min || v > p.Max {
			t.Errorf("%s p%v: %q prints %v outside [%v, %v]", name, p.Q, s, v, p.Min, p.Max)
		}
	}
	if strconv.FormatFloat(p.Min, 'g', 17, 64) == strconv.FormatFloat(p.Max, 'g', 17, 64) {
		return // one value, the order statistic itself
	}
	point := strconv.FormatFloat(p.Value, 'g', 17, 64)
	hasPoint := strings.HasPrefix(s, point+" ")
	if hasPoint != p.Point {
		t.Errorf("%s p%v: %q; Point is %v", name, p.Q, s, p.Point)
	}
}

// TestPercentileRuledOut: the figures the server view printed before, which
// the mean and the buckets rule out. A queue time of 0.58 ms on average, all
// in vLLM's (0, 300 ms] bucket, printed "p99 297 ms"; an ITL of 1.1 ms on
// average in (0, 10 ms] printed "p50 5 ms".
func TestPercentileRuledOut(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	queue := make([]float64, 200)
	for i := range queue {
		queue[i] = 0.00008 + rng.Float64()*0.001
	}
	itl := make([]float64, 500)
	for i := range itl {
		itl[i] = 0.0009 + rng.Float64()*0.0004
	}
	cases := []struct {
		name     string
		layout   []float64
		obs      []float64
		q        float64
		old      float64 // what histogram_quantile says, in seconds
		ruledOut bool    // by the sum, beside the bucket holding all
	}{
		{"queue p99", layoutVLLMLatency, queue, 0.99, 0.297, true},
		{"queue p50", layoutVLLMLatency, queue, 0.5, 0.15, true},
		{"itl p50", layoutVLLMITL, itl, 0.5, 0.005, true},
		{"itl p90", layoutVLLMITL, itl, 0.9, 0.009, false},
	}
	for _, c := range cases {
		h := histOf(c.layout, c.obs)
		mean, _ := h.Mean()
		p, _ := h.Quantile(c.q)
		if math.Abs(p.Value-c.old) > 1e-9 {
			t.Errorf("%s: histogram_quantile %v, want %v", c.name, p.Value, c.old)
		}
		s := p.Format(1000, 3)
		if p.Point || strings.Contains(s, strconv.FormatFloat(c.old*1000, 'g', 3, 64)) {
			t.Errorf("%s: mean %.3g ms, printed %q: the interpolated point of a bucket holding all", c.name, mean*1e3, s)
		}
		// The r-th of the bucket's n, the others at least 0: x ≤ S/(n−r+1).
		k := int(math.Ceil(c.q * float64(len(c.obs))))
		bound := h.Sum / float64(len(c.obs)-k+1)
		if c.ruledOut && (!strings.HasPrefix(s, "≤ ") || p.Max > bound*(1+1e-6) || p.Max >= c.old) {
			t.Errorf("%s: mean %.3g ms, printed %q (max %v); want \"≤ %.3g\", which rules out %v", c.name, mean*1e3, s, p.Max, bound*1e3, c.old*1e3)
		}
		sorted := slices.Clone(c.obs)
		slices.Sort(sorted)
		checkHolds(t, c.name, p, sorted[k-1])
		t.Logf("%s: mean %.3g ms; histogram_quantile %.3g ms; printed %s", c.name, mean*1e3, c.old*1e3, s)
	}
}

// TestPercentileForms: each printed form, from histograms built by hand.
func TestPercentileForms(t *testing.T) {
	spread := []float64{0.002, 0.03, 0.035, 0.045, 0.07, 0.09, 0.2, 0.3, 0.6, 1.2}
	cases := []struct {
		name   string
		layout []float64
		obs    []float64
		q      float64
		want   string
	}{
		// Spread over buckets: the point, with what the counts and
		// the sum allow.
		{"point", layoutVLLMTTFT, spread, 0.5, "80 (60, 80]"},
		// One bucket holds all: its bound, by the sum, never a point.
		// (S − 1 at least 0.1 below it)/(3 at least it) = 0.187.
		{"all in one bucket", layoutVLLMTTFT, []float64{0.15, 0.16, 0.17, 0.18}, 0.5, "(100, 187]"},
		// All at the bucket's bound: the sum pins them there.
		{"known", []float64{1}, []float64{1, 1, 1}, 0.5, "1e+03"},
		// Past the last bound: the sum bounds the top, and lifts
		// the bottom, (8.5 − 1)/2.
		{"+Inf bounded", []float64{1}, []float64{0.5, 3, 5}, 1, "[3.75e+03, 7.5e+03]"},
		// SGLang's le="0" bucket: zero.
		{"zero bucket", layoutSGLangQueue, []float64{0, 0, 0, 0.05}, 0.5, "0"},
	}
	for _, c := range cases {
		h := histOf(c.layout, c.obs)
		p, ok := h.Quantile(c.q)
		if got := p.Format(1000, 3); !ok || got != c.want {
			t.Errorf("%s: %q (%+v); want %q", c.name, got, p, c.want)
		}
	}
	// Bounds round outward, never inward past what they allow; a bound
	// within the sum's slack of a figure prints as that figure.
	for _, c := range []struct {
		p    Percentile
		want string
	}{
		{Percentile{Upper: 0.05, Closed: true, Max: 0.04194}, "≤ 42"},
		{Percentile{Lower: 0.01, Upper: 0.05, Min: 0.01006, Max: 0.04194}, "[10, 42]"},
		{Percentile{Lower: 0.01, Upper: 0.05, Min: 0.01, Max: 0.04194}, "(10, 42]"},
		{Percentile{Lower: 0.01, Upper: 0.05, Min: 0.0419, Max: 0.04194, Value: 0.0419, Point: true}, "41.9 [41.9, 42]"},
		{Percentile{Lower: 0.04, Upper: 0.05, Min: 0.04, Max: 0.05 - 5e-12}, "(40, 50]"},
		{Percentile{Lower: 1, Upper: math.Inf(1), AtLeast: true, Min: 1.23456, Max: math.Inf(1)}, "≥ 1.23e+03"},
	} {
		if got := c.p.Format(1000, 3); got != c.want {
			t.Errorf("%+v: %q; want %q", c.p, got, c.want)
		}
	}
	// Fractional counts: no order statistics, the bucket alone.
	h := Hist{Buckets: []Bucket{{1, 0.5}, {math.Inf(1), 1.5}}, Sum: 1, Count: 1.5}
	if p, ok := h.Quantile(0.9); !ok || p.Min != 1 || !math.IsInf(p.Max, 1) || p.String() != "≥ 1" {
		t.Errorf("fractional counts: %+v %v", p, p)
	}
	// A sum the buckets cannot hold: the bucket, marked.
	h = histOf([]float64{1, 2}, []float64{0.5, 0.5})
	h.Sum = 5
	if p, _ := h.Quantile(0.5); !p.Inconsistent || p.Min != 0 || p.Max != 1 {
		t.Errorf("inconsistent sum: %+v", p)
	}
}
