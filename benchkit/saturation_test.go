package benchkit

import (
	"strings"
	"testing"
)

// schedule returns n intended offsets gap apart and the sends, each late
// by lag(i) seconds.
func schedule(n int, gap float64, lag func(int) float64) (lags, intended, sent []float64) {
	for i := range n {
		in := float64(i) * gap
		l := lag(i)
		lags, intended, sent = append(lags, l), append(intended, in), append(sent, in+l)
	}
	return
}

func TestCheckClient(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		gap    float64
		lag    func(int) float64
		capped bool
		reason string // "" for not saturated
	}{
		{"easy rate, 0.1 ms lag", 50, 0.1, func(int) float64 { return 1e-4 }, false, ""},
		// 5000/s: the gap is 0.2 ms, so the bound is 5 ms; the lag grows
		// as the client falls behind.
		{"5000/s falling behind", 500, 2e-4, func(i int) float64 { return float64(i) * 1.2e-4 }, false, "schedule lag p99"},
		// 1/s: 10 % of the gap is 100 ms, above the 5 ms floor.
		{"slow rate, 50 ms lag within 10 % of the gap", 20, 1, func(int) float64 { return 0.05 }, false, ""},
		{"slow rate, 150 ms lag", 20, 1, func(int) float64 { return 0.15 }, false, "schedule lag p99"},
		// Only the last of 300 requests is late (beyond the p99), by
		// 20 % of the schedule: the rate falls below 90 %.
		{"rate short", 300, 0.01, func(i int) float64 {
			if i == 299 {
				return 0.2 * 299 * 0.01
			}
			return 0
		}, false, "achieved"},
		// 200 at once: a bound of 100 ms.
		{"all at once, 60 ms skew", 200, 0, func(i int) float64 { return float64(i) * 3e-4 }, false, ""},
		{"all at once, 150 ms skew", 200, 0, func(i int) float64 { return float64(i) * 7.5e-4 }, false, "at once"},
		{"capped: not judged", 500, 2e-4, func(i int) float64 { return float64(i) * 1.2e-4 }, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lags, in, sent := schedule(tc.n, tc.gap, tc.lag)
			h := checkClient(ClientHealth{}, lags, in, sent, tc.capped)
			if h.Saturated != (tc.reason != "") || !strings.Contains(h.Reason, tc.reason) {
				t.Errorf("saturated %v, reason %q; want reason containing %q", h.Saturated, h.Reason, tc.reason)
			}
			if h.LagP99S > h.LagMaxS || h.LagP50S > h.LagP99S || h.LagBoundS < saturationMinLag.Seconds() {
				t.Errorf("lag quantiles %g %g %g, bound %g", h.LagP50S, h.LagP99S, h.LagMaxS, h.LagBoundS)
			}
		})
	}
}

// TestClientHealths: a run's summary health (what Load.Run measured,
// dispatch lags included) is taken as it is; a run without one (rows
// read back from a file) is judged from its rows; negative dispatch lags
// (a send marked before its intended instant) count as 0.
func TestClientHealths(t *testing.T) {
	var measured ClientHealth
	measured.SetDispatchLags([]float64{-0.001, 0.002, 0.004})
	measured.Saturated, measured.Reason = true, "measured"
	rows := func(run int, lag float64) []Request {
		var rs []Request
		for i := range 10 {
			rs = append(rs, Request{Labels: Labels{Run: run}, Index: i, IntendedSendS: float64(i) * 0.1, SendOffsetS: float64(i)*0.1 + lag})
		}
		return rs
	}
	runs := []LoadRun{
		{Summary: Summary{Client: &measured}, Requests: rows(0, 0)},
		{Requests: rows(1, 0.5)},
	}
	hs, saturated := clientHealths(runs, false)
	if !saturated || len(hs) != 2 {
		t.Fatalf("saturated %v, %d healths", saturated, len(hs))
	}
	if hs[0].Reason != "measured" || *hs[0].DispatchLagP50S != 0.002 || *hs[0].DispatchLagMaxS != 0.004 {
		t.Errorf("run 0: %+v; want the summary's health, dispatch lag p50 2 ms, max 4 ms", hs[0])
	}
	if !hs[1].Saturated || hs[1].Run != 1 || !strings.Contains(hs[1].Reason, "schedule lag p99") {
		t.Errorf("run 1: %+v; want judged from its rows, 500 ms late", hs[1])
	}
	if got := saturationReasons(hs); !strings.Contains(got, "run 0: measured; run 1: schedule lag p99") {
		t.Errorf("saturationReasons = %q", got)
	}
	if hs[1].DispatchLagP99S != nil {
		t.Errorf("run 1 has a dispatch lag %g it never measured", *hs[1].DispatchLagP99S)
	}
}

// TestCheckBursts: a burst is judged by its largest dispatch skew against
// max(5 ms, 0.5 ms × n): 4 requests skewed 3 ms pass and 6 ms do not; 64
// skewed 20 ms pass (a bound of 32 ms); single requests are not judged.
func TestCheckBursts(t *testing.T) {
	var rows []Request
	burst := func(conc, repeat int, skew float64) {
		for i := range conc {
			rows = append(rows, Request{Labels: Labels{Concurrency: conc, Repeat: repeat, Placement: Placement{Sharding: "pipeline", Nodes: 2}}, PPTarget: 64, TGTarget: 8, Index: i, DispatchSkewS: skew})
		}
	}
	burst(1, 0, 1)
	burst(4, 0, 0.003)
	burst(4, 1, 0.006)
	burst(64, 0, 0.020)
	bad, saturated := Report{Requests: rows}.CheckBursts()
	if !saturated || len(bad) != 1 {
		t.Fatalf("saturated %v, bursts %+v; want one", saturated, bad)
	}
	b := bad[0]
	if b.N != 4 || b.SkewS != 0.006 || b.BoundS != 0.005 || !strings.Contains(b.Burst, "conc=4/repeat=1") || !strings.Contains(b.Burst, "placement=") {
		t.Errorf("burst %+v; want conc=4 repeat 1, skew 6 ms, bound 5 ms", b)
	}
	if got := burstReasons(bad); !strings.Contains(got, "dispatch skew 6.0 ms > 5.0 ms") {
		t.Errorf("burstReasons = %q", got)
	}
	if got := burstSkewBound(64); got != 0.032 {
		t.Errorf("burstSkewBound(64) = %g, want 0.032", got)
	}
}
