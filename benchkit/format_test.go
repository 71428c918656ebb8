package benchkit

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/timing"
	"golang.org/x/perf/benchfmt"
)

var update = flag.Bool("update", false, "rewrite golden files")

func fp(v float64) *float64 { return &v }
func ip(v int) *int         { return &v }

// fixtureRows is a small run: cell pp=64/tg=8 at concurrency 1 (2 repeats,
// with the server's power_usage and short client energy windows) and
// concurrency 2 (2 repeats, one request failed in the second).
func fixtureRows() []Request {
	stats := func(ptps, gtps float64) *engine.ServerStats {
		return &engine.ServerStats{PromptTPS: ptps, GenerationTPS: gtps, PromptTokens: 64, GenerationTokens: 8, PeakMemoryBytes: 3 << 30, PrefixCacheHit: engine.PrefixCacheNone}
	}
	base := Request{Preview: "a b c", Model: "sim/model-8b", ModelShortID: "model-8b", PPTokens: 64, PPTarget: 64, TGTarget: 8, CompletionTokens: ip(8), Simulated: true}
	r := func(rep, conc, idx int, elapsed, ptps, gtps float64) Request {
		x := base
		x.Repeat, x.Concurrency, x.Index = rep, conc, idx
		x.DoneS = elapsed
		x.Stats = stats(ptps, gtps)
		x.E2ES = fp(elapsed)
		x.Energy = &Energy{WindowS: elapsed, Joules: 10 * elapsed, AvgWatts: 10, ErrorBoundJ: fp(0.5), Shared: conc > 1, Source: "client", SampleIntervalS: 0.25}
		if conc == 1 {
			// The server's own energy, over a span a little shorter than
			// the client's window; the windows are under 3 × 0.25 s.
			x.PowerUsage = &engine.PowerUsage{ElapsedSeconds: elapsed - 0.01, TotalEnergyJoules: 12 * elapsed, TotalAvgSysPowerWatts: 12}
			x.EnergyWindowShort = true
		}
		if conc > 1 {
			x.ConcurrentIndex = ip(idx)
			x.SendOffsetS, x.DispatchSkewS = float64(idx)*0.001, 0.001
		}
		return x
	}
	failed := base
	failed.Repeat, failed.Concurrency, failed.Index = 1, 2, 1
	failed.DoneS, failed.CompletionTokens, failed.ErrorKind, failed.Error = 0.1, ip(0), "status", "engine: status 503: overloaded"
	failed.ConcurrentIndex = ip(1)
	return []Request{
		r(0, 1, 0, 0.5, 1000, 20),
		r(1, 1, 0, 0.4, 1200, 25),
		r(0, 2, 0, 0.8, 900, 12),
		r(0, 2, 1, 1.0, 800, 10),
		r(1, 2, 0, 0.6, 950, 14),
		failed,
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./benchkit -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", name, diff)
	}
}

func TestSummarizeCells(t *testing.T) {
	cells := Summarize(fixtureRows(), ByCell, timing.SLO{})
	if len(cells) != 2 {
		t.Fatalf("%d cells, want 2", len(cells))
	}
	c1, c2 := cells[0], cells[1]
	// Concurrency 1: gen TPS 20 and 25 per repeat; throughput 8/0.5 = 16
	// and 8/0.4 = 20; exo's aggregate = rate × 1.
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("c1 gen", c1.GenerationTPS.Center, 22.5)
	near("c1 throughput", c1.ThroughputTPS.Center, 18)
	near("c1 exo", c1.ExoAggregateTPS.Center, 22.5)
	near("c1 prompt", c1.PromptTPS.Center, 1100)
	// Energy 5 J and 4 J per repeat; J/tok 5/8 and 4/8.
	near("c1 energy", c1.EnergyJ.Center, 4.5)
	near("c1 J/tok", c1.JPerToken.Center, 0.5625)
	// Concurrency 2, repeat 0: rates 12, 10 → exo 24, Σ16/1.0 = 16.
	// Repeat 1: one failed, rate 14 → exo 28, Σ8/0.6 = 13.33….
	near("c2 exo", c2.ExoAggregateTPS.Center, 26)
	near("c2 throughput", c2.ThroughputTPS.Center, (16+8/0.6)/2)
	near("c2 gen", c2.GenerationTPS.Center, (11+14)/2.0)
	// Shared burst energy is counted once per repeat: 8 J and 6 J.
	near("c2 energy", c2.EnergyJ.Center, 7)
	if c2.Failed != 1 || c2.Requests != 4 || c2.Repeats != 2 {
		t.Errorf("c2 counts: %+v", c2)
	}
	if c1.PeakMemoryBytes != 3<<30 {
		t.Errorf("peak memory %d", c1.PeakMemoryBytes)
	}
}

func TestGoldenFormats(t *testing.T) {
	rows := fixtureRows()
	cells := Summarize(rows, ByCell, timing.SLO{})

	var jsonl bytes.Buffer
	s := NewJSONLSink(&jsonl)
	s.Exo = true // exo-bench's rows file
	for _, r := range rows {
		if err := s.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	golden(t, "rows.jsonl", jsonl.Bytes())

	var doc bytes.Buffer
	d := Document{Runs: rows, Meta: &Meta{RunInfo: RunInfo{Tool: "inferbench", Engine: "sim", Simulated: true, Model: "sim/model-8b"}, Plan: Plan{PP: []int{64}, TG: []int{8}, Concurrency: []int{1, 2}, Repeat: 2}}, Summary: cells}
	d.SystemMetrics = map[string]map[string]energy.MetricSummary{"node-0": {"sysPower": {Min: 10, Max: 30, Mean: 20, Samples: 4}}}
	if err := WriteJSON(&doc, d); err != nil {
		t.Fatal(err)
	}
	golden(t, "results.json", doc.Bytes())

	var csvOut bytes.Buffer
	if err := WriteCSV(&csvOut, rows); err != nil {
		t.Fatal(err)
	}
	golden(t, "rows.csv", csvOut.Bytes())

	var md bytes.Buffer
	if err := WriteTable(&md, cells, TableOptions{Simulated: true, Title: "model-8b", Markdown: true}); err != nil {
		t.Fatal(err)
	}
	golden(t, "table.md", md.Bytes())

	var bf bytes.Buffer
	if err := WriteBenchfmt(&bf, rows, BenchfmtOptions{Name: "Exo", Config: [][2]string{{"engine", "sim"}, {"model", "model-8b"}}}); err != nil {
		t.Fatal(err)
	}
	golden(t, "bench.txt", bf.Bytes())
}

// TestResultsJSONIsExoShaped checks the document's top level and one run
// against the keys exo's analysis reads.
func TestResultsJSONIsExoShaped(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, Document{Runs: fixtureRows()[:1], Cluster: json.RawMessage(`{"nodeIdentities":{}}`)}); err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"runs", "cluster"} {
		if _, ok := top[k]; !ok {
			t.Errorf("top level lacks %q", k)
		}
	}
	var runs []map[string]any
	if err := json.Unmarshal(top["runs"], &runs); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"elapsed_s", "output_text_preview", "stats", "power_usage", "model_id", "model_short_id", "pp_tokens", "tg", "repeat_index", "concurrency"} {
		if _, ok := runs[0][k]; !ok {
			t.Errorf("run lacks exo's %q", k)
		}
	}
	stats := runs[0]["stats"].(map[string]any)
	if mem, ok := stats["peak_memory_usage"].(map[string]any); !ok || mem["inBytes"] == nil {
		t.Errorf("stats.peak_memory_usage = %v, want {inBytes: …}", stats["peak_memory_usage"])
	}
}

// TestBenchfmtParses reads WriteBenchfmt's output back with x/perf's
// reader: every line must be a result or unit metadata, none a syntax
// error, and the values must be the ones computed.
func TestBenchfmtParses(t *testing.T) {
	var bf bytes.Buffer
	if err := WriteBenchfmt(&bf, fixtureRows(), BenchfmtOptions{Config: [][2]string{{"engine", "sim"}}}); err != nil {
		t.Fatal(err)
	}
	rd := benchfmt.NewReader(bytes.NewReader(bf.Bytes()), "bench.txt")
	var results []*benchfmt.Result
	units := 0
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.Result:
			results = append(results, rec.Clone())
		case *benchfmt.UnitMetadata:
			units++
		case *benchfmt.SyntaxError:
			t.Errorf("syntax error: %v", rec)
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	if len(results) != 4 || units != len(benchfmtUnits) {
		t.Fatalf("%d results, %d unit lines; want 4 and %d", len(results), units, len(benchfmtUnits))
	}
	r := results[0]
	if got := r.Name.String(); got != "Serve/pp=64/tg=8/conc=1" {
		t.Errorf("name %q", got)
	}
	if r.GetConfig("engine") != "sim" {
		t.Errorf("engine config %q", r.GetConfig("engine"))
	}
	if v, ok := r.Value("tok/s"); !ok || v != 16 {
		t.Errorf("tok/s = %v, %v; want 16", v, ok)
	}
	// ns are tidied to seconds by the reader.
	if v, ok := r.Value("ttft-sec/op"); ok {
		t.Errorf("unstreamed rows wrote a TTFT of %v", v)
	}
	if v, ok := r.Value("e2e-sec/op"); !ok || math.Abs(v-0.5) > 1e-12 {
		t.Errorf("e2e = %v, %v; want 0.5 s", v, ok)
	}
	if results[3].Iters != 1 {
		t.Errorf("burst with a failure: iters %d, want 1", results[3].Iters)
	}
}

func TestJSONLRoundTrip(t *testing.T) {
	rows := fixtureRows()
	var buf bytes.Buffer
	s := NewJSONLSink(&buf)
	for _, r := range rows {
		if err := s.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	// A crash mid-write leaves a cut last line, and a blank line is noise.
	data := buf.String() + "\n{\"elapsed_s\": 1.2, \"stat"
	rd := NewJSONLReader(strings.NewReader(data))
	var got []Request
	var lineErrs []error
	for rd.Scan() {
		if err := rd.LineErr(); err != nil {
			lineErrs = append(lineErrs, err)
			continue
		}
		got = append(got, rd.Request())
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rows, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if len(lineErrs) != 1 || !strings.Contains(lineErrs[0].Error(), "line 8") {
		t.Errorf("line errors %v, want one on line 8", lineErrs)
	}
}

func TestTableMarksSimulated(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTable(&buf, Summarize(fixtureRows(), ByCell, timing.SLO{}), TableOptions{Simulated: true}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "SIMULATED") {
		t.Errorf("table does not say the figures are simulated:\n%s", out)
	}
	for _, col := range []string{"exo max×N", "Σtok/wall", "J/tok", "± is the half width of each figure's 95 % confidence interval over the 2 repeats"} {
		if !strings.Contains(out, col) {
			t.Errorf("table lacks %q:\n%s", col, out)
		}
	}
	// The half width to two significant digits, the mean to the same
	// place: 1100 ± 1270.6 is 1100 ± 1300.
	if !strings.Contains(out, "1100 ±1300") || strings.Contains(out, "(sd") {
		t.Errorf("intervals not rounded to their half width, or sd in the terminal table:\n%s", out)
	}
}

// TestTerminalTableWidth: a sweep like exo-bench's default one (two
// placements, pp 128 and 4096, concurrency 1 and 4, two repeats a few per
// cent apart, prompt rates in the thousands, server energy) fits a
// 120-column terminal, notes aside.
func TestTerminalTableWidth(t *testing.T) {
	var rows []Request
	for _, pl := range []Placement{{Sharding: "Pipeline", InstanceMeta: "MlxRing", Nodes: 1}, {Sharding: "Tensor", InstanceMeta: "MlxJaccl", Nodes: 1}} {
		for _, pp := range []int{128, 4096} {
			for _, conc := range []int{1, 4} {
				for rep := range 2 {
					for i := range conc {
						f := 1 + 0.03*float64(rep) + 0.01*float64(i)
						r := Request{Labels: Labels{Placement: pl, Concurrency: conc, Repeat: rep}, Index: i,
							PPTarget: pp, PPTokens: pp, TGTarget: 32, CompletionTokens: ip(32), DoneS: 0.9 * f,
							Stats:      &engine.ServerStats{PromptTPS: 5432.1 * f, GenerationTPS: 81.7 / f, PromptTokens: pp, GenerationTokens: 32, PeakMemoryBytes: 5 << 30},
							PowerUsage: &engine.PowerUsage{ElapsedSeconds: 0.9 * f, TotalEnergyJoules: 41.3 * f}}
						rows = append(rows, r)
					}
				}
			}
		}
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, Summarize(rows, ByCell, timing.SLO{}), TableOptions{Simulated: true, Title: "Llama-3.2-1B-Instruct-4bit"}); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(buf.String(), "\n") {
		if n := utf8.RuneCountInString(l); n > 120 && !strings.HasPrefix(l, "[") {
			t.Errorf("a line of %d columns: %q\n%s", n, l, buf.String())
		}
	}
	t.Logf("\n%s", buf.String())
}

// TestDocumentsReadBack: exo's results file and a load test's read back
// into their documents and write again byte for byte.
func TestDocumentsReadBack(t *testing.T) {
	rows := fixtureRows()
	exoDoc := Document{Runs: rows, Meta: &Meta{RunInfo: RunInfo{Tool: "inferbench", Engine: "sim", Simulated: true, Model: "sim/model-8b"}, Plan: Plan{PP: []int{64}, TG: []int{8}}},
		Summary: Summarize(rows, ByCell, timing.SLO{})}
	load := LoadRun{Requests: rows, Summary: Summarize(rows, ByRun, timing.SLO{})[0]}
	loadDoc := NewLoadDocument(LoadMeta{RunInfo: RunInfo{Tool: "inferbench", Engine: "openai"}, Workload: Lengths{Input: 64, Output: 8, Seed: 3}}, []LoadRun{load}, nil)
	for name, c := range map[string]struct {
		doc  any
		back any
	}{"exo": {exoDoc, new(Document)}, "load": {loadDoc, new(LoadDocument)}} {
		var first bytes.Buffer
		if err := WriteJSON(&first, c.doc); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(first.Bytes(), c.back); err != nil {
			t.Fatalf("%s: read back: %v", name, err)
		}
		var again bytes.Buffer
		if err := WriteJSON(&again, reflect.ValueOf(c.back).Elem().Interface()); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first.String(), again.String()); diff != "" {
			t.Errorf("%s document read back writes otherwise (-first +again):\n%s", name, diff)
		}
	}
}
