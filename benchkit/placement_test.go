package benchkit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/benchkit/plot"
	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
	"golang.org/x/perf/benchfmt"
)

// twoNodeSweep runs a small plan on a simulated 2-node cluster over both
// sharding kinds (ring only): three placements, pipeline on 1 node and
// pipeline and tensor on 2. Its progress counts over the whole sweep: one
// more request done at each report, of 18 (3 placements × 6), never
// starting again at a placement.
func twoNodeSweep(t *testing.T) benchkit.ExoResult {
	t.Helper()
	srv := sim.NewServer(sim.Options{Preset: sim.Fast(), Nodes: 2, NoInstance: true, LoadDelay: -1})
	t.Cleanup(srv.Close)
	client, err := exo.New(srv.URL, &exo.Options{MaxBurst: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	card, err := client.ResolveModel(ctx, srv.Model(), false)
	if err != nil {
		t.Fatal(err)
	}
	sweep := &benchkit.ExoSweep{
		Client: client, Card: card,
		Filter:          exo.Filter{Sharding: exo.Both, InstanceMeta: "ring", MinNodes: 1, MaxNodes: 2},
		Sources:         []energy.Source{client.PowerSource()},
		MetricsInterval: 50 * time.Millisecond,
		Runner:          benchkit.Runner{Builder: &promptsize.Builder{Counter: srv.Counter()}, Simulated: true},
	}
	done := 0
	sweep.Runner.Sinks = []benchkit.Sink{benchkit.SinkFunc(func(benchkit.Request) error { done++; return nil })}
	res, err := sweep.Run(ctx, benchkit.Plan{PP: []int{64}, TG: []int{8}, Concurrency: []int{1, 2}, Repeat: 2})
	if err != nil {
		t.Fatal(err)
	}
	if done != 18 {
		t.Errorf("the sink heard of %d requests, want 18: every placement's", done)
	}
	if len(res.Placements) != 3 {
		t.Fatalf("%d placements measured, want 3 (pipeline 1 node, pipeline and tensor 2 nodes)", len(res.Placements))
	}
	return res
}

// rowsOf returns the rows of one placement.
func rowsOf(rows []benchkit.Request, p string) []benchkit.Request {
	var out []benchkit.Request
	for _, r := range rows {
		if r.Placement.String() == p {
			out = append(out, r)
		}
	}
	return out
}

// sameInterval compares two intervals, NaN equal to NaN.
func sameInterval(a, b timing.Interval) bool {
	eq := func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) }
	return a.N == b.N && eq(a.Center, b.Center) && eq(a.Lo, b.Lo) && eq(a.Hi, b.Hi)
}

// TestSweepSummariesArePerPlacement runs a 2-node sweep with both sharding
// kinds and checks that every output has one entry per placement (and
// cell), each equal to the aggregate of that placement's rows alone: the
// summaries, the results file's summary, the table, the benchfmt lines and
// the plot's series.
func TestSweepSummariesArePerPlacement(t *testing.T) {
	res := twoNodeSweep(t)
	var keys []string
	for _, p := range res.Placements {
		keys = append(keys, benchkit.Placement{Sharding: p.Sharding, InstanceMeta: p.InstanceMeta, Nodes: p.Nodes}.String())
	}
	cells := benchkit.Summarize(res.Requests, benchkit.ByCell, timing.SLO{})
	// Two cells (conc 1 and 2) per placement.
	if len(cells) != 2*len(keys) {
		t.Fatalf("%d summaries, want %d (2 cells × %d placements)", len(cells), 2*len(keys), len(keys))
	}
	for _, k := range keys {
		own := rowsOf(res.Requests, k)
		if len(own) != 2*(1+2) {
			t.Fatalf("placement %s has %d rows, want 6", k, len(own))
		}
		want := benchkit.Summarize(own, benchkit.ByCell, timing.SLO{})
		var got []benchkit.Summary
		for _, c := range cells {
			if c.Labels.Placement.String() == k {
				got = append(got, c)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("placement %s: %d summaries, want %d", k, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.Cell != w.Cell || g.Requests != w.Requests || g.Repeats != 2 ||
				!sameInterval(g.ExoAggregateTPS, w.ExoAggregateTPS) || !sameInterval(g.ThroughputTPS, w.ThroughputTPS) ||
				!sameInterval(g.GenerationTPS, w.GenerationTPS) || !sameInterval(g.EnergyJ, w.EnergyJ) {
				t.Errorf("placement %s %s: summary %+v, want that of its own rows %+v", k, g.Cell, g, w)
			}
			// Concurrency 1: exo's aggregate is the mean of this
			// placement's two rows' own rates, not a sum over placements.
			if g.Cell.Concurrency == 1 {
				var rates []float64
				for _, r := range own {
					if r.Concurrency == 1 {
						rates = append(rates, r.Stats.GenerationTPS)
					}
				}
				if mean := (rates[0] + rates[1]) / 2; math.Abs(g.ExoAggregateTPS.Center-mean) > 1e-9*mean {
					t.Errorf("placement %s conc=1: exo aggregate %v, want the mean of its rows' rates %v", k, g.ExoAggregateTPS.Center, mean)
				}
			}
		}
	}

	// The results file's summary: one record per placement and cell,
	// naming the placement.
	var buf bytes.Buffer
	if err := benchkit.WriteJSON(&buf, benchkit.Document{Runs: res.Requests, Summary: cells}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Summary []struct {
			Placement   string `json:"placement"`
			Sharding    string `json:"placement_sharding"`
			Nodes       int    `json:"placement_nodes"`
			Concurrency int    `json:"concurrency"`
			Requests    int    `json:"requests"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, s := range doc.Summary {
		seen[s.Placement]++
		if s.Requests != 2*s.Concurrency {
			t.Errorf("summary %s conc=%d: %d requests, want %d (its own 2 repeats)", s.Placement, s.Concurrency, s.Requests, 2*s.Concurrency)
		}
	}
	for _, k := range keys {
		if seen[k] != 2 {
			t.Errorf("results summary has %d records of %s, want 2: %v", seen[k], k, seen)
		}
	}

	// The table: one line per placement and cell, led by the placement.
	var tb bytes.Buffer
	if err := benchkit.WriteTable(&tb, cells, benchkit.TableOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(tb.String(), "\n")
	if !strings.HasPrefix(strings.TrimSpace(lines[0]), "placement") {
		t.Errorf("table header %q does not start with a placement column", lines[0])
	}
	for _, k := range keys {
		n := 0
		for _, l := range lines[1:] {
			if strings.HasPrefix(strings.TrimSpace(l), k+" ") {
				n++
			}
		}
		if n != 2 {
			t.Errorf("table has %d lines of %s, want 2:\n%s", n, k, tb.String())
		}
	}

	// benchfmt: one line per placement, cell and repeat, named with the
	// placement, with that placement's figures.
	var bf bytes.Buffer
	if err := benchkit.WriteBenchfmt(&bf, res.Requests, benchkit.BenchfmtOptions{Name: "Exo"}); err != nil {
		t.Fatal(err)
	}
	rd := benchfmt.NewReader(bytes.NewReader(bf.Bytes()), "bench.txt")
	byName := map[string][]float64{} // name → tok/s per line
	for rd.Scan() {
		if r, ok := rd.Result().(*benchfmt.Result); ok {
			v, _ := r.Value("tok/s")
			byName[string(r.Name.Full())] = append(byName[string(r.Name.Full())], v)
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cells {
		name := "Exo/" + c.Name()
		got := byName[name]
		if len(got) != c.Repeats {
			t.Errorf("benchfmt has %d lines named %s, want %d (one per repeat): %v", len(got), name, c.Repeats, slices.Sorted(maps.Keys(byName)))
			continue
		}
		if !strings.Contains(name, "placement="+c.Labels.Placement.String()+"/") {
			t.Errorf("benchfmt name %s lacks the placement", name)
		}
		if mean := (got[0] + got[1]) / 2; math.Abs(mean-c.ThroughputTPS.Center) > 1e-9*mean {
			t.Errorf("%s: mean tok/s over its lines %v, the summary says %v", name, mean, c.ThroughputTPS.Center)
		}
	}
	if len(byName) != len(cells) {
		t.Errorf("benchfmt has %d names, want %d", len(byName), len(cells))
	}

	// The plot: one series per placement (one (pp, tg) pair here), each
	// with the placement's own points.
	series := plot.GenerationTPSSeries(cells)
	if len(series) != len(keys) {
		t.Fatalf("%d plot series, want %d", len(series), len(keys))
	}
	for i, s := range series {
		if s.Placement != keys[i] || !strings.HasPrefix(s.Name, keys[i]+" ") {
			t.Errorf("series %d is %s (%q), want %s", i, s.Placement, s.Name, keys[i])
		}
		for _, pt := range s.Honest {
			for _, c := range cells {
				if c.Labels.Placement.String() == s.Placement && float64(c.Cell.Concurrency) == pt.X && pt.Y != c.ThroughputTPS.Center {
					t.Errorf("series %s at conc %v: %v, the placement's summary %v", s.Name, pt.X, pt.Y, c.ThroughputTPS.Center)
				}
			}
		}
		if len(s.Honest) != 2 || len(s.Exo) != 2 {
			t.Errorf("series %s has %d and %d points, want 2 and 2", s.Name, len(s.Honest), len(s.Exo))
		}
	}
}

// TestPlacementKeyString pins the label format used in benchfmt names,
// table lines and plot legends.
func TestPlacementString(t *testing.T) {
	for _, c := range []struct {
		k    benchkit.Placement
		want string
	}{
		{benchkit.Placement{}, ""},
		{benchkit.Placement{Sharding: "Pipeline", InstanceMeta: "MlxRing", Nodes: 1}, "pipeline-ring-1n"},
		{benchkit.Placement{Sharding: "Tensor", InstanceMeta: "MlxJaccl", Nodes: 4}, "tensor-jaccl-4n"},
		// Anything else keeps only characters a benchfmt name can hold.
		{benchkit.Placement{Sharding: "odd kind/x", Nodes: 2}, "odd_kind_x-none-2n"},
	} {
		if got := c.k.String(); got != c.want {
			t.Errorf("%+v.String() = %q, want %q", c.k, got, c.want)
		}
	}
}

// TestProgressBarNamesPlacement checks that the progress line says which
// placement is being measured.
func TestProgressBarNamesPlacement(t *testing.T) {
	var buf strings.Builder
	t0 := time.Unix(1e9, 0)
	b := &cli.Progress{W: &buf, Width: 10, Total: 4, Now: func() time.Time { return t0 }}
	row := benchkit.Request{Labels: benchkit.Labels{Placement: benchkit.Placement{Sharding: "Tensor", InstanceMeta: "MlxRing", Nodes: 2}, Concurrency: 2, Repeat: 1},
		PPTarget: 64, TGTarget: 8}
	for range 3 {
		b.Add(row)
	}
	b.Finish()
	want := "\r[##        ] 1/4  placement=tensor-ring-2n/pp=64/tg=8/conc=2 rep 1  failed 0  — req/s  0ms  ETA ? \n"
	if buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}
