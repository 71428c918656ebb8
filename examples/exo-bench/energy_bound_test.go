package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine/sim"
)

// TestDefaultRunClientBoundCoversServerEnergy runs exo-bench as a user
// does, with no flag but --json-out (the embedded engine's default preset,
// bursts back to back, 1 s means polled every second), and checks every
// burst's client energy against the server's exact power_usage: the
// server integrates the longest request's span, which lies inside the
// client's burst window, so the window's energy lies between the server's
// figure and that plus the rest of the window at the cluster's peak power
// (idle + compute + memory per node). The client's Joules ± error_bound_j
// must reach that range.
func TestDefaultRunClientBoundCoversServerEnergy(t *testing.T) {
	if testing.Short() {
		t.Skip("the default run takes about 20 s")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "r.json")
	var o, e bytes.Buffer
	// --allow-saturated: the energy bound is under test, not the bursts'
	// skew, which a loaded machine may push past the gate.
	if err := run(context.Background(), []string{"--allow-saturated", "--json-out", out}, &o, &e); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, e.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc exoDocument
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	hw := sim.M3UltraGemma27B().Hardware
	if doc.Meta == nil || doc.Meta.Preset != sim.M3UltraGemma27B().Name {
		t.Fatalf("meta %+v: expected the default preset %q", doc.Meta, sim.M3UltraGemma27B().Name)
	}
	type key struct{ pp, conc, rep int }
	bursts := map[key][]benchkit.ExoRun{}
	for _, r := range doc.Runs {
		if failed(r) {
			t.Errorf("row failed: %s", r.Error)
			continue
		}
		k := key{r.PPTarget, r.Concurrency, r.RepeatIndex}
		bursts[k] = append(bursts[k], r)
	}
	checked := 0
	for k, rows := range bursts {
		en := rows[0].Energy
		var longest *benchkit.ExoRun
		for i, r := range rows {
			if r.PowerUsage != nil && (longest == nil || r.PowerUsage.ElapsedSeconds > longest.PowerUsage.ElapsedSeconds) {
				longest = &rows[i]
			}
		}
		if en == nil || en.ErrorBoundJ == nil || longest == nil {
			t.Errorf("%+v: client energy %+v, server power_usage of the longest request %v: expected both", k, en, longest)
			continue
		}
		pu := longest.PowerUsage
		nodes := float64(max(len(pu.Nodes), 1))
		extra := en.WindowS - pu.ElapsedSeconds
		if extra < 0 {
			t.Errorf("%+v: client window %.6g s shorter than the server's span %.6g s", k, en.WindowS, pu.ElapsedSeconds)
			continue
		}
		lo := pu.TotalEnergyJoules
		hi := pu.TotalEnergyJoules + extra*nodes*(hw.IdleWatts+hw.ComputeWatts+hw.MemoryWatts)
		b := *en.ErrorBoundJ
		if en.Joules+b < lo-1e-9 || en.Joules-b > hi+1e-9 {
			t.Errorf("%+v: client %.4g ± %.4g J does not reach the server's %.4g J (window %.6g s, span %.6g s)",
				k, en.Joules, b, pu.TotalEnergyJoules, en.WindowS, pu.ElapsedSeconds)
		}
		checked++
	}
	if checked != 8 {
		t.Errorf("checked %d bursts, want the default run's 8 (2 pp × 2 concurrencies × 2 repeats)", checked)
	}
}
