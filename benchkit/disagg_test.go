package benchkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
)

func TestCheckDisaggPlan(t *testing.T) {
	tests := []struct {
		name string
		plan Plan
		want string // "" for no error
	}{
		{"above the threshold", Plan{PP: []int{1001, 4096}, TG: []int{8}}, ""},
		{"at the threshold", Plan{PP: []int{4096, 1000}, TG: []int{8}}, "pp=1000 must exceed 1000"},
		{"far below", Plan{PP: []int{512}, TG: []int{8}}, "pp=512 must exceed 1000"},
		{"prefix cache", Plan{PP: []int{2048}, TG: []int{8}, UsePrefixCache: true}, "use_prefix_cache"},
		{"plan rule", Plan{PP: []int{2048}, TG: []int{1}}, "tg=1"},
	}
	for _, tc := range tests {
		err := CheckDisaggPlan(tc.plan)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !errors.Is(err, ErrBadPlan) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v, want ErrBadPlan saying %q", tc.name, err, tc.want)
		}
	}
}

func TestResolveNode(t *testing.T) {
	ids := map[string]exo.NodeIdentity{
		"n1": {FriendlyName: "mike"},
		"n2": {FriendlyName: "james"},
		"n3": {FriendlyName: "James's Mac Studio"},
	}
	tests := []struct {
		name, want, err string
	}{
		{"n2", "n2", ""},
		{"MIKE", "n1", ""},
		{"james", "n2", ""}, // exact beats the substring of n3
		{"studio", "n3", ""},
		{"m", "", "part of 3 node names"}, // mike, james, James's Mac Studio
		{"zoe", "", `no node is named "zoe"`},
	}
	for _, tc := range tests {
		got, err := ResolveNode(ids, tc.name)
		if tc.err != "" {
			if !errors.Is(err, ErrNodeNotFound) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want ErrNodeNotFound saying %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func f64(v float64) *float64 { return &v }

// disaggRow makes a row of phase with the given figures; ttft < 0 leaves
// TTFT unset (an unstreamed row).
func disaggRow(phase string, elapsed, ttft, ptps, gtps float64) DisaggRow {
	r := Row{PPTarget: 2048, PPTokens: 2048, TG: 16, Concurrency: 1, ElapsedS: elapsed,
		Stats: &engine.ServerStats{PromptTPS: ptps, GenerationTPS: gtps, PromptTokens: 2048, GenerationTokens: 16}}
	if ttft >= 0 {
		r.TTFTS = f64(ttft)
	}
	return DisaggRow{Row: r, Phase: phase}
}

func TestCompareDisagg(t *testing.T) {
	failed := disaggRow(PhaseDecodeAlone, 99, 99, 1, 1)
	failed.Error = "boom"
	rows := []DisaggRow{
		disaggRow(PhasePrefillAlone, 1.5, 0.5, 4000, 40),
		disaggRow(PhaseDisaggregated, 1.0, 0.2, 10000, 50),
		disaggRow(PhaseDisaggregated, 2.0, 0.4, 6000, 30),
		disaggRow(PhaseDecodeAlone, 3.0, 0.9, 2000, 40),
		failed,
	}
	// A second cell, streamed in no phase: TTFT undefined.
	other := disaggRow(PhaseDisaggregated, 4, -1, 1000, 20)
	other.PPTarget = 4096
	rows = append(rows, other, func() DisaggRow { r := disaggRow(PhaseDecodeAlone, 5, -1, 500, 10); r.PPTarget = 4096; return r }())

	got := CompareDisagg(rows)
	// Hand-computed: disaggregated means elapsed 1.5, TTFT 0.3, prompt
	// 8000, gen 40.
	want := []DisaggComparison{
		{PP: 2048, TG: 16, Concurrency: 1,
			Phases: []PhaseFigures{
				{Phase: PhaseDisaggregated, Requests: 2, ElapsedS: f64(1.5), TTFTS: f64(0.3), PromptTPS: f64(8000), GenerationTPS: f64(40)},
				{Phase: PhaseDecodeAlone, Requests: 1, Failed: 1, ElapsedS: f64(3), TTFTS: f64(0.9), PromptTPS: f64(2000), GenerationTPS: f64(40)},
				{Phase: PhasePrefillAlone, Requests: 1, ElapsedS: f64(1.5), TTFTS: f64(0.5), PromptTPS: f64(4000), GenerationTPS: f64(40)},
			},
			Speedups: []Speedup{
				{Baseline: PhaseDecodeAlone, Elapsed: f64(2), TTFT: f64(3), PromptTPS: f64(4), GenerationTPS: f64(1)},
				{Baseline: PhasePrefillAlone, Elapsed: f64(1), TTFT: f64(0.5 / 0.3), PromptTPS: f64(2), GenerationTPS: f64(1)},
			}},
		{PP: 4096, TG: 16, Concurrency: 1,
			Phases: []PhaseFigures{
				{Phase: PhaseDisaggregated, Requests: 1, ElapsedS: f64(4), PromptTPS: f64(1000), GenerationTPS: f64(20)},
				{Phase: PhaseDecodeAlone, Requests: 1, ElapsedS: f64(5), PromptTPS: f64(500), GenerationTPS: f64(10)},
			},
			Speedups: []Speedup{{Baseline: PhaseDecodeAlone, Elapsed: f64(1.25), PromptTPS: f64(2), GenerationTPS: f64(2)}}},
	}
	approx := cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) })
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("CompareDisagg (-want +got):\n%s", diff)
	}
}

func TestCompareDisaggWithoutDisaggregatedPhase(t *testing.T) {
	got := CompareDisagg([]DisaggRow{disaggRow(PhaseDecodeAlone, 1, 0.1, 100, 10)})
	if len(got) != 1 || len(got[0].Speedups) != 0 || len(got[0].Phases) != 1 {
		t.Errorf("got %+v, want one cell with one phase and no speedup", got)
	}
}

func TestParseSimReport(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name       string
		body       string
		wantRemote bool
		want       PrefillCheck
	}{
		{"remote as wanted", `{"sim":{"remote_prefill":true,"instance_id":"d"}}`, true,
			PrefillCheck{Reported: true, Remote: &yes, ServedBy: "d", WantRemote: true, WantServedBy: "d", OK: &yes}},
		{"local but remote wanted", `{"sim":{"remote_prefill":false,"instance_id":"d"}}`, true,
			PrefillCheck{Reported: true, Remote: &no, ServedBy: "d", WantRemote: true, WantServedBy: "d", OK: &no}},
		{"another instance", `{"sim":{"remote_prefill":false,"instance_id":"x"}}`, false,
			PrefillCheck{Reported: true, Remote: &no, ServedBy: "x", WantServedBy: "d", OK: &no}},
		{"no sim block", `{"choices":[]}`, true, PrefillCheck{WantRemote: true, WantServedBy: "d"}},
	}
	for _, tc := range tests {
		got, err := parseSimReport([]byte(tc.body), PrefillCheck{WantRemote: tc.wantRemote, WantServedBy: "d"})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got.Note == "" {
			t.Errorf("%s: no note", tc.name)
		}
		got.Note = ""
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	if _, err := parseSimReport([]byte("<html>"), PrefillCheck{}); err == nil {
		t.Error("an HTML body decoded")
	}
}

func FuzzParseSimReport(f *testing.F) {
	f.Add([]byte(`{"sim":{"remote_prefill":true,"instance_id":"d"}}`))
	f.Add([]byte(`{"sim":{"remote_prefill":null}}`))
	f.Add([]byte(`{"sim":[]}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"sim":{"remote_prefill":false,"instance_id":7}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		chk, err := parseSimReport(body, PrefillCheck{WantRemote: true, WantServedBy: "d"})
		if err != nil {
			return
		}
		if chk.Reported != (chk.OK != nil) || chk.Reported != (chk.Remote != nil) {
			t.Errorf("reported %v with ok %v and remote %v", chk.Reported, chk.OK, chk.Remote)
		}
		if chk.OK != nil && *chk.OK != (*chk.Remote && chk.ServedBy == "d") {
			t.Errorf("ok %v for remote %v served by %q", *chk.OK, *chk.Remote, chk.ServedBy)
		}
	})
}

// simCluster starts the embedded engine with two nodes and no instance,
// and a client of it.
func simCluster(t *testing.T, opts sim.Options) (*sim.Server, *exo.Client) {
	t.Helper()
	opts.Preset, opts.Nodes, opts.NoInstance = sim.Fast(), 2, true
	if opts.LoadDelay == 0 {
		opts.LoadDelay = -1
	}
	s := sim.NewServer(opts)
	t.Cleanup(s.Close)
	c, err := exo.New(s.URL, &exo.Options{PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// newDisagg selects a pair on the sim and returns a Disagg of it.
func newDisagg(t *testing.T, s *sim.Server, c *exo.Client) *Disagg {
	t.Helper()
	ctx := context.Background()
	card, err := c.ResolveModel(ctx, s.Model(), false)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := SelectDisaggPair(ctx, c, DisaggSide{Card: card}, DisaggSide{Card: card}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &Disagg{Client: c, Pair: pair, Runner: Runner{Builder: &promptsize.Builder{Counter: s.Counter()}, Simulated: true}}
}

// assertClean fails unless the cluster holds no instance and no link.
func assertClean(t *testing.T, c *exo.Client) {
	t.Helper()
	ctx := context.Background()
	ins, err := c.Instances(ctx)
	if err != nil || len(ins) != 0 {
		t.Errorf("instances left: %v (%v)", ins, err)
	}
	links, err := c.Links(ctx)
	if err != nil || len(links) != 0 {
		t.Errorf("links left: %v (%v)", links, err)
	}
}

func TestDisaggRunOnSim(t *testing.T) {
	s, c := simCluster(t, sim.Options{})
	d := newDisagg(t, s, c)
	if !d.Pair.DecodeDeferred {
		// The sim places each 1-node preview on its emptiest node, node 1
		// while both are idle; when it learns to honour node_ids this
		// test only loses the deferred path.
		t.Logf("the decode placement was chosen up front: %s", d.Pair.Describe("decode"))
	}
	d.CompareBaseline = true
	var streamed []DisaggRow
	d.OnRow = func(r DisaggRow) error { streamed = append(streamed, r); return nil }
	const pp, tg = 4096, 4
	res, err := d.Run(context.Background(), Plan{PP: []int{pp}, TG: []int{tg}})
	if err != nil {
		t.Fatalf("Run: %v (warnings %v)", err, res.Warnings)
	}
	assertClean(t, c)
	var phases []string
	for _, ph := range res.Phases {
		phases = append(phases, ph.Phase)
		if ph.Check == nil || ph.Check.OK == nil || !*ph.Check.OK {
			t.Errorf("%s: check %+v", ph.Phase, ph.Check)
		}
	}
	if diff := cmp.Diff([]string{PhasePrefillAlone, PhaseDisaggregated, PhaseDecodeAlone}, phases); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	if len(res.Rows) != 3 || len(streamed) != 3 {
		t.Fatalf("%d rows, %d streamed; want 3", len(res.Rows), len(streamed))
	}
	pn, dn := res.Pair.Prefill.Instance.Nodes(), res.Pair.Decode.Instance.Nodes()
	if !disjoint(pn, dn) || res.LinkID == "" {
		t.Errorf("prefill on %v, decode on %v, link %q", pn, dn, res.LinkID)
	}
	byPhase := map[string]DisaggRow{}
	for _, r := range res.Rows {
		if r.Failed() || r.Stats == nil || r.Stats.PromptTokens != pp || r.Stats.GenerationTokens != tg {
			t.Fatalf("row %+v", r.Row)
		}
		byPhase[r.Phase] = r
	}
	if got := byPhase[PhasePrefillAlone].InstanceID; got != res.Pair.Prefill.Instance.ID {
		t.Errorf("prefill_alone measured instance %s", got)
	}
	if got := byPhase[PhaseDisaggregated].InstanceID; got != res.Pair.Decode.Instance.ID {
		t.Errorf("disaggregated measured instance %s", got)
	}
	// The sim's prompt_tps is (u − 1) / prefill seconds locally and
	// (u − 1) / (prefill + KV transfer seconds) remotely, the transfer
	// carrying kv bytes per token over the link: check both from the
	// preset's own cost model.
	p := sim.Fast()
	prefill := p.PrefillTime(pp-1, 0, 0).Seconds()
	transfer := p.Model.KVBytesPerToken() * pp / p.Hardware.LinkBandwidth
	local := float64(pp-1) / prefill
	remote := float64(pp-1) / (prefill + transfer)
	for phase, want := range map[string]float64{PhaseDecodeAlone: local, PhasePrefillAlone: local, PhaseDisaggregated: remote} {
		if got := byPhase[phase].Stats.PromptTPS; math.Abs(got-want)/want > 0.01 {
			t.Errorf("%s prompt_tps %.1f, want %.1f within 1%%", phase, got, want)
		}
	}
}

func TestDisaggRemovesEverythingWhenRequestsFail(t *testing.T) {
	s, c := simCluster(t, sim.Options{Fault: sim.Fault{Kind: sim.FaultStatus500}})
	d := newDisagg(t, s, c)
	res, err := d.Run(context.Background(), Plan{PP: []int{2000}, TG: []int{4}, Repeat: 2})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	assertClean(t, c)
	if len(res.Rows) != 2 {
		t.Fatalf("%d rows, want 2", len(res.Rows))
	}
	for _, r := range res.Rows {
		if !r.Failed() || r.ErrorKind != string(engine.KindStatus) {
			t.Errorf("row error %q kind %q, want a status error", r.Error, r.ErrorKind)
		}
	}
	// The probe is exempt from the injected fault, so the check still ran.
	if ph := res.Phases[0]; ph.Failed != 2 || ph.Check == nil || ph.Check.OK == nil || !*ph.Check.OK {
		t.Errorf("phase %+v", ph)
	}
}

func TestDisaggInterruptedRemovesEverything(t *testing.T) {
	// Cancel once the first measured request reaches the engine, which
	// stalls it for a minute.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, c := simCluster(t, sim.Options{Fault: sim.Fault{Kind: sim.FaultStall, After: -1, Duration: time.Minute},
		Logger: slog.New(onMessage{"sim: injecting a fault", cancel})})
	d := newDisagg(t, s, c)
	res, err := d.Run(ctx, Plan{PP: []int{2000}, TG: []int{4}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if !res.Interrupted || ExitCode(err) != ExitInterrupted {
		t.Errorf("interrupted %v, exit %d", res.Interrupted, ExitCode(err))
	}
	assertClean(t, c)
}

// onMessage is a slog.Handler that calls fn on every record with message
// msg, at any level.
type onMessage struct {
	msg string
	fn  func()
}

func (h onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.fn()
	}
	return nil
}
func (h onMessage) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h onMessage) WithGroup(string) slog.Handler      { return h }

func TestDisaggRefusesWithoutDisaggregation(t *testing.T) {
	s, c := simCluster(t, sim.Options{NoDisaggregation: true})
	d := newDisagg(t, s, c)
	_, err := d.Run(context.Background(), Plan{PP: []int{2000}, TG: []int{4}})
	if !errors.Is(err, exo.ErrDisaggregationDisabled) {
		t.Fatalf("err = %v, want ErrDisaggregationDisabled", err)
	}
	assertClean(t, c)
}

func TestDisaggRefusesShortPrompts(t *testing.T) {
	s, c := simCluster(t, sim.Options{})
	d := newDisagg(t, s, c)
	_, err := d.Run(context.Background(), Plan{PP: []int{800}, TG: []int{4}})
	if !errors.Is(err, ErrBadPlan) || !strings.Contains(err.Error(), "pp=800 must exceed 1000") {
		t.Fatalf("err = %v", err)
	}
	assertClean(t, c)
}

func TestSelectDisaggPairNamedNodes(t *testing.T) {
	s, c := simCluster(t, sim.Options{Nodes: 2})
	ctx := context.Background()
	card, err := c.ResolveModel(ctx, s.Model(), false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = SelectDisaggPair(ctx, c, DisaggSide{Card: card, Node: "sim-node-9"}, DisaggSide{Card: card}, 0)
	if !errors.Is(err, ErrNodeNotFound) || !strings.Contains(err.Error(), "sim-node-1") {
		t.Errorf("unknown node: err = %v", err)
	}
	pair, err := SelectDisaggPair(ctx, c, DisaggSide{Card: card, Node: "sim-node-1"}, DisaggSide{Card: card, Node: "sim-node-2"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := pair.Prefill.Instance.Nodes(); len(got) != 1 || pair.NodeNames[got[0]] == "" || !strings.HasPrefix(pair.NodeNames[got[0]], "sim-node-1 ") {
		t.Errorf("prefill on %v (%v)", got, pair.NodeNames)
	}
	if pair.Decode.Instance.ID == "" && !(pair.DecodeDeferred && cmp.Equal(pair.DecodeSide.Filter.NodeIDs, []string{"12D3KooWSimNode02"})) {
		t.Errorf("decode %+v deferred %v side %+v", pair.Decode, pair.DecodeDeferred, pair.DecodeSide.Filter)
	}
	if !strings.Contains(pair.Describe("prefill"), "sim-node-1") {
		t.Errorf("describe: %s", pair.Describe("prefill"))
	}
}

func TestWriteDisaggTable(t *testing.T) {
	yes, no := true, false
	doc := NewDisaggDocument(DisaggMeta{Simulated: true, Preset: "fast", Prefill: "P", Decode: "D"}, DisaggResult{
		Rows: []DisaggRow{
			disaggRow(PhaseDisaggregated, 1.0, 0.2, 10000, 50),
			disaggRow(PhaseDecodeAlone, 2.0, 0.4, 5000, 50),
		},
		Phases: []PhaseReport{
			{Phase: PhaseDisaggregated, Check: &PrefillCheck{Reported: true, OK: &no, Note: "ran locally"}},
			{Phase: PhaseDecodeAlone, Check: &PrefillCheck{Reported: true, OK: &yes, Note: "fine"}},
		},
		LinkID: "L", Warnings: []string{"w1"},
	})
	for _, md := range []bool{false, true} {
		var b bytes.Buffer
		if err := WriteDisaggTable(&b, doc, md); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, want := range []string{"SIMULATED (fast)", "link:    L", "pp=2048 tg=16 concurrency=1", "decode_alone", "2.00x",
			"disaggregated: WRONG: ran locally", "decode_alone: ok: fine", "w1"} {
			if !strings.Contains(out, want) {
				t.Errorf("markdown=%v: output lacks %q:\n%s", md, want, out)
			}
		}
		if md && !strings.Contains(out, "| phase | requests |") {
			t.Errorf("not a Markdown table:\n%s", out)
		}
	}
	var b bytes.Buffer
	if err := WriteDisaggJSON(&b, doc); err != nil {
		t.Fatal(err)
	}
	var back DisaggDocument
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(doc.Comparison, back.Comparison); diff != "" || back.Runs[0].Phase != PhaseDisaggregated || back.Runs[0].PPTokens != 2048 {
		t.Errorf("JSON round trip: %s %+v", diff, back.Runs[0])
	}
}

func ExampleCompareDisagg() {
	row := func(phase string, elapsed, ttft float64) DisaggRow {
		return DisaggRow{Phase: phase, Row: Row{PPTarget: 4096, TG: 128, Concurrency: 1, ElapsedS: elapsed, TTFTS: &ttft}}
	}
	cells := CompareDisagg([]DisaggRow{
		row(PhaseDisaggregated, 2.0, 0.25), row(PhaseDisaggregated, 2.2, 0.35),
		row(PhaseDecodeAlone, 3.15, 0.9),
	})
	for _, c := range cells {
		for _, s := range c.Speedups {
			fmt.Printf("pp=%d: disaggregated vs %s: elapsed %.2fx, TTFT %.2fx\n", c.PP, s.Baseline, *s.Elapsed, *s.TTFT)
		}
	}
	// Output:
	// pp=4096: disaggregated vs decode_alone: elapsed 1.50x, TTFT 3.00x
}

// proxied puts a reverse proxy in front of s whose responses pass
// through edit, and returns a client of the proxy.
func proxied(t *testing.T, s *sim.Server, edit func(*http.Response) error) *exo.Client {
	t.Helper()
	target, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(target)
	p.ModifyResponse = edit
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)
	c, err := exo.New(front.URL, &exo.Options{PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDisaggFailsWhenPrefillRanLocally(t *testing.T) {
	s, _ := simCluster(t, sim.Options{})
	// An engine that reports every prefill as local.
	c := proxied(t, s, func(r *http.Response) error {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return err
		}
		b = bytes.ReplaceAll(b, []byte(`"remote_prefill":true`), []byte(`"remote_prefill":false`))
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		r.Header.Set("Content-Length", fmt.Sprint(len(b)))
		return nil
	})
	d := newDisagg(t, s, c)
	res, err := d.Run(context.Background(), Plan{PP: []int{2000}, TG: []int{4}})
	if !errors.Is(err, ErrPrefillNotRemote) || !strings.Contains(err.Error(), "ran locally") {
		t.Fatalf("err = %v, want ErrPrefillNotRemote", err)
	}
	if len(res.Rows) != 1 || res.Rows[0].Failed() {
		t.Errorf("rows %+v", res.Rows)
	}
	assertClean(t, c)
}

func TestDisaggSaysWhenTheEngineCannotTell(t *testing.T) {
	s, _ := simCluster(t, sim.Options{})
	// An engine that does not label itself simulated, as exo.
	c := proxied(t, s, func(r *http.Response) error { r.Header.Del(simHeader); return nil })
	d := newDisagg(t, s, c)
	res, err := d.Run(context.Background(), Plan{PP: []int{2000}, TG: []int{4}})
	if err != nil {
		t.Fatal(err)
	}
	assertClean(t, c)
	if len(res.Phases) != 1 {
		t.Fatalf("phases %+v", res.Phases)
	}
	if chk := res.Phases[0].Check; chk == nil || chk.Reported || chk.OK != nil || !strings.Contains(chk.Note, "does not report where") {
		t.Errorf("check %+v", chk)
	}
}
