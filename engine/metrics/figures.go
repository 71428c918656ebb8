package metrics

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Hist is a histogram over the window: all label sets of a family summed.
type Hist struct {
	// Family is the exposed name read.
	Family  string
	Buckets []Bucket // cumulative, ascending, +Inf last
	Sum     float64
	Count   float64
}

// Layout is the bucket layout (upper bounds, +Inf last), to record beside
// the figures: it is configuration, not a constant.
func (h Hist) Layout() []float64 { return Layout(h.Buckets) }

// Mean is Δsum/Δcount, exact; false when the window holds no observation.
func (h Hist) Mean() (float64, bool) {
	if h.Count <= 0 {
		return 0, false
	}
	return h.Sum / h.Count, true
}

// Percentile is a histogram_quantile estimate and its error bar: the true
// order statistic lies in (Lower, Upper]. AtLeast marks a rank in the +Inf
// bucket: Value is then only a lower bound and Upper is +Inf.
type Percentile struct {
	Q       float64
	Value   float64
	Lower   float64
	Upper   float64
	AtLeast bool
}

func (p Percentile) String() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	if p.AtLeast {
		return "≥ " + f(p.Value)
	}
	return fmt.Sprintf("%s [%s, %s]", f(p.Value), f(p.Lower), f(p.Upper))
}

// Quantile estimates the q-quantile (0 ≤ q ≤ 1) as Prometheus's
// histogram_quantile does: rank q·N, the first bucket whose cumulative count
// reaches it, linear interpolation inside that bucket (the lowest bucket from
// 0 when its bound is positive). False for an empty window or q outside [0, 1].
func (h Hist) Quantile(q float64) (Percentile, bool) {
	n := len(h.Buckets)
	if math.IsNaN(q) || q < 0 || q > 1 || n == 0 || !math.IsInf(h.Buckets[n-1].UpperBound, 1) {
		return Percentile{}, false
	}
	total := h.Buckets[n-1].Count
	if total <= 0 {
		return Percentile{}, false
	}
	rank := q * total
	b := sort.Search(n, func(i int) bool { return h.Buckets[i].Count >= rank })
	if b == n-1 {
		lo := 0.0
		if n >= 2 {
			lo = h.Buckets[n-2].UpperBound
		}
		return Percentile{Q: q, Value: lo, Lower: lo, Upper: math.Inf(1), AtLeast: true}, true
	}
	end := h.Buckets[b].UpperBound
	if b == 0 && end <= 0 {
		return Percentile{Q: q, Value: end, Lower: end, Upper: end}, true
	}
	start, below := 0.0, 0.0
	if b > 0 {
		start, below = h.Buckets[b-1].UpperBound, h.Buckets[b-1].Count
	}
	in := h.Buckets[b].Count - below
	v := start
	if in > 0 {
		v = start + (end-start)*(rank-below)/in
	}
	return Percentile{Q: q, Value: v, Lower: start, Upper: end}, true
}

// lookup finds the first of names in the window, also with "_total" added
// or removed (prometheus_client exposes counters with it, Rust servers not).
func (w Window) lookup(names []string) (*Family, bool) {
	for _, n := range names {
		for _, c := range []string{n, n + "_total", strings.TrimSuffix(n, "_total")} {
			if f, ok := w.Families[c]; ok {
				return f, true
			}
		}
	}
	return nil, false
}

// Histogram sums all label sets of the first family of names present.
func (w Window) Histogram(names ...string) (Hist, bool) {
	f, ok := w.lookup(names)
	if !ok || f.Kind != Histogram || len(f.Series) == 0 {
		return Hist{}, false
	}
	h := Hist{Family: f.Name, Buckets: append([]Bucket(nil), f.Series[0].Buckets...)}
	h.Sum, h.Count = f.Series[0].Sum, f.Series[0].Count
	for _, s := range f.Series[1:] {
		if !sameLayout(h.Buckets, s.Buckets) {
			return Hist{}, false
		}
		h.Sum += s.Sum
		h.Count += s.Count
		for i := range h.Buckets {
			h.Buckets[i].Count += s.Buckets[i].Count
		}
	}
	return h, true
}

// Counter sums all label sets of the first counter of names present.
func (w Window) Counter(names ...string) (float64, bool) {
	f, ok := w.lookup(names)
	if !ok || f.Kind != Counter {
		return 0, false
	}
	v := 0.0
	for _, s := range f.Series {
		v += s.Value
	}
	return v, true
}

// Family names read by the helpers, newest first; both old and new names.
var (
	TTFTNames        = []string{"vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds"}
	ITLNames         = []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds", "sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"}
	E2ENames         = []string{"vllm:e2e_request_latency_seconds", "sglang:e2e_request_latency_seconds", "tgi_request_duration"}
	QueueNames       = []string{"vllm:request_queue_time_seconds", "sglang:queue_time_seconds", "tgi_request_queue_duration"}
	PrefillNames     = []string{"vllm:request_prefill_time_seconds"}
	DecodeNames      = []string{"vllm:request_decode_time_seconds"}
	InferenceNames   = []string{"vllm:request_inference_time_seconds", "tgi_request_inference_duration"}
	TPOTNames        = []string{"vllm:request_time_per_output_token_seconds", "tgi_request_mean_time_per_token_duration"}
	PromptTokenNames = []string{"vllm:prompt_tokens_total", "sglang:prompt_tokens_total", "llamacpp:prompt_tokens_total"}
	OutputTokenNames = []string{"vllm:generation_tokens_total", "sglang:generation_tokens_total", "llamacpp:tokens_predicted_total"}
	CachedTokenNames = []string{"sglang:cached_tokens_total"}
	PrefixQueryNames = []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"}
	PrefixHitNames   = []string{"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"}
	RequestNames     = []string{"vllm:request_success_total", "sglang:num_requests_total", "tgi_request_success"}
	// TGI counts a request's tokens in histograms (their sums are the
	// totals), and its counters carry no _total.
	PromptTokenHistNames = []string{"tgi_request_input_length"}
	OutputTokenHistNames = []string{"tgi_request_generated_tokens"}
	PromptSecondNames    = []string{"llamacpp:prompt_seconds_total"}
	OutputSecondNames    = []string{"llamacpp:tokens_predicted_seconds_total"}
)

// TTFT is the server's time-to-first-token histogram (vLLM, SGLang).
func (w Window) TTFT() (Hist, bool) { return w.Histogram(TTFTNames...) }

// ITL is the inter-token latency histogram. vLLM observes once per engine
// step; SGLang's is token-weighted.
func (w Window) ITL() (Hist, bool) { return w.Histogram(ITLNames...) }

// E2E is the end-to-end request latency histogram.
func (w Window) E2E() (Hist, bool) { return w.Histogram(E2ENames...) }

// Queue is the queue-time histogram.
func (w Window) Queue() (Hist, bool) { return w.Histogram(QueueNames...) }

// Prefill is vLLM's per-request prefill time histogram.
func (w Window) Prefill() (Hist, bool) { return w.Histogram(PrefillNames...) }

// Decode is vLLM's per-request decode time histogram.
func (w Window) Decode() (Hist, bool) { return w.Histogram(DecodeNames...) }

// Inference is the per-request time from its first scheduling to its last
// token (vLLM's inference time, TGI's inference duration: prefill and
// decode together).
func (w Window) Inference() (Hist, bool) { return w.Histogram(InferenceNames...) }

// TPOT is the per-request time per output token: vLLM's decode time over
// n − 1; TGI's mean time per token, its inference time (prefill included)
// over n.
func (w Window) TPOT() (Hist, bool) { return w.Histogram(TPOTNames...) }

// PromptTokens is the prompt token counter's delta (TGI: the sum of its
// input length histogram). llama.cpp counts only tokens evaluated (the
// cached prefix excluded); vLLM the full prompt.
func (w Window) PromptTokens() (float64, bool) {
	if v, ok := w.Counter(PromptTokenNames...); ok {
		return v, true
	}
	return w.histSum(PromptTokenHistNames)
}

// OutputTokens is the generated token counter's delta (TGI: the sum of
// its generated tokens histogram).
func (w Window) OutputTokens() (float64, bool) {
	if v, ok := w.Counter(OutputTokenNames...); ok {
		return v, true
	}
	return w.histSum(OutputTokenHistNames)
}

// histSum is the delta of a histogram's sum.
func (w Window) histSum(names []string) (float64, bool) {
	h, ok := w.Histogram(names...)
	if !ok {
		return 0, false
	}
	return h.Sum, true
}

// CachedTokens is SGLang's cached prompt token counter's delta.
func (w Window) CachedTokens() (float64, bool) { return w.Counter(CachedTokenNames...) }

// PrefixHitRate is vLLM's Δhits/Δqueries (in tokens); false when absent or
// no query was made.
func (w Window) PrefixHitRate() (float64, bool) {
	q, ok1 := w.Counter(PrefixQueryNames...)
	h, ok2 := w.Counter(PrefixHitNames...)
	if !ok1 || !ok2 || q <= 0 {
		return 0, false
	}
	return h / q, true
}

// Requests is the finished request count over the window, all finish
// reasons summed.
func (w Window) Requests() (float64, bool) { return w.Counter(RequestNames...) }

// LlamaCppPromptSpeed is llama.cpp's Δprompt_tokens/Δprompt_seconds: a
// per-slot speed (slot times overlap), from counters only — never from the
// *_tokens_seconds gauges, which every scrape resets.
func (w Window) LlamaCppPromptSpeed() (float64, bool) {
	return w.ratio("llamacpp:prompt_tokens_total", "llamacpp:prompt_seconds_total")
}

// LlamaCppOutputSpeed is llama.cpp's Δtokens_predicted/Δtokens_predicted_seconds, per slot.
func (w Window) LlamaCppOutputSpeed() (float64, bool) {
	return w.ratio("llamacpp:tokens_predicted_total", "llamacpp:tokens_predicted_seconds_total")
}

func (w Window) ratio(num, den string) (float64, bool) {
	n, ok1 := w.Counter(num)
	d, ok2 := w.Counter(den)
	if !ok1 || !ok2 || d <= 0 {
		return 0, false
	}
	return n / d, true
}

// CheckRequests refuses a window whose server-side request count is not
// the client's: foreign traffic, or requests straddling a scrape. It
// returns nil when the server exposes no request counter.
func (w Window) CheckRequests(client int) error {
	n, ok := w.Requests()
	if !ok {
		return nil
	}
	if n != float64(client) {
		return fmt.Errorf("metrics: server finished %v requests in the window, the client %d: foreign traffic or requests straddling a scrape", n, client)
	}
	return nil
}
