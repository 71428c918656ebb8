package plot_test

import (
	"bytes"
	"fmt"
	"math"
	"time"

	gplot "gonum.org/v1/plot"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/plot"
	"github.com/inferbench/inferbench/timing"
)

// Plot generation throughput against concurrency from a run's cell
// summaries (benchkit.Report.Cells): the honest Σ tokens / wall as a solid
// line beside exo's max×N as a dashed one, per (pp, tg) pair.
func ExampleGenerationTPS() {
	cell := func(conc int, honest, exo float64) benchkit.Summary {
		return benchkit.Summary{Key: benchkit.ByCell,
			Cell:            benchkit.Cell{PP: 512, TG: 128, Concurrency: conc},
			ThroughputTPS:   timing.Interval{N: 3, Center: honest},
			ExoAggregateTPS: timing.Interval{N: 3, Center: exo},
		}
	}
	cells := []benchkit.Summary{cell(1, 40, 41), cell(4, 140, 160), cell(8, 230, 300)}

	// The points the plot draws, for checking or another renderer.
	for _, s := range plot.GenerationTPSSeries(cells) {
		fmt.Println(s.Name, "honest:", s.Honest, "exo:", s.Exo)
	}
	p, err := plot.GenerationTPS("generation throughput (simulated)", cells)
	if err != nil {
		fmt.Println(err)
		return
	}
	var png bytes.Buffer // or plot.SavePNG("tps.png", p)
	if err := plot.WritePNG(&png, p); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("PNG:", bytes.HasPrefix(png.Bytes(), []byte("\x89PNG")))
	// Output:
	// pp=512 tg=128 honest: [{1 40} {4 140} {8 230}] exo: [{1 41} {4 160} {8 300}]
	// PNG: true
}

// Draw a load test's latency against its offered rate: one panel per
// figure, each with p50 and p99, the run that sent everything at once
// ticked "inf", and the TTFT objective a dashed line in its panel.
func ExampleLatencyPanels() {
	nan := math.NaN()
	var points []plot.RatePoint
	for i, rate := range []float64{1, 2, 4, 8, math.Inf(1)} {
		k := float64(i + 1)
		points = append(points, plot.RatePoint{
			Rate: rate,
			TTFT: plot.Percentiles{P50: 0.02 * k * k, P99: 0.04 * k * k}, // 20 ms – 1 s
			TPOT: plot.Percentiles{P50: 0.010 + 0.002*k, P99: 0.015 + 0.003*k},
			ITL:  plot.Percentiles{P50: nan, P99: nan}, // not measured
			E2E:  plot.Percentiles{P50: 0.5 * k, P99: 0.8 * k},
		})
	}
	fig, err := plot.LatencyPanels("latency by offered rate (simulated)", points, timing.SLO{TTFT: 500 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range fig.Panels {
		scale := "linear"
		if _, ok := p.Plot.Y.Scale.(gplot.LogScale); ok {
			scale = "log"
		}
		var keys []string
		for _, s := range p.Series {
			keys = append(keys, s.Label)
		}
		fmt.Printf("%s: %s %q %v\n", p.Name, scale, p.Plot.Y.Label.Text, keys)
	}
	var png bytes.Buffer // or plot.SavePNG("latency.png", fig)
	if err := plot.WritePNG(&png, fig); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("PNG:", bytes.HasPrefix(png.Bytes(), []byte("\x89PNG")))
	// Output:
	// TTFT: log "latency (s)" [p50 p99 SLO 500ms]
	// TPOT: linear "latency (ms)" [p50 p99]
	// ITL: linear "" []
	// E2E: linear "latency (s)" [p50 p99]
	// PNG: true
}
