package sim

import (
	"math"
	"testing"
	"time"
)

// implied writes p's roofline in the fitted form, from its Hardware and
// Model.
func implied(p Preset) *Coefficients {
	m, h := p.Model, p.Hardware
	B, F := h.EffectiveBandwidth(), h.EffectiveFLOPS()
	return &Coefficients{
		StepOverhead:          h.StepOverhead.Seconds(),
		DecodeBase:            m.WeightBytes() / B,
		DecodePerContextToken: m.KVBytesPerToken() / B,
		DecodePerRequest:      2 * m.active() / F,
		PrefillBase:           m.WeightBytes() / B,
		PrefillPerToken:       2 * m.active() / F,
		PrefillPerPair:        m.AttentionFLOPsPerPair() / F,
		PrefillPerCachedToken: m.KVBytesPerToken() / B,
	}
}

// A preset carrying the coefficients its own roofline implies times every
// step as the roofline does; changing one coefficient changes the steps
// that term rules.
func TestFittedMatchesRoofline(t *testing.T) {
	for _, p := range Presets() {
		f := p
		f.Fitted = implied(p)
		near := func(what string, a, b time.Duration) {
			t.Helper()
			if d := a - b; d < -time.Nanosecond || d > time.Nanosecond {
				t.Errorf("%s %s: fitted %v, roofline %v", p.Name, what, a, b)
			}
		}
		for _, ctx := range [][]int{{10}, {1000, 2000}, make([]int, 64)} {
			near("decode", f.DecodeStep(ctx), p.DecodeStep(ctx))
		}
		for _, n := range []int{1, 100, 5000} {
			near("prefill", f.PrefillTime(n, 300, 0), p.PrefillTime(n, 300, 0))
		}
		c := p.cost(1, false, 0)
		fc := f.cost(1, false, 0)
		mix := []lcChunk{{n: 512, offset: 100}}
		m1, c1 := c.roofMixed([]int{700, 30}, mix)
		m2, c2 := fc.roofMixed([]int{700, 30}, mix)
		if math.Abs(m1-m2) > 1e-12*m1 || math.Abs(c1-c2) > 1e-12*c1 {
			t.Errorf("%s mixed: fitted (%g, %g), roofline (%g, %g)", p.Name, m2, c2, m1, c1)
		}
	}
	p := Fast()
	p.Fitted = implied(p)
	before := p.DecodeStep([]int{100})
	p.Fitted.StepOverhead += 1e-3
	if got := p.DecodeStep([]int{100}) - before; got != time.Millisecond {
		t.Errorf("a step overhead 1 ms longer made a decode step %v longer", got)
	}
}

// The fitted running cap applies unless the options set one.
func TestFittedMaxRunning(t *testing.T) {
	p := Fast()
	p.Fitted = &Coefficients{MaxRunning: 3}
	if got := (Options{Preset: p}).maxRunning(); got != 3 {
		t.Errorf("maxRunning = %d, want the fitted 3", got)
	}
	if got := (Options{Preset: p, MaxRunning: 5}).maxRunning(); got != 5 {
		t.Errorf("maxRunning = %d, want the options' 5", got)
	}
}
