package report

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/inferbench/inferbench/benchkit/compare"
	bplot "github.com/inferbench/inferbench/benchkit/plot"
)

func rgb(r, g, b uint8) color.RGBA { return color.RGBA{R: r, G: g, B: b, A: 0xff} }

// change is one figure's row of the change plot, in %: the point x with
// its interval [lo, hi] (NaN where unbounded), and the gate's threshold
// on the figure's worse side (NaN where the gate does not look at it).
type change struct {
	y, x, lo, hi, gate float64
	col                color.Color
	glyph              draw.GlyphDrawer
}

// changes draws every row's interval as a bar and its point as a
// marker, a line at 0, and the gate's thresholds as dashed ticks.
type changes []change

// rowHeadroom is the room left above the top row, in rows, for the
// legend.
const rowHeadroom = 2.5

func (cs changes) Plot(c draw.Canvas, p *gplot.Plot) {
	tx, ty := p.Transforms(&c)
	c.StrokeLine2(draw.LineStyle{Color: color.Black, Width: vg.Points(1)}, tx(0), ty(p.Y.Min), tx(0), ty(p.Y.Max))
	for _, ch := range cs {
		y := ty(ch.y)
		if !math.IsNaN(ch.lo) && !math.IsNaN(ch.hi) {
			st := draw.LineStyle{Color: ch.col, Width: vg.Points(2)}
			c.StrokeLine2(st, tx(ch.lo), y, tx(ch.hi), y)
			for _, end := range []float64{ch.lo, ch.hi} {
				c.StrokeLine2(st, tx(end), y-vg.Points(4), tx(end), y+vg.Points(4))
			}
		}
		if !math.IsNaN(ch.gate) {
			dashed := draw.LineStyle{Color: color.Black, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}
			c.StrokeLine2(dashed, tx(ch.gate), y-vg.Points(7), tx(ch.gate), y+vg.Points(7))
		}
		c.DrawGlyph(draw.GlyphStyle{Color: ch.col, Radius: vg.Points(4), Shape: ch.glyph}, vg.Point{X: tx(ch.x), Y: y})
	}
}

func (cs changes) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = 0, 0
	for _, ch := range cs {
		for _, v := range []float64{ch.x, ch.lo, ch.hi, ch.gate} {
			if !math.IsNaN(v) {
				xmin, xmax = min(xmin, v), max(xmax, v)
			}
		}
	}
	pad := 0.05 * max(xmax-xmin, 1)
	return xmin - pad, xmax + pad, -0.6, float64(len(cs)) - 0.4 + rowHeadroom
}

// labelTicks labels each row of the change plot with its text, and no
// other value.
type labelTicks []string

func (l labelTicks) Ticks(lo, hi float64) []gplot.Tick {
	out := make([]gplot.Tick, len(l))
	for i, s := range l {
		out[i] = gplot.Tick{Value: float64(len(l) - 1 - i), Label: s}
	}
	return out
}

// glyphKey is a legend entry's marker, or a dashed tick without one.
type glyphKey struct {
	col   color.Color
	glyph draw.GlyphDrawer
}

func (k glyphKey) Thumbnail(c *draw.Canvas) {
	mid := vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: (c.Min.Y + c.Max.Y) / 2}
	if k.glyph == nil {
		dashed := draw.LineStyle{Color: k.col, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}
		c.StrokeLine2(dashed, mid.X, c.Min.Y, mid.X, c.Max.Y)
		return
	}
	c.StrokeLine2(draw.LineStyle{Color: k.col, Width: vg.Points(2)}, c.Min.X, mid.Y, c.Max.X, mid.Y)
	c.DrawGlyph(draw.GlyphStyle{Color: k.col, Radius: vg.Points(4), Shape: k.glyph}, mid)
}

// verdictStyle is a verdict's colour and marker.
func verdictStyle(v compare.Verdict) (color.Color, draw.GlyphDrawer) {
	switch v {
	case compare.Worse:
		return worseColor, draw.PyramidGlyph{}
	case compare.Better:
		return betterColor, draw.BoxGlyph{}
	}
	return noChangeColor, draw.CircleGlyph{}
}

// changeFigure draws group gi's tested figures: each one's relative
// change (B − A)/A in % with its interval, around a line at 0, coloured
// and marked by its verdict, which its label also names; the gate's
// threshold is a dashed tick on each gated figure's worse side. It
// returns nil when no figure of the group has a relative change.
func changeFigure(rows []compare.Row, gi, ngroups int, c *compare.Result) (*figure, error) {
	var cs changes
	var labels []string
	skipped := 0
	seen := map[compare.Verdict]bool{}
	gated := false
	for _, r := range rows {
		if r.Verdict == compare.NotComparable || math.IsNaN(r.Rel) {
			skipped++
			continue
		}
		col, glyph := verdictStyle(r.Verdict)
		seen[r.Verdict] = true
		ch := change{x: 100 * r.Rel, lo: 100 * r.RelLo, hi: 100 * r.RelHi, gate: math.NaN(), col: col, glyph: glyph}
		if c.Threshold > 0 && (len(c.GateFigures) == 0 || slices.Contains(c.GateFigures, r.Figure.Name)) {
			ch.gate, gated = 100*c.Threshold, true
			if !r.Figure.Lower {
				ch.gate = -ch.gate
			}
		}
		label := r.Figure.Name + ": " + string(r.Verdict)
		if r.Regression {
			label += ", regression"
		}
		if math.IsNaN(ch.lo) || math.IsNaN(ch.hi) {
			label += ", interval unbounded"
		}
		cs = append(cs, ch)
		labels = append(labels, label)
	}
	if len(cs) == 0 {
		return nil, nil
	}
	for i := range cs {
		cs[i].y = float64(len(cs) - 1 - i)
	}
	title := "Relative change of each figure, B against A"
	if ngroups > 1 {
		title += fmt.Sprintf(", group %d", gi+1)
	}
	if c.A.Info != nil && c.A.Info.Simulated || c.B.Info != nil && c.B.Info.Simulated {
		title = "SIMULATED: " + title
	}
	p := gplot.New()
	p.Title.Text = title
	p.X.Label.Text = fmt.Sprintf("(B − A)/A (%%), with its %s interval", comparePct(c.Confidence))
	p.Y.Tick.Marker = labelTicks(labels)
	p.Add(cs)
	for _, v := range []compare.Verdict{compare.Worse, compare.Better, compare.NoChange} {
		if seen[v] {
			col, glyph := verdictStyle(v)
			p.Legend.Add(string(v), glyphKey{col, glyph})
		}
	}
	if gated {
		p.Legend.Add("gate: "+comparePct(c.Threshold)+" worse", glyphKey{col: color.Black})
	}
	p.Legend.Top = true
	desc := fmt.Sprintf("each of %d figures' relative change (B − A)/A in %% as a marker with its %s interval as a bar, around a vertical line at 0: "+
		"vermillion triangles worse, green squares better, grey circles no change detected; each row's label names the figure and its verdict",
		len(cs), comparePct(c.Confidence))
	if gated {
		desc += "; a dashed tick marks the gate's threshold on each gated figure's worse side"
	}
	caption := fmt.Sprintf("Each tested figure's change with its interval; %s.", desc[strings.Index(desc, "vermillion"):])
	if skipped > 0 {
		caption += fmt.Sprintf(" Not drawn: %s not comparable, or whose A's mean is 0 (the table has them).", plural(skipped, "figure"))
	}
	h := vg.Length(float64(len(cs))+rowHeadroom)*vg.Points(22) + 1.2*vg.Inch
	b, err := svgOf(p, bplot.Width*1.5, h)
	if err != nil {
		return nil, err
	}
	return &figure{SVG: inlineSVG(b, title, desc), Caption: caption}, nil
}
