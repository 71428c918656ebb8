package concurrency_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/concurrency"
)

func TestSummarizeDurations(t *testing.T) {
	tests := []struct {
		name string
		in   []time.Duration
		want concurrency.DurationStats
	}{
		{"empty", nil, concurrency.DurationStats{}},
		{"one", []time.Duration{7}, concurrency.DurationStats{N: 1, Min: 7, Mean: 7, Max: 7, P50: 7, P90: 7, P95: 7, P99: 7}},
		// Sorted 10, 20, 30, 40, 100 ns: h = 4·p/100. p50: h = 2 → 30;
		// p90: h = 3.6 → 40 + 0.6·60 = 76; p95: h = 3.8 → 88; p99: h = 3.96 →
		// 97.6 → 98 (rounded). Mean 200/5 = 40.
		{"five unsorted", []time.Duration{40, 10, 100, 30, 20}, concurrency.DurationStats{N: 5, Min: 10, Mean: 40, Max: 100, P50: 30, P90: 76, P95: 88, P99: 98}},
		{"negative", []time.Duration{-5, 5}, concurrency.DurationStats{N: 2, Min: -5, Mean: 0, Max: 5, P50: 0, P90: 4, P95: 5, P99: 5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tc.in...)
			if diff := cmp.Diff(tc.want, concurrency.SummarizeDurations(in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.in, in); diff != "" {
				t.Errorf("input modified (-before +after):\n%s", diff)
			}
		})
	}
}

func TestStrings(t *testing.T) {
	s := concurrency.SummarizeDurations([]time.Duration{0, ms(1), ms(2), ms(3)})
	tests := []struct{ got, want string }{
		{s.String(), "n=4 min=0s p50=1.5ms p90=2.7ms p99=2.97ms max=3ms mean=1.5ms"},
		{concurrency.DurationStats{}.String(), "n=0"},
		{concurrency.StopFinished.String(), "finished"},
		{concurrency.StopArrivals.String(), "arrivals"},
		{concurrency.StopCount.String(), "count"},
		{concurrency.StopDuration.String(), "duration"},
		{concurrency.StopContext.String(), "context"},
		{concurrency.StopReason(9).String(), "StopReason(9)"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, expected %q", tc.got, tc.want)
		}
	}
}
