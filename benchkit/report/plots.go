package report

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/inferbench/inferbench/benchkit"
	bplot "github.com/inferbench/inferbench/benchkit/plot"
	"github.com/inferbench/inferbench/timing"
)

// svgOf renders d at w × h as SVG.
func svgOf(d bplot.Drawing, w, h vg.Length) ([]byte, error) {
	c := vgsvg.New(w, h)
	d.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("report: draw SVG: %w", err)
	}
	return b.Bytes(), nil
}

// sweepFigure is the latency of each run against its offered rate
// (benchkit/plot.LatencyPanels: p50 and p99 of TTFT, TPOT, ITL and E2E,
// log axes where they span a decade), the knee and capacity marked
// where a capacity search found them.
func sweepFigure(doc benchkit.LoadDocument, runs []benchkit.LoadRun, slo timing.SLO) (*figure, error) {
	sums := make([]benchkit.Summary, len(runs))
	for i, r := range runs {
		sums[i] = r.Summary
	}
	title := "Latency against offered rate"
	if doc.Meta.Simulated {
		title = "SIMULATED: " + title
	}
	fig, err := bplot.LatencyPanels(title, bplot.RatePoints(sums), slo)
	if errors.Is(err, bplot.ErrNoData) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	desc := "p50 and p99 of time to first token, time per output token, inter-token latency and end-to-end latency of each run, against the run's offered request rate"
	if doc.Capacity != nil {
		if err := bplot.MarkCapacity(fig, *doc.Capacity); err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		desc += "; vertical lines mark the knee (" + doc.Capacity.Knee.String() + ") and the capacity (" + doc.Capacity.Capacity.String() + ")"
	}
	fig.Width, fig.Height = bplot.FigureWidth, bplot.FigureHeight
	b, err := svgOf(fig, fig.Width, fig.Height)
	if err != nil {
		return nil, err
	}
	return &figure{SVG: inlineSVG(b, title, desc), Caption: desc + "."}, nil
}

// Thin picks at most limit of n requests in send order to draw: all of
// them when n ≤ limit, else every k-th, k = ⌈n / limit⌉, from the first.
// It returns the indices into the send order and k.
func Thin(n, limit int) (idx []int, k int) {
	k = 1
	if limit > 0 && n > limit {
		k = (n + limit - 1) / limit
	}
	for i := 0; i < n; i += k {
		idx = append(idx, i)
	}
	return idx, k
}

// The timeline's colours: waiting for the first token, streaming, failed.
var (
	waitColor   = color.RGBA{R: 0x9a, G: 0x9a, B: 0x9a, A: 0xff}
	streamColor = color.RGBA{R: 0x1f, G: 0x5f, B: 0xbf, A: 0xff}
	failColor   = color.RGBA{R: 0xc0, G: 0x20, B: 0x20, A: 0xff}
)

// segment is one bar of the timeline: y is the request's row.
type segment struct {
	x0, x1, y float64
	col       color.Color
}

// segments draws many segments as one plotter, so that a page of
// thousands of requests stays small.
type segments []segment

func (s segments) Plot(c draw.Canvas, p *gplot.Plot) {
	tx, ty := p.Transforms(&c)
	for _, g := range s {
		st := draw.LineStyle{Color: g.col, Width: vg.Points(1)}
		c.StrokeLine2(st, tx(g.x0), ty(g.y), tx(g.x1), ty(g.y))
	}
}

func (s segments) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, g := range s {
		xmin, xmax = min(xmin, g.x0), max(xmax, g.x1)
		ymin, ymax = min(ymin, g.y), max(ymax, g.y)
	}
	// Room above the last row for the legend, so that it covers no bar.
	return xmin, xmax, ymin - 0.5, ymax + 0.5 + max(3, 0.15*(ymax-ymin))
}

// rowTicks label the rows with whole numbers ("25", not "25.00"),
// and no row between two.
type rowTicks struct{}

func (rowTicks) Ticks(lo, hi float64) []gplot.Tick {
	ts := gplot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		switch {
		case ts[i].Label == "":
		case ts[i].Value != math.Round(ts[i].Value):
			ts[i].Label = ""
		default:
			ts[i].Label = fmt.Sprint(ts[i].Value)
		}
	}
	return ts
}

// key is a legend entry's sample line.
type key color.RGBA

func (k key) Thumbnail(c *draw.Canvas) {
	y := (c.Min.Y + c.Max.Y) / 2
	c.StrokeLine2(draw.LineStyle{Color: color.RGBA(k), Width: vg.Points(2)}, c.Min.X, y, c.Max.X, y)
}

// timelineFigure draws each request as a row: grey from its send to its
// first token, blue from the first token to its end, red to its end for
// a failed one; rows in send order, thinned to at most limit (Thin).
func timelineFigure(reqs []benchkit.Request, limit int) (*figure, error) {
	order := slices.Clone(reqs)
	slices.SortStableFunc(order, func(a, b benchkit.Request) int {
		switch {
		case a.SendOffsetS < b.SendOffsetS:
			return -1
		case a.SendOffsetS > b.SendOffsetS:
			return 1
		}
		return 0
	})
	idx, k := Thin(len(order), limit)
	var segs segments
	for row, i := range idx {
		r := order[i]
		y := float64(row)
		switch {
		case r.Failed():
			segs = append(segs, segment{r.SendOffsetS, max(r.DoneS, r.SendOffsetS), y, failColor})
		case r.TTFTS != nil:
			ft := r.SendOffsetS + *r.TTFTS
			segs = append(segs, segment{r.SendOffsetS, ft, y, waitColor}, segment{ft, max(r.DoneS, ft), y, streamColor})
		default:
			segs = append(segs, segment{r.SendOffsetS, max(r.DoneS, r.SendOffsetS), y, streamColor})
		}
	}
	if len(segs) == 0 {
		return nil, nil
	}
	p := gplot.New()
	p.Title.Text = "Per-request timeline"
	p.X.Label.Text = "time since the run's start (s)"
	p.Y.Label.Text = "request, in send order"
	p.Add(segs)
	p.Legend.Add("send to first token", key(waitColor))
	p.Legend.Add("first token to end", key(streamColor))
	p.Legend.Add("failed", key(failColor))
	p.Legend.Top = true
	p.Y.Tick.Marker = rowTicks{}
	desc := fmt.Sprintf("each of %d requests as a row in send order: grey from its send to its first token, blue from the first token to its end, red for a failed request", len(order))
	caption := fmt.Sprintf("All %d requests.", len(order))
	if k > 1 {
		caption = fmt.Sprintf("%d of %d requests drawn: one in every %d in send order, from the first (thinned to at most %d rows).", len(idx), len(order), k, limit)
		desc += "; " + caption
	}
	b, err := svgOf(p, bplot.Width*1.5, bplot.Height*1.5)
	if err != nil {
		return nil, err
	}
	return &figure{SVG: inlineSVG(b, "Per-request timeline", desc), Caption: caption}, nil
}
