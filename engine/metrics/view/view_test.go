package view

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeServer is a /metrics endpoint in vLLM's names: a TTFT histogram
// over buckets, a finished-request counter and the running gauge, all set
// by the test.
type fakeServer struct {
	mu       sync.Mutex
	ttft     []float64
	requests int
	running  float64
	scrapes  int
	header   string // the Authorization header of the last scrape
	fail     bool   // answer 500
}

var buckets = []float64{0.01, 0.05, 0.1, 0.5, 1}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scrapes++
	f.header = r.Header.Get("Authorization")
	if f.fail {
		http.Error(w, "down", http.StatusInternalServerError)
		return
	}
	var b strings.Builder
	b.WriteString("# TYPE vllm:time_to_first_token_seconds histogram\n")
	sum := 0.0
	for _, v := range f.ttft {
		sum += v
	}
	for _, le := range buckets {
		n := 0
		for _, v := range f.ttft {
			if v <= le {
				n++
			}
		}
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{le=\"%g\"} %d\n", le, n)
	}
	fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} %d\n", len(f.ttft))
	fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_sum %g\n", sum)
	fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_count %d\n", len(f.ttft))
	fmt.Fprintf(&b, "# TYPE vllm:request_success_total counter\nvllm:request_success_total{finished_reason=\"stop\"} %d\n", f.requests)
	fmt.Fprintf(&b, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running %g\n", f.running)
	fmt.Fprintf(&b, "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 0\n")
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte(b.String()))
}

func (f *fakeServer) serve(ttft ...float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ttft = append(f.ttft, ttft...)
	f.requests += len(ttft)
}

func (f *fakeServer) set(fn func(f *fakeServer)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func newFake(t *testing.T) (*fakeServer, *Scraper) {
	t.Helper()
	f := &fakeServer{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, &Scraper{URL: srv.URL + "/metrics", Timeout: time.Second, IdleWait: 300 * time.Millisecond, Settle: -1}
}

// TestRunWindow: the view holds the window's requests and histogram
// alone (traffic before the first scrape is not the run's), its mean
// exact and each percentile's bounds around the true order statistic.
func TestRunWindow(t *testing.T) {
	f, m := newFake(t)
	f.serve(0.7, 0.7) // before the run
	ctx := context.Background()
	run := m.Start(ctx)
	run.Ready()
	obs := []float64{0.004, 0.02, 0.03, 0.07, 0.2, 0.3, 0.4, 0.6}
	f.serve(obs...)
	v := run.Finish(ctx, Counts{Completed: len(obs), Sent: len(obs)})
	if v == nil || len(v.Warnings) != 0 {
		t.Fatalf("view %+v; want one without warnings", v)
	}
	if v.Requests == nil || *v.Requests != float64(len(obs)) || v.TTFT == nil || v.TTFT.Count != float64(len(obs)) {
		t.Fatalf("requests %v, TTFT %+v; want %d of each", v.Requests, v.TTFT, len(obs))
	}
	sum := 0.0
	for _, x := range obs {
		sum += x
	}
	if want := sum / float64(len(obs)); math.Abs(v.TTFT.Mean-want) > 1e-12 {
		t.Errorf("TTFT mean %v; want the window's %v", v.TTFT.Mean, want)
	}
	for _, p := range []struct {
		q float64
		p Percentile
	}{{0.5, v.TTFT.P50}, {0.9, v.TTFT.P90}, {0.99, v.TTFT.P99}} {
		x := obs[int(math.Ceil(p.q*float64(len(obs))))-1]
		if p.p.Upper == nil || p.p.Lower == nil || !(x > *p.p.Lower && x <= *p.p.Upper) || !holds(p.p, x) {
			t.Errorf("p%v = %v; the order statistic %v lies outside", p.q*100, p.p, x)
		}
	}
	if !slices.Equal(v.TTFT.Buckets, buckets) || v.TTFT.Family != "vllm:time_to_first_token_seconds" {
		t.Errorf("layout %v of %q; want %v", v.TTFT.Buckets, v.TTFT.Family, buckets)
	}
	if v.E2E != nil || v.PromptTokens != nil {
		t.Errorf("figures the server does not expose: E2E %+v, prompt tokens %v", v.E2E, v.PromptTokens)
	}
}

// TestRunRefusals: what would make the window's figures wrong gives a
// warning and none.
func TestRunRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		before     func(f *fakeServer)
		during     func(f *fakeServer)
	}{
		{"foreign traffic", "finished 3 requests in the window, the run sent 2", nil, func(f *fakeServer) { f.serve(0.1, 0.1, 0.1) }},
		{"restart", "refused", func(f *fakeServer) { f.serve(0.1, 0.1, 0.1) }, func(f *fakeServer) {
			f.set(func(f *fakeServer) { f.ttft, f.requests = nil, 0 })
			f.serve(0.1)
		}},
		{"busy at the first scrape", "held 1 requests at the first scrape", func(f *fakeServer) {
			f.set(func(f *fakeServer) { f.running = 1 })
		}, func(f *fakeServer) { f.set(func(f *fakeServer) { f.running = 0 }); f.serve(0.1, 0.1) }},
		{"never idle", "still held 2 requests", nil, func(f *fakeServer) { f.serve(0.1, 0.1); f.set(func(f *fakeServer) { f.running = 2 }) }},
		{"scrape fails after", "scrape after the run", nil, func(f *fakeServer) { f.set(func(f *fakeServer) { f.fail = true }) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, m := newFake(t)
			if tc.before != nil {
				tc.before(f)
			}
			ctx := context.Background()
			run := m.Start(ctx)
			run.Ready()
			tc.during(f)
			t0 := time.Now()
			v := run.Finish(ctx, Counts{Completed: 2, Sent: 2})
			// IdleWait and a scrape's timeout at most, with room to spare.
			if d := time.Since(t0); d > 5*time.Second {
				t.Errorf("Finish took %v", d)
			}
			if v == nil || v.TTFT != nil || v.Requests != nil {
				t.Fatalf("view %+v; want no figures", v)
			}
			if !slices.ContainsFunc(v.Warnings, func(w string) bool { return strings.Contains(w, tc.want) }) {
				t.Errorf("warnings %q; want one saying %q", v.Warnings, tc.want)
			}
		})
	}
}

// TestRunInterrupted: a run whose context has ended is scraped at once,
// without the wait for an idle server.
func TestRunInterrupted(t *testing.T) {
	f, m := newFake(t)
	m.IdleWait = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	run := m.Start(ctx)
	run.Ready()
	f.serve(0.1)
	f.set(func(f *fakeServer) { f.running = 1 })
	cancel()
	t0 := time.Now()
	v := run.Finish(ctx, Counts{Completed: 1, Sent: 1})
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("an interrupted run waited %v for an idle server", d)
	}
	if v == nil || v.Requests == nil || *v.Requests != 1 {
		t.Errorf("view %+v; want the one request", v)
	}
}

// TestSampling: the gauges are read while sampling runs, timed from the
// run's start, and a failed sample is a warning.
func TestSampling(t *testing.T) {
	f, m := newFake(t)
	m.SampleEvery = 5 * time.Millisecond
	ctx := context.Background()
	run := m.Start(ctx)
	run.Ready()
	t0 := time.Now()
	f.set(func(f *fakeServer) { f.running = 3 })
	run.StartSampling(ctx, t0)
	// Wait, boundedly, for a few samples, then for two that fail.
	waitScrapes := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			f.mu.Lock()
			got := f.scrapes
			f.mu.Unlock()
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d scrapes in 10 s of sampling every %v; want %d", got, m.SampleEvery, n)
			}
			time.Sleep(m.SampleEvery)
		}
	}
	waitScrapes(4)
	var n int
	f.set(func(f *fakeServer) { f.fail, n = true, f.scrapes })
	waitScrapes(n + 2)
	run.StopSampling()
	f.set(func(f *fakeServer) { f.fail, f.running = false, 0 })
	f.serve(0.1)
	v := run.Finish(ctx, Counts{Completed: 1, Sent: 1})
	if len(v.Samples) == 0 {
		t.Fatal("no samples")
	}
	for _, s := range v.Samples {
		if s.Running == nil || *s.Running != 3 || s.Waiting == nil || *s.Waiting != 0 || s.KVUsage != nil || s.AtS < 0 || s.AtS > time.Since(t0).Seconds() {
			t.Errorf("sample %+v; want 3 running, none waiting, no KV gauge, within the run", s)
		}
	}
	if !slices.ContainsFunc(v.Warnings, func(w string) bool { return strings.Contains(w, "gauge samples failed to scrape") }) {
		t.Errorf("warnings %q; want the failed samples'", v.Warnings)
	}
	if v.Requests == nil || *v.Requests != 1 {
		t.Errorf("requests %v; want 1", v.Requests)
	}
}

// TestNil: a nil Scraper, or one without a URL, runs nothing.
func TestNil(t *testing.T) {
	ctx := context.Background()
	for _, m := range []*Scraper{nil, {}} {
		run := m.Start(ctx)
		if run != nil {
			t.Fatalf("Start of %+v = %+v; want nil", m, run)
		}
		run.Ready()
		run.StartSampling(ctx, time.Now())
		run.StopSampling()
		if v := run.Finish(ctx, Counts{Completed: 1, Sent: 1}); v != nil {
			t.Errorf("Finish of a nil run = %+v", v)
		}
	}
}

// TestHeaderAndRedirect: the Header goes with each scrape, and a redirect
// (which could carry it elsewhere) is refused.
func TestHeaderAndRedirect(t *testing.T) {
	f, m := newFake(t)
	m.Header = http.Header{"Authorization": {"Bearer s3cret"}}
	if _, err := m.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f.header != "Bearer s3cret" {
		t.Errorf("scrape sent Authorization %q", f.header)
	}
	redir := httptest.NewServer(http.RedirectHandler(m.URL, http.StatusFound))
	defer redir.Close()
	m.URL = redir.URL
	f.set(func(f *fakeServer) { f.header = "" })
	if _, err := m.Probe(context.Background()); err == nil || f.header != "" {
		t.Errorf("redirect followed: err %v, header %q at its target", err, f.header)
	}
}

// holds reports whether p's interval [Min, Max] holds x.
func holds(p Percentile, x float64) bool {
	lo, hi := math.Inf(-1), math.Inf(1)
	if p.Min != nil {
		lo = *p.Min
	}
	if p.Max != nil {
		hi = *p.Max
	}
	return lo <= x && x <= hi
}

// textServer serves /metrics as body() gives it at each scrape.
func textServer(t *testing.T, body func() string) *Scraper {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(body()))
	}))
	t.Cleanup(srv.Close)
	return &Scraper{URL: srv.URL + "/metrics", Timeout: time.Second, IdleWait: 300 * time.Millisecond, Settle: -1}
}

// TestRunServerKind: an endpoint that serves nothing before the run (a
// fresh SGLang's multiprocess collector) is counted from zero; one that
// serves no inference server's families after it gives a warning and no
// figure.
func TestRunServerKind(t *testing.T) {
	sglang := "# TYPE sglang:num_requests_total counter\nsglang:num_requests_total{model_name=\"m\"} 3\n" +
		"# TYPE sglang:e2e_request_latency_seconds histogram\n" +
		"sglang:e2e_request_latency_seconds_bucket{le=\"0.5\",model_name=\"m\"} 2\n" +
		"sglang:e2e_request_latency_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 3\n" +
		"sglang:e2e_request_latency_seconds_sum{model_name=\"m\"} 1.5\n" +
		"sglang:e2e_request_latency_seconds_count{model_name=\"m\"} 3\n"
	other := "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 12\n"
	for _, tc := range []struct {
		name, before, after, warn string
		kind                      string
	}{
		{"fresh SGLang", "", sglang, "", "SGLang"},
		{"empty throughout", "", "", "none of vLLM's, SGLang's, TGI's or llama.cpp's", ""},
		{"not a server's", other, other, "none of vLLM's, SGLang's, TGI's or llama.cpp's", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			body := tc.before
			m := textServer(t, func() string { mu.Lock(); defer mu.Unlock(); return body })
			ctx := context.Background()
			run := m.Start(ctx)
			run.Ready()
			mu.Lock()
			body = tc.after
			mu.Unlock()
			v := run.Finish(ctx, Counts{Completed: 3, Sent: 3})
			if string(v.Server) != tc.kind {
				t.Errorf("server %q; want %q", v.Server, tc.kind)
			}
			if tc.warn == "" {
				if len(v.Warnings) != 0 || v.Requests == nil || *v.Requests != 3 || v.E2E == nil || v.E2E.Count != 3 || v.E2E.Mean != 0.5 {
					t.Errorf("view %+v (E2E %+v); want 3 requests, E2E mean 0.5 s, no warning", v, v.E2E)
				}
				return
			}
			if v.Requests != nil || v.E2E != nil || len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], tc.warn) {
				t.Errorf("view %+v; want no figure and one warning saying %q", v, tc.warn)
			}
		})
	}
}

// llamaText is llama.cpp's /metrics after n requests of tokens each,
// decoded at speed tokens a second per step.
func llamaText(n, tokens int, speed float64) string {
	steps := float64(n * (tokens - 1))
	return fmt.Sprintf("# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total %d\n"+
		"# TYPE llamacpp:prompt_seconds_total counter\nllamacpp:prompt_seconds_total %g\n"+
		"# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total %d\n"+
		"# TYPE llamacpp:tokens_predicted_seconds_total counter\nllamacpp:tokens_predicted_seconds_total %g\n"+
		"# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 0\n"+
		"# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred 0\n",
		100*n, 0.01*float64(n), n*tokens, steps/speed)
}

// TestRunLlamaCpp: llama.cpp counts no requests, so no warning says so;
// its generated tokens are checked against the client's instead (exact
// when every request sent completed, a lower bound otherwise), and its
// output speed is per step.
func TestRunLlamaCpp(t *testing.T) {
	const tokens, speed = 20, 50.0
	ptr := func(n int) *int { return &n }
	for _, tc := range []struct {
		name   string
		served int // requests the server finished in the window
		c      Counts
		warn   string
	}{
		{"clean", 4, Counts{Completed: 4, Sent: 4, OutputTokens: ptr(4 * tokens)}, ""},
		{"no client tokens", 4, Counts{Completed: 4, Sent: 4}, ""},
		{"foreign", 5, Counts{Completed: 4, Sent: 4, OutputTokens: ptr(4 * tokens)}, "foreign traffic"},
		{"one failed", 5, Counts{Completed: 4, Sent: 5, OutputTokens: ptr(4 * tokens)}, ""},
		{"fewer than received", 3, Counts{Completed: 4, Sent: 4, OutputTokens: ptr(4 * tokens)}, "fewer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			served := 2 // before the run
			m := textServer(t, func() string { mu.Lock(); defer mu.Unlock(); return llamaText(served, tokens, speed) })
			ctx := context.Background()
			run := m.Start(ctx)
			run.Ready()
			mu.Lock()
			served += tc.served
			mu.Unlock()
			v := run.Finish(ctx, tc.c)
			if v.Server != "llama.cpp" {
				t.Errorf("server %q; want llama.cpp", v.Server)
			}
			if tc.warn != "" {
				if v.OutputTokens != nil || len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], tc.warn) {
					t.Errorf("view %+v; want no figure and a warning saying %q", v, tc.warn)
				}
				return
			}
			if len(v.Warnings) != 0 {
				t.Errorf("warnings %q", v.Warnings)
			}
			if v.OutputTokens == nil || *v.OutputTokens != float64(tc.served*tokens) || v.Requests != nil {
				t.Fatalf("output tokens %v, requests %v; want %d tokens and no request count", v.OutputTokens, v.Requests, tc.served*tokens)
			}
			// Per step: (tokens − the client's completed)/seconds, which is
			// the speed itself when the client saw every request end.
			want := float64(tc.served*tokens-tc.c.Completed) / (float64(tc.served*(tokens-1)) / speed)
			if v.OutputTPS == nil || math.Abs(*v.OutputTPS-want) > 1e-9*want {
				t.Errorf("output speed %v; want %v", v.OutputTPS, want)
			}
			if tc.served == tc.c.Completed && math.Abs(*v.OutputTPS-speed) > 1e-9*speed {
				t.Errorf("output speed %v; want the per-step %v", *v.OutputTPS, speed)
			}
		})
	}
}

// TestRunNoRequestCounter: a server that should count its finished
// requests but serves no counter (here vLLM's TTFT alone) keeps its
// figures, with a warning that foreign traffic cannot be ruled out.
func TestRunNoRequestCounter(t *testing.T) {
	text := "# TYPE vllm:time_to_first_token_seconds histogram\n" +
		"vllm:time_to_first_token_seconds_bucket{le=\"0.1\"} 2\nvllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 2\n" +
		"vllm:time_to_first_token_seconds_sum 0.1\nvllm:time_to_first_token_seconds_count 2\n"
	var mu sync.Mutex
	body := ""
	m := textServer(t, func() string { mu.Lock(); defer mu.Unlock(); return body })
	ctx := context.Background()
	run := m.Start(ctx)
	run.Ready()
	mu.Lock()
	body = text
	mu.Unlock()
	v := run.Finish(ctx, Counts{Completed: 2, Sent: 2})
	if v.TTFT == nil || v.TTFT.Count != 2 || len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], "counts no finished requests") {
		t.Errorf("view %+v; want the TTFT of 2 requests and the warning", v)
	}
}
