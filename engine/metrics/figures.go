package metrics

import (
	"fmt"
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
	CachedTokenNames = []string{"sglang:cached_tokens_total", "llamacpp:prompt_tokens_cached_total", "vllm:prompt_tokens_cached_total"}
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
// cached prefix excluded, counted apart in its prompt_tokens_cached_total);
// vLLM and SGLang the full prompt.
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

// CachedTokens is the delta of the prompt tokens served from the prefix
// cache: SGLang's cached_tokens_total, llama.cpp's
// prompt_tokens_cached_total, vLLM's prompt_tokens_cached_total.
func (w Window) CachedTokens() (float64, bool) { return w.Counter(CachedTokenNames...) }

// PrefixHitRate is the share of prompt tokens served from the prefix cache:
// vLLM's Δhits/Δqueries (in tokens); else Δcached over the prompt tokens,
// which are Δprompt for SGLang and vLLM (their prompt counters hold the
// cached tokens) and Δprompt + Δcached for llama.cpp (its counter holds
// only the tokens evaluated). False when absent or no prompt token came.
func (w Window) PrefixHitRate() (float64, bool) {
	q, ok1 := w.Counter(PrefixQueryNames...)
	h, ok2 := w.Counter(PrefixHitNames...)
	if ok1 && ok2 && q > 0 {
		return h / q, true
	}
	f, ok := w.lookup(CachedTokenNames)
	if !ok || f.Kind != Counter {
		return 0, false
	}
	cached, _ := w.Counter(f.Name)
	prompt, ok := w.Counter(PromptTokenNames...)
	if !ok {
		return 0, false
	}
	if strings.HasPrefix(f.Name, "llamacpp:") {
		prompt += cached
	}
	if prompt <= 0 {
		return 0, false
	}
	return cached / prompt, true
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

// LlamaCppOutputSpeed is llama.cpp's Δtokens_predicted/Δtokens_predicted_seconds,
// per slot, as its /metrics gives it. It runs high: a request's seconds
// run from its first token to its last, n − 1 decode steps, while its
// tokens count all n, so the figure is the per-step speed times n/(n − 1)
// averaged over the requests (90.8 tok/s beside a per-step 89.3 at 60
// tokens a request). [Window.LlamaCppStepSpeed] corrects it when the
// requests are known.
func (w Window) LlamaCppOutputSpeed() (float64, bool) {
	return w.ratio("llamacpp:tokens_predicted_total", "llamacpp:tokens_predicted_seconds_total")
}

// LlamaCppStepSpeed is llama.cpp's per-slot decode speed per step, the
// figure its own timings give (predicted_per_second): (Δtokens_predicted −
// requests)/Δtokens_predicted_seconds, each of the requests finished in the
// window having taken one token fewer steps than it counts. requests is the
// client's count of the requests the server finished (llama.cpp counts
// none); false when it is not positive, exceeds the tokens, or the window
// has no time.
func (w Window) LlamaCppStepSpeed(requests int) (float64, bool) {
	n, ok1 := w.Counter("llamacpp:tokens_predicted_total")
	d, ok2 := w.Counter("llamacpp:tokens_predicted_seconds_total")
	if !ok1 || !ok2 || requests <= 0 || float64(requests) > n || d <= 0 {
		return 0, false
	}
	return (n - float64(requests)) / d, true
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
// returns nil when the server exposes no request counter
// ([Window.HasRequestCounter]; llama.cpp never does).
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
