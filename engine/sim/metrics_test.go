package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/inferbench/inferbench/engine/metrics"
	"github.com/inferbench/inferbench/internal/testkit"
)

// truth records the schedule as the scheduler lives it: every token's
// instant and every finished request's statistics, independently of the
// metrics code.
type truth struct {
	mu     sync.Mutex
	tokens map[*job][]time.Duration
	ended  []truthReq
}

type truthReq struct {
	f      finalStats
	tokens []time.Duration
}

func (tr *truth) token(j *job, at time.Duration) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.tokens[j] = append(tr.tokens[j], at)
}

func (tr *truth) done(j *job, f *finalStats) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.ended = append(tr.ended, truthReq{f: *f, tokens: tr.tokens[j]})
	delete(tr.tokens, j)
}

// take returns the requests finished so far and forgets them.
func (tr *truth) take() []truthReq {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	d := tr.ended
	tr.ended = nil
	return d
}

func traced(s *Server) *truth {
	tr := &truth{tokens: map[*job][]time.Duration{}}
	var t tracer = tr
	s.trace.Store(&t)
	return tr
}

// samples are the true values of every histogram family, by the vLLM
// definitions of doc.go's Metrics section.
type samples struct {
	ttft, itl, tpot, e2e, queue, prefill, decode, inference []float64
	prompt, generated, cached, itlTokens                    int
	reasons                                                 map[string]int
}

func trueSamples(t *testing.T, reqs []truthReq) samples {
	t.Helper()
	var s samples
	s.reasons = map[string]int{}
	for _, r := range reqs {
		f := r.f
		if len(r.tokens) != f.generated || r.tokens[0] != f.first || r.tokens[len(r.tokens)-1] != f.last {
			t.Fatalf("trace of %d tokens %v disagrees with the final stats (generated %d, first %v, last %v)", len(r.tokens), r.tokens, f.generated, f.first, f.last)
		}
		s.ttft = append(s.ttft, (f.first - f.arrival).Seconds())
		for i := 1; i < len(r.tokens); i++ {
			s.itl = append(s.itl, (r.tokens[i] - r.tokens[i-1]).Seconds())
		}
		decode := (f.last - f.first).Seconds()
		tpot := 0.0
		if f.generated > 1 {
			tpot = decode / float64(f.generated-1)
		}
		s.tpot = append(s.tpot, tpot)
		s.e2e = append(s.e2e, (f.last - f.arrival).Seconds())
		s.queue = append(s.queue, (f.admitted - f.arrival).Seconds())
		s.prefill = append(s.prefill, (f.first - f.admitted).Seconds())
		s.decode = append(s.decode, decode)
		s.inference = append(s.inference, (f.last - f.admitted).Seconds())
		s.prompt += f.promptTokens
		s.generated += f.generated
		s.cached += f.cached
		s.itlTokens += f.generated - 1
		s.reasons[f.reason]++
	}
	return s
}

func scrape(t *testing.T, url string) metrics.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	snap, err := metrics.Scrape(ctx, nil, url, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// gauge sums a gauge family's series.
func gauge(t *testing.T, snap metrics.Snapshot, name string) float64 {
	t.Helper()
	v, ok := snap.GaugeSum(name)
	if !ok {
		t.Fatalf("no gauge %s in the scrape", name)
	}
	return v
}

// waitGauges scrapes until the gauges running and waiting read r and w,
// and returns that scrape.
func waitGauges(t *testing.T, url string, running, waiting string, r, w float64) metrics.Snapshot {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		snap := scrape(t, url)
		gr, gw := gauge(t, snap, running), gauge(t, snap, waiting)
		if gr == r && gw == w {
			return snap
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s %s=%v %s=%v; want %v and %v", running, gr, waiting, gw, r, w)
		}
		time.Sleep(2 * time.Millisecond) // the scheduler moves on its own clock
	}
}

// waitIdle scrapes until the server's gauges say no request is running or
// waiting (the window method's idle condition) and returns that scrape.
func waitIdle(t *testing.T, url string, running, waiting string) metrics.Snapshot {
	t.Helper()
	return waitGauges(t, url, running, waiting, 0, 0)
}

func relClose(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// checkHist compares a windowed histogram with the true samples: the
// layout, every bucket's count exactly, the mean up to rounding, and that
// each percentile's bucket holds the true order statistic.
func checkHist(t *testing.T, w metrics.Window, name string, layout []float64, xs []float64) metrics.Hist {
	t.Helper()
	h, ok := w.Histogram(name)
	if !ok {
		t.Fatalf("%s: not in the window", name)
	}
	if got, want := h.Layout(), append(slices.Clone(layout), math.Inf(1)); !slices.Equal(got, want) {
		t.Errorf("%s: buckets %v, want the defaults %v", name, got, want)
	}
	if h.Count != float64(len(xs)) {
		t.Fatalf("%s: count %v, want %d", name, h.Count, len(xs))
	}
	for _, b := range h.Buckets {
		n := 0
		for _, x := range xs {
			if x <= b.UpperBound {
				n++
			}
		}
		if b.Count != float64(n) {
			t.Errorf("%s: bucket le=%v holds %v, want %d", name, b.UpperBound, b.Count, n)
		}
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	mean, _ := h.Mean()
	if want := sum / float64(len(xs)); !relClose(mean, want) {
		t.Errorf("%s: mean %v, want the true mean %v", name, mean, want)
	}
	sorted := slices.Clone(xs)
	sort.Float64s(sorted)
	for _, q := range []float64{0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1} {
		p, ok := h.Quantile(q)
		if !ok {
			t.Fatalf("%s: no p%v", name, q*100)
		}
		rank := max(int(math.Ceil(q*float64(len(xs)))), 1)
		v := sorted[rank-1]
		if v < p.Lower || (!p.AtLeast && v > p.Upper) {
			t.Errorf("%s: p%v = %v, true order statistic %v outside it", name, q*100, p, v)
		}
	}
	return h
}

func counter(t *testing.T, w metrics.Window, name string) float64 {
	t.Helper()
	v, ok := w.Counter(name)
	if !ok {
		t.Fatalf("%s: not in the window", name)
	}
	return v
}

// postErr POSTs a JSON body; it is safe in goroutines other than the
// test's.
func postErr(url, body string) error {
	resp, err := testkit.Client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: status %d: %s", url, resp.StatusCode, b)
	}
	return nil
}

// concurrently runs the bodies at once against url and fails on any error.
func concurrently(t *testing.T, url string, bodies []string) {
	t.Helper()
	errs := make([]error, len(bodies))
	var wg sync.WaitGroup
	for i, b := range bodies {
		wg.Go(func() { errs[i] = postErr(url, b) })
	}
	testkit.WaitWithin(t, &wg, testkit.Patience)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func ids(n, from int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

// TestMetricsMatchSchedule drives the vLLM families with a mixed run on a
// slow preset, so that the figures spread over the default buckets:
// six concurrent requests of varied prompt and output lengths on a batch
// of three (so half of them queue), then four sharing a 128-token prefix
// (block hits), one stopping at its natural length, and two exo bench
// requests with the same prompt (an exact KVPrefixCache hit). The delta
// between an idle scrape before and one after must equal the truth the
// scheduler recorded: every histogram bucket, mean and percentile, the
// token counters, the hit rate and the finish reasons; the gauges must be
// positive mid-run and zero when idle, and a scraper hammering /metrics
// meanwhile must not disturb anything.
func TestMetricsMatchSchedule(t *testing.T) {
	s := NewServer(Options{Preset: M4MaxLlama8B(), MaxRunning: 3})
	t.Cleanup(s.Close)
	url := s.URL + "/metrics"
	tr := traced(s)

	// Warm-up before the first scrape: the window must subtract it.
	complete(t, s, completionBody(s.Model(), ids(50, 9000), 5, `,"ignore_eos":true`))
	before := waitIdle(t, url, "vllm:num_requests_running", "vllm:num_requests_waiting")
	if v := gauge(t, before, "vllm:kv_cache_usage_perc"); v != 0 {
		t.Errorf("idle kv_cache_usage_perc = %v, want 0", v)
	}
	tr.take()

	// A scraper polling throughout: its scrapes see the run's gauges.
	stop := make(chan struct{})
	type peak struct{ running, waiting, kv float64 }
	peaks := make(chan peak, 1)
	go func() {
		var p peak
		defer func() { peaks <- p }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			resp, err := testkit.Client.Get(url)
			if err != nil {
				return
			}
			snap, err := metrics.Parse(resp.Body, metrics.Options{})
			resp.Body.Close()
			if err != nil {
				return
			}
			get := func(n string) float64 {
				v, _ := snap.GaugeSum(n)
				return v
			}
			p.running = max(p.running, get("vllm:num_requests_running"))
			p.waiting = max(p.waiting, get("vllm:num_requests_waiting"))
			p.kv = max(p.kv, get("vllm:kv_cache_usage_perc"))
			time.Sleep(2 * time.Millisecond)
		}
	}()

	curl := s.VLLMURL + "/v1/completions"
	var wave []string
	for i, n := range [][2]int{{40, 4}, {120, 30}, {200, 12}, {60, 20}, {90, 8}, {150, 25}} {
		wave = append(wave, completionBody(s.Model(), ids(n[0], 1000*(i+1)), n[1], `,"ignore_eos":true`))
	}
	concurrently(t, curl, wave)
	prefix := ids(128, 20000)
	for i, out := range []int{6, 2, 3, 1} {
		p := append(slices.Clone(prefix), ids(16, 30000+100*i)...)
		complete(t, s, completionBody(s.Model(), p, out, `,"ignore_eos":true`))
	}
	// EOS allowed: ends at its natural length ("stop") or at max_tokens.
	complete(t, s, completionBody(s.Model(), ids(30, 40000), 40, ""))
	for range 2 {
		bench(t, s, prompt(40), 7, `,"use_prefix_cache":true`)
	}

	after := waitIdle(t, url, "vllm:num_requests_running", "vllm:num_requests_waiting")
	close(stop)
	p := testkit.RecvWithin(t, peaks, testkit.Patience)
	if p.running <= 0 || p.running > 3 || p.waiting <= 0 || p.kv <= 0 {
		t.Errorf("gauges mid-run peaked at running %v (want 1..3), waiting %v, kv usage %v (want > 0)", p.running, p.waiting, p.kv)
	}
	if v := gauge(t, after, "vllm:kv_cache_usage_perc"); v != 0 {
		t.Errorf("idle kv_cache_usage_perc = %v, want 0", v)
	}

	reqs := tr.take()
	if len(reqs) != 13 {
		t.Fatalf("%d requests finished, want 13", len(reqs))
	}
	x := trueSamples(t, reqs)
	if slices.Max(x.queue) <= 0 || x.cached <= 0 {
		t.Fatalf("the run should queue and hit the cache: max queue %v s, cached %d", slices.Max(x.queue), x.cached)
	}
	w, warns := metrics.Delta(before, after)
	if len(warns) > 0 {
		t.Fatalf("delta refused: %v", warns)
	}
	ttft := checkHist(t, w, "vllm:time_to_first_token_seconds", vllmTTFTBuckets, x.ttft)
	itl := checkHist(t, w, "vllm:inter_token_latency_seconds", vllmITLBuckets, x.itl)
	checkHist(t, w, "vllm:request_time_per_output_token_seconds", vllmITLBuckets, x.tpot)
	e2e := checkHist(t, w, "vllm:e2e_request_latency_seconds", vllmLatencyBuckets, x.e2e)
	checkHist(t, w, "vllm:request_queue_time_seconds", vllmLatencyBuckets, x.queue)
	checkHist(t, w, "vllm:request_prefill_time_seconds", vllmLatencyBuckets, x.prefill)
	checkHist(t, w, "vllm:request_decode_time_seconds", vllmLatencyBuckets, x.decode)
	checkHist(t, w, "vllm:request_inference_time_seconds", vllmLatencyBuckets, x.inference)
	// The helpers of engine/metrics read the same families.
	for _, c := range []struct {
		name string
		get  func() (metrics.Hist, bool)
	}{
		{"vllm:time_to_first_token_seconds", w.TTFT}, {"vllm:inter_token_latency_seconds", w.ITL},
		{"vllm:e2e_request_latency_seconds", w.E2E}, {"vllm:request_queue_time_seconds", w.Queue},
		{"vllm:request_prefill_time_seconds", w.Prefill}, {"vllm:request_decode_time_seconds", w.Decode},
	} {
		if h, ok := c.get(); !ok || h.Family != c.name {
			t.Errorf("helper for %s read %q (ok %v)", c.name, h.Family, ok)
		}
	}
	if itl.Count != float64(x.itlTokens) {
		t.Errorf("ITL count %v, want one per step after the first token: %d", itl.Count, x.itlTokens)
	}

	if v, _ := w.PromptTokens(); v != float64(x.prompt) {
		t.Errorf("prompt tokens %v, want %d", v, x.prompt)
	}
	if v, _ := w.OutputTokens(); v != float64(x.generated) {
		t.Errorf("generation tokens %v, want %d", v, x.generated)
	}
	if q, h := counter(t, w, "vllm:prefix_cache_queries_total"), counter(t, w, "vllm:prefix_cache_hits_total"); q != float64(x.prompt) || h != float64(x.cached) {
		t.Errorf("prefix cache queries %v, hits %v; want %d, %d", q, h, x.prompt, x.cached)
	}
	if r, ok := w.PrefixHitRate(); !ok || !relClose(r, float64(x.cached)/float64(x.prompt)) {
		t.Errorf("prefix hit rate %v (ok %v), want %v", r, ok, float64(x.cached)/float64(x.prompt))
	}
	if n, _ := w.Requests(); n != float64(len(reqs)) {
		t.Errorf("requests %v, want %d", n, len(reqs))
	}
	if err := w.CheckRequests(len(reqs)); err != nil {
		t.Error(err)
	}
	byReason := map[string]int{}
	for _, sr := range w.Families["vllm:request_success_total"].Series {
		if sr.Value > 0 {
			byReason[sr.Labels["finished_reason"]] += int(sr.Value)
		}
	}
	if diff := cmp.Diff(x.reasons, byReason); diff != "" {
		t.Errorf("request_success by finished_reason (-truth +server):\n%s", diff)
	}
	show := func(h metrics.Hist) string {
		m, _ := h.Mean()
		p50, _ := h.Quantile(0.5)
		p99, _ := h.Quantile(0.99)
		return fmt.Sprintf("mean %.4g p50 %v p99 %v", m, p50, p99)
	}
	t.Logf("%d requests, %d prompt tokens (%d cached), %d generated", len(reqs), x.prompt, x.cached, x.generated)
	t.Logf("TTFT %s; ITL %s; E2E %s", show(ttft), show(itl), show(e2e))
	t.Logf("gauge peaks mid-run: running %v, waiting %v, kv usage %.3g", p.running, p.waiting, p.kv)
}

// TestMetricsGaugesAfterCancel: requests whose clients leave, one running
// and one queued, leave both gauges at zero and finish nothing, though the
// tokens the running one got are counted as they happened.
func TestMetricsGaugesAfterCancel(t *testing.T) {
	s := newFast(t, Options{MaxRunning: 1})
	url := s.URL + "/metrics"
	before := waitIdle(t, url, "vllm:num_requests_running", "vllm:num_requests_waiting")
	// waitFor polls the gauges until they read running r and waiting w.
	waitFor := func(r, w float64) {
		t.Helper()
		waitGauges(t, url, "vllm:num_requests_running", "vllm:num_requests_waiting", r, w)
	}
	var cancels []context.CancelFunc
	var wg sync.WaitGroup
	for i := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cancels = append(cancels, cancel)
		body := completionBody(s.Model(), ids(30, 100*i), 20000, `,"ignore_eos":true`)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.VLLMURL+"/v1/completions", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if resp, err := testkit.Client.Do(req); err == nil {
				resp.Body.Close()
			}
		})
		waitFor(1, float64(i)) // the first runs, the second waits
	}
	// The queued one leaves first (so that it is never admitted), then the
	// running one.
	cancels[1]()
	waitFor(1, 0)
	cancels[0]()
	testkit.WaitWithin(t, &wg, testkit.Patience)
	after := waitIdle(t, url, "vllm:num_requests_running", "vllm:num_requests_waiting")
	w, warns := metrics.Delta(before, after)
	if len(warns) > 0 {
		t.Fatalf("delta refused: %v", warns)
	}
	if n, _ := w.Requests(); n != 0 {
		t.Errorf("%v requests finished, want 0", n)
	}
	if h, _ := w.TTFT(); h.Count != 1 {
		t.Errorf("TTFT count %v, want 1 (the running request's)", h.Count)
	}
	if v, _ := w.OutputTokens(); v < 1 {
		t.Errorf("generation tokens %v, want the running request's", v)
	}
	if h, _ := w.E2E(); h.Count != 0 {
		t.Errorf("e2e count %v, want 0", h.Count)
	}
}

// TestMetricsShapeMatchesPython compares the exposition with what Python's
// prometheus_client writes for vLLM (engine/metrics/testdata): the same
// family names, types and label names, the same bucket layouts, and the
// content type; /vllm/metrics serves the same families.
func TestMetricsShapeMatchesPython(t *testing.T) {
	s := newFast(t, Options{})
	complete(t, s, completionBody(s.Model(), ids(40, 100), 3, `,"ignore_eos":true`))
	f, err := os.Open("../metrics/testdata/vllm_after.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	golden, err := metrics.Parse(f, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := testkit.Client.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	ours, err := metrics.Parse(resp.Body, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	labelNames := func(s metrics.Series) []string {
		var out []string
		for k := range s.Labels {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	for name, g := range golden.Families {
		o, ok := ours.Families[name]
		if !ok {
			t.Errorf("%s: missing", name)
			continue
		}
		if o.Kind != g.Kind {
			t.Errorf("%s: %v, Python wrote %v", name, o.Kind, g.Kind)
		}
		if got, want := labelNames(o.Series[0]), labelNames(g.Series[0]); !slices.Equal(got, want) {
			t.Errorf("%s: labels %v, Python wrote %v", name, got, want)
		}
		if g.Kind == metrics.Histogram && !slices.Equal(metrics.Layout(o.Series[0].Buckets), metrics.Layout(g.Series[0].Buckets)) {
			t.Errorf("%s: buckets %v, Python wrote %v", name, metrics.Layout(o.Series[0].Buckets), metrics.Layout(g.Series[0].Buckets))
		}
		if got := o.Series[0].Labels["engine"]; got != "0" {
			t.Errorf("%s: engine %q, want \"0\"", name, got)
		}
		if got := o.Series[0].Labels["model_name"]; got != s.Model() {
			t.Errorf("%s: model_name %q, want %q", name, got, s.Model())
		}
	}
	v := scrape(t, s.VLLMURL+"/metrics")
	var a, b []string
	for n := range ours.Families {
		a = append(a, n)
	}
	for n := range v.Families {
		b = append(b, n)
	}
	sort.Strings(a)
	sort.Strings(b)
	if !slices.Equal(a, b) {
		t.Errorf("/vllm/metrics families %v, /metrics %v", b, a)
	}
}

// TestResetMetricsIsARestart: after ResetMetrics every counter and
// histogram reads zero and a delta across it is refused, as across a
// restarted server.
func TestResetMetricsIsARestart(t *testing.T) {
	s := newFast(t, Options{})
	url := s.URL + "/metrics"
	for i := range 3 {
		complete(t, s, completionBody(s.Model(), ids(40, 100*i), 5, `,"ignore_eos":true`))
	}
	before := waitIdle(t, url, "vllm:num_requests_running", "vllm:num_requests_waiting")
	s.ResetMetrics()
	zero := scrape(t, url)
	for name, f := range zero.Families {
		for _, sr := range f.Series {
			if sr.Value != 0 || sr.Count != 0 || sr.Sum != 0 {
				t.Errorf("%s%v after reset: value %v count %v sum %v", name, sr.Labels, sr.Value, sr.Count, sr.Sum)
			}
		}
	}
	complete(t, s, completionBody(s.Model(), ids(40, 7000), 5, `,"ignore_eos":true`))
	after := waitIdle(t, url, "vllm:num_requests_running", "vllm:num_requests_waiting")
	w, warns := metrics.Delta(before, after)
	refused := map[string]bool{}
	for _, wr := range warns {
		refused[wr.Family] = true
	}
	for _, name := range []string{"vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds", "vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total"} {
		if !refused[name] {
			t.Errorf("%s: delta across the reset not refused", name)
		}
	}
	if _, ok := w.TTFT(); ok {
		t.Error("TTFT figures from a window across a restart")
	}
	// A window after the reset is good again.
	w, warns = metrics.Delta(zero, after)
	if len(warns) > 0 {
		t.Fatalf("window after the reset refused: %v", warns)
	}
	if n, _ := w.Requests(); n != 1 {
		t.Errorf("requests after the reset %v, want 1", n)
	}
}

// TestMetricsSGLang: the SGLang option serves SGLang's families, which
// engine/metrics reads by its names: TTFT, token-weighted ITL (count =
// tokens after the first), e2e and queue time equal to the truth, token
// counters added at finish, and no vLLM family.
func TestMetricsSGLang(t *testing.T) {
	s := newFast(t, Options{Metrics: MetricsSGLang, MaxRunning: 2})
	url := s.URL + "/metrics"
	tr := traced(s)
	before := waitIdle(t, url, "sglang:num_running_reqs", "sglang:num_queue_reqs")
	prefix := ids(64, 5000)
	var bodies []string
	for i, out := range []int{3, 9, 1, 14, 6} {
		p := append(slices.Clone(prefix), ids(10+7*i, 6000+100*i)...)
		bodies = append(bodies, completionBody(s.Model(), p, out, `,"ignore_eos":true`))
	}
	concurrently(t, s.VLLMURL+"/v1/completions", bodies)
	after := waitIdle(t, url, "sglang:num_running_reqs", "sglang:num_queue_reqs")
	for name := range after.Families {
		if !strings.HasPrefix(name, "sglang:") {
			t.Errorf("family %s in SGLang mode", name)
		}
	}
	reqs := tr.take()
	x := trueSamples(t, reqs)
	if x.cached <= 0 || slices.Max(x.queue) <= 0 {
		t.Fatalf("the run should queue and hit the cache: max queue %v s, cached %d", slices.Max(x.queue), x.cached)
	}
	w, warns := metrics.Delta(before, after)
	if len(warns) > 0 {
		t.Fatalf("delta refused: %v", warns)
	}
	checkHist(t, w, "sglang:time_to_first_token_seconds", sglangTTFTBuckets, x.ttft)
	itl := checkHist(t, w, "sglang:inter_token_latency_seconds", sglangITLBuckets, x.itl)
	checkHist(t, w, "sglang:e2e_request_latency_seconds", sglangE2EBuckets, x.e2e)
	checkHist(t, w, "sglang:queue_time_seconds", sglangQueueBuckets, x.queue)
	if itl.Count != float64(x.itlTokens) {
		t.Errorf("ITL count %v, want the tokens after each first: %d", itl.Count, x.itlTokens)
	}
	for _, c := range []struct {
		name string
		get  func() (metrics.Hist, bool)
	}{
		{"sglang:time_to_first_token_seconds", w.TTFT}, {"sglang:inter_token_latency_seconds", w.ITL},
		{"sglang:e2e_request_latency_seconds", w.E2E}, {"sglang:queue_time_seconds", w.Queue},
	} {
		if h, ok := c.get(); !ok || h.Family != c.name {
			t.Errorf("helper for %s read %q (ok %v)", c.name, h.Family, ok)
		}
	}
	if v, _ := w.PromptTokens(); v != float64(x.prompt) {
		t.Errorf("prompt tokens %v, want %d", v, x.prompt)
	}
	if v, _ := w.OutputTokens(); v != float64(x.generated) {
		t.Errorf("generation tokens %v, want %d", v, x.generated)
	}
	if v, _ := w.CachedTokens(); v != float64(x.cached) {
		t.Errorf("cached tokens %v, want %d", v, x.cached)
	}
	if n, _ := w.Requests(); n != float64(len(reqs)) || len(reqs) != 5 {
		t.Errorf("requests %v, want %d (5 sent)", n, len(reqs))
	}
}

// TestMetricsOff: with metrics off both routes are 404 and a scrape fails.
func TestMetricsOff(t *testing.T) {
	s := newFast(t, Options{Metrics: MetricsOff})
	complete(t, s, completionBody(s.Model(), ids(20, 100), 2, ""))
	for _, u := range []string{s.URL + "/metrics", s.VLLMURL + "/metrics"} {
		resp, err := testkit.Client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Detail string }
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || body.Detail != "Not Found" {
			t.Errorf("GET %s: %d %q, want 404 Not Found", u, resp.StatusCode, body.Detail)
		}
		if _, err := metrics.Scrape(context.Background(), nil, u, metrics.Options{}); err == nil {
			t.Errorf("scrape of %s succeeded", u)
		}
	}
	s.ResetMetrics() // a no-op, not a panic
}

func TestParseMetricsMode(t *testing.T) {
	for in, want := range map[string]MetricsMode{"": MetricsVLLM, "vLLM": MetricsVLLM, "sglang": MetricsSGLang, " off ": MetricsOff, "none": MetricsOff} {
		if got, err := ParseMetricsMode(in); err != nil || got != want {
			t.Errorf("ParseMetricsMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMetricsMode("prometheus"); err == nil {
		t.Error("ParseMetricsMode(prometheus) accepted")
	}
	if _, err := Start(context.Background(), "127.0.0.1:0", Options{Metrics: "tgi"}); err == nil {
		t.Error("Start accepted Metrics: tgi")
	}
}

// TestHistogramBucketsAndEngines: an observation on a bound lands in that
// bound's bucket (le is inclusive), beyond the last in +Inf; instances of
// one model are vLLM engines "0", "1", … but share SGLang's one series.
func TestHistogramBucketsAndEngines(t *testing.T) {
	h := hist{bounds: []float64{0.1, 0.5}, counts: make([]uint64, 3)}
	for _, v := range []float64{0, 0.1, 0.10000001, 0.5, 7} {
		h.observe(v)
	}
	if want := []uint64{2, 2, 1}; !slices.Equal(h.counts, want) {
		t.Errorf("counts %v, want %v", h.counts, want)
	}
	if h.sum != 7.70000001 {
		t.Errorf("sum %v", h.sum)
	}
	v := newServerMetrics(MetricsVLLM)
	a, b, c := v.engine("m", nil), v.engine("m", nil), v.engine("n", nil)
	if a.index != "0" || b.index != "1" || c.index != "0" {
		t.Errorf("vLLM engines %q %q %q, want 0 1 0", a.index, b.index, c.index)
	}
	g := newServerMetrics(MetricsSGLang)
	if x, y := g.engine("m", nil), g.engine("m", nil); x != y {
		t.Error("SGLang: two series for one model")
	}
	if newServerMetrics(MetricsOff).engine("m", nil) != nil {
		t.Error("metrics off: an engine")
	}
}
