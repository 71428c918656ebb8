package plot_test

import (
	"errors"
	"image"
	_ "image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gplot "gonum.org/v1/plot"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/plot"
	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/timing"
)

func f(v float64) *float64 { return &v }

func cells() []benchkit.Summary {
	var out []benchkit.Summary
	for _, c := range []int{1, 2, 4, 8} {
		out = append(out, benchkit.Summary{Key: benchkit.ByCell,
			Cell:            benchkit.Cell{PP: 512, TG: 128, Concurrency: c},
			ThroughputTPS:   timing.Interval{N: 3, Center: 30 * float64(c) * 0.9},
			ExoAggregateTPS: timing.Interval{N: 3, Center: 30 * float64(c)},
		})
	}
	return out
}

func loadRows() []benchkit.Request {
	var rows []benchkit.Request
	for i := range 20 {
		pp := 100 + 50*i
		rows = append(rows, benchkit.Request{Index: i, PPTokens: pp, TTFTS: f(0.01 + float64(pp)/1e5)})
	}
	rows = append(rows, benchkit.Request{Index: 20, PPTokens: 5000, Error: "reset"})
	return rows
}

func loadRuns() []benchkit.Summary {
	var runs []benchkit.Summary
	for i, r := range []float64{1, 2, 4, 8} {
		rate := r
		runs = append(runs, benchkit.Summary{
			RequestRate: &rate,
			TTFT:        benchkit.Quantiles{N: 10, P50: f(0.04 * math.Pow(2, float64(i))), P99: f(0.05 * math.Pow(2, float64(i)))},
			TPOT:        benchkit.Quantiles{N: 10, P50: f(0.02), P99: f(0.03)},
			E2E:         benchkit.Quantiles{N: 10, P50: f(0.9 + 0.2*float64(i)), P99: f(1 + 0.2*float64(i))},
		})
	}
	// A burst has no rate: it is drawn as the "inf" point.
	runs = append(runs, benchkit.Summary{TTFT: benchkit.Quantiles{N: 1, P50: f(8), P99: f(9)}})
	return runs
}

func powerData() ([]energy.PowerTrace, []plot.Phase) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var a, b energy.PowerTrace
	a.Node, b.Node = "node-a", "node-b"
	for i := range 30 {
		at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		a.Samples = append(a.Samples, energy.Sample{At: at, Value: 20 + 100*math.Sin(float64(i)/10)*math.Sin(float64(i)/10)})
		b.Samples = append(b.Samples, energy.Sample{At: at, Value: 15})
	}
	return []energy.PowerTrace{a, b}, []plot.Phase{
		{Name: "prefill", Start: t0.Add(300 * time.Millisecond), End: t0.Add(800 * time.Millisecond)},
		{Name: "generation", Start: t0.Add(800 * time.Millisecond), End: t0.Add(2500 * time.Millisecond)},
	}
}

// TestPlotsRender renders every plot to a PNG file and checks that the
// file decodes as a PNG of the documented size, and that it is not a
// trivially small (blank) image.
func TestPlotsRender(t *testing.T) {
	traces, phases := powerData()
	tests := []struct {
		name string
		make func() (*gplot.Plot, error)
		x, y string
	}{
		{"tps", func() (*gplot.Plot, error) { return plot.GenerationTPS("TPS (simulated)", cells()) },
			"concurrency (requests in a burst)", "generation throughput (tokens/s)"},
		{"ttft", func() (*gplot.Plot, error) { return plot.TTFTByPromptLength("TTFT (simulated)", loadRows()) },
			"prompt length (tokens)", "time to first token (ms)"},
		{"power", func() (*gplot.Plot, error) { return plot.Power("power (simulated)", traces, phases) },
			"time (s)", "power (W)"},
	}
	// vgimg renders at 96 dots per inch by default.
	wantW := int(math.Ceil(plot.Width.Dots(96)))
	wantH := int(math.Ceil(plot.Height.Dots(96)))
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.make()
			if err != nil {
				t.Fatal(err)
			}
			if p.X.Label.Text != tc.x || p.Y.Label.Text != tc.y {
				t.Errorf("axis labels = %q, %q; want %q, %q", p.X.Label.Text, p.Y.Label.Text, tc.x, tc.y)
			}
			path := filepath.Join(dir, tc.name+".png")
			if err := plot.SavePNG(path, p); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			// A blank 605×378 PNG compresses to about 2 KB; text, lines
			// and glyphs make it several times larger.
			if fi.Size() < 8<<10 {
				t.Errorf("%s is %d bytes; a plot with labelled axes and data should be over 8 KiB", path, fi.Size())
			}
			fh, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			cfg, format, err := image.DecodeConfig(fh)
			if err != nil {
				t.Fatal(err)
			}
			if format != "png" || cfg.Width != wantW || cfg.Height != wantH {
				t.Errorf("%s: %s %d×%d; want png %d×%d", path, format, cfg.Width, cfg.Height, wantW, wantH)
			}
		})
	}
}

func TestPlotsNoData(t *testing.T) {
	if _, err := plot.GenerationTPS("x", nil); !errors.Is(err, plot.ErrNoData) {
		t.Errorf("GenerationTPS(nil) error = %v; want ErrNoData", err)
	}
	if _, err := plot.TTFTByPromptLength("x", []benchkit.Request{{Error: "boom"}}); !errors.Is(err, plot.ErrNoData) {
		t.Errorf("TTFTByPromptLength(failed rows) error = %v; want ErrNoData", err)
	}
	if _, err := plot.LatencyPanels("x", plot.RatePoints(nil), timing.SLO{}); !errors.Is(err, plot.ErrNoData) {
		t.Errorf("LatencyPanels(no runs) error = %v; want ErrNoData", err)
	}
	if _, err := plot.Power("x", nil, nil); !errors.Is(err, plot.ErrNoData) {
		t.Errorf("Power(nil) error = %v; want ErrNoData", err)
	}
}

// ticks returns the labels of p's x ticks over its axis range.
func ticks(p *gplot.Plot) []string {
	var out []string
	for _, t := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
		if t.Label != "" {
			out = append(out, t.Label)
		}
	}
	return out
}

// TestDoublingAxes: concurrencies and rates that double get a log₂ x axis
// with a tick at each measured value; a run with no finite rate is its
// own point, ticked "inf", one doubling past the highest rate; a lone
// inf-rate run is drawn, not refused; tick labels carry no trailing
// zeros.
func TestDoublingAxes(t *testing.T) {
	tps, err := plot.GenerationTPS("x", cells())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tps.X.Scale.(gplot.LogScale); !ok || !slices.Equal(ticks(tps), []string{"1", "2", "4", "8"}) {
		t.Errorf("GenerationTPS: scale %T, ticks %q; want a log scale ticked 1 2 4 8", tps.X.Scale, ticks(tps))
	}
	fig, err := plot.LatencyPanels("x", plot.RatePoints(loadRuns()), timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	rate := fig.Panels[0].Plot
	if _, ok := rate.X.Scale.(gplot.LogScale); !ok || !slices.Equal(ticks(rate), []string{"1", "2", "4", "8", "inf"}) {
		t.Errorf("LatencyPanels from RatePoints: scale %T, ticks %q; want a log scale ticked 1 2 4 8 inf", rate.X.Scale, ticks(rate))
	}
	if got := plot.RatePoints(loadRuns())[4]; !math.IsInf(got.Rate, 1) || got.TTFT.P99 != 9 || !math.IsNaN(got.TPOT.P50) {
		t.Errorf("RatePoints of a burst = %+v; want rate +Inf, TTFT p99 9 s and no TPOT", got)
	}
	for _, tk := range rate.Y.Tick.Marker.Ticks(0, 500) {
		if strings.HasSuffix(tk.Label, ".00") || strings.HasSuffix(tk.Label, ".0") {
			t.Errorf("y tick label %q has trailing zeros", tk.Label)
		}
	}
}

// TestTTFTByTurn: one line per arm, a point per turn, ticked at the turns.
func TestTTFTByTurn(t *testing.T) {
	arm := func(ms ...float64) []benchkit.Summary {
		var out []benchkit.Summary
		for i, v := range ms {
			out = append(out, benchkit.Summary{Key: benchkit.ByTurn, Labels: benchkit.Labels{Turn: i + 1}, TTFT: benchkit.Quantiles{N: 4, P50: f(v / 1e3)}})
		}
		return out
	}
	p, err := plot.TTFTByTurn("x", map[string][]benchkit.Summary{"radix": arm(82, 84, 85), "naive": arm(85, 160, 240)})
	if err != nil {
		t.Fatal(err)
	}
	if got := ticks(p); !slices.Equal(got, []string{"1", "2", "3"}) || p.X.Label.Text != "turn" {
		t.Errorf("ticks %q, x label %q; want the turns 1 2 3", got, p.X.Label.Text)
	}
	if _, err := plot.TTFTByTurn("x", nil); !errors.Is(err, plot.ErrNoData) {
		t.Errorf("no series: %v, want ErrNoData", err)
	}
}
