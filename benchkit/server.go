package benchkit

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/metrics"
	"github.com/inferbench/inferbench/internal/httpsafe"
)

// Defaults of ServerMetrics.
const (
	DefaultScrapeTimeout = 5 * time.Second
	DefaultIdleWait      = 30 * time.Second
	DefaultSettle        = time.Second
)

// ServerMetrics reads the server's own view of each run from its
// Prometheus /metrics endpoint (vLLM, SGLang, llama.cpp, TGI): one scrape
// before the run's first request, one after its last with the server
// idle, subtracted (engine/metrics). The figures go into the run's
// Summary.Server, beside the client's.
//
// Nothing here can fail or change the client's measurement: a scrape that
// errs, hangs past Timeout, is too large or does not parse, a server that
// restarted between the scrapes, a changed bucket layout, or a request
// count that is not the run's (foreign traffic, a load balancer) each end
// in a warning and no server figure rather than a wrong one. The first
// scrape runs while the requests are prepared, so it delays the schedule's
// start by at most Timeout; the second comes after the last request has
// ended, and costs at most IdleWait + Settle + Timeout.
type ServerMetrics struct {
	// URL is the /metrics endpoint.
	URL string
	// Client sends the scrapes; nil uses a client of its own that follows
	// no redirect (Header may carry a credential).
	Client *http.Client
	// Header is sent with every scrape (a bearer token for a server that
	// guards /metrics).
	Header http.Header
	// Timeout bounds each scrape (DefaultScrapeTimeout when 0).
	Timeout time.Duration
	// IdleWait bounds the wait for an idle server (its running and
	// waiting gauges at 0) before the second scrape: requests still in the
	// server's hands would straddle it (DefaultIdleWait when 0).
	IdleWait time.Duration
	// Settle is the pause after the server is idle, before the second
	// scrape, for observations recorded after a request's last byte
	// (DefaultSettle when 0; negative for none).
	Settle time.Duration
	// Limits bound each scrape's body and series (engine/metrics'
	// defaults when zero).
	Limits metrics.Options
	// SampleEvery, when positive, also scrapes during the run at that
	// interval and keeps the gauges that matter while it runs: requests
	// running and waiting, KV cache usage (ServerView.Samples). Each
	// sample costs the client a scrape's parse, so keep it to a few a
	// second at most; 0 takes none.
	SampleEvery time.Duration
}

// ServerSample is the server's gauges at one instant of a run: samples,
// not a distribution, read SampleEvery apart.
type ServerSample struct {
	// AtS is the scrape's instant in seconds from the run's start.
	AtS float64 `json:"at_s"`
	// Running and Waiting are the requests the server ran and queued
	// (all ranks summed); KVUsage its KV cache usage as a fraction (the
	// ranks' mean). Null where the server has no such gauge.
	Running *float64 `json:"running"`
	Waiting *float64 `json:"waiting"`
	KVUsage *float64 `json:"kv_usage"`
}

// sampler scrapes the gauges during a run.
type sampler struct {
	stopc  chan struct{}
	done   chan struct{}
	out    []ServerSample
	failed int
}

// startSampler begins sampling with the run's scraper, nil when there is
// none or it takes no samples.
func startSampler(ctx context.Context, scr *serverScrape, t0 time.Time) *sampler {
	if scr == nil || scr.m.SampleEvery <= 0 {
		return nil
	}
	m := scr.m
	sp := &sampler{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(sp.done)
		tick := time.NewTicker(m.SampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-sp.stopc:
				return
			case <-tick.C:
			}
			at := time.Since(t0).Seconds()
			snap, err := m.scrape(ctx)
			if err != nil {
				sp.failed++
				continue
			}
			smp := ServerSample{AtS: at}
			if v, ok := snap.GaugeSum(metrics.RunningNames...); ok {
				smp.Running = &v
			}
			if v, ok := snap.GaugeSum(metrics.WaitingNames...); ok {
				smp.Waiting = &v
			}
			if v, ok := snap.GaugeMean(metrics.KVUsageNames...); ok {
				smp.KVUsage = &v
			}
			sp.out = append(sp.out, smp)
		}
	}()
	return sp
}

// stop ends sampling; nil-safe.
func (sp *sampler) stop() {
	if sp != nil {
		close(sp.stopc)
		<-sp.done
	}
}

// put puts the samples in v, with a warning for those that failed.
func (sp *sampler) put(v *ServerView) {
	if sp == nil || v == nil {
		return
	}
	v.Samples = sp.out
	if sp.failed > 0 {
		v.Warnings = append(v.Warnings, fmt.Sprintf("%d of %d gauge samples failed to scrape", sp.failed, sp.failed+len(sp.out)))
	}
}

// ServerView is the server's own figures over one run: the deltas of its
// /metrics between a scrape before the run and one after, with the
// client's figures beside them.
type ServerView struct {
	// URL is the endpoint scraped.
	URL string `json:"url"`
	// Requests is the server's count of requests finished in the window.
	Requests *float64 `json:"requests,omitempty"`
	// The server's latency histograms over the window, each absent where
	// the server has no such family: TTFT (vLLM's from the request's
	// arrival at the frontend: tokenization and queue included, HTTP and
	// network not), ITL (vLLM: one sample per engine step; SGLang: per
	// token), TPOT (vLLM's per-request decode time / (n − 1); TGI's
	// inference time / n, prefill included), E2E, Queue, Prefill and
	// Decode.
	TTFT    *ServerFigure `json:"ttft_s,omitempty"`
	ITL     *ServerFigure `json:"itl_s,omitempty"`
	TPOT    *ServerFigure `json:"tpot_s,omitempty"`
	E2E     *ServerFigure `json:"e2e_s,omitempty"`
	Queue   *ServerFigure `json:"queue_s,omitempty"`
	Prefill *ServerFigure `json:"prefill_s,omitempty"`
	Decode  *ServerFigure `json:"decode_s,omitempty"`
	// Inference is prefill and decode together, from the request's first
	// scheduling (vLLM's inference time, TGI's inference duration).
	Inference *ServerFigure `json:"inference_s,omitempty"`
	// Token counters over the window: prompt tokens (vLLM and SGLang the
	// whole prompts, llama.cpp only those evaluated), generated tokens,
	// and cached prompt tokens (SGLang).
	PromptTokens *float64 `json:"prompt_tokens,omitempty"`
	OutputTokens *float64 `json:"output_tokens,omitempty"`
	CachedTokens *float64 `json:"cached_tokens,omitempty"`
	// PrefixHitRate is the measured hit rate: vLLM's Δhits/Δqueries (in
	// tokens), else SGLang's cached over prompt tokens.
	PrefixHitRate *float64 `json:"prefix_hit_rate,omitempty"`
	// PromptTPS and OutputTPS are llama.cpp's per-slot speeds from its
	// counters (Δtokens/Δseconds).
	PromptTPS *float64 `json:"prompt_tps,omitempty"`
	OutputTPS *float64 `json:"output_tps,omitempty"`
	// Beside sets each server mean beside the client's.
	Beside []Comparison `json:"beside_client,omitempty"`
	// Samples are the server's gauges read during the run
	// (ServerMetrics.SampleEvery), kept whether or not the window's
	// figures were refused.
	Samples []ServerSample `json:"gauge_samples,omitempty"`
	// Warnings say which figures were refused and why.
	Warnings []string `json:"warnings,omitempty"`
}

// ServerFigure is one server histogram over the window: its count, its
// exact mean (Δsum/Δcount), percentiles estimated from the bucket deltas
// as Prometheus's histogram_quantile does, each with its bucket's bounds,
// and the bucket layout they came from.
type ServerFigure struct {
	// Family is the exposed family read.
	Family string           `json:"family"`
	Count  float64          `json:"count"`
	Mean   float64          `json:"mean"`
	P50    ServerPercentile `json:"p50"`
	P90    ServerPercentile `json:"p90"`
	P99    ServerPercentile `json:"p99"`
	// Buckets are the finite upper bounds of the layout; +Inf follows
	// them.
	Buckets []float64 `json:"buckets"`
}

// ServerPercentile is an estimated percentile: the true order statistic
// lies in (Lower, Upper]. Upper is null when the rank fell in the +Inf
// bucket, and Value (AtLeast) is then only a lower bound.
type ServerPercentile struct {
	Value   float64  `json:"value"`
	Lower   float64  `json:"lower"`
	Upper   *float64 `json:"upper"`
	AtLeast bool     `json:"at_least,omitempty"`
}

// String writes the percentile in seconds: "v (lo, hi]", or "≥ v".
func (p ServerPercentile) String() string {
	if p.AtLeast || p.Upper == nil {
		return fmt.Sprintf("≥ %.4g", p.Value)
	}
	return fmt.Sprintf("%.4g (%.4g, %.4g]", p.Value, p.Lower, *p.Upper)
}

// Comparison sets a server mean beside the client's, in seconds:
// Difference is client − server, and Contains says what that difference
// is made of.
type Comparison struct {
	Figure     string  `json:"figure"`
	Client     float64 `json:"client_mean"`
	Server     float64 `json:"server_mean"`
	Difference float64 `json:"difference"`
	Contains   string  `json:"contains"`
}

// What a difference between the client's and the server's mean holds.
const (
	containsTTFT = "the HTTP request and response path, response framing and the network (the server's clock starts at its frontend)"
	containsStep = "network jitter and read batching; vLLM's ITL is one sample per engine step, so several tokens per step widen it"
	containsE2E  = "the HTTP request and response path and the network"
	// TGI's mean time per token is its inference time over n, prefill
	// included; the client's TPOT is (E2E − TTFT) / (n − 1).
	containsTGITPOT = "TGI's prefill, which its mean time per token includes (inference time / n) and the client's TPOT leaves out, against one gap fewer"
)

// withDefaults returns m with zero fields at their defaults.
func (m ServerMetrics) withDefaults() ServerMetrics {
	if m.Timeout <= 0 {
		m.Timeout = DefaultScrapeTimeout
	}
	if m.IdleWait <= 0 {
		m.IdleWait = DefaultIdleWait
	}
	if m.Settle == 0 {
		m.Settle = DefaultSettle
	}
	if m.Client == nil {
		// One kept-alive connection for a run's scrapes, closed when
		// idle so that a sweep's runs leave none open behind them.
		m.Client = &http.Client{CheckRedirect: httpsafe.NoRedirects(),
			Transport: &http.Transport{MaxIdleConns: 1, IdleConnTimeout: 5 * time.Second}}
	}
	if len(m.Header) > 0 {
		c := *m.Client
		base := c.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		c.Transport = headerTransport{base: base, header: m.Header}
		m.Client = &c
	}
	return m
}

// headerTransport adds a header to every request.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.header {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// scrape takes one snapshot within the timeout.
func (m ServerMetrics) scrape(ctx context.Context) (metrics.Snapshot, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.Timeout)
	defer cancel()
	return metrics.Scrape(ctx, m.Client, m.URL, m.Limits)
}

// serverScrape is the first scrape of a run, running beside the run's
// preparation.
type serverScrape struct {
	m    ServerMetrics
	done chan struct{}
	snap metrics.Snapshot
	err  error
}

// startScrape begins the scrape before a run; nil when m is.
func startScrape(ctx context.Context, m *ServerMetrics) *serverScrape {
	if m == nil || m.URL == "" {
		return nil
	}
	s := &serverScrape{m: m.withDefaults(), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.snap, s.err = s.m.scrape(ctx)
		if s.err == nil {
			if n, known := s.snap.Busy(); known && n > 0 {
				s.err = fmt.Errorf("the server held %v requests at the first scrape: other traffic would be counted as the run's", n)
			}
		}
	}()
	return s
}

// wait returns when the first scrape has ended (it is bounded by its
// timeout).
func (s *serverScrape) wait() {
	if s != nil {
		<-s.done
	}
}

// finish takes the second scrape once the server is idle and returns the
// run's server view; sent is the requests that reached the server and
// completed those that finished there. nil when s is nil.
func (s *serverScrape) finish(ctx context.Context, completed, sent int) *ServerView {
	if s == nil {
		return nil
	}
	s.wait()
	v := &ServerView{URL: s.m.URL}
	if s.err != nil {
		v.Warnings = append(v.Warnings, fmt.Sprintf("no server figures: scrape before the run: %v", s.err))
		return v
	}
	after, err := s.m.afterIdle(ctx)
	if err != nil {
		v.Warnings = append(v.Warnings, fmt.Sprintf("no server figures: scrape after the run: %v", err))
		return v
	}
	w, refused := metrics.Delta(s.snap, after)
	for _, r := range refused {
		v.Warnings = append(v.Warnings, "server figure refused: "+r.String())
	}
	if n, ok := w.Requests(); ok {
		if n < float64(completed) || n > float64(sent) {
			v.Warnings = append(v.Warnings, fmt.Sprintf("no server figures: the server finished %v requests in the window, the run %s: foreign traffic, another replica behind a balancer, a restart, or requests straddling a scrape", n, countRange(completed, sent)))
			return v
		}
		v.Requests = &n
	} else {
		v.Warnings = append(v.Warnings, "the server counts no finished requests: foreign traffic in the window cannot be ruled out")
	}
	v.fill(w)
	return v
}

// countRange writes "sent 5" or "completed 4 of 5 sent".
func countRange(completed, sent int) string {
	if completed == sent {
		return fmt.Sprintf("sent %d", sent)
	}
	return fmt.Sprintf("completed %d of %d sent", completed, sent)
}

// afterIdle waits, within IdleWait, for the server to hold no requests,
// settles, and scrapes. A server without the gauges is scraped after the
// settle alone; a run whose ctx has ended (interrupted) is scraped at once.
func (m ServerMetrics) afterIdle(ctx context.Context) (metrics.Snapshot, error) {
	deadline := time.Now().Add(m.IdleWait)
	for {
		snap, err := m.scrape(ctx)
		if err != nil {
			return snap, err
		}
		n, known := snap.Busy()
		if !known || n == 0 {
			break
		}
		if time.Now().After(deadline) {
			return metrics.Snapshot{}, fmt.Errorf("the server still held %v requests %v after the run", n, m.IdleWait)
		}
		// An interrupted run stops waiting: the scrape below still
		// comes, bounded by its own timeout.
		if !sleepUntil(ctx, time.Now().Add(100*time.Millisecond)) {
			return m.scrape(ctx)
		}
	}
	if m.Settle > 0 {
		sleepUntil(ctx, time.Now().Add(m.Settle))
	}
	return m.scrape(ctx)
}

// fill sets the view's figures from the window.
func (v *ServerView) fill(w metrics.Window) {
	hist := func(get func() (metrics.Hist, bool)) *ServerFigure {
		h, ok := get()
		if !ok {
			return nil
		}
		return newServerFigure(h)
	}
	v.TTFT, v.ITL, v.E2E = hist(w.TTFT), hist(w.ITL), hist(w.E2E)
	v.Queue, v.Prefill, v.Decode = hist(w.Queue), hist(w.Prefill), hist(w.Decode)
	v.TPOT, v.Inference = hist(w.TPOT), hist(w.Inference)
	counter := func(get func() (float64, bool)) *float64 {
		if x, ok := get(); ok {
			return finite(x)
		}
		return nil
	}
	v.PromptTokens, v.OutputTokens, v.CachedTokens = counter(w.PromptTokens), counter(w.OutputTokens), counter(w.CachedTokens)
	v.PrefixHitRate = counter(w.PrefixHitRate)
	if v.PrefixHitRate == nil && v.CachedTokens != nil && v.PromptTokens != nil && *v.PromptTokens > 0 {
		v.PrefixHitRate = finite(*v.CachedTokens / *v.PromptTokens)
	}
	v.PromptTPS, v.OutputTPS = counter(w.LlamaCppPromptSpeed), counter(w.LlamaCppOutputSpeed)
}

// newServerFigure summarises a histogram; nil for an empty one.
func newServerFigure(h metrics.Hist) *ServerFigure {
	mean, ok := h.Mean()
	if !ok {
		return nil
	}
	f := &ServerFigure{Family: h.Family, Count: h.Count, Mean: mean}
	for _, b := range h.Layout() {
		if !math.IsInf(b, 1) {
			f.Buckets = append(f.Buckets, b)
		}
	}
	for _, q := range []struct {
		q   float64
		dst *ServerPercentile
	}{{0.5, &f.P50}, {0.9, &f.P90}, {0.99, &f.P99}} {
		p, ok := h.Quantile(q.q)
		if !ok {
			continue
		}
		*q.dst = ServerPercentile{Value: p.Value, Lower: p.Lower, AtLeast: p.AtLeast}
		if !math.IsInf(p.Upper, 1) {
			up := p.Upper
			q.dst.Upper = &up
		}
	}
	return f
}

// compare sets the server's means beside the client's summary.
func (v *ServerView) compare(s Summary) {
	v.Beside = nil
	add := func(name string, client *float64, server *ServerFigure, contains string) {
		if client == nil || server == nil {
			return
		}
		v.Beside = append(v.Beside, Comparison{Figure: name, Client: *client, Server: server.Mean,
			Difference: *client - server.Mean, Contains: contains})
	}
	add("ttft_s", s.TTFT.Mean, v.TTFT, containsTTFT)
	tpot := containsStep
	if v.TPOT != nil && strings.HasPrefix(v.TPOT.Family, "tgi_") {
		tpot = containsTGITPOT
	}
	add("tpot_s", s.TPOT.Mean, v.TPOT, tpot)
	add("itl_s", s.ITL.Mean, v.ITL, containsStep)
	add("e2e_s", s.E2E.Mean, v.E2E, containsE2E)
}

// reachedServer counts the requests the server can have finished: all
// but those that never connected and those never sent (a session's turns
// after it gave up).
func reachedServer(rows []Request) int {
	return countIf(rows, func(r Request) bool {
		return r.ErrorKind != string(engine.KindConnect) && r.ErrorKind != errNotSent
	})
}

// serverGrids are the tables of the server's figures beside the client's,
// in the order they are printed.
var serverGrids = []func([]Summary) (head []string, lines [][]string, legend string){serverGrid, responseGrid}

// serverGrid is the table of the server's own figures beside the
// client's, one line per run that has them; no lines when none has.
func serverGrid(sums []Summary) (head []string, lines [][]string, legend string) {
	head = []string{"traffic", "reqs srv/cli", "ttft ms mean cli/srv/Δ", "srv ttft ms p50; p99", "itl ms mean cli/srv", "tpot ms mean cli/srv",
		"queue ms mean; p99", "prefill ms mean", "decode ms mean", "e2e ms mean cli/srv", "cache hit % srv/workload"}
	url := ""
	sampled := slices.ContainsFunc(sums, func(s Summary) bool { return s.Server != nil && len(s.Server.Samples) > 0 })
	if sampled {
		head = append(head, "gauge peaks run/wait/kv % (samples)")
	}
	for _, s := range sums {
		v := s.Server
		if v == nil || v.Requests == nil && v.TTFT == nil && v.E2E == nil {
			continue
		}
		url = v.URL
		line := []string{
			s.Traffic,
			fmt.Sprintf("%s/%d", fnum(v.Requests), s.Completed),
			cms(s.TTFT.Mean) + "/" + smean(v.TTFT) + "/" + sdiff(s.TTFT.Mean, v.TTFT),
			spct(v.TTFT, 0.5) + "; " + spct(v.TTFT, 0.99),
			cms(s.ITL.Mean) + "/" + smean(v.ITL),
			cms(s.TPOT.Mean) + "/" + smean(v.TPOT),
			smean(v.Queue) + "; " + spct(v.Queue, 0.99),
			smean(v.Prefill),
			smean(v.Decode),
			cms(s.E2E.Mean) + "/" + smean(v.E2E),
			hitRate(v.PrefixHitRate, s.TheoreticalHitRate),
		}
		if sampled {
			line = append(line, peaks(v.Samples))
		}
		lines = append(lines, line)
	}
	legend = "The server's own view (" + url + ", Δ over each run): Δ = client − server mean, the HTTP path and network;" +
		" a server percentile is histogram_quantile over its buckets, with the bucket's bounds (lo, hi], ≥ when past the last."
	return head, lines, legend
}

// cms is a client mean in milliseconds to the server columns' precision.
func cms(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *v*1000)
}

// smean is a server figure's mean in milliseconds, "-" when absent.
func smean(f *ServerFigure) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", f.Mean*1000)
}

// sdiff is the client's mean less the server's, in milliseconds.
func sdiff(client *float64, f *ServerFigure) string {
	if client == nil || f == nil {
		return "-"
	}
	return fmt.Sprintf("%+.2f", (*client-f.Mean)*1000)
}

// spct is a server percentile in milliseconds with its bucket's bounds.
func spct(f *ServerFigure, q float64) string {
	if f == nil {
		return "-"
	}
	p := f.P50
	switch q {
	case 0.9:
		p = f.P90
	case 0.99:
		p = f.P99
	}
	g := func(v float64) string { return strconv.FormatFloat(v*1000, 'g', 3, 64) }
	if p.AtLeast || p.Upper == nil {
		return "≥" + g(p.Value)
	}
	return g(p.Value) + " (" + g(p.Lower) + ", " + g(*p.Upper) + "]"
}

// fnum writes a count, "-" when unknown.
func fnum(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

// Probe scrapes the endpoint once, as a run would: to learn before a run
// whether it answers.
func (m ServerMetrics) Probe(ctx context.Context) (metrics.Snapshot, error) {
	return m.withDefaults().scrape(ctx)
}

// ResponseTimings summarise the server's own timings of each response
// (engine.ServerStats from llama.cpp's timings, Ollama's durations, TGI's
// headers) over the completed requests that carried them, beside the
// client's: the per-request view a server without /metrics gives.
type ResponseTimings struct {
	// Source is the server that reported them ("ollama", "llama.cpp",
	// "tgi"); Requests how many requests did.
	Source   string `json:"source"`
	Requests int    `json:"requests"`
	// The durations each server reports, in seconds; null where none of
	// the requests had one.
	Queue     *Quantiles `json:"queue_s,omitempty"`
	Load      *Quantiles `json:"load_s,omitempty"`
	Prefill   *Quantiles `json:"prefill_s,omitempty"`
	Decode    *Quantiles `json:"decode_s,omitempty"`
	Inference *Quantiles `json:"inference_s,omitempty"`
	Total     *Quantiles `json:"total_s,omitempty"`
	// FirstToken is queue + load + prefill per request, the server's
	// share of the client's TTFT; DecodePerToken is decode / (n − 1),
	// the server's TPOT (llama.cpp's predicted_ms and Ollama's
	// eval_duration both run from the first sampled token to the last).
	FirstToken     *Quantiles `json:"first_token_s,omitempty"`
	DecodePerToken *Quantiles `json:"decode_per_token_s,omitempty"`
	// Beside sets the server's means beside the client's.
	Beside []Comparison `json:"beside_client,omitempty"`
}

// What a difference between the client's per-request figure and the
// server's own holds.
const (
	containsFirstToken = "the HTTP request and response path, the network, and what the server does outside its timers (template, tokenization where it is not timed, the first token's detokenization)"
	containsDecodeTok  = "network jitter and read batching, and the server's streaming path"
	containsTotal      = "the HTTP request and response path and the network"
)

// responseTimings summarises the completed requests' per-response
// server timings; nil when none carried any.
func responseTimings(reqs []Request, s Summary) *ResponseTimings {
	var rt ResponseTimings
	var queue, load, prefill, decode, inference, total, first, perTok []float64
	add := func(dst *[]float64, d *time.Duration) {
		if d != nil {
			*dst = append(*dst, d.Seconds())
		}
	}
	for _, r := range reqs {
		st := r.Stats
		if r.Failed() || st == nil || st.Source == "" {
			continue
		}
		if rt.Source == "" {
			rt.Source = st.Source
		} else if rt.Source != st.Source {
			rt.Source = "mixed"
		}
		rt.Requests++
		add(&queue, st.Queue)
		add(&load, st.Load)
		add(&prefill, st.Prefill)
		add(&decode, st.Decode)
		add(&inference, st.Inference)
		add(&total, st.Total)
		if st.Prefill != nil {
			f := *st.Prefill
			for _, d := range []*time.Duration{st.Queue, st.Load} {
				if d != nil {
					f += *d
				}
			}
			first = append(first, f.Seconds())
		}
		if st.Decode != nil && st.GenerationTokens >= 2 {
			perTok = append(perTok, st.Decode.Seconds()/float64(st.GenerationTokens-1))
		}
	}
	if rt.Requests == 0 {
		return nil
	}
	q := func(x []float64) *Quantiles {
		if len(x) == 0 {
			return nil
		}
		v := quantiles(x)
		return &v
	}
	rt.Queue, rt.Load, rt.Prefill, rt.Decode = q(queue), q(load), q(prefill), q(decode)
	rt.Inference, rt.Total, rt.FirstToken, rt.DecodePerToken = q(inference), q(total), q(first), q(perTok)
	beside := func(name string, client *float64, server *Quantiles, contains string) {
		if client == nil || server == nil || server.Mean == nil {
			return
		}
		rt.Beside = append(rt.Beside, Comparison{Figure: name, Client: *client, Server: *server.Mean,
			Difference: *client - *server.Mean, Contains: contains})
	}
	beside("ttft_s", s.TTFT.Mean, rt.FirstToken, containsFirstToken)
	beside("tpot_s", s.TPOT.Mean, rt.DecodePerToken, containsDecodeTok)
	beside("e2e_s", s.E2E.Mean, rt.Total, containsTotal)
	return &rt
}

// responseGrid is the table of the servers' per-response timings beside
// the client's, one line per run that has them.
func responseGrid(sums []Summary) (head []string, lines [][]string, legend string) {
	head = []string{"traffic", "reqs timed/ok", "ttft ms mean cli/srv/Δ", "srv prefill ms mean; p99", "srv queue+load ms mean", "tpot ms mean cli/srv", "srv decode ms mean", "e2e ms mean cli/srv"}
	src := ""
	for _, s := range sums {
		rt := s.Responses
		if rt == nil {
			continue
		}
		src = rt.Source
		qmean := func(q *Quantiles) *float64 {
			if q == nil {
				return nil
			}
			return q.Mean
		}
		var wait *float64
		for _, q := range []*Quantiles{rt.Queue, rt.Load} {
			if m := qmean(q); m != nil {
				w := *m
				if wait != nil {
					w += *wait
				}
				wait = &w
			}
		}
		p99 := func(q *Quantiles) *float64 {
			if q == nil {
				return nil
			}
			return q.P99
		}
		diff := "-"
		if c, sv := s.TTFT.Mean, qmean(rt.FirstToken); c != nil && sv != nil {
			diff = fmt.Sprintf("%+.2f", (*c-*sv)*1000)
		}
		lines = append(lines, []string{
			s.Traffic,
			fmt.Sprintf("%d/%d", rt.Requests, s.Completed),
			cms(s.TTFT.Mean) + "/" + cms(qmean(rt.FirstToken)) + "/" + diff,
			cms(qmean(rt.Prefill)) + "; " + cms(p99(rt.Prefill)),
			cms(wait),
			cms(s.TPOT.Mean) + "/" + cms(qmean(rt.DecodePerToken)),
			cms(qmean(rt.Decode)),
			cms(s.E2E.Mean) + "/" + cms(qmean(rt.Total)),
		})
	}
	legend = "The server's own timings of each response (" + src + "): its first token is queue + load + prefill, its TPOT decode / (n − 1); Δ = client − server, the HTTP path, the network and what the server does outside its timers."
	return head, lines, legend
}

// WriteServerView writes the server's own view of a summary's run beside
// the client's, as the load table's server columns do, in lines for a
// program that prints one run as text: the /metrics window (Server) and
// the per-response timings (Responses), each with what it lacks. It
// writes nothing when the summary has neither.
func WriteServerView(w io.Writer, s Summary) error {
	var b strings.Builder
	for _, grid := range serverGrids {
		head, lines, legend := grid([]Summary{s})
		if len(lines) == 0 {
			continue
		}
		b.WriteString(legend + "\n")
		for i, h := range head[1:] {
			fmt.Fprintf(&b, "  %-26s %s\n", h, lines[0][i+1])
		}
	}
	if v := s.Server; v != nil {
		for _, wn := range v.Warnings {
			b.WriteString("server metrics: " + wn + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// peaks writes the largest running and waiting counts and KV usage of
// the samples, and how many there were.
func peaks(smp []ServerSample) string {
	if len(smp) == 0 {
		return "-"
	}
	top := func(get func(ServerSample) *float64, scale float64) string {
		var m *float64
		for _, x := range smp {
			if v := get(x); v != nil && (m == nil || *v > *m) {
				m = v
			}
		}
		if m == nil {
			return "-"
		}
		return strconv.FormatFloat(*m*scale, 'g', 3, 64)
	}
	return fmt.Sprintf("%s/%s/%s (%d)", top(func(x ServerSample) *float64 { return x.Running }, 1),
		top(func(x ServerSample) *float64 { return x.Waiting }, 1), top(func(x ServerSample) *float64 { return x.KVUsage }, 100), len(smp))
}
