package sim

import (
	"testing"
	"time"
)

func TestPowerLogEnergyAndTrim(t *testing.T) {
	hw := Hardware{IdleWatts: 10, ComputeWatts: 100, MemoryWatts: 40}
	p := newPowerLog(hw, 2)
	ms := time.Millisecond
	// Node 0: 100 ms at uc 0.5, um 1 (50 + 40 = 90 W dynamic), then idle.
	p.add(0, 0, 100*ms, 0.5, 1)
	// Over [50 ms, 150 ms]: idle 10 W × 0.1 s + 90 W × 0.05 s = 5.5 J.
	if got := p.energy(0, 50*ms, 150*ms); !within(got, 5.5, 1e-12) {
		t.Errorf("energy = %g J, want 5.5", got)
	}
	if got := p.energy(1, 0, time.Second); !within(got, 10, 1e-12) {
		t.Errorf("idle node energy = %g J, want 10", got)
	}
	if got := p.utilisation(0, 0, 200*ms); !within(got, 0.5, 1e-12) {
		t.Errorf("utilisation = %g, want 0.5 (1 for half the window)", got)
	}
	u := p.usage([]string{"a", "b"}, 0, 50*ms, 200*ms)
	// Node a: prefill 0–50 ms: (10+90)·0.05 = 5 J; generation 50–200 ms:
	// 10·0.15 + 90·0.05 = 6 J. Node b: 0.5 J and 1.5 J.
	if !within(*u.PrefillEnergyJoules, 5.5, 1e-12) || !within(*u.GenerationEnergyJoules, 7.5, 1e-12) ||
		!within(u.TotalEnergyJoules, 13, 1e-12) || !within(u.TotalAvgSysPowerWatts, 13/0.2, 1e-12) {
		t.Errorf("usage = prefill %g J, generation %g J, total %g J, %g W", *u.PrefillEnergyJoules, *u.GenerationEnergyJoules, u.TotalEnergyJoules, u.TotalAvgSysPowerWatts)
	}
	if u.Nodes[0].Samples != 3 {
		t.Errorf("samples = %d over 0.2 s: want 3 (start, mark, end)", u.Nodes[0].Samples)
	}
	if nu := p.usage([]string{"a"}, 0, -1, 200*ms); nu.PrefillSeconds != nil || nu.Nodes[0].PrefillEnergyJoules != nil {
		t.Error("phase fields set although the prefill was never marked")
	}
	p.trim(150 * ms)
	if got := p.energy(0, 0, 100*ms); !within(got, 1, 1e-12) {
		t.Errorf("after trimming, energy = %g J: want only idle (1 J)", got)
	}
}
