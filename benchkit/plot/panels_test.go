package plot_test

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/inferbench/inferbench/benchkit/plot"
	"github.com/inferbench/inferbench/timing"
)

var inf = math.Inf(1)

// ratePoints are a load test's runs at 1, 2, 4, 8 and 16 requests/s and
// all at once, with latencies of a server saturating: TTFT 20–900 ms,
// TPOT 5–40 ms, ITL 5–60 ms, E2E 0.5–12 s.
func ratePoints() []plot.RatePoint {
	var pts []plot.RatePoint
	for i, r := range []float64{1, 2, 4, 8, 16, inf} {
		k := float64(i) / 5
		pts = append(pts, plot.RatePoint{
			Rate: r,
			TTFT: plot.Percentiles{P50: 0.020 + 0.35*k*k*k, P99: 0.045 + 0.855*k*k},
			TPOT: plot.Percentiles{P50: 0.005 + 0.015*k, P99: 0.009 + 0.031*k},
			ITL:  plot.Percentiles{P50: 0.005 + 0.012*k, P99: 0.012 + 0.048*k*k},
			E2E:  plot.Percentiles{P50: 0.5 + 4*k*k, P99: 0.9 + 11.1*k*k},
		})
	}
	return pts
}

var rateSLO = timing.SLO{TTFT: 200 * time.Millisecond, E2E: 10 * time.Second}

func panel(t *testing.T, fig *plot.Figure, name string) plot.Panel {
	t.Helper()
	for _, p := range fig.Panels {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no panel %q", name)
	return plot.Panel{}
}

func series(p plot.Panel, label string) (plot.Series, bool) {
	for _, s := range p.Series {
		if s.Label == label {
			return s, true
		}
	}
	return plot.Series{}, false
}

func labels(p plot.Panel) []string {
	var out []string
	for _, s := range p.Series {
		out = append(out, s.Label)
	}
	return out
}

func isLog(a gplot.Axis) bool {
	_, ok := a.Scale.(gplot.LogScale)
	return ok
}

// tickLabels returns the labels of a's ticks over its range.
func tickLabels(a gplot.Axis) []string {
	var out []string
	for _, t := range a.Tick.Marker.Ticks(a.Min, a.Max) {
		if t.Label != "" {
			out = append(out, t.Label)
		}
	}
	return out
}

// tickAt returns the value of a's tick labelled l.
func tickAt(t *testing.T, a gplot.Axis, l string) float64 {
	t.Helper()
	for _, tk := range a.Tick.Marker.Ticks(a.Min, a.Max) {
		if tk.Label == l {
			return tk.Value
		}
	}
	t.Fatalf("no tick %q among %q", l, tickLabels(a))
	return 0
}

// TestLatencyPanels: one panel per figure, in order, two to a row; each
// with p50 and p99 against the rate on a shared log₂ axis whose last tick
// is "inf"; the run at an infinite rate drawn at that tick and not joined
// to the line; a log y axis where the values span a decade, linear from 0
// where they do not; each objective in its own panel and no other.
func TestLatencyPanels(t *testing.T) {
	pts := ratePoints()
	fig, err := plot.LatencyPanels("latency (simulated)", pts, rateSLO)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range fig.Panels {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"TTFT", "TPOT", "ITL", "E2E"}) || fig.Cols != 2 || fig.Title != "latency (simulated)" {
		t.Fatalf("panels %q, %d to a row, title %q; want TTFT TPOT ITL E2E two to a row under the title", names, fig.Cols, fig.Title)
	}
	if !math.IsInf(pts[5].Rate, 1) {
		t.Fatal("LatencyPanels reordered its input")
	}

	for _, tc := range []struct {
		name, unit string
		log        bool
		slo        []string // the keys below the data
		sloY       float64  // in the unit
	}{
		{"TTFT", "ms", true, []string{"p50", "p99", "SLO 200ms"}, 200},
		{"TPOT", "ms", false, []string{"p50", "p99"}, 0},
		{"ITL", "ms", true, []string{"p50", "p99"}, 0},
		{"E2E", "s", true, []string{"p50", "p99", "SLO 10s"}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := panel(t, fig, tc.name)
			if got := p.Plot.Y.Label.Text; got != "latency ("+tc.unit+")" {
				t.Errorf("y label %q; want latency (%s)", got, tc.unit)
			}
			if isLog(p.Plot.Y) != tc.log {
				t.Errorf("y scale %T; want log %v", p.Plot.Y.Scale, tc.log)
			}
			if !tc.log && p.Plot.Y.Min != 0 {
				t.Errorf("linear y axis from %v; want from 0", p.Plot.Y.Min)
			}
			if !slices.Equal(labels(p), tc.slo) {
				t.Errorf("keys %q; want %q", labels(p), tc.slo)
			}
			if !isLog(p.Plot.X) || !slices.Equal(tickLabels(p.Plot.X), []string{"1", "2", "4", "8", "16", "inf"}) {
				t.Errorf("x: scale %T, ticks %q; want log ticked 1 2 4 8 16 inf", p.Plot.X.Scale, tickLabels(p.Plot.X))
			}
			infX := tickAt(t, p.Plot.X, "inf")
			for _, q := range []string{"p50", "p99"} {
				s, _ := series(p, q)
				if len(s.Points) != 5 || len(s.Alone) != 1 || s.Alone[0].X != infX {
					t.Errorf("%s: %d joined points, alone %v; want 5 joined and one alone at the inf tick (x=%v)", q, len(s.Points), s.Alone, infX)
				}
				for _, pt := range s.Points {
					if pt.X >= infX {
						t.Errorf("%s: joined point %v at or past the inf tick", q, pt)
					}
				}
			}
			for _, s := range p.Series {
				for _, pt := range append(slices.Clone(s.Points), s.Alone...) {
					if pt.Y < p.Plot.Y.Min || pt.Y > p.Plot.Y.Max || pt.X < p.Plot.X.Min || pt.X > p.Plot.X.Max {
						t.Errorf("%s point %v outside the axes [%v, %v] × [%v, %v]", s.Label, pt, p.Plot.X.Min, p.Plot.X.Max, p.Plot.Y.Min, p.Plot.Y.Max)
					}
				}
			}
			if tc.sloY != 0 {
				s, _ := series(p, tc.slo[2])
				if len(s.Points) != 2 || s.Points[0].Y != tc.sloY || s.Points[1].Y != tc.sloY ||
					s.Points[0].X != p.Plot.X.Min || s.Points[1].X != p.Plot.X.Max {
					t.Errorf("SLO line %v; want y=%v across [%v, %v]", s.Points, tc.sloY, p.Plot.X.Min, p.Plot.X.Max)
				}
			}
		})
	}

	// Values are drawn in the panel's unit.
	ttft, _ := series(panel(t, fig, "TTFT"), "p99")
	if got := ttft.Points[0]; got.X != 1 || math.Abs(got.Y-45) > 1e-9 {
		t.Errorf("TTFT p99 at rate 1 drawn at %v; want (1, 45 ms)", got)
	}
	e2e, _ := series(panel(t, fig, "E2E"), "p99")
	if got := e2e.Alone[0].Y; got != 12 {
		t.Errorf("E2E p99 all at once drawn at %v; want 12 s", got)
	}
	// A log axis of a decade or two is labelled at 1, 2 and 5 × 10ⁿ.
	if got := tickLabels(panel(t, fig, "TTFT").Plot.Y); !slices.Equal(got, []string{"20", "50", "100", "200", "500", "1000"}) {
		t.Errorf("TTFT y ticks %q; want 20 50 100 200 500 1000", got)
	}
	if got := tickLabels(panel(t, fig, "E2E").Plot.Y); !slices.Equal(got, []string{"0.5", "1", "2", "5", "10"}) {
		t.Errorf("E2E y ticks %q; want 0.5 1 2 5 10", got)
	}
}

// TestLatencyPanelsYScale: a panel is logarithmic from a factor of 10
// between its smallest and largest value drawn, objective included, and
// linear from 0 below it or with a zero.
func TestLatencyPanelsYScale(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lo, hi float64
		slo    time.Duration
		log    bool
	}{
		{"a decade", 0.010, 0.100, 0, true},
		{"just under a decade", 0.010, 0.099, 0, false},
		{"narrow", 0.5, 0.6, 0, false},
		{"a zero", 0, 0.5, 0, false},
		{"objective a decade above", 0.010, 0.020, 100 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pts := []plot.RatePoint{
				{Rate: 1, TTFT: plot.Percentiles{P50: tc.lo, P99: tc.lo}},
				{Rate: 2, TTFT: plot.Percentiles{P50: tc.hi, P99: tc.hi}},
			}
			fig, err := plot.LatencyPanels("x", pts, timing.SLO{TTFT: tc.slo})
			if err != nil {
				t.Fatal(err)
			}
			y := panel(t, fig, "TTFT").Plot.Y
			if isLog(y) != tc.log || (!tc.log && y.Min != 0) {
				t.Errorf("y scale %T from %v; want log %v (else from 0)", y.Scale, y.Min, tc.log)
			}
			if n := len(tickLabels(y)); n < 3 {
				t.Errorf("y ticks %q; want at least three labels", tickLabels(y))
			}
		})
	}
}

// TestLatencyPanelsAxes: a lone run at an infinite rate is drawn at
// its own tick "inf", not refused; rates that do not double are on a
// linear axis ticked at each.
func TestLatencyPanelsAxes(t *testing.T) {
	only := []plot.RatePoint{{Rate: inf, TTFT: plot.Percentiles{P50: 0.1, P99: 0.2}}}
	fig, err := plot.LatencyPanels("x", only, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	p := panel(t, fig, "TTFT")
	if s, _ := series(p, "p99"); !slices.Equal(tickLabels(p.Plot.X), []string{"inf"}) || len(s.Alone) != 1 || len(s.Points) != 0 {
		t.Errorf("inf only: ticks %q, p99 %+v; want one point alone ticked inf", tickLabels(p.Plot.X), s)
	}

	var pts []plot.RatePoint
	for _, r := range []float64{3, 4, 5} {
		pts = append(pts, plot.RatePoint{Rate: r, E2E: plot.Percentiles{P50: r, P99: 2 * r}})
	}
	fig, err = plot.LatencyPanels("x", pts, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	x := panel(t, fig, "E2E").Plot.X
	if isLog(x) || !slices.Equal(tickLabels(x), []string{"3", "4", "5"}) {
		t.Errorf("rates 3 4 5: x scale %T, ticks %q; want linear ticked 3 4 5", x.Scale, tickLabels(x))
	}
}

// TestLatencyPanelsUndefined: a figure no run defines is an empty panel
// that says so; nothing defined at all is ErrNoData; a rate that is not
// positive is refused.
func TestLatencyPanelsUndefined(t *testing.T) {
	nan := math.NaN()
	pts := ratePoints()
	for i := range pts {
		pts[i].ITL = plot.Percentiles{P50: nan, P99: nan}
		pts[i].TPOT.P99 = nan
	}
	fig, err := plot.LatencyPanels("x", pts, timing.SLO{ITL: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if p := panel(t, fig, "ITL"); len(p.Series) != 0 || !strings.Contains(p.Plot.Title.Text, "no run defines it") {
		t.Errorf("ITL undefined: keys %q, title %q; want none, titled as undefined", labels(p), p.Plot.Title.Text)
	}
	if p := panel(t, fig, "TPOT"); !slices.Equal(labels(p), []string{"p50"}) {
		t.Errorf("TPOT p99 undefined: keys %q; want p50 only", labels(p))
	}
	if err := plot.WritePNG(&bytes.Buffer{}, fig); err != nil {
		t.Errorf("rendering a figure with an empty panel: %v", err)
	}

	if _, err := plot.LatencyPanels("x", nil, rateSLO); !errors.Is(err, plot.ErrNoData) {
		t.Errorf("no run: %v; want ErrNoData", err)
	}
	undefined := []plot.RatePoint{{Rate: 1, TTFT: plot.Percentiles{P50: nan, P99: nan}, TPOT: plot.Percentiles{P50: nan, P99: inf},
		ITL: plot.Percentiles{P50: nan, P99: nan}, E2E: plot.Percentiles{P50: nan, P99: nan}}}
	if _, err := plot.LatencyPanels("x", undefined, rateSLO); !errors.Is(err, plot.ErrNoData) {
		t.Errorf("nothing defined: %v; want ErrNoData", err)
	}
	for _, r := range []float64{0, -1, nan, math.Inf(-1)} {
		bad := []plot.RatePoint{{Rate: r, TTFT: plot.Percentiles{P50: 0.1, P99: 0.2}}}
		if _, err := plot.LatencyPanels("x", bad, rateSLO); err == nil || errors.Is(err, plot.ErrNoData) {
			t.Errorf("rate %v: %v; want an error refusing the rate", r, err)
		}
	}
}

// TestFigurePNG renders the figure and checks that it decodes as a PNG
// of FigureWidth × FigureHeight at 96 dpi (1200 × 800), with the title on
// top and data in colour in each of the four quadrants; a figure that
// sets its size renders at it.
func TestFigurePNG(t *testing.T) {
	fig, err := plot.LatencyPanels("latency (simulated)", ratePoints(), rateSLO)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := plot.WritePNG(&buf, fig); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	wantW, wantH := int(math.Ceil(plot.FigureWidth.Dots(96))), int(math.Ceil(plot.FigureHeight.Dots(96)))
	if b.Dx() != 1200 || b.Dy() != 800 || wantW != 1200 || wantH != 800 {
		t.Fatalf("figure is %d×%d (FigureWidth × FigureHeight %d×%d); want 1200×800", b.Dx(), b.Dy(), wantW, wantH)
	}
	// The series are the only coloured ink: grid, axes, text and the
	// objective are grey.
	coloured := func(r image.Rectangle) int {
		n := 0
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				c, g, bl, _ := img.At(x, y).RGBA()
				if max(c, g, bl)-min(c, g, bl) > 0x4000 {
					n++
				}
			}
		}
		return n
	}
	dark := func(r image.Rectangle) int {
		n := 0
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				if c, g, bl, _ := img.At(x, y).RGBA(); c+g+bl < 3*0x4000 {
					n++
				}
			}
		}
		return n
	}
	if n := dark(image.Rect(400, 0, 800, 35)); n < 100 {
		t.Errorf("%d dark pixels in the top centre; want the title there", n)
	}
	for _, q := range []image.Rectangle{image.Rect(0, 40, 600, 420), image.Rect(600, 40, 1200, 420), image.Rect(0, 420, 600, 800), image.Rect(600, 420, 1200, 800)} {
		if n := coloured(q); n < 500 {
			t.Errorf("%d coloured pixels in %v; want a panel's data there", n, q)
		}
	}

	fig.Width, fig.Height = 8*vg.Inch, 6*vg.Inch // 768 × 576 px at 96 dpi
	buf.Reset()
	if err := plot.WritePNG(&buf, fig); err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(&buf)
	if err != nil || cfg.Width != 768 || cfg.Height != 576 {
		t.Errorf("figure sized 8×6 in: %v, %d×%d; want 768×576", err, cfg.Width, cfg.Height)
	}
	if err := plot.WritePNG(&buf, (*plot.Figure)(nil)); err == nil {
		t.Error("WritePNG(nil figure) succeeded; want an error")
	}
}
