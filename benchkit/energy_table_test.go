package benchkit

import (
	"math"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/timing"
)

// energyRows is one cell of two repeats at concurrency 2: each row has a
// client energy over a window of windowS against 1 s samples and, when
// server is set, the server's power_usage over its own span.
func energyRows(windowS float64, server bool) []Request {
	var rows []Request
	for rep := range 2 {
		for i := range 2 {
			elapsed := 1.0 + 0.1*float64(i) + 0.05*float64(rep)
			r := Request{Labels: Labels{Concurrency: 2, Repeat: rep}, PPTarget: 64, PPTokens: 64, TGTarget: 8, CompletionTokens: ip(8), Index: i, DoneS: elapsed,
				Stats:  &engine.ServerStats{PromptTPS: 640, GenerationTPS: 10, PromptTokens: 64, GenerationTokens: 8},
				Energy: &Energy{WindowS: windowS, Joules: 50 * windowS, AvgWatts: 50, Shared: true, Source: "client", SampleIntervalS: 1}}
			r.EnergyWindowShort = windowS < ShortWindowFactor*r.Energy.SampleIntervalS
			if server {
				r.PowerUsage = &engine.PowerUsage{ElapsedSeconds: elapsed, TotalEnergyJoules: 100 * elapsed}
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// TestTableEnergySources: the energy column prefers the server's figure
// and says so; a client figure over a short window is left out with a
// note; a client figure over a long enough window is shown as the
// client's; nothing at all leaves the column out.
func TestTableEnergySources(t *testing.T) {
	table := func(rows []Request) string {
		var b strings.Builder
		if err := WriteTable(&b, Summarize(rows, ByCell, timing.SLO{}), TableOptions{}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	// Server figures: per repeat the longest request's, 100 × 1.1 and
	// 100 × 1.15 J.
	cells := Summarize(energyRows(1.2, true), ByCell, timing.SLO{})
	if got := cells[0].ServerEnergyJ.Center; math.Abs(got-112.5) > 1e-9 {
		t.Errorf("server energy %v, want 112.5 (the longest request of each repeat)", got)
	}
	if !cells[0].EnergyWindowShort || cells[0].ShortWindowS != 1.2 {
		t.Errorf("short window not recorded: %+v", cells[0])
	}
	out := table(energyRows(1.2, true))
	if !strings.Contains(out, "J/tok is the server's energy") || !strings.Contains(out, "7.0 ±2.0") {
		t.Errorf("server energy not shown as the server's:\n%s", out)
	}
	out = table(energyRows(1.2, false))
	if strings.Contains(out, "energy J") || !strings.Contains(out, "window 1.2 s < 3 × 1 s samples") {
		t.Errorf("a short client window must leave no energy column and a note:\n%s", out)
	}
	out = table(energyRows(4, false))
	if !strings.Contains(out, "J/tok is the client's") || !strings.Contains(out, "12.50") {
		t.Errorf("a long client window must show the client's 200 J over 16 tokens:\n%s", out)
	}
	// Unstreamed rows: TTFT is the server's prefill, 64 / 640 s = 100 ms.
	if !strings.Contains(out, "prefill ms is the server's") || !strings.Contains(out, "100.0") {
		t.Errorf("unstreamed rows must show the server's prefill time:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n")[1:2] {
		if strings.Contains(l, "—") {
			t.Errorf("a line with a column of no figure: %q", l)
		}
	}
}
