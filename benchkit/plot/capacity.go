package plot

import (
	"fmt"
	"image/color"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/inferbench/inferbench/capacity"
)

// The styles of MarkCapacity's lines.
var (
	kneeColor     = plotutil.SoftColors[1] // green
	capacityColor = plotutil.SoftColors[4] // purple
)

// MarkCapacity marks where a capacity search found the server saturates
// on every drawn panel of f (a LatencyPanels figure of the search's
// runs): a vertical line at the knee's estimate and one at the
// capacity's, where bracketed, each keyed with its bracket ("knee
// 18.3/s [17.4, 19]"), dashed lines at the knee bracket's ends. A panel
// no run defines is left as it is. It returns an error only when gonum
// cannot make a line.
func MarkCapacity(f *Figure, res capacity.Result) error {
	for i := range f.Panels {
		panel := &f.Panels[i]
		p := panel.Plot
		if len(panel.Series) == 0 {
			continue
		}
		for _, m := range []struct {
			name string
			iv   capacity.Interval
			col  color.Color
		}{{"knee", res.Knee, kneeColor}, {"capacity", res.Capacity, capacityColor}} {
			if !m.iv.Bracketed() {
				continue
			}
			s := Series{Label: m.name + " " + m.iv.String(), Points: plotter.XYs{{X: m.iv.Rate, Y: p.Y.Min}, {X: m.iv.Rate, Y: p.Y.Max}}}
			l, err := plotter.NewLine(s.Points)
			if err != nil {
				return fmt.Errorf("plot: %s %s: %w", panel.Name, m.name, err)
			}
			l.Color, l.Width = m.col, vg.Points(2)
			p.Add(l)
			s.Thumbs = []gplot.Thumbnailer{l}
			panel.Series = append(panel.Series, s)
			if m.name != "knee" {
				continue
			}
			for _, x := range []float64{m.iv.Lo, m.iv.Hi} {
				b, err := plotter.NewLine(plotter.XYs{{X: x, Y: p.Y.Min}, {X: x, Y: p.Y.Max}})
				if err != nil {
					return fmt.Errorf("plot: %s knee bracket: %w", panel.Name, err)
				}
				b.Color, b.Width = m.col, vg.Points(1)
				b.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
				p.Add(b)
			}
		}
	}
	return nil
}
