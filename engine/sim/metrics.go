package sim

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// A MetricsMode selects the Prometheus families GET /metrics (and
// /vllm/metrics) serve. The zero value is MetricsVLLM.
type MetricsMode string

// The metrics modes.
const (
	// MetricsVLLM serves vLLM's v1 families (vllm:…) with vLLM's default
	// buckets and labels model_name and engine. It is the default.
	MetricsVLLM MetricsMode = "vllm"
	// MetricsSGLang serves SGLang's families (sglang:…) with SGLang's
	// default buckets, as SGLang with --enable-metrics does.
	MetricsSGLang MetricsMode = "sglang"
	// MetricsOff serves no metrics: GET /metrics is 404, as SGLang
	// without --enable-metrics (501 with the LlamaCpp profile, as
	// llama-server without --metrics).
	MetricsOff MetricsMode = "off"
	// MetricsLlamaCpp serves llama-server's families (llamacpp:…); only
	// with the LlamaCpp profile, whose default it is.
	MetricsLlamaCpp MetricsMode = "llamacpp"
)

// ParseMetricsMode reads a mode as a flag gives it: "vllm" (or empty),
// "sglang", "llamacpp" (or "llama.cpp"), "off" (or "none").
func ParseMetricsMode(s string) (MetricsMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "vllm":
		return MetricsVLLM, nil
	case "sglang":
		return MetricsSGLang, nil
	case "llamacpp", "llama.cpp":
		return MetricsLlamaCpp, nil
	case "off", "none":
		return MetricsOff, nil
	}
	return "", fmt.Errorf("sim: metrics mode %q: expected vllm, sglang, llamacpp or off", s)
}

// Default bucket upper bounds (+Inf implicit), as the servers define them:
// vLLM's vllm/v1/metrics (time_to_first_token, inter_token_latency,
// request_latency) and SGLang's sglang/srt/metrics/collector.py.
var (
	vllmTTFTBuckets    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	vllmITLBuckets     = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	vllmLatencyBuckets = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}

	sglangTTFTBuckets  = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400}
	sglangITLBuckets   = []float64{0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1, 2, 4, 6, 8}
	sglangE2EBuckets   = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400}
	sglangQueueBuckets = []float64{0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000}
)

// The histograms and counters an engine keeps; a mode exposes some of them.
const (
	hTTFT = iota
	hITL
	hTPOT
	hE2E
	hQueue
	hPrefill
	hDecode
	hInference
	numHists
)

const (
	cPrompt = iota
	cGeneration
	cPrefixQueries
	cPrefixHits
	cCached
	cRequests
	numCounters
)

// finishReasons are the finished_reason children of
// vllm:request_success_total, created up front as vLLM does; the sim ends
// requests only with these two.
var finishReasons = []string{"stop", "length"}

type histSpec struct {
	id         int
	name, help string
	bounds     []float64
	scheduler  bool // SGLang: a scheduler-process family (tp_rank, pp_rank labels)
}

type counterSpec struct {
	id         int
	name, help string
}

type gaugeKind int

const (
	gRunning gaugeKind = iota
	gWaiting
	gKVUsage
)

type gaugeSpec struct {
	kind       gaugeKind
	name, help string
}

// metricsSpec is the exposed families of a mode, in exposition order.
type metricsSpec struct {
	hists    []histSpec
	counters []counterSpec
	success  string // the per-finish-reason counter; empty when none
	gauges   []gaugeSpec
}

var vllmSpec = metricsSpec{
	hists: []histSpec{
		{id: hTTFT, name: "vllm:time_to_first_token_seconds", help: "Histogram of time to first token in seconds.", bounds: vllmTTFTBuckets},
		{id: hITL, name: "vllm:inter_token_latency_seconds", help: "Histogram of inter-token latency in seconds.", bounds: vllmITLBuckets},
		{id: hTPOT, name: "vllm:request_time_per_output_token_seconds", help: "Histogram of time_per_output_token_seconds per request.", bounds: vllmITLBuckets},
		{id: hE2E, name: "vllm:e2e_request_latency_seconds", help: "Histogram of e2e request latency in seconds.", bounds: vllmLatencyBuckets},
		{id: hQueue, name: "vllm:request_queue_time_seconds", help: "Histogram of time spent in WAITING phase for request.", bounds: vllmLatencyBuckets},
		{id: hInference, name: "vllm:request_inference_time_seconds", help: "Histogram of time spent in RUNNING phase for request.", bounds: vllmLatencyBuckets},
		{id: hPrefill, name: "vllm:request_prefill_time_seconds", help: "Histogram of time spent in PREFILL phase for request.", bounds: vllmLatencyBuckets},
		{id: hDecode, name: "vllm:request_decode_time_seconds", help: "Histogram of time spent in DECODE phase for request.", bounds: vllmLatencyBuckets},
	},
	counters: []counterSpec{
		{id: cPrompt, name: "vllm:prompt_tokens_total", help: "Number of prefill tokens processed."},
		{id: cGeneration, name: "vllm:generation_tokens_total", help: "Number of generation tokens processed."},
		{id: cPrefixQueries, name: "vllm:prefix_cache_queries_total", help: "Prefix cache queries, in terms of number of queried tokens."},
		{id: cPrefixHits, name: "vllm:prefix_cache_hits_total", help: "Prefix cache hits, in terms of number of cached tokens."},
	},
	success: "vllm:request_success_total",
	gauges: []gaugeSpec{
		{kind: gRunning, name: "vllm:num_requests_running", help: "Number of requests in model execution batches."},
		{kind: gWaiting, name: "vllm:num_requests_waiting", help: "Number of requests waiting to be processed."},
		{kind: gKVUsage, name: "vllm:kv_cache_usage_perc", help: "KV-cache usage. 1 means 100 percent usage."},
	},
}

var sglangSpec = metricsSpec{
	hists: []histSpec{
		{id: hTTFT, name: "sglang:time_to_first_token_seconds", help: "Histogram of time to first token in seconds.", bounds: sglangTTFTBuckets},
		{id: hITL, name: "sglang:inter_token_latency_seconds", help: "Histogram of inter-token latency in seconds.", bounds: sglangITLBuckets},
		{id: hE2E, name: "sglang:e2e_request_latency_seconds", help: "Histogram of End-to-end request latency in seconds", bounds: sglangE2EBuckets},
		{id: hQueue, name: "sglang:queue_time_seconds", help: "Histogram of queueing time in seconds.", bounds: sglangQueueBuckets, scheduler: true},
	},
	counters: []counterSpec{
		{id: cPrompt, name: "sglang:prompt_tokens_total", help: "Number of prefill tokens processed."},
		{id: cGeneration, name: "sglang:generation_tokens_total", help: "Number of generation tokens processed."},
		{id: cCached, name: "sglang:cached_tokens_total", help: "Number of cached prompt tokens."},
		{id: cRequests, name: "sglang:num_requests_total", help: "Number of requests processed."},
	},
	gauges: []gaugeSpec{
		{kind: gRunning, name: "sglang:num_running_reqs", help: "The number of running requests."},
		{kind: gWaiting, name: "sglang:num_queue_reqs", help: "The number of requests in the waiting queue."},
	},
}

// serverMetrics is the server's registry: one engineMetrics per vLLM
// engine (an instance) or per SGLang server (all instances of a model).
type serverMetrics struct {
	mode MetricsMode
	spec *metricsSpec

	mu      sync.Mutex
	engines []*engineMetrics
}

func newServerMetrics(mode MetricsMode) *serverMetrics {
	switch mode {
	case MetricsOff, MetricsLlamaCpp:
		return nil
	case MetricsSGLang:
		return &serverMetrics{mode: mode, spec: &sglangSpec}
	}
	return &serverMetrics{mode: MetricsVLLM, spec: &vllmSpec}
}

// engine returns the series of a new instance of model: a new vLLM
// engine, numbered after the model's earlier ones, or the model's one
// SGLang series. kv is the instance's block cache, for the KV usage gauge.
func (m *serverMetrics) engine(model string, kv *blockCache) *engineMetrics {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.engines {
		if e.model != model {
			continue
		}
		if m.mode == MetricsSGLang {
			return e
		}
		n++
	}
	e := &engineMetrics{mode: m.mode, model: model, index: strconv.Itoa(n), kv: kv}
	for _, h := range m.spec.hists {
		e.h[h.id] = hist{counts: make([]uint64, len(h.bounds)+1), bounds: h.bounds}
	}
	m.engines = append(m.engines, e)
	return e
}

// hist is a classic histogram: counts per bucket (not cumulative, the
// last one +Inf), the sum of the observations, and whether one was made
// (SGLang's series exist from their first observation).
type hist struct {
	bounds []float64
	counts []uint64
	sum    float64
	seen   bool
}

// observe adds v: a bucket search and two adds. The engine's lock is held.
func (h *hist) observe(v float64) {
	h.counts[sort.SearchFloat64s(h.bounds, v)]++
	h.sum += v
	h.seen = true
}

func (h *hist) reset() {
	clear(h.counts)
	h.sum = 0
	h.seen = false
}

// engineMetrics is one engine's series. The schedulers update them under
// mu; the gauges are atomics maintained as jobs move.
type engineMetrics struct {
	mode         MetricsMode
	model, index string
	kv           *blockCache // vLLM: the instance's block cache
	stopped      atomic.Bool // the instance is gone: it holds no KV
	running      atomic.Int64
	waiting      atomic.Int64

	mu      sync.Mutex
	h       [numHists]hist
	c       [numCounters]float64
	cseen   [numCounters]bool // counters incremented (SGLang's exist from then)
	success [2]float64        // by finishReasons
}

// add increments counter id by v and marks it observed. The lock is held.
func (e *engineMetrics) add(id int, v float64) {
	e.c[id] += v
	e.cseen[id] = true
}

// Job gauge states.
const (
	gaugeNone int32 = iota
	gaugeWaiting
	gaugeRunning
)

// move sets j's gauge state, adjusting the counts of the state it leaves
// and enters. Each job leaves a state once, whoever moves it.
func (e *engineMetrics) move(j *job, to int32) {
	if e == nil {
		return
	}
	from := j.gauge.Swap(to)
	if from == to {
		return
	}
	switch from {
	case gaugeWaiting:
		e.waiting.Add(-1)
	case gaugeRunning:
		e.running.Add(-1)
	}
	switch to {
	case gaugeWaiting:
		e.waiting.Add(1)
	case gaugeRunning:
		e.running.Add(1)
	}
}

// arrive counts j as waiting; it arrived at its home instance.
func (e *engineMetrics) arrive(j *job) { e.move(j, gaugeWaiting) }

// leave ends j without a finish: cancelled, or its instance gone.
func (e *engineMetrics) leave(j *job) { e.move(j, gaugeNone) }

// stop marks the instance gone: it holds no KV any more.
func (e *engineMetrics) stop() {
	if e != nil {
		e.stopped.Store(true)
	}
}

// admit records j's first scheduling at now: its prefix cache query
// (vLLM, when the cache was looked up) and its queue time (SGLang's
// scheduler observes it as the request enters a forward batch).
func (e *engineMetrics) admit(j *job, now time.Duration, queried bool) {
	if e == nil {
		return
	}
	e.move(j, gaugeRunning)
	e.mu.Lock()
	defer e.mu.Unlock()
	switch e.mode {
	case MetricsVLLM:
		if queried {
			e.add(cPrefixQueries, float64(j.prompt))
			e.add(cPrefixHits, float64(j.cached))
		}
	case MetricsSGLang:
		e.h[hQueue].observe((now - j.arrival).Seconds())
	}
}

// token records the engine step ending at now that gave j its next token,
// before j's fields move on: the first token's TTFT (and vLLM's prompt
// tokens, counted as the prefill completes), or the gap since j's previous
// token; vLLM counts generated tokens per step.
func (e *engineMetrics) token(j *job, now time.Duration) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if j.generated == 0 {
		e.h[hTTFT].observe((now - j.arrival).Seconds())
		if e.mode == MetricsVLLM {
			e.add(cPrompt, float64(j.prompt))
		}
	} else {
		// One new token a step: SGLang's token-weighted observation of
		// interval/1 with weight 1 is vLLM's per-step one.
		e.h[hITL].observe((now - j.last).Seconds())
	}
	if e.mode == MetricsVLLM {
		e.add(cGeneration, 1)
	}
}

// finish records a request that ended normally, from its final schedule.
func (e *engineMetrics) finish(j *job, f *finalStats) {
	if e == nil {
		return
	}
	e.move(j, gaugeNone)
	e2e := (f.last - f.arrival).Seconds()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.h[hE2E].observe(e2e)
	switch e.mode {
	case MetricsVLLM:
		decode := (f.last - f.first).Seconds()
		tpot := 0.0
		if f.generated > 1 {
			tpot = decode / float64(f.generated-1)
		}
		e.h[hTPOT].observe(tpot)
		e.h[hQueue].observe((f.admitted - f.arrival).Seconds())
		e.h[hPrefill].observe((f.first - f.admitted).Seconds())
		e.h[hDecode].observe(decode)
		e.h[hInference].observe((f.last - f.admitted).Seconds())
		for i, r := range finishReasons {
			if r == f.reason {
				e.success[i]++
			}
		}
	case MetricsSGLang:
		e.add(cPrompt, float64(f.promptTokens))
		e.add(cGeneration, float64(f.generated))
		if f.cached > 0 {
			e.add(cCached, float64(f.cached))
		}
		e.add(cRequests, 1)
	}
}

// engineSnapshot is a copy of an engine's values, taken under its lock.
type engineSnapshot struct {
	h                [numHists]hist
	c                [numCounters]float64
	cseen            [numCounters]bool
	success          [2]float64
	running, waiting float64
	kvUsage          float64
}

func (e *engineMetrics) snapshot() engineSnapshot {
	var s engineSnapshot
	e.mu.Lock()
	for i := range e.h {
		s.h[i] = hist{bounds: e.h[i].bounds, counts: append([]uint64(nil), e.h[i].counts...), sum: e.h[i].sum, seen: e.h[i].seen}
	}
	s.c, s.cseen, s.success = e.c, e.cseen, e.success
	e.mu.Unlock()
	s.running, s.waiting = float64(e.running.Load()), float64(e.waiting.Load())
	if e.kv != nil && !e.stopped.Load() {
		s.kvUsage = float64(e.kv.used.Load()) / float64(e.kv.budget)
	}
	return s
}

func (e *engineMetrics) reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range e.h {
		e.h[i].reset()
	}
	clear(e.c[:])
	clear(e.cseen[:])
	clear(e.success[:])
}

func (e *engineMetrics) labels(scheduler bool, extra ...string) []*dto.LabelPair {
	kv := []string{"model_name", e.model}
	if e.mode == MetricsVLLM {
		kv = append(kv, "engine", e.index)
	} else {
		kv = append(kv, "engine_type", "unified")
		if scheduler {
			kv = append(kv, "tp_rank", "0", "pp_rank", "0")
		}
	}
	kv = append(kv, extra...)
	out := make([]*dto.LabelPair, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		out = append(out, &dto.LabelPair{Name: new(kv[i]), Value: new(kv[i+1])})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].GetName() < out[b].GetName() })
	return out
}

// gather builds the metric families: each engine's values are copied
// under its lock, the families built outside it.
func (m *serverMetrics) gather() []*dto.MetricFamily {
	m.mu.Lock()
	engines := append([]*engineMetrics(nil), m.engines...)
	m.mu.Unlock()
	snaps := make([]engineSnapshot, len(engines))
	for i, e := range engines {
		snaps[i] = e.snapshot()
	}
	// SGLang's series exist from their first observation: its
	// prometheus_client children are created by .labels() as a value is
	// recorded (sglang/srt/metrics/collector.py), and its
	// MultiProcessCollector exposes only what was written, so a family
	// without a series is absent. vLLM creates its children up front
	// (make_per_engine in vllm/v1/metrics/loggers.py).
	lazy := m.mode == MetricsSGLang
	var out []*dto.MetricFamily
	family := func(name, help string, t dto.MetricType) *dto.MetricFamily {
		mf := &dto.MetricFamily{Name: new(name), Help: new(help), Type: t.Enum()}
		out = append(out, mf)
		return mf
	}
	for _, hs := range m.spec.hists {
		mf := family(hs.name, hs.help, dto.MetricType_HISTOGRAM)
		for i, e := range engines {
			h := snaps[i].h[hs.id]
			if lazy && !h.seen {
				continue
			}
			dh := &dto.Histogram{SampleSum: new(h.sum)}
			cum := uint64(0)
			for k, b := range h.bounds {
				cum += h.counts[k]
				dh.Bucket = append(dh.Bucket, &dto.Bucket{UpperBound: new(b), CumulativeCount: new(cum)})
			}
			cum += h.counts[len(h.bounds)]
			dh.SampleCount = new(cum)
			mf.Metric = append(mf.Metric, &dto.Metric{Label: e.labels(hs.scheduler), Histogram: dh})
		}
	}
	for _, cs := range m.spec.counters {
		mf := family(cs.name, cs.help, dto.MetricType_COUNTER)
		for i, e := range engines {
			if lazy && !snaps[i].cseen[cs.id] {
				continue
			}
			mf.Metric = append(mf.Metric, &dto.Metric{Label: e.labels(false), Counter: &dto.Counter{Value: new(snaps[i].c[cs.id])}})
		}
	}
	if m.spec.success != "" {
		mf := family(m.spec.success, "Count of successfully processed requests.", dto.MetricType_COUNTER)
		for i, e := range engines {
			for k, r := range finishReasons {
				mf.Metric = append(mf.Metric, &dto.Metric{Label: e.labels(false, "finished_reason", r), Counter: &dto.Counter{Value: new(snaps[i].success[k])}})
			}
		}
	}
	for _, gs := range m.spec.gauges {
		mf := family(gs.name, gs.help, dto.MetricType_GAUGE)
		for i, e := range engines {
			v := snaps[i].running
			switch gs.kind {
			case gWaiting:
				v = snaps[i].waiting
			case gKVUsage:
				v = snaps[i].kvUsage
			}
			mf.Metric = append(mf.Metric, &dto.Metric{Label: e.labels(true), Gauge: &dto.Gauge{Value: new(v)}})
		}
	}
	if lazy {
		out = slices.DeleteFunc(out, func(mf *dto.MetricFamily) bool { return len(mf.Metric) == 0 })
	}
	return out
}

// metricsFormat is the exposition format served: text 0.0.4,
// "text/plain; version=0.0.4; charset=utf-8", as vLLM and SGLang serve it.
var metricsFormat = expfmt.NewFormat(expfmt.TypeTextPlain)

// handleMetrics serves GET /metrics and /vllm/metrics.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if s.metrics == nil {
		// FastAPI's 404, as SGLang without --enable-metrics answers.
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
		return
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, metricsFormat)
	for _, mf := range s.metrics.gather() {
		if err := enc.Encode(mf); err != nil {
			http.Error(w, "sim: encoding metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", string(metricsFormat))
	w.Write(buf.Bytes())
}

// ResetMetrics zeroes every counter and histogram the server exposes, as
// a restart of the server process would (the gauges keep reading the
// live state), so that a scraper's delta across it sees counts go down.
// It does nothing when metrics are off.
func (s *Server) ResetMetrics() {
	if s.lc != nil {
		s.lc.met.reset()
		return
	}
	if s.metrics == nil {
		return
	}
	s.metrics.mu.Lock()
	engines := append([]*engineMetrics(nil), s.metrics.engines...)
	s.metrics.mu.Unlock()
	for _, e := range engines {
		e.reset()
	}
}

// tracer receives every token's schedule instant and every finished
// request's statistics: the truth the metrics tests compare with.
type tracer interface {
	token(j *job, at time.Duration)
	done(j *job, f *finalStats)
}

// observeToken records the step ending at now that gave j a token, before
// j's fields are updated for it.
func (s *Server) observeToken(j *job, now time.Duration) {
	if t := s.trace.Load(); t != nil {
		(*t).token(j, now)
	}
	j.met.token(j, now)
}

// observeDone records j's normal end with its final statistics.
func (s *Server) observeDone(j *job, f *finalStats) {
	if t := s.trace.Load(); t != nil {
		(*t).done(j, f)
	}
	j.met.finish(j, f)
}
