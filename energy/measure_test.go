package energy

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestMeasure checks sums over nodes, the phase split, the idle baseline
// and J/token on two nodes whose figures are easy by hand: node a draws a
// constant 100 W (power trace), node b's counter climbs 50 J/s.
func TestMeasure(t *testing.T) {
	var a PowerTrace
	b := CounterTrace{Node: "b"}
	a.Node = "a"
	for i := 0; i <= 6; i++ {
		a.Samples = append(a.Samples, Sample{At: at(float64(i)), Value: 100})
		b.Samples = append(b.Samples, Sample{At: at(float64(i)), Value: 50 * float64(i)})
	}
	// b also has a power trace that reads nonsense: the counter wins.
	bPower := PowerTrace{Node: "b", Samples: []Sample{{At: at(0), Value: 1e6}, {At: at(6), Value: 1e6}}}
	run := Run{
		Window: win(1, 5), FirstToken: at(2),
		PromptTokens: 100, GeneratedTokens: 30,
		Idle: Baseline{"a": 20, "b": 10},
	}
	rep, err := Measure(run, []PowerTrace{bPower, a}, []CounterTrace{b})
	if err != nil {
		t.Fatal(err)
	}
	type fig struct {
		Node                   string
		Method                 Method
		Idle                   float64
		Total, Prefill, Decode float64
	}
	var got []fig
	for _, n := range rep.Nodes {
		got = append(got, fig{n.Node, n.Method, n.IdleWatts, n.Total.Joules, n.Prefill.Joules, n.Generation.Joules})
	}
	// a: 400 − 20·4 = 320; prefill 100 − 20 = 80; generation 300 − 60 = 240.
	// b: 200 − 10·4 = 160; prefill 50 − 10 = 40; generation 150 − 30 = 120.
	want := []fig{
		{"a", MethodPower, 20, 320, 80, 240},
		{"b", MethodCounter, 10, 160, 40, 120},
	}
	if d := cmp.Diff(want, got, approx); d != "" {
		t.Errorf("nodes (-want +got):\n%s", d)
	}
	sums := []float64{rep.Total.Joules, rep.Prefill.Joules, rep.Generation.Joules, rep.Watts(), rep.JoulesPerPromptToken, rep.JoulesPerGeneratedToken}
	if d := cmp.Diff([]float64{480, 120, 360, 120, 1.2, 12}, sums, approx); d != "" {
		t.Errorf("total, prefill, generation, W, J/prompt tok, J/gen tok (-want +got):\n%s", d)
	}
	if len(rep.Warnings) != 0 {
		t.Errorf("warnings %v, want none", rep.Warnings)
	}
	if !rep.Split {
		t.Error("Split = false, want true")
	}
}

func TestMeasureWarns(t *testing.T) {
	p := trace(0, 10, 10, 10)
	tests := []struct {
		name string
		run  Run
		want []error
		jpt  bool // J per token defined
	}{
		{"no split", Run{Window: win(1, 2), PromptTokens: 1, GeneratedTokens: 1}, []error{ErrUndefined}, false},
		{"no tokens", Run{Window: win(1, 2), FirstToken: at(1.5)}, []error{ErrUndefined, ErrUndefined}, false},
		{"missing baseline", Run{Window: win(1, 2), FirstToken: at(1.5), PromptTokens: 1, GeneratedTokens: 1, Idle: Baseline{"other": 1}}, []error{ErrUndefined}, true},
		{"below idle", Run{Window: win(1, 2), FirstToken: at(1.5), PromptTokens: 1, GeneratedTokens: 1, Idle: Baseline{"n": 30}},
			[]error{ErrBelowIdle, ErrBelowIdle, ErrBelowIdle}, true},
		{"first token outside", Run{Window: win(1, 2), FirstToken: at(3), PromptTokens: 1, GeneratedTokens: 1}, []error{ErrExtrapolated}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Measure(tc.run, []PowerTrace{p}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, warnKinds(rep.Warnings), cmpopts.EquateErrors()); d != "" {
				t.Errorf("warnings (-want +got):\n%s\n%v", d, rep.Warnings)
			}
			if defined := !math.IsNaN(rep.JoulesPerGeneratedToken); defined != tc.jpt {
				t.Errorf("J per generated token = %v, defined %v, want defined %v", rep.JoulesPerGeneratedToken, defined, tc.jpt)
			}
		})
	}
}

func TestMeasureErrors(t *testing.T) {
	p := trace(0, 10, 10, 10)
	if _, err := Measure(Run{Window: win(1, 2)}, []PowerTrace{p, p}, nil); !errors.Is(err, ErrInvalidTrace) {
		t.Errorf("two traces for one node: error %v, want ErrInvalidTrace", err)
	}
	if _, err := Measure(Run{Window: win(2, 1)}, []PowerTrace{p}, nil); !errors.Is(err, ErrInvalidWindow) {
		t.Errorf("reversed window: error %v, want ErrInvalidWindow", err)
	}
	if _, err := Measure(Run{Window: win(1, 2)}, []PowerTrace{trace(1, 5, 0, 5)}, nil); !errors.Is(err, ErrInvalidTrace) {
		t.Errorf("unsorted trace: error %v, want ErrInvalidTrace", err)
	}
}

func TestIdle(t *testing.T) {
	if _, _, err := Idle(win(0, 4), trace(0, 5, 4, 5), trace(0, 6, 4, 6)); !errors.Is(err, ErrInvalidTrace) {
		t.Errorf("two traces of node n: error %v, want ErrInvalidTrace", err)
	}
	tr2 := trace(0, 5, 4, 5)
	tr2.Node = "m"
	b, warns, err := Idle(win(0, 4), trace(0, 10, 2, 30, 4, 10), tr2)
	if err != nil {
		t.Fatal(err)
	}
	// n: (2·(10+30)/2 + 2·(30+10)/2) / 4 = 20 W; m: 5 W.
	if d := cmp.Diff(Baseline{"n": 20, "m": 5}, b, approx); d != "" {
		t.Errorf("Idle (-want +got):\n%s", d)
	}
	if len(warns) != 0 {
		t.Errorf("warnings %v, want none", warns)
	}
	if _, _, err := Idle(win(1, 1), tr2); !errors.Is(err, ErrInvalidWindow) {
		t.Errorf("zero-length idle window: error %v, want ErrInvalidWindow", err)
	}
}
