package precision

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParseTarget(t *testing.T) {
	good := []struct {
		in   string
		want Target
	}{
		{"ttft.p99:5%", Target{"ttft", "p99", 0.05, 0.95}},
		{"tpot.mean:2.5%@90", Target{"tpot", "mean", 0.025, 0.90}},
		{"gen_tps.mean:1%@99%", Target{"gen_tps", "mean", 0.01, 0.99}},
	}
	for _, c := range good {
		got, err := ParseTarget(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
		back, err := ParseTarget(got.String())
		if err != nil || back != got {
			t.Errorf("%q: String %q reads back as %+v, %v", c.in, got.String(), back, err)
		}
	}
	for _, in := range []string{"", "ttft", "ttft.p99", "ttft.p99:5", "ttft.p98:5%", "TTFT.p99:5%", ".p99:5%",
		"ttft.p99:0%", "ttft.p99:100%", "ttft.p99:5%@", "ttft.p99:5%@100", "ttft.p99:-1%", "ttft.p99:NaN%"} {
		if _, err := ParseTarget(in); !errors.Is(err, ErrBadTarget) {
			t.Errorf("ParseTarget(%q): error %v, want ErrBadTarget", in, err)
		}
	}
	ts, err := ParseTargets("ttft.p99:5%, e2e.mean:2%")
	if err != nil || len(ts) != 2 || ts[1].Figure != "e2e" {
		t.Errorf("ParseTargets: %+v, %v", ts, err)
	}
}

func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"ttft.p99:5%", "tpot.mean:2%@90", "a.p50:1e-3%@99.9%", "x.y:z", ":%@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := ParseTarget(s)
		if err != nil {
			if !errors.Is(err, ErrBadTarget) {
				t.Fatalf("%q: error %v does not wrap ErrBadTarget", s, err)
			}
			return
		}
		if err := tg.Validate(); err != nil {
			t.Fatalf("%q parsed to an invalid %+v: %v", s, tg, err)
		}
		back, err := ParseTarget(tg.String())
		if err != nil || back.Figure != tg.Figure || back.Stat != tg.Stat ||
			math.Abs(back.Margin-tg.Margin) > 1e-12*tg.Margin || math.Abs(back.Level-tg.Level) > 1e-12 {
			t.Fatalf("%q: %+v writes %q, which reads back as %+v, %v", s, tg, tg.String(), back, err)
		}
		if ts, err := ParseTargets(s + "," + tg.String()); err != nil || len(ts) < 2 || ts[len(ts)-1] != back {
			t.Fatalf("%q: a list of it and its String: %+v, %v", s, ts, err)
		}
		r := tg.Check([]float64{1, 2, 3, 4, 5, 6})
		if _, err := json.Marshal(r); err != nil {
			t.Fatalf("%q: result does not marshal: %v", s, err)
		}
	})
}

// TestCheck checks that a target is met exactly when the interval's
// larger side is within the margin, and that more samples narrow it.
func TestCheck(t *testing.T) {
	src := rand.New(rand.NewPCG(1, 2))
	draw := func(n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = 0.1 * (1 + src.ExpFloat64())
		}
		return x
	}
	for _, tg := range []Target{{"ttft", "mean", 0.05, 0.95}, {"ttft", "p90", 0.05, 0.95}, {"ttft", "p99", 0.10, 0.95}} {
		few, many := tg.Check(draw(40)), tg.Check(draw(4000))
		if few.Met || !many.Met {
			t.Errorf("%s: met with 40 samples %v (margin %v), with 4000 %v (margin %v); want false, true", tg, few.Met, deref(few.Margin), many.Met, deref(many.Margin))
		}
		for _, r := range []Result{few, many} {
			if r.Margin == nil {
				continue
			}
			iv := r.Interval
			want := math.Max(iv.Center-iv.Lo, iv.Hi-iv.Center) / iv.Center
			if math.Abs(*r.Margin-want) > 1e-12 || r.Met != (want <= tg.Margin) {
				t.Errorf("%s n=%d: margin %g met %v, want %g", tg, r.N, *r.Margin, r.Met, want)
			}
		}
	}
	// p99 over 100 samples has no upper bound at 95 %: never met, and said.
	r := Target{"ttft", "p99", 0.5, 0.95}.Check(draw(100))
	if r.Met || r.Margin != nil || r.Hi != nil || r.Note == "" {
		t.Errorf("p99 of 100: %+v, want not met, no margin, no upper bound, a note", r)
	}
	// Too few samples: not met even if the interval happens to be narrow.
	r = Target{"ttft", "mean", 0.5, 0.95}.Check([]float64{1, 1, 1.0001})
	if r.Met || !strings.Contains(r.Note, "samples") {
		t.Errorf("3 samples: %+v, want not met with a note", r)
	}
	if d := Describe([]Result{r}); !strings.Contains(d, "ttft.mean") || !strings.Contains(d, "not met") {
		t.Errorf("Describe: %q", d)
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}
