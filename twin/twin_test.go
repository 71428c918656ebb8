package twin_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/twin"
)

// hidden is a server the fit is not told about: the fast preset with
// other efficiencies and overhead, slow enough in compute that a decode
// batch of 8 is compute-bound.
func hidden() sim.Preset {
	p := sim.Fast()
	p.Name = "hidden"
	p.Hardware.MemoryEfficiency = 0.8
	p.Hardware.ComputeEfficiency = 0.01
	p.Hardware.StepOverhead = 150 * time.Microsecond
	return p
}

// implied is the roofline of p written as coefficients, from its own
// Hardware and Model (the equations of sim.Preset.DecodeStep and
// PrefillChunkTime).
func implied(p sim.Preset) sim.Coefficients {
	m, h := p.Model, p.Hardware
	B, F := h.EffectiveBandwidth(), h.EffectiveFLOPS()
	return sim.Coefficients{
		StepOverhead:          h.StepOverhead.Seconds(),
		DecodeBase:            m.WeightBytes() / B,
		DecodePerContextToken: m.KVBytesPerToken() / B,
		DecodePerRequest:      2 * m.Params / F,
		PrefillBase:           m.WeightBytes() / B,
		PrefillPerToken:       2 * m.Params / F,
		PrefillPerPair:        m.AttentionFLOPsPerPair() / F,
		PrefillPerCachedToken: m.KVBytesPerToken() / B,
	}
}

func exoClient(t testing.TB, srv *sim.Server) *exo.Client {
	t.Helper()
	c, err := exo.New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

var probeOpts = twin.ProbeOptions{Lengths: []int{32, 96, 256}, Concurrency: []int{2, 4, 16}, TG: 16, Repeat: 2, Simulated: true}

// heldOut are runs the fit never sees: other lengths, other
// concurrencies, and an open-loop Poisson rate.
var heldOut = twin.HeldOut{
	Bursts: []benchkit.Plan{
		{PP: []int{64, 192}, TG: []int{24}, AllCombinations: true, Concurrency: []int{1, 3, 6}, Repeat: 2, Stream: true, Salt: true},
	},
	Loads: []twin.LoadRun{
		{Workload: benchkit.Lengths{Input: 80, Output: 20, RangeRatio: 0.5, Seed: 7}, Traffic: benchkit.Traffic{Rate: 40, NumRequests: 24, Seed: 7}},
	},
	Simulated: true,
}

// Against the embedded engine with a preset it was not told, the fit
// recovers the coefficients that preset's roofline implies, finds the
// server's running cap from the bursts larger than it, and the engine
// loaded with the twin predicts held-out runs; the table is logged.
func TestFitRecoversHiddenPreset(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := hidden()
	srv := sim.NewServer(sim.Options{Preset: p})
	defer srv.Close()
	b := &promptsize.Builder{Counter: srv.Counter()}
	rows, err := twin.Probe(ctx, exoClient(t, srv), srv.Model(), b, probeOpts)
	if err != nil {
		t.Fatal(err)
	}
	tw, err := twin.Fit(rows, twin.FitOptions{Server: "embedded exo"})
	if err != nil {
		t.Fatal(err)
	}
	want, got := implied(p), tw.Coefficients
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"step_overhead", got.StepOverhead, want.StepOverhead},
		{"decode_base", got.DecodeBase, want.DecodeBase},
		{"decode_per_context_token", got.DecodePerContextToken, want.DecodePerContextToken},
		{"decode_per_request", got.DecodePerRequest, want.DecodePerRequest},
		{"prefill_base", got.PrefillBase, want.PrefillBase},
		{"prefill_per_token", got.PrefillPerToken, want.PrefillPerToken},
		{"prefill_per_pair", got.PrefillPerPair, want.PrefillPerPair},
		{"prefill_per_cached_token", got.PrefillPerCachedToken, want.PrefillPerCachedToken},
	} {
		e := (c.got - c.want) / c.want
		t.Logf("%-26s fitted %.6g s, implied %.6g s, error %+.3f %%", c.name, c.got, c.want, 100*e)
		if math.Abs(e) > 0.02 {
			t.Errorf("%s: fitted %g, the preset implies %g: %+.2f %%, beyond 2 %%", c.name, c.got, c.want, 100*e)
		}
	}
	if got.MaxRunning != sim.DefaultMaxRunning {
		t.Errorf("max_running = %d, want the server's %d (bursts of 16 ran 8 at once)", got.MaxRunning, sim.DefaultMaxRunning)
	}
	for _, r := range tw.Residuals {
		t.Logf("residuals %-15s n=%3d dropped=%d MAPE %.2f %% max %.2f %% bias %+.2f %%", r.Kind, r.N, r.Dropped, r.MAPE, r.Max, r.Bias)
	}
	for _, n := range tw.Notes {
		t.Log("note:", n)
	}

	// The same records without the server's timings (as vLLM's API
	// gives them): the client's figures alone, whose errors are logged.
	bare := append([]benchkit.Request(nil), rows...)
	for i := range bare {
		bare[i].Stats = nil
	}
	cw, err := twin.Fit(bare, twin.FitOptions{})
	if err != nil {
		t.Fatalf("client-only fit: %v", err)
	}
	cc := cw.Coefficients
	t.Logf("client only: decode base+overhead %+.1f %%, decode per request %+.1f %%, prefill per token %+.1f %%, client overhead %.3g ms",
		100*((cc.DecodeBase+cc.StepOverhead)/(want.DecodeBase+want.StepOverhead)-1), 100*(cc.DecodePerRequest/want.DecodePerRequest-1),
		100*(cc.PrefillPerToken/want.PrefillPerToken-1), 1e3*cw.ClientOverheadS)
	t.Logf("client only: %+v notes %q", cc, cw.Notes)
	if cc.MaxRunning != sim.DefaultMaxRunning {
		t.Errorf("client only: max_running = %d, want %d", cc.MaxRunning, sim.DefaultMaxRunning)
	}

	// Fidelity: the held-out plans on the server and on the twin.
	measured, err := twin.Measure(ctx, exoClient(t, srv), srv.Model(), b, heldOut)
	if err != nil {
		t.Fatal(err)
	}
	tsrv := sim.NewServer(tw.Options())
	defer tsrv.Close()
	predicted, err := twin.Measure(ctx, exoClient(t, tsrv), tsrv.Model(), &promptsize.Builder{Counter: tsrv.Counter()}, heldOut)
	if err != nil {
		t.Fatal(err)
	}
	f := twin.Compare(predicted, measured)
	var sb strings.Builder
	if err := f.WriteTable(&sb); err != nil {
		t.Fatal(err)
	}
	t.Logf("fidelity on held-out runs:\n%s", sb.String())
	if f.Runs != 7 {
		t.Errorf("compared %d runs, want the 6 cells and the load", f.Runs)
	}
	seen := map[string]bool{}
	for _, m := range f.Metrics {
		seen[m.Metric] = true
	}
	for _, m := range []string{"ttft_mean", "tpot_p90", "e2e_p99", "output_throughput"} {
		if !seen[m] {
			t.Errorf("fidelity has no %s", m)
		}
	}

	// The file round-trips and loads as a preset.
	tw.Fidelity = &f
	path := filepath.Join(t.TempDir(), "twin.json")
	if err := tw.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := twin.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Coefficients != tw.Coefficients || back.Fidelity == nil || len(back.Fidelity.Metrics) != len(f.Metrics) {
		t.Errorf("the file read back differs: %+v", back.Coefficients)
	}
	if os.Getenv("TWIN_KEEP") != "" {
		b, _ := os.ReadFile(path)
		t.Logf("%s", b)
	}
}

// LargestBurstRate is the largest burst's size over its completed
// requests' mean E2E; smaller bursts and failed requests do not count.
func TestLargestBurstRate(t *testing.T) {
	e := func(v float64) *float64 { return &v }
	rows := []benchkit.Request{
		{Labels: benchkit.Labels{Concurrency: 2}, E2ES: e(0.1)},
		{Labels: benchkit.Labels{Concurrency: 4}, E2ES: e(0.2)},
		{Labels: benchkit.Labels{Concurrency: 4}, E2ES: e(0.6)},
		{Labels: benchkit.Labels{Concurrency: 4}, Error: "boom"},
	}
	if got := twin.LargestBurstRate(rows); math.Abs(got-10) > 1e-9 {
		t.Errorf("rate %v, want 4 / 0.4 s = 10", got)
	}
	if got := twin.LargestBurstRate(nil); got != 1 {
		t.Errorf("rate of no rows %v, want 1", got)
	}
}
