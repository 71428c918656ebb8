package plot_test

import (
	"bytes"
	"fmt"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/plot"
	"github.com/inferbench/inferbench/timing"
)

// Plot generation throughput against concurrency from a run's cell
// summaries (benchkit.Report.Cells): the honest Σ tokens / wall as a solid
// line beside exo's max×N as a dashed one, per (pp, tg) pair.
func ExampleGenerationTPS() {
	cell := func(conc int, honest, exo float64) benchkit.CellSummary {
		return benchkit.CellSummary{
			Cell:            benchkit.Cell{PP: 512, TG: 128, Concurrency: conc},
			ThroughputTPS:   timing.Interval{N: 3, Center: honest},
			ExoAggregateTPS: timing.Interval{N: 3, Center: exo},
		}
	}
	cells := []benchkit.CellSummary{cell(1, 40, 41), cell(4, 140, 160), cell(8, 230, 300)}

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
