package benchkit

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/metrics/view"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// vllmTTFTBuckets are vLLM's default time_to_first_token buckets.
var vllmTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}

// fakeMetrics is a /metrics endpoint written with expfmt from what the
// test observes: one TTFT histogram, a finished-request counter and the
// running gauge, as vLLM names them.
type fakeMetrics struct {
	mu       sync.Mutex
	ttft     []float64
	requests int
	running  float64
	block    chan struct{} // when set, a scrape hangs until it is closed
	endless  bool          // a scrape streams series without end
}

func (f *fakeMetrics) observe(ttft float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ttft = append(f.ttft, ttft)
	f.requests++
}

func (f *fakeMetrics) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ttft, f.requests = nil, 0
}

func (f *fakeMetrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	block, endless := f.block, f.endless
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-r.Context().Done():
		}
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	if endless {
		for i := 0; r.Context().Err() == nil; i++ {
			if _, err := fmt.Fprintf(w, "vllm:junk_total{i=\"%d\"} 1\n", i); err != nil {
				return
			}
		}
		return
	}
	f.mu.Lock()
	h := &dto.Histogram{SampleCount: proto.Uint64(uint64(len(f.ttft))), SampleSum: proto.Float64(0)}
	for _, b := range vllmTTFTBuckets {
		n := 0
		for _, v := range f.ttft {
			if v <= b {
				n++
			}
		}
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(b), CumulativeCount: proto.Uint64(uint64(n))})
	}
	sum := 0.0
	for _, v := range f.ttft {
		sum += v
	}
	h.SampleSum = proto.Float64(sum)
	lbl := []*dto.LabelPair{{Name: proto.String("engine"), Value: proto.String("0")}, {Name: proto.String("model_name"), Value: proto.String("m")}}
	fams := []*dto.MetricFamily{
		{Name: proto.String("vllm:time_to_first_token_seconds"), Help: proto.String("ttft"), Type: dto.MetricType_HISTOGRAM.Enum(),
			Metric: []*dto.Metric{{Label: lbl, Histogram: h}}},
		{Name: proto.String("vllm:request_success_total"), Help: proto.String("finished"), Type: dto.MetricType_COUNTER.Enum(),
			Metric: []*dto.Metric{{Label: append(slices.Clone(lbl), &dto.LabelPair{Name: proto.String("finished_reason"), Value: proto.String("length")}),
				Counter: &dto.Counter{Value: proto.Float64(float64(f.requests))}}}},
		{Name: proto.String("vllm:num_requests_running"), Help: proto.String("running"), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Label: lbl, Gauge: &dto.Gauge{Value: proto.Float64(f.running)}}}},
	}
	f.mu.Unlock()
	for _, mf := range fams {
		if _, err := expfmt.MetricFamilyToText(w, mf); err != nil {
			return
		}
	}
}

// serverLoad is a Load on the embedded engine whose requests the fake
// metrics observe, each with a server TTFT of 90 % of the client's (the
// rest being, say, the network), through onDone.
func serverLoad(t *testing.T, f *fakeMetrics, onDone func(i int)) (*Load, *view.Scraper) {
	t.Helper()
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	t.Cleanup(srv.Close)
	c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	ms := httptest.NewServer(f)
	t.Cleanup(ms.Close)
	var mu sync.Mutex
	n := 0
	e := engine.Func(func(ctx context.Context, req engine.Request) (engine.Result, error) {
		res, err := c.Complete(ctx, req)
		if ttft, terr := res.Trace.TTFT(); err == nil && terr == nil {
			f.observe(0.9 * ttft.Seconds())
		}
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		if onDone != nil {
			onDone(i)
		}
		return res, err
	})
	m := &view.Scraper{URL: ms.URL + "/metrics", Timeout: time.Second, IdleWait: time.Second, Settle: -1}
	return &Load{Engine: e, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}, ServerMetrics: m}, m
}

// TestServerViewBesideClient: the server's mean is its observations'
// exactly, each percentile's bounds hold the true order statistic, the
// bucket layout is recorded, and the client's mean sits beside it.
func TestServerViewBesideClient(t *testing.T) {
	f := &fakeMetrics{}
	f.observe(0.5) // traffic before the window is not the run's
	l, _ := serverLoad(t, f, nil)
	run, err := l.Run(context.Background(), Lengths{Input: 64, Output: 4, RangeRatio: 0.5, Seed: 3}, Traffic{Rate: math.Inf(1), NumRequests: 12, MaxConcurrency: 3}, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	v := run.Summary.Server
	if v == nil || v.TTFT == nil {
		t.Fatalf("Summary.Server = %+v; want a TTFT figure", v)
	}
	if len(v.Warnings) != 0 {
		t.Errorf("warnings %q on a clean window", v.Warnings)
	}
	obs := slices.Clone(f.ttft[1:])
	if v.Requests == nil || *v.Requests != 12 || v.TTFT.Count != 12 {
		t.Fatalf("server requests %v, TTFT count %v; want 12", v.Requests, v.TTFT.Count)
	}
	sum := 0.0
	for _, x := range obs {
		sum += x
	}
	if want := sum / 12; math.Abs(v.TTFT.Mean-want) > 1e-12*want {
		t.Errorf("server TTFT mean %v; want the observations' %v", v.TTFT.Mean, want)
	}
	slices.Sort(obs)
	for _, p := range []struct {
		q float64
		p view.Percentile
	}{{0.5, v.TTFT.P50}, {0.9, v.TTFT.P90}, {0.99, v.TTFT.P99}} {
		// The order statistic at rank ⌈q·N⌉ is what histogram_quantile brackets.
		k := int(math.Ceil(p.q*float64(len(obs)))) - 1
		x := obs[max(k, 0)]
		if p.p.Upper == nil || p.p.Lower == nil || p.p.Min == nil || p.p.Max == nil || !(x > *p.p.Lower && x <= *p.p.Upper) ||
			x < *p.p.Min || x > *p.p.Max || p.p.Point && (p.p.Value < *p.p.Min || p.p.Value > *p.p.Max) {
			t.Errorf("p%v = %v (%+v); the true order statistic %v is outside its bounds", p.q*100, p.p, p.p, x)
		}
	}
	if diff := slices.Compare(v.TTFT.Buckets, vllmTTFTBuckets); diff != 0 {
		t.Errorf("recorded layout %v; want the served %v", v.TTFT.Buckets, vllmTTFTBuckets)
	}
	if len(v.Beside) != 1 || v.Beside[0].Figure != "ttft_s" {
		t.Fatalf("beside = %+v; want TTFT", v.Beside)
	}
	b := v.Beside[0]
	if b.Client != *run.Summary.TTFT.Mean || b.Server != v.TTFT.Mean || math.Abs(b.Difference-(b.Client-b.Server)) > 1e-15 {
		t.Errorf("comparison %+v; want the client's %v beside the server's %v", b, *run.Summary.TTFT.Mean, v.TTFT.Mean)
	}
	if b.Difference <= 0 || math.Abs(b.Server/b.Client-0.9) > 1e-9 {
		t.Errorf("server TTFT is 0.9 × the client's by construction; got %v of %v", b.Server, b.Client)
	}
	// The table sets the server's columns beside the client's.
	var out strings.Builder
	if err := WriteTable(&out, []Summary{run.Summary}, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%.2f/%.2f/%+.2f", b.Client*1000, b.Server*1000, b.Difference*1000)
	if !strings.Contains(out.String(), v.URL) || !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "12/12") {
		t.Errorf("table lacks the server view (%s, %q, 12/12):\n%s", v.URL, want, out.String())
	}
	out.Reset()
	if err := run.Summary.WriteServerView(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), v.URL) || !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "12/12") {
		t.Errorf("WriteServerView lacks the server view (%s, %q, 12/12):\n%s", v.URL, want, out.String())
	}
	out.Reset()
	if err := (Summary{}).WriteServerView(&out); err != nil || out.Len() != 0 {
		t.Errorf("WriteServerView of a summary without a server view wrote %q, %v", out.String(), err)
	}
}

// TestServerViewRefusals: a restart between the scrapes and a foreign
// request in the window each give a warning and no server figure, and the
// client's figures are whole.
func TestServerViewRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		during     func(f *fakeMetrics, i int)
	}{
		{"restart", "refused", func(f *fakeMetrics, i int) {
			if i == 2 {
				f.reset()
			}
		}},
		{"foreign request", "foreign traffic", func(f *fakeMetrics, i int) {
			if i == 1 {
				f.observe(0.01)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeMetrics{}
			for range 5 {
				f.observe(0.2)
			}
			l, _ := serverLoad(t, f, func(i int) { tc.during(f, i) })
			run, err := l.Run(context.Background(), Lengths{Input: 48, Output: 3}, Traffic{Users: 1, NumRequests: 4}, timing.SLO{})
			if err != nil {
				t.Fatal(err)
			}
			s := run.Summary
			if s.Completed != 4 || s.TTFT.Mean == nil {
				t.Fatalf("client figures: %d completed, TTFT %v", s.Completed, s.TTFT.Mean)
			}
			v := s.Server
			if v == nil || v.TTFT != nil || v.Requests != nil {
				t.Fatalf("server view %+v; want no figures", v)
			}
			if !slices.ContainsFunc(v.Warnings, func(w string) bool { return strings.Contains(w, tc.want) }) {
				t.Errorf("warnings %q; want one saying %q", v.Warnings, tc.want)
			}
			// Each warning is printed once: by the table's notes (or
			// WriteServerView), never also from the summary's Warnings.
			if slices.ContainsFunc(s.Warnings, func(w string) bool { return strings.HasPrefix(w, "server metrics: ") }) {
				t.Errorf("summary warnings %q repeat the server view's", s.Warnings)
			}
			for _, print := range []func(w io.Writer) error{
				func(w io.Writer) error { return WriteTable(w, []Summary{s}, TableOptions{}) },
				s.WriteServerView,
			} {
				var out strings.Builder
				if err := print(&out); err != nil {
					t.Fatal(err)
				}
				for _, w := range v.Warnings {
					// Compared with the lines unwrapped: a terminal's width wraps a long warning.
					if n := strings.Count(unwrapped(out.String()), unwrapped(w)); n != 1 {
						t.Errorf("warning %q printed %d times:\n%s", w, n, out.String())
					}
				}
			}
		})
	}
}

// TestServerViewHostile: a /metrics that hangs, one without end and a
// server that never goes idle each cost a bounded time and end in a
// warning; the client's measurement is whole.
func TestServerViewHostile(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		set        func(f *fakeMetrics, m *view.Scraper)
	}{
		{"hangs", "deadline exceeded", func(f *fakeMetrics, m *view.Scraper) { f.block = make(chan struct{}) }},
		{"endless body", "byte limit", func(f *fakeMetrics, m *view.Scraper) { f.endless = true; m.Limits.MaxBytes = 1 << 16 }},
		{"busy at the first scrape", "held 2 requests at the first scrape", func(f *fakeMetrics, m *view.Scraper) { f.running = 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeMetrics{}
			l, m := serverLoad(t, f, nil)
			tc.set(f, m)
			if f.block != nil {
				defer close(f.block)
			}
			t0 := time.Now()
			run, err := l.Run(context.Background(), Lengths{Input: 48, Output: 3}, Traffic{Burst: 3}, timing.SLO{})
			if err != nil {
				t.Fatal(err)
			}
			// Two scrapes of at most a second each, and the run itself.
			if d := time.Since(t0); d > 20*time.Second {
				t.Errorf("the run took %v with a hostile /metrics", d)
			}
			s := run.Summary
			if s.Completed != 3 || s.TTFT.Mean == nil {
				t.Fatalf("client figures: %d completed, TTFT %v", s.Completed, s.TTFT.Mean)
			}
			if s.Server == nil || s.Server.TTFT != nil || !slices.ContainsFunc(s.Server.Warnings, func(w string) bool { return strings.Contains(w, tc.want) }) {
				t.Errorf("server view %+v; want no figures and a warning saying %q", s.Server, tc.want)
			}
		})
	}
}

// TestServerViewNeverIdle: a server whose gauges never fall to 0 after
// the run is given IdleWait, then no figures.
func TestServerViewNeverIdle(t *testing.T) {
	f := &fakeMetrics{}
	l, _ := serverLoad(t, f, func(int) {
		f.mu.Lock()
		f.running = 1
		f.mu.Unlock()
	})
	t0 := time.Now()
	run, err := l.Run(context.Background(), Lengths{Input: 48, Output: 3}, Traffic{Burst: 2}, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 20*time.Second {
		t.Errorf("the run took %v", d)
	}
	v := run.Summary.Server
	if v == nil || v.TTFT != nil || !slices.ContainsFunc(v.Warnings, func(w string) bool { return strings.Contains(w, "still held 1 requests") }) {
		t.Errorf("server view %+v; want no figures and the wait's warning", v)
	}
}

// TestResponseTimings: the servers' per-response timings are summarised
// over the completed requests that carried them, the first token as
// queue + load + prefill and the TPOT as decode / (n − 1), beside the
// client's means; a run without them has none.
func TestResponseTimings(t *testing.T) {
	d := func(ms float64) *time.Duration { v := time.Duration(ms * float64(time.Millisecond)); return &v }
	f := func(v float64) *float64 { return &v }
	reqs := []Request{
		{TTFTS: f(0.030), TPOTS: f(0.011), E2ES: f(0.250), Stats: &engine.ServerStats{Source: "ollama", GenerationTokens: 21, Load: d(2), Prefill: d(20), Decode: d(200), Total: d(230)}},
		{TTFTS: f(0.050), TPOTS: f(0.013), E2ES: f(0.350), Stats: &engine.ServerStats{Source: "ollama", GenerationTokens: 21, Load: d(4), Prefill: d(36), Decode: d(240), Total: d(290)}},
		{Error: "boom", Stats: &engine.ServerStats{Source: "ollama", Prefill: d(999)}},
		{TTFTS: f(0.040), E2ES: f(0.300)}, // exo-style or none: no source
	}
	s := Summary{}
	s.overRequests(reqs, timing.SLO{})
	rt := responseTimings(reqs, s)
	if rt == nil || rt.Source != "ollama" || rt.Requests != 2 {
		t.Fatalf("timings %+v; want two ollama requests", rt)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if rt.Prefill.N != 2 || !near(*rt.Prefill.Mean, 0.028) || !near(*rt.FirstToken.Mean, (0.022+0.040)/2) || !near(*rt.DecodePerToken.Mean, (0.010+0.012)/2) || rt.Queue != nil {
		t.Errorf("prefill %v, first token %v, decode per token %v, queue %v", *rt.Prefill.Mean, *rt.FirstToken.Mean, *rt.DecodePerToken.Mean, rt.Queue)
	}
	want := map[string][2]float64{"ttft_s": {*s.TTFT.Mean, 0.031}, "tpot_s": {*s.TPOT.Mean, 0.011}, "e2e_s": {*s.E2E.Mean, 0.260}}
	if len(rt.Beside) != len(want) {
		t.Fatalf("beside %+v; want %d figures", rt.Beside, len(want))
	}
	for _, c := range rt.Beside {
		w := want[c.Figure]
		if !near(c.Client, w[0]) || !near(c.Server, w[1]) || !near(c.Difference, w[0]-w[1]) {
			t.Errorf("%s: %+v; want client %v server %v", c.Figure, c, w[0], w[1])
		}
	}
	if responseTimings(reqs[3:], s) != nil {
		t.Error("timings from requests that carried none")
	}
}

// TestServerViewOfTheEmbeddedEngine: against the embedded engine's own
// /metrics, a clean run's server figures count exactly its requests and
// tokens, and set each mean beside the client's; a restart between the
// scrapes (ResetMetrics) and a request of another client in the window
// each give the warning and no server figure.
func TestServerViewOfTheEmbeddedEngine(t *testing.T) {
	for _, tc := range []struct{ name, want string }{{"clean", ""}, {"restart", "refused"}, {"foreign", "foreign traffic"}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
			defer srv.Close()
			c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseIdleConnections()
			other, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
			if err != nil {
				t.Fatal(err)
			}
			defer other.CloseIdleConnections()
			// Traffic before the window, more than the run sends: a
			// restart then sets every counter below the first scrape's.
			for range 6 {
				if _, err := other.Complete(context.Background(), engine.Request{Model: srv.Model(), MaxTokens: 2, Stream: true,
					Messages: []engine.Message{{Role: "user", Content: "before the run"}}}); err != nil {
					t.Fatal(err)
				}
			}
			n := 0
			sink := SinkFunc(func(r Request) error {
				if n++; n != 2 {
					return nil
				}
				switch tc.name {
				case "restart":
					srv.ResetMetrics()
				case "foreign":
					_, err := other.Complete(context.Background(), engine.Request{Model: srv.Model(), MaxTokens: 2, Stream: true,
						Messages: []engine.Message{{Role: "user", Content: "not the run's"}}})
					return err
				}
				return nil
			})
			l := &Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}, Sinks: []Sink{sink},
				ServerMetrics: &view.Scraper{URL: srv.VLLMURL + "/metrics", Settle: -1, SampleEvery: 5 * time.Millisecond}}
			run, err := l.Run(context.Background(), Lengths{Input: 96, Output: 6}, Traffic{Users: 1, NumRequests: 5}, timing.SLO{})
			if err != nil {
				t.Fatal(err)
			}
			s, v := run.Summary, run.Summary.Server
			if s.Completed != 5 || s.TTFT.Mean == nil || v == nil {
				t.Fatalf("%d completed, client TTFT %v, server view %+v", s.Completed, s.TTFT.Mean, v)
			}
			if tc.want != "" {
				if v.TTFT != nil || v.Requests != nil || !slices.ContainsFunc(v.Warnings, func(w string) bool { return strings.Contains(w, tc.want) }) {
					t.Errorf("server view %+v; want no figures and a warning saying %q", v, tc.want)
				}
				return
			}
			if len(v.Warnings) != 0 || v.Requests == nil || *v.Requests != 5 || v.TTFT == nil || v.TTFT.Count != 5 || v.E2E == nil || v.Queue == nil || v.Prefill == nil || v.Decode == nil || v.ITL == nil {
				t.Fatalf("server view %+v; want every vLLM figure over 5 requests", v)
			}
			// One user: the gauges sampled during the run never read more
			// than one request, and some read it running.
			seen := false
			for _, smp := range v.Samples {
				if smp.Running == nil || smp.Waiting == nil || *smp.Running > 1 || *smp.Waiting > 1 || smp.AtS < 0 {
					t.Fatalf("sample %+v; want at most one request, running or waiting", smp)
				}
				seen = seen || *smp.Running+*smp.Waiting == 1
			}
			if len(v.Samples) == 0 || !seen {
				t.Errorf("%d gauge samples, none with the request in the server", len(v.Samples))
			}
			prompt := 0
			for _, r := range run.Requests {
				prompt += *r.ServerPromptTokens
			}
			if v.PromptTokens == nil || *v.PromptTokens != float64(prompt) || v.OutputTokens == nil || *v.OutputTokens != float64(s.TotalOutputTokens) || v.ITL.Count != float64(s.TotalOutputTokens-5) {
				t.Errorf("server tokens %v prompt, %v output, %v ITL samples; want %d, %d, %d", v.PromptTokens, v.OutputTokens, v.ITL.Count, prompt, s.TotalOutputTokens, s.TotalOutputTokens-5)
			}
			// The server's TTFT starts at arrival and ends at the first
			// token's step; the client's adds the HTTP path both ways.
			if b := v.Beside[0]; b.Figure != "ttft_s" || b.Server <= 0 || b.Server > b.Client {
				t.Errorf("TTFT beside the client's: %+v; want 0 < server ≤ client", b)
			}
		})
	}
}

// TestServerViewLlamaCpp: a burst of 16 on the embedded engine's llama.cpp
// profile with 4 slots queues 12 of them in waves. The /metrics view says
// nothing of a request counter llama.cpp lacks, checks its generated
// tokens against the client's and gives its per-step output speed; the
// per-response view gives the server's E2E as prompt_ms + predicted_ms,
// says the TTFT difference holds the wait for a slot, and estimates each
// request's wait: the requests of wave w (w = 0…3, by their estimate)
// waited w × the service time of a wave, the server's E2E (plus, for a
// request that missed the loop's first batch, a batch more).
func TestServerViewLlamaCpp(t *testing.T) {
	const slots, waves, output = 4, 4, 20
	slow := sim.Fast()
	slow.Hardware.StepOverhead = 8 * time.Millisecond
	srv := sim.NewServer(sim.Options{Preset: slow, Profile: sim.LlamaCpp, LlamaCpp: sim.LlamaCppOptions{Slots: slots}})
	t.Cleanup(srv.Close)
	c, err := openai.New(srv.OpenAIURL(), &openai.Options{Counter: srv.Counter()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	m := &view.Scraper{URL: srv.URL + "/metrics", Timeout: 2 * time.Second, IdleWait: 5 * time.Second, Settle: -1}
	l := &Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}, ServerMetrics: m}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := l.Run(ctx, Lengths{Input: 64, Output: output}, Traffic{Burst: slots * waves}, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	s := run.Summary
	if s.Completed != slots*waves {
		t.Fatalf("%d of %d completed", s.Completed, slots*waves)
	}

	// The /metrics window.
	v := s.Server
	if v == nil || v.Server != "llama.cpp" || len(v.Warnings) != 0 {
		t.Fatalf("server view %+v; want llama.cpp's, without warnings", v)
	}
	if v.Requests != nil || v.OutputTokens == nil || *v.OutputTokens != float64(s.TotalOutputTokens) {
		t.Errorf("server requests %v, output tokens %v; want no request count and the client's %d tokens", v.Requests, v.OutputTokens, s.TotalOutputTokens)
	}
	steps, decode := 0, 0.0
	for _, r := range run.Requests {
		steps += r.Stats.GenerationTokens - 1
		decode += r.Stats.Decode.Seconds()
	}
	// Per step, as each response's predicted_per_second; the counter's
	// seconds have a millisecond's resolution.
	if want := float64(steps) / decode; v.OutputTPS == nil || math.Abs(*v.OutputTPS-want) > 0.01*want {
		t.Errorf("server output speed %v; want the responses' per-step %v", v.OutputTPS, want)
	}

	// The per-response view.
	rt := s.Responses
	if rt == nil || rt.Source != "llama.cpp" || rt.Requests != slots*waves || rt.Total == nil || rt.QueueEstimate == nil || rt.HTTPPathEstimate == nil {
		t.Fatalf("server timings %+v; want llama.cpp's for every request, with its E2E and the queue estimated", rt)
	}
	if want := *rt.Prefill.Mean + *rt.Decode.Mean; math.Abs(*rt.Total.Mean-want) > 1e-9 {
		t.Errorf("server E2E mean %v; want prompt_ms + predicted_ms, %v", *rt.Total.Mean, want)
	}
	var ttft *view.Comparison
	for i := range rt.Beside {
		if rt.Beside[i].Figure == "ttft_s" {
			ttft = &rt.Beside[i]
		}
	}
	if ttft == nil || !strings.Contains(ttft.Contains, "wait for a free slot") {
		t.Errorf("TTFT beside the client's: %+v; want it to name the wait for a slot", ttft)
	}
	service, batch := *rt.Total.Mean, *rt.Prefill.Mean
	var wait []float64
	for _, r := range run.Requests {
		if r.TTFTBeyondServerS == nil {
			t.Fatalf("request %d: no ttft_beyond_server_s", r.Index)
		}
		wait = append(wait, *r.TTFTBeyondServerS-*rt.HTTPPathEstimate)
	}
	slices.Sort(wait)
	// The machine's scheduling blurs each wait by up to a tenth of a
	// wave, and each wave's wait carries the blur of those before it.
	for i, w := range wait {
		k := float64(i / slots)
		tol := 0.1 * service * max(1, k)
		if w < k*service-tol || w > k*service+batch+tol {
			t.Errorf("request %d of wave %v: estimated wait %.1f ms; want %.1f–%.1f ms (%v × the service time %.1f ms, and up to a batch of %.1f ms)",
				i, k, w*1e3, (k*service-tol)*1e3, (k*service+batch+tol)*1e3, k, service*1e3, batch*1e3)
		}
	}
	if got := *rt.QueueEstimate.Max; math.Abs(got-wait[len(wait)-1]) > 1e-12 {
		t.Errorf("queue estimate max %v; want the longest wait %v", got, wait[len(wait)-1])
	}

	// Printed once each, with the slot wait named and no word of a
	// request counter.
	var out strings.Builder
	if err := s.WriteServerView(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"llama.cpp", "wait for a free slot", "~", fmt.Sprintf("%.2f", *rt.Total.Mean*1000)} {
		if !strings.Contains(unwrapped(out.String()), want) {
			t.Errorf("server view lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "counts no finished requests") {
		t.Errorf("server view warns of a request counter llama.cpp never has:\n%s", out.String())
	}
	t.Logf("waits (ms): %.1f; service %.1f ms\n%s", func() []float64 {
		ms := make([]float64, len(wait))
		for i, w := range wait {
			ms[i] = w * 1e3
		}
		return ms
	}(), service*1e3, out.String())
}
