package compare_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/compare"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// rows makes n completed requests of one run at rate, one every 1/rate
// seconds, with TTFT around ttft and TPOT around tpot (seconds), drawn
// from seed.
func rows(n int, rate, ttft, tpot float64, seed uint64) []benchkit.Request {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]benchkit.Request, n)
	for i := range out {
		send := float64(i) / rate
		f := ttft * (1 + 0.1*rng.NormFloat64())
		p := tpot * (1 + 0.05*rng.NormFloat64())
		e := f + 15*p
		tokens := 16
		r := rate
		out[i] = benchkit.Request{Labels: benchkit.Labels{Rate: &r}, Index: i, PPTarget: 128, PPTokens: 128, TGTarget: 16,
			CompletionTokens: &tokens, IntendedSendS: send, SendOffsetS: send, DoneS: send + e,
			TTFTS: &f, TPOTS: &p, E2ES: &e, ITLS: []float64{p, p}, Stream: true, Model: "m"}
	}
	return out
}

// loadDoc is serve-load's document of one run of reqs.
func loadDoc(t testing.TB, model string, input int, rates string, reqs []benchkit.Request) []byte {
	t.Helper()
	meta := benchkit.LoadMeta{RunInfo: benchkit.RunInfo{Tool: "inferbench", Engine: "openai", Model: model},
		Workload: benchkit.Lengths{Input: input, Output: 16}, Traffic: benchkit.Traffic{Rate: 50, NumRequests: len(reqs)},
		Rates: []string{rates}, Stream: true}
	run := benchkit.LoadRun{Summary: benchkit.Summarize(reqs, benchkit.ByRun, timing.SLO{})[0], Requests: reqs}
	run.Summary.Traffic = "poisson(rate=" + rates + "/s)"
	var b bytes.Buffer
	if err := benchkit.WriteJSON(&b, benchkit.NewLoadDocument(meta, []benchkit.LoadRun{run}, nil)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func read(t testing.TB, b []byte) *compare.Side {
	t.Helper()
	s, err := compare.Read(b, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBatchMeans: one run of n requests is split into min(10, n/10)
// consecutive batches, each a unit; a run too short for two batches
// has no unit and every figure is "not comparable".
func TestBatchMeans(t *testing.T) {
	for _, c := range []struct{ n, units int }{{200, 10}, {95, 9}, {25, 2}, {15, 0}} {
		s := read(t, loadDoc(t, "m", 128, "50", rows(c.n, 50, 0.02, 0.002, 1)))
		if s.Kind != compare.KindLoad || len(s.Groups) != 1 {
			t.Fatalf("n=%d: kind %q, %d groups; want load, 1", c.n, s.Kind, len(s.Groups))
		}
		g := s.Groups[0]
		if g.UnitKind != compare.UnitBatch || len(g.Units) != c.units || g.Requests != c.n {
			t.Errorf("n=%d: %s × %d from %d requests, want batch × %d", c.n, g.UnitKind, len(g.Units), g.Requests, c.units)
		}
	}
	short := read(t, loadDoc(t, "m", 128, "50", rows(15, 50, 0.02, 0.002, 1)))
	res, err := compare.Compare(short, short, compare.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rows {
		if r.Verdict != compare.NotComparable {
			t.Errorf("%s: %s, want not comparable with no units", r.Figure.Name, r.Verdict)
		}
	}
	if res.Tests != 0 || len(res.Warnings) == 0 {
		t.Errorf("tests %d, warnings %q; want none tested and a warning", res.Tests, res.Warnings)
	}
}

// TestSyntheticVerdicts: on rows whose truth is known, a TPOT 10 %
// higher is "worse" with an interval around +10 %, TTFT 20 % lower
// "better", and the gate trips on TPOT alone when it is the gated figure.
func TestSyntheticVerdicts(t *testing.T) {
	a := read(t, loadDoc(t, "m", 128, "50", rows(200, 50, 0.020, 0.002, 1)))
	b := read(t, loadDoc(t, "m", 128, "50", rows(200, 50, 0.016, 0.0022, 2)))
	res, err := compare.Compare(a, b, compare.Config{Threshold: 0.05, GateFigures: []string{"tpot_mean", "ttft_mean"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]compare.Row{}
	for _, r := range res.Rows {
		got[r.Figure.Name] = r
	}
	tp, tf := got["tpot_mean"], got["ttft_mean"]
	if tp.Verdict != compare.Worse || !(tp.RelLo < 0.10 && 0.10 < tp.RelHi) || !tp.Regression {
		t.Errorf("tpot_mean: %s %+.3f [%+.3f, %+.3f] regression %v; want worse around +0.10, a regression", tp.Verdict, tp.Rel, tp.RelLo, tp.RelHi, tp.Regression)
	}
	if tf.Verdict != compare.Better || !(tf.RelLo < -0.2 && -0.2 < tf.RelHi) || tf.Regression {
		t.Errorf("ttft_mean: %s %+.3f [%+.3f, %+.3f]; want better around −0.20, no regression", tf.Verdict, tf.Rel, tf.RelLo, tf.RelHi)
	}
	if e := got["e2e_mean"]; e.Regression {
		t.Errorf("e2e_mean is not gated, yet a regression")
	}
	// The same file against itself: no change anywhere, every change 0.
	same, err := compare.Compare(a, a, compare.Config{Threshold: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range same.Rows {
		if r.Verdict != compare.NoChange || r.Diff != 0 || r.Regression {
			t.Errorf("A against A: %s %s diff %g", r.Figure.Name, r.Verdict, r.Diff)
		}
	}
}

// TestRefusals: runs of different models, prompt lengths and rates are
// refused with each difference named; --allow lets a named one through
// and not the others.
func TestRefusals(t *testing.T) {
	a := read(t, loadDoc(t, "m", 128, "50", rows(100, 50, 0.02, 0.002, 1)))
	b := read(t, loadDoc(t, "other", 512, "40", rows(100, 40, 0.02, 0.002, 2)))
	refused, err := compare.Compare(a, b, compare.Config{})
	var re *compare.RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a refusal", err)
	}
	// Beside the refusal, a result without rows that says what was
	// refused, for a report of it.
	if refused == nil || refused.A != a || refused.B != b || len(refused.Rows) != 0 || len(refused.Refused) != len(re.Differences) {
		t.Errorf("the refused result: %+v, want A, B, no rows and the %d differences", refused, len(re.Differences))
	}
	names := map[string]bool{}
	for _, d := range re.Differences {
		names[d.Name] = true
	}
	for _, want := range []string{"model", "lengths", "rates", "groups"} {
		if !names[want] || !strings.Contains(err.Error(), want+":") {
			t.Errorf("refusal %q does not name %s", err, want)
		}
	}
	refused, err = compare.Compare(a, b, compare.Config{Allow: []string{"model"}})
	if !errors.As(err, &re) || strings.Contains(err.Error(), "\n  model:") || !strings.Contains(err.Error(), "lengths:") {
		t.Errorf("--allow model: %v; want lengths and rates still refused, model not", err)
	}
	if refused == nil || len(refused.Allowed) != 1 || refused.Allowed[0].Name != "model" {
		t.Errorf("--allow model: the refused result does not say model was allowed: %+v", refused)
	}
	if _, err := compare.Compare(a, b, compare.Config{Allow: []string{"all"}}); err != nil {
		t.Errorf("--allow all: %v", err)
	}
	// The same lengths under another seed are the same measurement.
	c := loadDoc(t, "m", 128, "50", rows(100, 50, 0.02, 0.002, 3))
	c = bytes.Replace(c, []byte(`"seed": 0`), []byte(`"seed": 99`), 1)
	if _, err := compare.Compare(a, read(t, c), compare.Config{}); err != nil {
		t.Errorf("another seed: %v, want no refusal", err)
	}
}

// TestJSONLRuns: rows appended by several runs (a header each) at the
// same rate are one group whose units are the runs; a JSONL file has
// no meta, so only the rows' settings are checked.
func TestJSONLRuns(t *testing.T) {
	var b bytes.Buffer
	for i := range 3 {
		line, _ := json.Marshal(map[string]any{"run_header": benchkit.RunHeader{Program: "serve-load", Started: time.Now().Format(time.RFC3339)}})
		b.Write(append(line, '\n'))
		sink := benchkit.NewJSONLSink(&b)
		for _, r := range rows(30, 50, 0.02, 0.002, uint64(i)) {
			if err := sink.Add(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	b.WriteString("{\"cut\n")
	s := read(t, b.Bytes())
	if s.Kind != compare.KindJSONL || len(s.Groups) != 1 || s.Groups[0].UnitKind != compare.UnitRun || len(s.Groups[0].Units) != 3 {
		t.Fatalf("kind %q, groups %+v; want jsonl, one group of 3 runs", s.Kind, s.Groups)
	}
	if s.Groups[0].Name != "rate=50" || len(s.Warnings) == 0 {
		t.Errorf("group %q, warnings %q; want rate=50 and the cut line warned", s.Groups[0].Name, s.Warnings)
	}
	// A document and rows name their groups alike; what only the
	// document records is said not to be checked.
	doc := read(t, loadDoc(t, "m", 128, "50", rows(100, 50, 0.02, 0.002, 1)))
	res, err := compare.Compare(doc, s, compare.Config{})
	if err != nil {
		t.Fatalf("document against rows: %v", err)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "not checked, only one file records them: ") || !strings.Contains(strings.Join(res.Warnings, "\n"), "lengths") {
		t.Errorf("warnings %q, want the lengths not checked", res.Warnings)
	}
	if res.Rows[0].UnitA != compare.UnitBatch || res.Rows[0].UnitB != compare.UnitRun {
		t.Errorf("units %s and %s, want batches against runs", res.Rows[0].UnitA, res.Rows[0].UnitB)
	}
}

// TestExoDocumentAndRows: exo-bench's document and its JSONL rows, from
// the embedded engine, read as one group per cell with a unit per
// repeat, the same in both; a load file is not compared with them.
func TestExoDocumentAndRows(t *testing.T) {
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer srv.Close()
	eng, err := exo.New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	var jl bytes.Buffer
	r := &benchkit.Runner{Engine: eng, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}, Simulated: true,
		Sinks: []benchkit.Sink{&benchkit.JSONLSink{W: &jl, Exo: true}}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	plan := benchkit.Plan{PP: []int{64}, TG: []int{8}, Concurrency: []int{1, 2}, Repeat: 3}
	rep, err := r.Run(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	var doc bytes.Buffer
	d := benchkit.Document{Runs: rep.Requests, Meta: &benchkit.Meta{RunInfo: benchkit.RunInfo{Model: srv.Model(), Simulated: true, Preset: "fast"}, Plan: plan}}
	if err := benchkit.WriteJSON(&doc, d); err != nil {
		t.Fatal(err)
	}
	sd, sj := read(t, doc.Bytes()), read(t, jl.Bytes())
	if sd.Kind != compare.KindExo || sj.Kind != compare.KindExoJSONL {
		t.Fatalf("kinds %q and %q, want exo and exo-jsonl", sd.Kind, sj.Kind)
	}
	for _, s := range []*compare.Side{sd, sj} {
		if len(s.Groups) != 2 {
			t.Fatalf("%s: %d groups, want 2 cells", s.Kind, len(s.Groups))
		}
		for _, g := range s.Groups {
			if g.UnitKind != compare.UnitRepeat || len(g.Units) != 3 {
				t.Errorf("%s %s: %s × %d, want 3 repeats", s.Kind, g.Name, g.UnitKind, len(g.Units))
			}
			for _, f := range []string{"generation_tps", "prompt_tps", "throughput_tps"} {
				if v, ok := g.Units[0][f]; !ok || !(v > 0) {
					t.Errorf("%s %s: %s = %v, want a positive figure per repeat", s.Kind, g.Name, f, v)
				}
			}
		}
	}
	res, err := compare.Compare(sd, sj, compare.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range res.Rows {
		if row.Verdict != compare.NoChange {
			t.Errorf("the document against its own rows: %s %s %s", row.Group, row.Figure.Name, row.Verdict)
		}
	}
	load := read(t, loadDoc(t, "m", 128, "50", rows(100, 50, 0.02, 0.002, 1)))
	if _, err := compare.Compare(sd, load, compare.Config{}); !errors.Is(err, compare.ErrKinds) {
		t.Errorf("exo against load: %v, want ErrKinds", err)
	}
}

// TestOtherDocuments: multi-turn's sessions document (a group per
// prefix cache mode), bench-qwen's (a group per scale) and a merged
// load read as the runs they hold.
func TestOtherDocuments(t *testing.T) {
	reqs := rows(100, 50, 0.02, 0.002, 1)
	sess := benchkit.SessionsDocument{Meta: benchkit.SessionsMeta{RunInfo: benchkit.RunInfo{Model: "m"}},
		Runs: []benchkit.SessionsRun{{PrefixCache: "radix", Requests: reqs}, {PrefixCache: "naive", Requests: reqs}}}
	bq := map[string]any{"program": "bench-qwen", "trace": "/x/t.jsonl", "rows": 100, "scales": []float64{0.4, 1},
		"runs": []any{map[string]any{"scale": 0.4, "load": json.RawMessage(loadDoc(t, "m", 128, "50", reqs))},
			map[string]any{"scale": 1, "load": json.RawMessage(loadDoc(t, "m", 128, "50", reqs))}}}
	merged := benchkit.MergedLoad{PlanHash: "abc", Segments: 2, Requests: reqs, Summary: benchkit.Summary{Traffic: "poisson(rate=50/s)"}}
	for _, c := range []struct {
		v      any
		kind   string
		groups []string
	}{
		{sess, compare.KindSessions, []string{"prefix_cache=radix", "prefix_cache=naive"}},
		{bq, compare.KindBenchQwen, []string{"scale=0.4", "scale=1"}},
		{merged, compare.KindMerged, []string{"rate=50"}},
	} {
		b, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		s := read(t, b)
		if s.Kind != c.kind || len(s.Groups) != len(c.groups) {
			t.Fatalf("kind %q with %d groups, want %s with %d", s.Kind, len(s.Groups), c.kind, len(c.groups))
		}
		for i, g := range s.Groups {
			if g.Name != c.groups[i] || len(g.Units) != 10 {
				t.Errorf("%s: group %q with %d units, want %q with 10 batches", c.kind, g.Name, len(g.Units), c.groups[i])
			}
		}
		if res, err := compare.Compare(s, s, compare.Config{}); err != nil || res.Tests == 0 {
			t.Errorf("%s against itself: %v", c.kind, err)
		}
	}
}

// TestNotResults: input that is no results file is an error, not an
// empty side.
func TestNotResults(t *testing.T) {
	for _, in := range []string{"", "hello", "[1,2]", "{\"a\":1}\n{\"b\":2}\n", "\x00\x01"} {
		if _, err := compare.Read([]byte(in), compare.Options{}); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// FuzzRead: no input makes the reader panic or hang, and every unit it
// returns holds numbers only.
func FuzzRead(f *testing.F) {
	f.Add(loadDoc(f, "m", 128, "50", rows(30, 50, 0.02, 0.002, 1)))
	f.Add([]byte(`{"meta":{"plan":{"pp":[1]}},"runs":[{"elapsed_s":1,"concurrency":1,"repeat_index":0,"pp_target":5,"tg":2}]}`))
	f.Add([]byte(`{"run_header":{"program":"x"}}` + "\n" + `{"rate":5,"ttft_s":0.1,"done_s":1}` + "\n"))
	f.Add([]byte(`{"program":"bench-qwen","runs":[{"scale":1,"load":{"meta":{"slo":"ttft≤1s"},"requests":[{}]}}]}`))
	f.Add([]byte(`{"plan_hash":"x","requests":[{"done_s":1e308}]}`))
	f.Add([]byte(`{"meta":{"sessions":{}},"runs":[{"requests":null}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := compare.Read(b, compare.Options{Batches: 4, MinBatch: 1})
		if err != nil {
			return
		}
		for _, g := range s.Groups {
			for _, u := range g.Units {
				for k, v := range u {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						t.Fatalf("%s: %s = %v", g.Name, k, v)
					}
				}
			}
		}
		if _, err := compare.Compare(s, s, compare.Config{}); err != nil && !errors.Is(err, compare.ErrKinds) {
			var re *compare.RefusedError
			if errors.As(err, &re) {
				t.Fatalf("a side refused against itself: %v", err)
			}
		}
	})
}

// TestJSONLProbesLeftOut: head-of-line probe rows in a rows file are no
// request of the load: none is in a unit, and the side says how many it
// left out.
func TestJSONLProbesLeftOut(t *testing.T) {
	var b bytes.Buffer
	sink := benchkit.NewJSONLSink(&b)
	main := rows(100, 50, 0.02, 0.002, 3)
	for _, r := range main {
		if err := sink.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range rows(20, 50, 5, 0.5, 4) { // slow: they would move every figure
		r.Probe, r.Index = true, len(main)+i
		if err := sink.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	with := read(t, b.Bytes())
	var plain bytes.Buffer
	sink = benchkit.NewJSONLSink(&plain)
	for _, r := range main {
		if err := sink.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	without := read(t, plain.Bytes())
	n := func(s *compare.Side) (k int) {
		for _, g := range s.Groups {
			k += g.Requests
		}
		return k
	}
	if n(with) != n(without) || n(with) != len(main) {
		t.Errorf("requests with probes %d, without %d; want both %d", n(with), n(without), len(main))
	}
	if !strings.Contains(strings.Join(with.Warnings, "\n"), "20 head-of-line probe rows were left out") {
		t.Errorf("warnings %q, want the 20 probes named", with.Warnings)
	}
}

// TestSideSummariesPredicted: a load document's side keeps each run's
// summary as the file holds it, and says whether the file was predicted
// (its meta, or its rows for JSONL) or measured.
func TestSideSummariesPredicted(t *testing.T) {
	reqs := rows(40, 50, 0.02, 0.002, 1)
	doc := loadDoc(t, "m", 128, "50", reqs)
	s := read(t, doc)
	if len(s.Summaries) != 1 || s.Summaries[0].Requests != 40 || s.Summaries[0].Traffic != "poisson(rate=50/s)" || s.Predicted {
		t.Errorf("measured document: %d summaries %+v, predicted %v; want one of 40 requests, measured", len(s.Summaries), s.Summaries, s.Predicted)
	}
	pred := bytes.Replace(doc, []byte(`"meta": {`), []byte(`"meta": {"predicted": true, `), 1)
	if !read(t, pred).Predicted {
		t.Error("a document whose meta says predicted is read as measured")
	}
	var b bytes.Buffer
	for _, r := range reqs {
		r.Predicted = true
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	if j := read(t, b.Bytes()); !j.Predicted || j.Summaries != nil {
		t.Errorf("predicted rows: predicted %v, summaries %v; want predicted and none", j.Predicted, j.Summaries)
	}
}
