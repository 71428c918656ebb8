package benchkit

import (
	"errors"
	"fmt"
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
			if h.LagP99S > h.LagMaxS || h.LagP50S > h.LagP99S || h.LagBoundS < SaturationMinLag.Seconds() {
				t.Errorf("lag quantiles %g %g %g, bound %g", h.LagP50S, h.LagP99S, h.LagMaxS, h.LagBoundS)
			}
		})
	}
}

func TestExitSaturated(t *testing.T) {
	err := fmt.Errorf("%w: run 0: lag", ErrClientSaturated)
	if got := ExitCode(err); got != ExitSaturated {
		t.Errorf("ExitCode(saturated) = %d, want %d", got, ExitSaturated)
	}
	if got := ExitCode(errors.Join(err, ErrRequestsFailed)); got != ExitFailed {
		t.Errorf("ExitCode(saturated and failed) = %d, want %d: failures come first", got, ExitFailed)
	}
}
