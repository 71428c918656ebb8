package plot

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"time"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/energy"
)

// The size WritePNG and SavePNG render at.
const (
	Width  = 16 * vg.Centimeter
	Height = 10 * vg.Centimeter
)

// ErrNoData is returned when there is nothing to draw.
var ErrNoData = errors.New("plot: nothing to draw")

func newPlot(title, x, y string) *gplot.Plot {
	p := gplot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	// The legend is drawn below the data, never over it (WritePNG).
	p.Legend.Top = true
	p.Legend.Left = true
	p.X.Tick.Marker = readableTicks{gplot.DefaultTicks{}}
	p.Y.Tick.Marker = readableTicks{gplot.DefaultTicks{}}
	return p
}

// num formats a tick value readably: "250", not "250.00"; "0.25"; "1.5e+06".
func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e7 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// readableTicks are another Ticker's ticks with their labels written by
// num.
type readableTicks struct{ inner gplot.Ticker }

func (r readableTicks) Ticks(min, max float64) []gplot.Tick {
	ts := r.inner.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = num(ts[i].Value)
		}
	}
	return ts
}

// valueTicks puts a labelled tick at each of its values (the
// concurrencies or rates measured) and nothing else; labels overrides
// num's label for a value ("inf").
type valueTicks struct {
	values []float64
	labels map[float64]string
}

func (v valueTicks) Ticks(min, max float64) []gplot.Tick {
	var ts []gplot.Tick
	for _, x := range v.values {
		if x >= min && x <= max {
			l, ok := v.labels[x]
			if !ok {
				l = num(x)
			}
			ts = append(ts, gplot.Tick{Value: x, Label: l})
		}
	}
	return ts
}

// doublingAxis gives p a log₂ x axis with a tick at each of xs when they
// are all positive and span at least a factor of 4 (concurrencies or
// rates that double), so that each doubling is one step; otherwise a
// linear axis with a tick at each of xs. labels names some values.
func doublingAxis(p *gplot.Plot, xs []float64, labels map[float64]string) {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	xs = slices.Compact(xs)
	if len(xs) == 0 {
		return
	}
	p.X.Tick.Marker = valueTicks{values: xs, labels: labels}
	if xs[0] > 0 && xs[len(xs)-1] >= 4*xs[0] {
		p.X.Scale = gplot.LogScale{}
		// A margin of a quarter doubling each side keeps the end points
		// off the frame.
		p.X.Min, p.X.Max = xs[0]/math.Pow(2, 0.25), xs[len(xs)-1]*math.Pow(2, 0.25)
	}
}

// A ThroughputSeries is one pair of lines of GenerationTPS: the cells of
// one placement and one (pp, tg) pair, ordered by concurrency.
type ThroughputSeries struct {
	// Placement is the placement the cells ran on ("" without one;
	// benchkit.Placement.String); PP and TG the pair.
	Placement string
	PP, TG    int
	// Name labels the series in the legend: "pipeline-ring-2n pp=512
	// tg=128", or "pp=512 tg=128" without a placement.
	Name string
	// Honest holds Σ generated tokens / burst wall time and Exo exo's
	// max(per-request TPS) × N, one point (concurrency, tok/s) per cell
	// whose figure is defined, each the mean over the cell's repeats.
	Honest, Exo plotter.XYs
}

// GenerationTPSSeries groups cells into the series GenerationTPS draws:
// one per placement and (pp, tg) pair, in the order they first appear, so
// that no line mixes placements.
func GenerationTPSSeries(cells []benchkit.Summary) []ThroughputSeries {
	type key struct {
		p      string
		pp, tg int
	}
	var order []key
	groups := map[key][]benchkit.Summary{}
	for _, c := range cells {
		k := key{c.Labels.Placement.String(), c.Cell.PP, c.Cell.TG}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], c)
	}
	out := make([]ThroughputSeries, 0, len(order))
	for _, k := range order {
		g := groups[k]
		slices.SortStableFunc(g, func(a, b benchkit.Summary) int { return a.Cell.Concurrency - b.Cell.Concurrency })
		s := ThroughputSeries{Placement: k.p, PP: k.pp, TG: k.tg, Name: fmt.Sprintf("pp=%d tg=%d", k.pp, k.tg)}
		if k.p != "" {
			s.Name = k.p + " " + s.Name
		}
		for _, c := range g {
			if v := c.ThroughputTPS.Center; isFinite(v) {
				s.Honest = append(s.Honest, plotter.XY{X: float64(c.Cell.Concurrency), Y: v})
			}
			if v := c.ExoAggregateTPS.Center; isFinite(v) {
				s.Exo = append(s.Exo, plotter.XY{X: float64(c.Cell.Concurrency), Y: v})
			}
		}
		out = append(out, s)
	}
	return out
}

// GenerationTPS plots generation throughput against concurrency: for each
// placement and (pp, tg) pair of cells (GenerationTPSSeries), Σ generated
// tokens / burst wall time (the honest aggregate) as a solid line and
// exo's max(per-request TPS) × N as a dashed one, each point the mean over
// repeats.
func GenerationTPS(title string, cells []benchkit.Summary) (*gplot.Plot, error) {
	p := newPlot(title, "concurrency (requests in a burst)", "generation throughput (tokens/s)")
	drawn := 0
	var xs []float64
	for i, s := range GenerationTPSSeries(cells) {
		for _, pt := range append(slices.Clone(s.Honest), s.Exo...) {
			xs = append(xs, pt.X)
		}
		col := plotutil.Color(i)
		if err := addLine(p, s.Honest, col, false, s.Name+" Σ tokens / wall"); err != nil {
			return nil, err
		}
		if err := addLine(p, s.Exo, col, true, s.Name+" exo max×N"); err != nil {
			return nil, err
		}
		drawn += len(s.Honest) + len(s.Exo)
	}
	if drawn == 0 {
		return nil, fmt.Errorf("%w: no cell has a defined throughput", ErrNoData)
	}
	doublingAxis(p, xs, nil)
	p.Y.Min = 0
	return p, nil
}

// TTFTByPromptLength plots each successful streamed request's time to
// first token (ms) against its prompt length (the client's pp_tokens).
func TTFTByPromptLength(title string, rows []benchkit.Request) (*gplot.Plot, error) {
	var pts plotter.XYs
	for _, r := range rows {
		if r.Failed() || r.TTFTS == nil {
			continue
		}
		pts = append(pts, plotter.XY{X: float64(r.PPTokens), Y: *r.TTFTS * 1e3})
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("%w: no request has a TTFT (were responses streamed?)", ErrNoData)
	}
	p := newPlot(title, "prompt length (tokens)", "time to first token (ms)")
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, fmt.Errorf("plot: TTFT scatter: %w", err)
	}
	s.GlyphStyle.Color = plotutil.Color(0)
	s.GlyphStyle.Radius = vg.Points(2)
	p.Add(s)
	p.Legend.Add("request", s)
	p.Y.Min = 0
	return p, nil
}

// RatePoints are a load test's run summaries (benchkit.Summarize ByRun) as
// LatencyPanels draws them: each run's offered rate (+Inf for all at once
// or a burst) and the p50 and p99 of its TTFT, TPOT, ITL and E2E.
func RatePoints(runs []benchkit.Summary) []RatePoint {
	pc := func(q benchkit.Quantiles) Percentiles {
		v := func(p *float64) float64 {
			if p == nil {
				return math.NaN()
			}
			return *p
		}
		return Percentiles{P50: v(q.P50), P99: v(q.P99)}
	}
	out := make([]RatePoint, 0, len(runs))
	for _, s := range runs {
		rate := math.Inf(1)
		if s.RequestRate != nil {
			rate = *s.RequestRate
		}
		out = append(out, RatePoint{Rate: rate, TTFT: pc(s.TTFT), TPOT: pc(s.TPOT), ITL: pc(s.ITL), E2E: pc(s.E2E)})
	}
	return out
}

// A Phase is a span of time to shade on a power plot.
type Phase struct {
	// Name labels the shade ("prefill", "generation").
	Name       string
	Start, End time.Time
}

// Power plots each node's sampled power (W) against seconds since the
// earliest sample or phase, with each phase shaded: prefill in orange,
// generation in blue, any other name in grey.
func Power(title string, traces []energy.PowerTrace, phases []Phase) (*gplot.Plot, error) {
	var t0 time.Time
	for _, tr := range traces {
		for _, s := range tr.Samples {
			if t0.IsZero() || s.At.Before(t0) {
				t0 = s.At
			}
		}
	}
	if t0.IsZero() {
		return nil, fmt.Errorf("%w: no power sample", ErrNoData)
	}
	for _, ph := range phases {
		if ph.Start.Before(t0) {
			t0 = ph.Start
		}
	}
	p := newPlot(title, "time (s)", "power (W)")
	ymax := 0.0
	for _, tr := range traces {
		for _, s := range tr.Samples {
			ymax = math.Max(ymax, s.Value)
		}
	}
	if ymax == 0 {
		ymax = 1
	}
	top := ymax * 1.1
	shaded := map[string]bool{}
	for _, ph := range phases {
		if !ph.End.After(ph.Start) {
			continue
		}
		x0, x1 := ph.Start.Sub(t0).Seconds(), ph.End.Sub(t0).Seconds()
		poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: 0}, {X: x1, Y: 0}, {X: x1, Y: top}, {X: x0, Y: top}})
		if err != nil {
			return nil, fmt.Errorf("plot: phase %s: %w", ph.Name, err)
		}
		poly.Color = phaseColor(ph.Name)
		poly.LineStyle.Width = 0
		p.Add(poly)
		if !shaded[ph.Name] {
			shaded[ph.Name] = true
			p.Legend.Add(ph.Name, poly)
		}
	}
	for i, tr := range traces {
		pts := make(plotter.XYs, 0, len(tr.Samples))
		for _, s := range tr.Samples {
			pts = append(pts, plotter.XY{X: s.At.Sub(t0).Seconds(), Y: s.Value})
		}
		if err := addLine(p, pts, plotutil.Color(i), false, tr.Node); err != nil {
			return nil, err
		}
	}
	p.Y.Min, p.Y.Max = 0, top
	return p, nil
}

func phaseColor(name string) color.Color {
	switch name {
	case "prefill":
		return color.NRGBA{R: 255, G: 165, B: 0, A: 70}
	case "generation":
		return color.NRGBA{R: 70, G: 130, B: 230, A: 60}
	}
	return color.NRGBA{R: 128, G: 128, B: 128, A: 50}
}

func addLine(p *gplot.Plot, pts plotter.XYs, col color.Color, dashed bool, name string) error {
	if len(pts) == 0 {
		return nil
	}
	l, s, err := plotter.NewLinePoints(pts)
	if err != nil {
		return fmt.Errorf("plot: line %q: %w", name, err)
	}
	l.Color = col
	l.Width = vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	s.Color = col
	s.Radius = vg.Points(2)
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return nil
}

// A Drawing is what WritePNG and SavePNG render: a *plot.Plot, at
// Width × Height with its legend below the data, or a *Figure, at its own
// size. Anything else that draws itself onto a canvas is drawn as it is
// at Width × Height.
type Drawing interface{ Draw(draw.Canvas) }

// WritePNG renders d (a *plot.Plot or a *Figure) as a PNG to w.
func WritePNG(w io.Writer, d Drawing) error {
	var c *vgimg.Canvas
	switch d := d.(type) {
	case nil:
		return errors.New("plot: write PNG: nothing to draw (nil)")
	case *gplot.Plot:
		if d == nil {
			return errors.New("plot: write PNG: nil plot")
		}
		c = vgimg.New(Width, Height)
		drawPlot(draw.New(c), d)
	case *Figure:
		if d == nil {
			return errors.New("plot: write PNG: nil figure")
		}
		c = vgimg.New(d.size())
		d.Draw(draw.New(c))
	default:
		c = vgimg.New(Width, Height)
		d.Draw(draw.New(c))
	}
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(w); err != nil {
		return fmt.Errorf("plot: write PNG: %w", err)
	}
	return nil
}

// drawPlot draws p filling dc, its legend below the plot's area rather
// than over the data.
func drawPlot(dc draw.Canvas, p *gplot.Plot) {
	height := dc.Max.Y - dc.Min.Y
	legend := p.Legend
	p.Legend = gplot.NewLegend()
	defer func() { p.Legend = legend }()
	area := dc
	// A long legend is set smaller, down to 0.7 of its size, so that it
	// takes at most about a third of the height.
	if r := legend.Rectangle(dc); r.Max.Y-r.Min.Y > height/3 {
		legend.TextStyle.Font.Size = vg.Length(float64(legend.TextStyle.Font.Size) * max(0.7, float64(height/3)/float64(r.Max.Y-r.Min.Y)))
	}
	if r := legend.Rectangle(dc); r.Max.Y > r.Min.Y {
		h := r.Max.Y - r.Min.Y + vg.Points(6)
		area = draw.Crop(dc, 0, 0, h, 0)
		below := draw.Crop(dc, 0, 0, 0, -(height - h))
		legend.Top, legend.Left = true, true
		legend.XOffs = vg.Points(4)
		legend.Draw(below)
	}
	p.Draw(area)
}

// SavePNG renders d (a *plot.Plot or a *Figure) as a PNG file at path.
func SavePNG(path string, d Drawing) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if err := WritePNG(f, d); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TTFTByTurn plots the p50 TTFT (ms) of each turn of multi-turn sessions
// against the turn, one line per series of summaries (benchkit
// Summarize ByTurn, or Sessions.Summarize): a prefix cache's arms side by
// side, say, where TTFT stays flat with the cache and rises with the
// history without it.
func TTFTByTurn(title string, series map[string][]benchkit.Summary) (*gplot.Plot, error) {
	p := newPlot(title, "turn", "time to first token, p50 (ms)")
	names := slices.Sorted(maps.Keys(series))
	drawn := 0
	for i, name := range names {
		var pts plotter.XYs
		for _, s := range series[name] {
			if s.TTFT.P50 != nil && s.Labels.Turn > 0 {
				pts = append(pts, plotter.XY{X: float64(s.Labels.Turn), Y: *s.TTFT.P50 * 1e3})
			}
		}
		slices.SortFunc(pts, func(a, b plotter.XY) int { return cmpFloat(a.X, b.X) })
		if err := addLine(p, pts, plotutil.Color(i), false, name); err != nil {
			return nil, err
		}
		drawn += len(pts)
	}
	if drawn == 0 {
		return nil, fmt.Errorf("%w: no turn has a TTFT", ErrNoData)
	}
	var turns []float64
	for _, name := range names {
		for _, s := range series[name] {
			turns = append(turns, float64(s.Labels.Turn))
		}
	}
	slices.Sort(turns)
	p.X.Min, p.X.Max = turns[0]-0.25, turns[len(turns)-1]+0.25
	p.X.Tick.Marker = valueTicks{values: slices.Compact(turns)}
	p.Y.Min = 0
	return p, nil
}
