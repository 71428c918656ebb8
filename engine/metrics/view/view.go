// Package view is an inference server's own view of a measured run, read
// from its Prometheus /metrics endpoint (vLLM, SGLang, llama.cpp, TGI) by a
// [Scraper]: one scrape before the run's first request, one after its last
// with the server idle, subtracted (package metrics), and the server's
// gauges sampled while the run goes on. A [View] holds the figures of the
// window, each histogram a [Figure] with its exact mean and its
// percentiles, each the interval its bucket counts and the exact sum allow
// ([Percentile.Format] prints histogram_quantile's point only where they
// do not rule it out).
//
// A run drives it in four steps:
//
//	run := scraper.Start(ctx)        // the first scrape, beside the run's preparation
//	run.Ready()                      // before the first request
//	run.StartSampling(ctx, time.Now())
//	// … the requests …
//	run.StopSampling()
//	v := run.Finish(ctx, view.Counts{Completed: completed, Sent: sent})
//
// Servers as they really behave: a fresh SGLang serves nothing before its
// first request, and its series then count from zero; llama.cpp counts no
// requests, so its generated tokens are checked against the client's
// ([Counts]) where other servers' request counts are.
//
// Nothing here can fail or change the client's measurement: a scrape that
// errs, hangs past its timeout, is too large or does not parse, a server
// that restarted between the scrapes, a changed bucket layout, an endpoint
// that serves no inference server's families, or a request (or llama.cpp
// token) count that is not the run's (foreign traffic, a load balancer)
// each end in a warning and no figure rather than a wrong one.
//
// Package benchkit sets each View beside the client's summary of the same
// run (Summary.Server); the package itself knows nothing of the client's
// figures but the counts Finish is given.
package view

import (
	"math"

	"github.com/inferbench/inferbench/engine/metrics"
)

// View is the server's own figures over one run: the deltas of its
// /metrics between a scrape before the run and one after.
type View struct {
	// URL is the endpoint scraped.
	URL string `json:"url"`
	// Server is whose families the endpoint served after the run
	// (metrics.Server: "vLLM", "SGLang", "TGI", "llama.cpp"); empty when
	// none of theirs, and the view then has no figure.
	Server metrics.Server `json:"server_kind,omitempty"`
	// Requests is the server's count of requests finished in the window.
	Requests *float64 `json:"requests,omitempty"`
	// The server's latency histograms over the window, each absent where
	// the server has no such family: TTFT (vLLM's from the request's
	// arrival at the frontend: tokenization and queue included, HTTP and
	// network not), ITL (vLLM: one sample per engine step; SGLang: per
	// token), TPOT (vLLM's per-request decode time / (n − 1); TGI's
	// inference time / n, prefill included), E2E, Queue, Prefill and
	// Decode.
	TTFT    *Figure `json:"ttft_s,omitempty"`
	ITL     *Figure `json:"itl_s,omitempty"`
	TPOT    *Figure `json:"tpot_s,omitempty"`
	E2E     *Figure `json:"e2e_s,omitempty"`
	Queue   *Figure `json:"queue_s,omitempty"`
	Prefill *Figure `json:"prefill_s,omitempty"`
	Decode  *Figure `json:"decode_s,omitempty"`
	// Inference is prefill and decode together, from the request's first
	// scheduling (vLLM's inference time, TGI's inference duration).
	Inference *Figure `json:"inference_s,omitempty"`
	// Token counters over the window: prompt tokens (vLLM and SGLang the
	// whole prompts, llama.cpp only those evaluated), generated tokens,
	// and cached prompt tokens (SGLang).
	PromptTokens *float64 `json:"prompt_tokens,omitempty"`
	OutputTokens *float64 `json:"output_tokens,omitempty"`
	CachedTokens *float64 `json:"cached_tokens,omitempty"`
	// PrefixHitRate is the measured hit rate: vLLM's Δhits/Δqueries (in
	// tokens), else the cached over all prompt tokens (SGLang; llama.cpp,
	// whose prompt counter holds only the tokens evaluated).
	PrefixHitRate *float64 `json:"prefix_hit_rate,omitempty"`
	// PromptTPS and OutputTPS are llama.cpp's per-slot speeds from its
	// counters: Δprompt_tokens/Δprompt_seconds, and the per-step decode
	// speed its timings give, (Δtokens_predicted − the client's completed
	// requests)/Δtokens_predicted_seconds (metrics.Window.LlamaCppStepSpeed:
	// each request takes one step fewer than its tokens).
	PromptTPS *float64 `json:"prompt_tps,omitempty"`
	OutputTPS *float64 `json:"output_tps,omitempty"`
	// Beside sets each server mean beside the client's (benchkit fills
	// it from the client's summary of the run).
	Beside []Comparison `json:"beside_client,omitempty"`
	// Samples are the server's gauges read during the run
	// (Scraper.SampleEvery), kept whether or not the window's figures
	// were refused.
	Samples []Sample `json:"gauge_samples,omitempty"`
	// Warnings say which figures were refused and why.
	Warnings []string `json:"warnings,omitempty"`
}

// Figure is one server histogram over the window: its count, its exact
// mean (Δsum/Δcount), its percentiles (each the interval the bucket deltas
// and the exact sum allow, with histogram_quantile's point where they do
// not rule it out), and the bucket layout they came from.
type Figure struct {
	// Family is the exposed family read.
	Family string     `json:"family"`
	Count  float64    `json:"count"`
	Mean   float64    `json:"mean"`
	P50    Percentile `json:"p50"`
	P90    Percentile `json:"p90"`
	P99    Percentile `json:"p99"`
	// Buckets are the finite upper bounds of the layout; +Inf follows
	// them.
	Buckets []float64 `json:"buckets"`
}

// Percentile is a server percentile, the order statistic x₍ₖ₎ (k = ⌈q·N⌉)
// of the window's N observations, as far as the bucket counts and the
// exact sum tell it (metrics.Percentile): x₍ₖ₎ lies in its bucket (Lower,
// Upper] and, narrower, in [Min, Max]. Value is histogram_quantile's
// interpolation, a figure only where Point says the buckets and the sum
// do not rule it out. A null bound is unbounded: Upper and Max past the
// last bucket with no finite sum to bound them (Value, AtLeast, is then
// the last finite bound).
type Percentile struct {
	Value   float64  `json:"value"`
	Lower   *float64 `json:"lower"`
	Upper   *float64 `json:"upper"`
	AtLeast bool     `json:"at_least,omitempty"`
	// Closed says the interval holds Lower: the first bucket, [0, Upper].
	Closed bool `json:"lower_closed,omitempty"`
	// Min and Max are what the counts and the sum allow x₍ₖ₎.
	Min *float64 `json:"min"`
	Max *float64 `json:"max"`
	// Point says Value lies in [Min, Max], outside the +Inf bucket and in
	// a bucket that holds less than nine tenths of the observations.
	Point bool `json:"point"`
	// Inconsistent says the sum contradicts the counts; Min and Max are
	// then the bucket's bounds.
	Inconsistent bool `json:"inconsistent,omitempty"`
}

// newPercentile keeps p's fields, an infinite bound as null.
func newPercentile(p metrics.Percentile) Percentile {
	return Percentile{Value: p.Value, Lower: finite(p.Lower), Upper: finite(p.Upper), AtLeast: p.AtLeast,
		Closed: p.Closed, Min: finite(p.Min), Max: finite(p.Max), Point: p.Point, Inconsistent: p.Inconsistent}
}

// metrics is the percentile as package metrics has it, null bounds
// infinite.
func (p Percentile) metrics() metrics.Percentile {
	or := func(v *float64, inf float64) float64 {
		if v == nil {
			return inf
		}
		return *v
	}
	return metrics.Percentile{Value: p.Value, Lower: or(p.Lower, math.Inf(-1)), Upper: or(p.Upper, math.Inf(1)),
		AtLeast: p.AtLeast, Closed: p.Closed, Min: or(p.Min, math.Inf(-1)), Max: or(p.Max, math.Inf(1)),
		Point: p.Point, Inconsistent: p.Inconsistent}
}

// Format writes the percentile as metrics.Percentile.Format does, its
// values times scale (1000 for milliseconds) with digits significant
// digits: "41.9" (known), "3.2 [1, 5]" (the point and what the counts
// and sum allow), "≤ 41.9", "(1, 5]" or "[1.2, 5]" (no point can be
// told), "≥ 2.5e+03" (past the last bucket, unbounded). It never prints a
// value the buckets and the mean rule out.
func (p Percentile) Format(scale float64, digits int) string {
	return p.metrics().Format(scale, digits)
}

// String writes the percentile in seconds to four significant digits.
func (p Percentile) String() string { return p.Format(1, 4) }

// Sample is the server's gauges at one instant of a run: samples, not a
// distribution, read Scraper.SampleEvery apart.
type Sample struct {
	// AtS is the scrape's instant in seconds from the run's start.
	AtS float64 `json:"at_s"`
	// Running and Waiting are the requests the server ran and queued
	// (all ranks summed); KVUsage its KV cache usage as a fraction (the
	// ranks' mean). Null where the server has no such gauge.
	Running *float64 `json:"running"`
	Waiting *float64 `json:"waiting"`
	KVUsage *float64 `json:"kv_usage"`
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

// fill sets the view's figures from the window; completed is the
// client's count of the requests the server finished.
func (v *View) fill(w metrics.Window, completed int) {
	hist := func(get func() (metrics.Hist, bool)) *Figure {
		h, ok := get()
		if !ok {
			return nil
		}
		return newFigure(h)
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
	v.PromptTPS = counter(w.LlamaCppPromptSpeed)
	v.OutputTPS = counter(func() (float64, bool) { return w.LlamaCppStepSpeed(completed) })
}

// newFigure summarises a histogram; nil for an empty one.
func newFigure(h metrics.Hist) *Figure {
	mean, ok := h.Mean()
	if !ok {
		return nil
	}
	f := &Figure{Family: h.Family, Count: h.Count, Mean: mean}
	for _, b := range h.Layout() {
		if !math.IsInf(b, 1) {
			f.Buckets = append(f.Buckets, b)
		}
	}
	for _, q := range []struct {
		q   float64
		dst *Percentile
	}{{0.5, &f.P50}, {0.9, &f.P90}, {0.99, &f.P99}} {
		p, ok := h.Quantile(q.q)
		if !ok {
			continue
		}
		*q.dst = newPercentile(p)
	}
	return f
}

// finite returns &v, or nil when v is NaN or infinite (JSON has neither).
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
