package report

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"
	"time"

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

// The timeline's colours: waiting for the first token (grey), reasoning
// (violet, from the first token to the first answer token), the answer
// (blue, from the first answer token to the end), a slow inter-token gap
// (vermillion, drawn thick over the bar) and a failed request (near
// black). Each keeps a contrast of at least 3:1 against the white page,
// and any two stay apart for readers with each kind of colour blindness
// (TestTimelineColours checks both): no pair rests on red against green.
var (
	waitColor   = color.RGBA{R: 0x76, G: 0x76, B: 0x76, A: 0xff}
	thinkColor  = color.RGBA{R: 0xaa, G: 0x33, B: 0xff, A: 0xff}
	streamColor = color.RGBA{R: 0x00, G: 0x72, B: 0xb2, A: 0xff}
	slowColor   = color.RGBA{R: 0xd5, G: 0x5e, B: 0x00, A: 0xff}
	failColor   = color.RGBA{R: 0x1a, G: 0x1a, B: 0x1a, A: 0xff}
)

// SlowGapFactor is how many times the run's median inter-token gap a gap
// must exceed for the timeline to mark it slow, when no SLO sets an ITL
// objective.
const SlowGapFactor = 5

// maxSlowSpans is the most slow stretches the timeline marks on one
// request: its longest.
const maxSlowSpans = 5

// slowWidth is the stroke width, and the least length, of a slow gap's
// mark: a gap of a few ms in a run of minutes still shows.
const slowWidth = vg.Length(2.5)

// segment is one bar of the timeline: y is the request's row; a wide one
// is a slow gap's mark, drawn thick and at least slowWidth long.
type segment struct {
	x0, x1, y float64
	col       color.Color
	wide      bool
}

// segments draws many segments as one plotter, so that a page of
// thousands of requests stays small.
type segments []segment

func (s segments) Plot(c draw.Canvas, p *gplot.Plot) {
	tx, ty := p.Transforms(&c)
	for _, g := range s {
		st := draw.LineStyle{Color: g.col, Width: vg.Points(1)}
		x0, x1 := tx(g.x0), tx(g.x1)
		if g.wide {
			st.Width = slowWidth
			if x1-x0 < slowWidth {
				mid := (x0 + x1) / 2
				x0, x1 = mid-slowWidth/2, mid+slowWidth/2
			}
		}
		c.StrokeLine2(st, x0, ty(g.y), x1, ty(g.y))
	}
}

func (s segments) DataRange() (xmin, xmax, ymin, ymax float64) {
	return s.dataRange(3)
}

// dataRange is the segments' extent, with room above the last row for a
// legend of entries lines, so that it covers no bar: each line takes
// about 3.5 % of the plot's height.
func (s segments) dataRange(entries int) (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, g := range s {
		xmin, xmax = min(xmin, g.x0), max(xmax, g.x1)
		ymin, ymax = min(ymin, g.y), max(ymax, g.y)
	}
	f := 0.035*float64(entries) + 0.02
	room := max(float64(entries), f/(1-f)*(ymax-ymin+1))
	return xmin, xmax, ymin - 0.5, ymax + 0.5 + room
}

// legendRoom is segments drawn with room for a legend of its entries.
type legendRoom struct {
	segments
	entries int
}

func (l legendRoom) DataRange() (xmin, xmax, ymin, ymax float64) {
	return l.segments.dataRange(l.entries)
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

// slowGapThreshold is the gap beyond which the timeline marks an
// inter-token gap slow, and how it was set: the SLO's ITL objective
// where one is set, else SlowGapFactor × the median of the run's
// positive per-token gaps (a zero gap is a chunk that shared its
// instant: its gap is unknown). 0 when the run has no gap.
func slowGapThreshold(reqs []benchkit.Request, itlObjective time.Duration) (float64, string) {
	if itlObjective > 0 {
		return itlObjective.Seconds(), "the SLO's ITL objective"
	}
	var gaps []float64
	for _, r := range reqs {
		if r.Failed() {
			continue
		}
		for _, g := range r.ITLS {
			if g > 0 && !math.IsInf(g, 0) {
				gaps = append(gaps, g)
			}
		}
	}
	if len(gaps) == 0 {
		return 0, ""
	}
	slices.Sort(gaps)
	med := gaps[len(gaps)/2]
	if len(gaps)%2 == 0 {
		med = (gaps[len(gaps)/2-1] + med) / 2
	}
	return SlowGapFactor * med, fmt.Sprintf("%d × the run's median inter-token gap, %s ms", SlowGapFactor, FormatMS(med))
}

// slowSpans are the stretches of r's stream whose per-token gaps each
// exceed threshold, consecutive gaps merged, as [start, end) seconds
// since the run's start: at most maxSlowSpans, the longest.
func slowSpans(r benchkit.Request, threshold float64) [][2]float64 {
	if threshold <= 0 || r.TTFTS == nil || r.Failed() {
		return nil
	}
	var spans [][2]float64
	t := r.SendOffsetS + *r.TTFTS
	open := false
	for _, g := range r.ITLS {
		if g > threshold {
			if open {
				spans[len(spans)-1][1] = t + g
			} else {
				spans = append(spans, [2]float64{t, t + g})
				open = true
			}
		} else {
			open = false
		}
		t += g
	}
	if len(spans) > maxSlowSpans {
		slices.SortStableFunc(spans, func(a, b [2]float64) int {
			return cmp.Compare(b[1]-b[0], a[1]-a[0])
		})
		spans = spans[:maxSlowSpans]
	}
	return spans
}

// requestBars are r's bars on row y: grey from its send to its first
// token, violet from there to its first answer token when it reasoned
// first, blue to its end; one near-black bar when it failed.
// It reports whether r reasoned.
func requestBars(r benchkit.Request, y float64) (segs []segment, reasoned bool) {
	end := max(r.DoneS, r.SendOffsetS)
	switch {
	case r.Failed():
		return []segment{{x0: r.SendOffsetS, x1: end, y: y, col: failColor}}, false
	case r.TTFTS == nil:
		return []segment{{x0: r.SendOffsetS, x1: end, y: y, col: streamColor}}, false
	}
	ft := r.SendOffsetS + *r.TTFTS
	end = max(end, ft)
	segs = append(segs, segment{x0: r.SendOffsetS, x1: ft, y: y, col: waitColor})
	answer := ft
	switch {
	case r.TTFAS != nil && *r.TTFAS > *r.TTFTS:
		answer = min(r.SendOffsetS+*r.TTFAS, end)
	case r.TTFAS == nil && r.LastReasoningS != nil:
		answer = end // it reasoned and never answered
	}
	if answer > ft {
		segs = append(segs, segment{x0: ft, x1: answer, y: y, col: thinkColor})
		reasoned = true
	}
	if end > answer || !reasoned {
		segs = append(segs, segment{x0: answer, x1: end, y: y, col: streamColor})
	}
	return segs, reasoned
}

// timelineFigure draws each request as a row (requestBars), its slow
// inter-token gaps marked (slowGapThreshold: over the SLO's ITL objective
// where itlObjective gives one, else over SlowGapFactor × the run's
// median gap); rows in send order, thinned to at most limit (Thin).
func timelineFigure(reqs []benchkit.Request, limit int, itlObjective ...time.Duration) (*figure, error) {
	var objective time.Duration
	if len(itlObjective) > 0 {
		objective = itlObjective[0]
	}
	order := slices.Clone(reqs)
	slices.SortStableFunc(order, func(a, b benchkit.Request) int { return cmp.Compare(a.SendOffsetS, b.SendOffsetS) })
	idx, k := Thin(len(order), limit)
	threshold, rule := slowGapThreshold(order, objective)
	var bars, marks segments
	reasoning, slowReqs := 0, 0
	failed, streamed := false, false
	for row, i := range idx {
		r := order[i]
		y := float64(row)
		segs, thought := requestBars(r, y)
		bars = append(bars, segs...)
		if thought {
			reasoning++
		}
		failed = failed || r.Failed()
		streamed = streamed || !r.Failed() && r.TTFTS != nil
		spans := slowSpans(r, threshold)
		if len(spans) > 0 {
			slowReqs++
		}
		for _, s := range spans {
			marks = append(marks, segment{x0: s[0], x1: s[1], y: y, col: slowColor, wide: true})
		}
	}
	if len(bars) == 0 {
		return nil, nil
	}
	p := gplot.New()
	p.Title.Text = "Per-request timeline"
	p.X.Label.Text = "time since the run's start (s)"
	p.Y.Label.Text = "request, in send order"
	var colours []string
	if streamed {
		p.Legend.Add("send to first token", key(waitColor))
		colours = append(colours, "grey from its send to its first token")
	}
	switch {
	case !streamed:
		// No request has a first token: each bar is its whole life.
		p.Legend.Add("send to end", key(streamColor))
		colours = append(colours, "blue from its send to its end (no first token: the requests were not streamed)")
	case reasoning > 0:
		p.Legend.Add("reasoning: first token to first answer token", key(thinkColor))
		p.Legend.Add("answer: first answer token to end", key(streamColor))
		colours = append(colours, "violet from the first token to the first answer token while it reasoned",
			"blue from the first answer token (the first token where it did not reason) to its end")
	default:
		p.Legend.Add("first token to end", key(streamColor))
		colours = append(colours, "blue from the first token to its end")
	}
	if len(marks) > 0 {
		p.Legend.Add("inter-token gap over "+FormatMS(threshold)+" ms", key(slowColor))
		colours = append(colours, fmt.Sprintf("a thick vermillion mark over each stretch of inter-token gaps longer than %s ms (%s; at most the %d longest stretches of a request)", FormatMS(threshold), rule, maxSlowSpans))
	}
	if failed {
		p.Legend.Add("failed", key(failColor))
		colours = append(colours, "near black from its send to its end for a failed request")
	}
	p.Legend.Top = true
	// One plotter: the bars, then the slow gaps' marks over them.
	p.Add(legendRoom{append(bars, marks...), len(colours)})
	p.Y.Tick.Marker = rowTicks{}
	desc := fmt.Sprintf("each of %d requests as a row in send order: %s", len(order), strings.Join(colours, "; "))
	caption := fmt.Sprintf("All %d requests.", len(order))
	if k > 1 {
		caption = fmt.Sprintf("%d of %d requests drawn: one in every %d in send order, from the first (thinned to at most %d rows).", len(idx), len(order), k, limit)
		desc += "; " + caption
	}
	caption += " " + colourNote(reasoning, slowReqs, threshold, rule)
	b, err := svgOf(p, bplot.Width*1.5, bplot.Height*1.5)
	if err != nil {
		return nil, err
	}
	return &figure{SVG: inlineSVG(b, "Per-request timeline", desc), Caption: caption}, nil
}

// colourNote says in the caption what the reasoning and slow-gap colours
// mark, and how many drawn requests each marks.
func colourNote(reasoning, slowReqs int, threshold float64, rule string) string {
	var parts []string
	if reasoning > 0 {
		parts = append(parts, fmt.Sprintf("Violet: reasoning, from the first token to the first answer token (%d of the requests drawn reasoned).", reasoning))
	}
	switch {
	case threshold <= 0:
		parts = append(parts, "No inter-token gaps to judge (unstreamed, or gaps not kept).")
	case slowReqs > 0:
		parts = append(parts, fmt.Sprintf("Vermillion: inter-token gaps over %s ms (%s), on %d of the requests drawn.", FormatMS(threshold), rule, slowReqs))
	default:
		parts = append(parts, fmt.Sprintf("No inter-token gap over %s ms (%s).", FormatMS(threshold), rule))
	}
	return strings.Join(parts, " ")
}
