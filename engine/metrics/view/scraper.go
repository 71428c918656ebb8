package view

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/inferbench/inferbench/engine/metrics"
	"github.com/inferbench/inferbench/internal/clock"
	"github.com/inferbench/inferbench/internal/httpsafe"
)

// Defaults of a Scraper.
const (
	DefaultTimeout  = 5 * time.Second
	DefaultIdleWait = 30 * time.Second
	DefaultSettle   = time.Second
)

// Scraper reads the server's own view of each run from its /metrics
// endpoint. Its zero fields take the defaults; only URL is needed.
//
// The first scrape runs while the run's requests are prepared, so it
// delays the run's start by at most Timeout; the second comes after the
// last request has ended, and costs at most IdleWait + Settle + Timeout.
type Scraper struct {
	// URL is the /metrics endpoint.
	URL string
	// Client sends the scrapes; nil uses a client of its own that follows
	// no redirect (Header may carry a credential).
	Client *http.Client
	// Header is sent with every scrape (a bearer token for a server that
	// guards /metrics).
	Header http.Header
	// Timeout bounds each scrape (DefaultTimeout when 0).
	Timeout time.Duration
	// IdleWait bounds the wait for an idle server (its running and
	// waiting gauges at 0) before the second scrape: requests still in the
	// server's hands would straddle it (DefaultIdleWait when 0).
	IdleWait time.Duration
	// Settle is the pause after the server is idle, before the second
	// scrape, for observations recorded after a request's last byte
	// (DefaultSettle when 0; negative for none).
	Settle time.Duration
	// Limits bound each scrape's body and series (package metrics'
	// defaults when zero).
	Limits metrics.Options
	// SampleEvery, when positive, also scrapes during the run at that
	// interval and keeps the gauges that matter while it runs: requests
	// running and waiting, KV cache usage (View.Samples). Each sample
	// costs the client a scrape's parse, so keep it to a few a second at
	// most; 0 takes none.
	SampleEvery time.Duration
}

// Probe scrapes the endpoint once, as a run would: to learn before a run
// whether it answers.
func (m Scraper) Probe(ctx context.Context) (metrics.Snapshot, error) {
	return m.withDefaults().scrape(ctx)
}

// withDefaults returns m with zero fields at their defaults.
func (m Scraper) withDefaults() Scraper {
	if m.Timeout <= 0 {
		m.Timeout = DefaultTimeout
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

// scrape takes one snapshot within the timeout. It outlives ctx's
// cancellation: an interrupted run still gets its bounded scrape.
func (m Scraper) scrape(ctx context.Context) (metrics.Snapshot, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.Timeout)
	defer cancel()
	return metrics.Scrape(ctx, m.Client, m.URL, m.Limits)
}

// A Run is one run's scrapes: the first, begun by Start, the gauge
// samples and the second, taken by Finish. A nil *Run (a nil Scraper's, or
// one without a URL) does nothing and finishes with no view.
type Run struct {
	m    Scraper
	done chan struct{}
	snap metrics.Snapshot
	err  error
	smp  *sampler
}

// Start begins the first scrape of a run in the background, to overlap
// the run's preparation; nil when m is nil or has no URL. A server that
// holds requests at this scrape refuses the run's figures: other traffic
// would be counted as the run's.
func (m *Scraper) Start(ctx context.Context) *Run {
	if m == nil || m.URL == "" {
		return nil
	}
	r := &Run{m: m.withDefaults(), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.snap, r.err = r.m.scrape(ctx)
		if r.err == nil {
			if n, known := r.snap.Busy(); known && n > 0 {
				r.err = fmt.Errorf("the server held %v requests at the first scrape: other traffic would be counted as the run's", n)
			}
		}
	}()
	return r
}

// Ready returns when the first scrape has ended (it is bounded by the
// Scraper's Timeout): call it before the run's first request.
func (r *Run) Ready() {
	if r != nil {
		<-r.done
	}
}

// StartSampling begins sampling the server's gauges every SampleEvery,
// each sample timed from t0, the run's start; it does nothing when the
// Scraper takes no samples or sampling has begun.
func (r *Run) StartSampling(ctx context.Context, t0 time.Time) {
	if r == nil || r.m.SampleEvery <= 0 || r.smp != nil {
		return
	}
	r.smp = startSampler(ctx, r.m, t0)
}

// StopSampling ends the sampling StartSampling began, if any; Finish
// ends it too.
func (r *Run) StopSampling() {
	if r != nil {
		r.smp.stop()
	}
}

// Counts are what the client knows of a run's requests, for Finish to
// check the server's counters against.
type Counts struct {
	// Completed are the requests that finished at the server, Sent those
	// that reached it: the server's count of finished requests must lie
	// between them.
	Completed, Sent int
	// OutputTokens, when not nil, are the completed requests' generated
	// tokens as the server counted them (its usage). Where the server
	// counts no requests (llama.cpp) its output token counter is checked
	// against them instead: at least them, and exactly them when every
	// request sent completed.
	OutputTokens *int
}

// Finish takes the second scrape once the server is idle and returns the
// run's view, with the gauge samples; c is the client's count of the
// run's requests. A run whose ctx has ended (interrupted) is scraped
// without waiting for the server to go idle. nil when r is nil.
func (r *Run) Finish(ctx context.Context, c Counts) *View {
	if r == nil {
		return nil
	}
	r.StopSampling()
	v := r.window(ctx, c)
	r.smp.put(v)
	return v
}

// window is Finish's view of the window alone.
func (r *Run) window(ctx context.Context, c Counts) *View {
	r.Ready()
	v := &View{URL: r.m.URL}
	if r.err != nil {
		v.Warnings = append(v.Warnings, fmt.Sprintf("no server figures: scrape before the run: %v", r.err))
		return v
	}
	after, err := r.m.afterIdle(ctx)
	if err != nil {
		v.Warnings = append(v.Warnings, fmt.Sprintf("no server figures: scrape after the run: %v", err))
		return v
	}
	w, refused := metrics.Delta(r.snap, after)
	v.Server = w.Server()
	if v.Server == metrics.ServerUnknown {
		v.Warnings = append(v.Warnings, "no server figures: the endpoint served none of vLLM's, SGLang's, TGI's or llama.cpp's families after the run (vLLM without stats logging, or not an inference server's /metrics?)")
		return v
	}
	for _, rf := range refused {
		v.Warnings = append(v.Warnings, "server figure refused: "+rf.String())
	}
	switch n, ok := w.Requests(); {
	case ok:
		if n < float64(c.Completed) || n > float64(c.Sent) {
			v.Warnings = append(v.Warnings, fmt.Sprintf("no server figures: the server finished %v requests in the window, the run %s: foreign traffic, another replica behind a balancer, a restart, or requests straddling a scrape", n, countRange(c.Completed, c.Sent)))
			return v
		}
		v.Requests = &n
	case v.Server.CountsRequests():
		v.Warnings = append(v.Warnings, "the server counts no finished requests: foreign traffic in the window cannot be ruled out")
	default:
		// llama.cpp: its generated tokens, counted as each request ends,
		// stand in for the request count.
		if msg := checkOutput(w, c); msg != "" {
			v.Warnings = append(v.Warnings, msg)
			return v
		}
	}
	v.fill(w, c.Completed)
	return v
}

// checkOutput checks a window's output token counter against the
// client's tokens: the server counts every token of every request that
// reached it (those that failed included), so at least the completed
// requests' and, when all that were sent completed, exactly theirs. It
// returns why the window is refused, or "".
func checkOutput(w metrics.Window, c Counts) string {
	n, ok := w.OutputTokens()
	if !ok || c.OutputTokens == nil {
		return ""
	}
	client := float64(*c.OutputTokens)
	switch {
	case n < client:
		return fmt.Sprintf("no server figures: the server generated %v tokens in the window, fewer than the %v the run's completed requests received: a restart, another replica behind a balancer, or requests straddling a scrape", n, client)
	case n > client && c.Completed == c.Sent:
		return fmt.Sprintf("no server figures: the server generated %v tokens in the window, the run's %d requests received %v: foreign traffic, or requests straddling a scrape", n, c.Sent, client)
	}
	return ""
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
func (m Scraper) afterIdle(ctx context.Context) (metrics.Snapshot, error) {
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
		if !clock.SleepUntil(ctx, time.Now().Add(100*time.Millisecond)) {
			return m.scrape(ctx)
		}
	}
	if m.Settle > 0 {
		clock.SleepUntil(ctx, time.Now().Add(m.Settle))
	}
	return m.scrape(ctx)
}

// sampler scrapes the gauges during a run.
type sampler struct {
	stopc  chan struct{}
	done   chan struct{}
	out    []Sample
	failed int
}

// startSampler begins sampling with m every m.SampleEvery.
func startSampler(ctx context.Context, m Scraper, t0 time.Time) *sampler {
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
			smp := Sample{AtS: at}
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

// stop ends sampling; nil-safe and idempotent.
func (sp *sampler) stop() {
	if sp == nil {
		return
	}
	select {
	case <-sp.stopc:
	default:
		close(sp.stopc)
	}
	<-sp.done
}

// put puts the samples in v, with a warning for those that failed.
func (sp *sampler) put(v *View) {
	if sp == nil || v == nil {
		return
	}
	v.Samples = sp.out
	if sp.failed > 0 {
		v.Warnings = append(v.Warnings, fmt.Sprintf("%d of %d gauge samples failed to scrape", sp.failed, sp.failed+len(sp.out)))
	}
}
