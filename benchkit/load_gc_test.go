package benchkit

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// gcPercent reads the collector's setting without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestLoadGCPercent: the setting holds while the schedule runs and the
// previous one is back when Run returns; the run's client health counts
// the collections that ran inside it (here one per row, forced).
func TestLoadGCPercent(t *testing.T) {
	before := gcPercent()
	for _, tc := range []struct {
		name string
		set  int
		want int // seen inside the run
	}{{"set", 400, 400}, {"off", -1, -1}, {"left alone", 0, before}} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []int
			l := &Load{Engine: &prewarmEngine{}, Model: "m", Builder: &promptsize.Builder{Counter: wordCounter},
				GCPercent: tc.set,
				Sinks: []Sink{SinkFunc(func(Request) error {
					seen = append(seen, gcPercent())
					runtime.GC()
					return nil
				})}}
			run, err := l.Run(context.Background(), Lengths{Input: 20, Output: 2}, Traffic{Burst: 3}, timing.SLO{})
			if err != nil {
				t.Fatal(err)
			}
			if got := gcPercent(); got != before {
				t.Errorf("after the run the setting is %d, want %d back", got, before)
			}
			for i, p := range seen {
				if p != tc.want {
					t.Errorf("row %d: setting %d during the run, want %d", i, p, tc.want)
				}
			}
			h := run.Summary.Client
			if h == nil || h.GCCycles == nil || h.GCPauseS == nil {
				t.Fatalf("client health %+v has no collector figures", h)
			}
			if *h.GCCycles < 3 || *h.GCPauseS <= 0 {
				t.Errorf("gc_cycles %d, gc_pause_s %v; want at least the 3 forced and a positive pause", *h.GCCycles, *h.GCPauseS)
			}
		})
	}
}
