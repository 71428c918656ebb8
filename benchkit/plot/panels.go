package plot

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"time"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/inferbench/inferbench/timing"
)

// The size a Figure renders at unless it sets its own: 1200 × 800 pixels
// at vgimg's 96 dpi. Two panels across and two down then each get about
// 600 × 370 pixels, what a single plot gets at Width × Height, so that
// gonum's default 10–12 pt text stays legible, and the whole image fits
// a laptop screen of 1280 × 800 or more without scaling.
const (
	FigureWidth  = 12.5 * vg.Inch
	FigureHeight = 25 * vg.Inch / 3
)

// A Figure is a grid of panels drawn as one image: its title centred on
// top, then the panels left to right and top to bottom, Cols to a row,
// each panel's legend in rows below its data, never over it. The data
// areas of the panels are aligned and equally sized (plot.Align).
// WritePNG and SavePNG render it.
type Figure struct {
	Title string
	// Cols is the number of panels to a row; zero or less puts them all
	// in one row.
	Cols   int
	Panels []Panel
	// Width and Height are the size the figure renders at; zero means
	// FigureWidth × FigureHeight.
	Width, Height vg.Length
}

// A Panel is one plot of a Figure and the series drawn on it.
type Panel struct {
	// Name names the panel ("TTFT").
	Name string
	// Plot is the panel as gonum draws it; its own Legend is not drawn:
	// the Figure draws a key for each of Series below the data instead.
	Plot *gplot.Plot
	// Series are what the plot draws, in the order of their keys.
	Series []Series
}

// A Series is one set of points on a panel and its key in the legend.
type Series struct {
	// Label is the key's text ("p99", "SLO 200ms").
	Label string
	// Points are joined by the series' line; Alone are drawn in the same
	// style but not joined (the run at an infinite rate). Both are in the
	// panel's units: x as on its x axis (where rate inf is drawn), y in
	// the unit of its y label.
	Points, Alone plotter.XYs
	// Thumbs draw the key's sample of the series' line and glyphs.
	Thumbs []gplot.Thumbnailer
}

// A RatePoint is one run of a load test as LatencyPanels draws it.
type RatePoint struct {
	// Rate is the offered request rate (requests/s); +Inf for a run
	// that sent all its requests at once (a burst).
	Rate float64
	// The run's latency percentiles, in seconds: time to first token,
	// time per output token, inter-token latency and end-to-end latency.
	// A percentile that is NaN or infinite is undefined and not drawn.
	TTFT, TPOT, ITL, E2E Percentiles
}

// Percentiles are the median and 99th percentile of one latency figure,
// in seconds; NaN where undefined.
type Percentiles struct{ P50, P99 float64 }

// The panels of LatencyPanels, in their order.
var latencyFigures = []struct {
	name, long string
	get        func(RatePoint) Percentiles
	obj        func(timing.SLO) time.Duration
}{
	{"TTFT", "time to first token", func(p RatePoint) Percentiles { return p.TTFT }, func(s timing.SLO) time.Duration { return s.TTFT }},
	{"TPOT", "time per output token", func(p RatePoint) Percentiles { return p.TPOT }, func(s timing.SLO) time.Duration { return s.TPOT }},
	{"ITL", "inter-token latency", func(p RatePoint) Percentiles { return p.ITL }, func(s timing.SLO) time.Duration { return s.ITL }},
	{"E2E", "end-to-end latency", func(p RatePoint) Percentiles { return p.E2E }, func(s timing.SLO) time.Duration { return s.E2E }},
}

// The styles of the series of LatencyPanels.
var (
	p50Color = plotutil.SoftColors[2] // blue
	p99Color = plotutil.SoftColors[0] // red
	sloColor = color.Gray{Y: 60}
)

// LatencyPanels draws a load test's latency against its offered request
// rate as a Figure of four panels, two by two: TTFT, TPOT, ITL and E2E,
// each with the p50 and the p99 of every run.
//
// All panels share the x axis: the rates on a log₂ axis when they double
// (a factor of 4 or more from lowest to highest), else a linear one, with
// a tick at each rate. A run at an infinite rate is its own point one
// doubling beyond the highest finite rate, ticked "inf" and not joined to
// the line. Each panel has its own y axis, in ms, or in s where a value
// drawn reaches a second: logarithmic where the values it draws, its
// objective included, span a factor of 10 or more, so that both ends
// are readable, else linear from 0. Each objective slo sets is a dashed
// horizontal line across the panel of its figure.
//
// A panel whose figure no run defines is drawn empty, titled so. It
// returns an error wrapping ErrNoData when no run defines any figure, and
// an error when a rate is neither positive nor +Inf.
func LatencyPanels(title string, points []RatePoint, slo timing.SLO) (*Figure, error) {
	if len(points) == 0 {
		return nil, fmt.Errorf("%w: no run", ErrNoData)
	}
	for i, pt := range points {
		if !(pt.Rate > 0) {
			return nil, fmt.Errorf("plot: run %d: rate %v requests/s is not positive (+Inf for all at once)", i, pt.Rate)
		}
	}
	points = slices.Clone(points)
	slices.SortStableFunc(points, func(a, b RatePoint) int { return cmpFloat(a.Rate, b.Rate) })

	xs, infX, xLabel := rateAxis(points)

	fig := &Figure{Title: title, Cols: 2}
	drawn := 0
	for _, f := range latencyFigures {
		var vals []float64 // seconds
		for _, pt := range points {
			for _, v := range []float64{f.get(pt).P50, f.get(pt).P99} {
				if isFinite(v) {
					vals = append(vals, v)
				}
			}
		}
		p := newPlot(f.name+": "+f.long, xLabel, "")
		xAxis(p, xs, infX)
		panel := Panel{Name: f.name, Plot: p}
		if len(vals) == 0 {
			p.Title.Text += " (no run defines it)"
			p.Y.Min, p.Y.Max = 0, 1
			p.Y.Tick.Marker = gplot.ConstantTicks(nil)
			fig.Panels = append(fig.Panels, panel)
			continue
		}
		drawn += len(vals)
		obj := f.obj(slo)
		if obj > 0 {
			vals = append(vals, obj.Seconds())
		}
		lo, hi := slices.Min(vals), slices.Max(vals)
		unit, scale := "ms", 1e3
		if hi >= 1 {
			unit, scale = "s", 1
		}
		p.Y.Label.Text = "latency (" + unit + ")"

		for _, q := range []struct {
			label string
			get   func(Percentiles) float64
			col   color.Color
			glyph draw.GlyphDrawer
		}{
			{"p50", func(p Percentiles) float64 { return p.P50 }, p50Color, draw.CircleGlyph{}},
			{"p99", func(p Percentiles) float64 { return p.P99 }, p99Color, draw.PyramidGlyph{}},
		} {
			var s Series
			s.Label = q.label
			for _, pt := range points {
				v := q.get(f.get(pt))
				if !isFinite(v) {
					continue
				}
				if math.IsInf(pt.Rate, 1) {
					s.Alone = append(s.Alone, plotter.XY{X: infX, Y: v * scale})
				} else {
					s.Points = append(s.Points, plotter.XY{X: pt.Rate, Y: v * scale})
				}
			}
			if err := addSeries(p, &s, q.col, q.glyph); err != nil {
				return nil, fmt.Errorf("plot: %s %s: %w", f.name, q.label, err)
			}
			if len(s.Thumbs) > 0 {
				panel.Series = append(panel.Series, s)
			}
		}
		if obj > 0 {
			if err := addSLO(p, &panel, f.name, obj, scale); err != nil {
				return nil, err
			}
		}
		yAxis(p, lo*scale, hi*scale)
		fig.Panels = append(fig.Panels, panel)
	}
	if drawn == 0 {
		return nil, fmt.Errorf("%w: no run defines a latency percentile", ErrNoData)
	}
	return fig, nil
}

// xAxis sets p's x axis for the rates xs (ascending, infX among them when
// a run had an infinite rate): doublingAxis's ticks and scale, and a range
// fixed so that every panel of a figure shares it.
func xAxis(p *gplot.Plot, xs []float64, infX float64) {
	xs = slices.Compact(slices.Clone(xs))
	doublingAxis(p, xs, map[float64]string{infX: "inf"})
	if _, ok := p.X.Scale.(gplot.LogScale); ok {
		return
	}
	lo, hi := xs[0], xs[len(xs)-1]
	if lo == hi {
		p.X.Min, p.X.Max = lo/2, hi*1.5
		return
	}
	pad := (hi - lo) / 20
	p.X.Min, p.X.Max = lo-pad, hi+pad
}

// yAxis sets p's y axis for values from lo to hi: logarithmic, labelled
// at 1, 2 and 5 × 10ⁿ, where they span a factor of 10 or more; else
// linear from 0 (or from lo, were it negative).
func yAxis(p *gplot.Plot, lo, hi float64) {
	// A decade is a decade despite rounding: 0.02 s × 10 against 0.2 s.
	if lo > 0 && hi >= 10*lo*(1-1e-9) {
		p.Y.Scale = gplot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		// A margin of a tenth of a decade each side keeps the end points
		// off the frame.
		m := math.Pow(10, 0.1)
		p.Y.Min, p.Y.Max = lo/m, hi*m
		return
	}
	p.Y.Min = math.Min(0, lo)
	p.Y.Max = hi * 1.08
	if hi <= 0 {
		p.Y.Max = 1
	}
}

// addSeries draws s on p: its Points as a line with glyphs, its Alone as
// glyphs only, both in col; and sets its key's thumbnails.
func addSeries(p *gplot.Plot, s *Series, col color.Color, glyph draw.GlyphDrawer) error {
	style := draw.GlyphStyle{Color: col, Radius: vg.Points(2.5), Shape: glyph}
	if len(s.Points) > 0 {
		l, sc, err := plotter.NewLinePoints(s.Points)
		if err != nil {
			return err
		}
		l.Color = col
		l.Width = vg.Points(1.5)
		sc.GlyphStyle = style
		p.Add(l, sc)
		s.Thumbs = []gplot.Thumbnailer{l, sc}
	}
	if len(s.Alone) > 0 {
		sc, err := plotter.NewScatter(s.Alone)
		if err != nil {
			return err
		}
		sc.GlyphStyle = style
		p.Add(sc)
		if s.Thumbs == nil {
			s.Thumbs = []gplot.Thumbnailer{sc}
		}
	}
	return nil
}

// logTicks marks a log axis at each n × 10ᵏ, labelled at 1, 2 and 5 × 10ᵏ
// where the axis spans under three decades, at 10ᵏ only where wider, so
// that even a one-decade axis has at least three labels.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []gplot.Tick {
	if !(min > 0) || !(max >= min) || math.IsInf(max, 0) {
		return nil
	}
	labelled := []int{1, 2, 5}
	if max >= 1e3*min {
		labelled = []int{1}
	}
	const eps = 1e-9
	var ts []gplot.Tick
	for e := math.Floor(math.Log10(min)); math.Pow(10, e) <= max*(1+eps); e++ {
		base := math.Pow(10, e)
		for n := 1; n <= 9; n++ {
			v := float64(n) * base
			if v < min*(1-eps) || v > max*(1+eps) {
				continue
			}
			t := gplot.Tick{Value: v}
			if slices.Contains(labelled, n) {
				t.Label = num(v)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

func (f *Figure) size() (w, h vg.Length) {
	w, h = f.Width, f.Height
	if w <= 0 {
		w = FigureWidth
	}
	if h <= 0 {
		h = FigureHeight
	}
	return w, h
}

// Spacing of a Figure, in points.
const (
	figPad    = 6  // around the figure and under its title
	figGapX   = 24 // between columns of panels
	figGapY   = 16 // between a row's legends and the next row
	keyGap    = 4  // between an x axis label and the legend under it
	keyRowGap = 2  // between rows of keys
)

// Draw draws f onto c, filling it: f's Width and Height are what
// WritePNG and SavePNG make c.
func (f *Figure) Draw(c draw.Canvas) {
	if f.Title != "" {
		sty := gplot.New().Title.TextStyle
		sty.Font.Size = vg.Points(16)
		c.Max.Y -= figPad
		c.FillText(sty, vg.Point{X: c.Center().X, Y: c.Max.Y + sty.FontExtents().Descent}, f.Title)
		c.Max.Y -= sty.Rectangle(f.Title).Size().Y + figPad
	}
	n := len(f.Panels)
	if n == 0 {
		return
	}
	cols := f.Cols
	if cols <= 0 || cols > n {
		cols = n
	}
	rows := (n + cols - 1) / cols

	// The legend strip under every panel is as tall as the tallest, so
	// that the data areas stay aligned; keys wrap at the tile's width less
	// room for a y axis.
	tileW := (c.Max.X - c.Min.X - 2*figPad - vg.Length(cols-1)*figGapX) / vg.Length(cols)
	keyW := tileW - vg.Points(60)
	var keyH vg.Length
	for _, pn := range f.Panels {
		keyH = max(keyH, keysHeight(layoutKeys(pn.Series, keyW)))
	}
	strip := keyH
	if keyH > 0 {
		strip += keyGap
	}
	tiles := draw.Tiles{
		Rows: rows, Cols: cols,
		PadTop: figPad, PadBottom: strip + figPad, PadLeft: figPad, PadRight: figPad,
		PadX: figGapX, PadY: strip + figGapY,
	}
	grid := make([][]*gplot.Plot, rows)
	for j := range grid {
		grid[j] = make([]*gplot.Plot, cols)
	}
	for i, pn := range f.Panels {
		if pn.Plot == nil {
			continue
		}
		// A copy, so that its legend can be left out without touching the
		// caller's plot.
		cp := *pn.Plot
		cp.Legend = gplot.NewLegend()
		grid[i/cols][i%cols] = &cp
	}
	cs := gplot.Align(grid, tiles, c)
	for i, pn := range f.Panels {
		p := grid[i/cols][i%cols]
		if p == nil {
			continue
		}
		tc := cs[i/cols][i%cols]
		p.Draw(tc)
		x0 := p.DataCanvas(tc).Min.X
		drawKeys(c, layoutKeys(pn.Series, keyW), x0, tc.Min.Y-keyGap)
	}
}

// A key is one entry of a panel's legend, laid out.
type key struct {
	legend  gplot.Legend // holding only this entry
	row     int
	x, w, h vg.Length // x: from the row's start
}

func keyStyle() gplot.Legend {
	l := gplot.NewLegend()
	l.TextStyle.Font.Size = vg.Points(11)
	l.Top, l.Left = true, true
	return l
}

// layoutKeys lays the keys of series out in rows no wider than width.
func layoutKeys(series []Series, width vg.Length) []key {
	var keys []key
	var x vg.Length
	row := 0
	for _, s := range series {
		if len(s.Thumbs) == 0 || s.Label == "" {
			continue
		}
		l := keyStyle()
		l.Add(s.Label, s.Thumbs...)
		r := l.Rectangle(draw.Canvas{})
		w, h := r.Max.X-r.Min.X, r.Max.Y-r.Min.Y
		if x > 0 && x+w > width {
			x, row = 0, row+1
		}
		keys = append(keys, key{legend: l, x: x, row: row, w: w, h: h})
		// Keys are spaced by about two ems.
		x += w + l.TextStyle.Font.Size*2
	}
	return keys
}

func keysHeight(keys []key) vg.Length {
	if len(keys) == 0 {
		return 0
	}
	rows := keys[len(keys)-1].row + 1
	var h vg.Length
	for _, k := range keys {
		h = max(h, k.h)
	}
	return vg.Length(rows)*h + vg.Length(rows-1)*keyRowGap
}

// drawKeys draws keys onto c in rows from (x0, top) down.
func drawKeys(c draw.Canvas, keys []key, x0, top vg.Length) {
	var h vg.Length
	for _, k := range keys {
		h = max(h, k.h)
	}
	for _, k := range keys {
		y := top - vg.Length(k.row)*(h+keyRowGap)
		kc := c
		kc.Min = vg.Point{X: x0 + k.x, Y: y - h}
		kc.Max = vg.Point{X: x0 + k.x + k.w, Y: y}
		k.legend.Draw(kc)
	}
}

// addSLO draws an objective as a dashed line across the panel.
func addSLO(p *gplot.Plot, panel *Panel, name string, obj time.Duration, scale float64) error {
	y := obj.Seconds() * scale
	s := Series{Label: "SLO " + obj.String(), Points: plotter.XYs{{X: p.X.Min, Y: y}, {X: p.X.Max, Y: y}}}
	l, err := plotter.NewLine(s.Points)
	if err != nil {
		return fmt.Errorf("plot: %s SLO: %w", name, err)
	}
	l.Color = sloColor
	l.Width = vg.Points(1.5)
	l.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	p.Add(l)
	s.Thumbs = []gplot.Thumbnailer{l}
	panel.Series = append(panel.Series, s)
	return nil
}

// rateAxis is the rates of sorted points as x values, an infinite rate at
// infX one doubling past the highest finite one, and the axis label.
func rateAxis(points []RatePoint) (xs []float64, infX float64, xLabel string) {
	hasInf := false
	for _, pt := range points {
		if math.IsInf(pt.Rate, 1) {
			hasInf = true
		} else {
			xs = append(xs, pt.Rate)
		}
	}
	infX = 1.0
	if len(xs) > 0 {
		infX = 2 * xs[len(xs)-1]
	}
	if hasInf {
		xs = append(xs, infX)
	}
	xLabel = "offered rate (requests/s)"
	if hasInf {
		xLabel = "offered rate (requests/s; inf: all at once)"
	}
	return xs, infX, xLabel
}
