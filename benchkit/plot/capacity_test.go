package plot_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit/plot"
	"github.com/inferbench/inferbench/capacity"
)

func TestMarkCapacity(t *testing.T) {
	fig, err := plot.LatencyPanels("capacity", ratePoints()[:5], rateSLO)
	if err != nil {
		t.Fatal(err)
	}
	res := capacity.Result{
		Knee:     capacity.Interval{Status: "bracketed", Rate: 6, Lo: 4, Hi: 8},
		Capacity: capacity.Interval{Status: "bracketed", Rate: 5, Lo: 4, Hi: 8},
	}
	if err := plot.MarkCapacity(fig, res); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"TTFT", "E2E"} {
		p := panel(t, fig, name)
		for label, x := range map[string]float64{"knee " + res.Knee.String(): 6, "capacity " + res.Capacity.String(): 5} {
			s, ok := series(p, label)
			if !ok {
				t.Errorf("%s panel: no key %q", name, label)
				continue
			}
			if len(s.Points) != 2 || s.Points[0].X != x || s.Points[1].X != x || s.Points[0].Y != p.Plot.Y.Min || s.Points[1].Y != p.Plot.Y.Max {
				t.Errorf("%s panel: %s drawn at %v, want a vertical line at %g across the panel", name, label, s.Points, x)
			}
		}
	}
	// A result that brackets nothing marks nothing.
	fig2, _ := plot.LatencyPanels("capacity", ratePoints()[:5], rateSLO)
	before := len(panel(t, fig2, "TTFT").Series)
	if err := plot.MarkCapacity(fig2, capacity.Result{Knee: capacity.Interval{Status: "above", Lo: 16}}); err != nil {
		t.Fatal(err)
	}
	if got := len(panel(t, fig2, "TTFT").Series); got != before {
		t.Errorf("an unbracketed knee added %d keys", got-before)
	}
	var b bytes.Buffer
	if err := plot.WritePNG(&b, fig); err != nil || !strings.HasPrefix(b.String(), "\x89PNG") {
		t.Errorf("WritePNG: %v, %d bytes", err, b.Len())
	}
}
