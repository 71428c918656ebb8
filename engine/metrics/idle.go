package metrics

import "math"

// BusyNames are the gauges of requests a server is running or holding in
// its queue, per server: vLLM, SGLang, llama.cpp and TGI. A server is idle
// when every one it exposes reads 0.
var BusyNames = []string{
	"vllm:num_requests_running", "vllm:num_requests_waiting",
	"sglang:num_running_reqs", "sglang:num_queue_reqs",
	"llamacpp:requests_processing", "llamacpp:requests_deferred",
	"tgi_queue_size", "tgi_batch_current_size",
}

// Busy sums the gauges of BusyNames over every label set (data-parallel
// ranks, models): the requests the server holds at the scrape. known is
// false when the server exposes none of them, so that its idleness cannot
// be read; a NaN or negative gauge counts as unknown too.
func (s Snapshot) Busy() (n float64, known bool) {
	for _, name := range BusyNames {
		f, ok := s.Families[name]
		if !ok || f.Kind != Gauge {
			continue
		}
		for _, se := range f.Series {
			if !(se.Value >= 0) {
				return 0, false
			}
			n += se.Value
			known = true
		}
	}
	return n, known
}

// Gauge names read by the samplers, newest first, per server.
var (
	RunningNames = []string{"vllm:num_requests_running", "sglang:num_running_reqs", "llamacpp:requests_processing", "tgi_batch_current_size"}
	WaitingNames = []string{"vllm:num_requests_waiting", "sglang:num_queue_reqs", "llamacpp:requests_deferred", "tgi_queue_size"}
	KVUsageNames = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage", "llamacpp:kv_cache_usage_ratio"}
)

// GaugeSum sums every label set of the first gauge of names present (the
// requests of every data-parallel rank); false when none is, or when a
// value is NaN or infinite.
func (s Snapshot) GaugeSum(names ...string) (float64, bool) {
	vals, ok := s.gauge(names)
	sum := 0.0
	for _, v := range vals {
		sum += v
	}
	return sum, ok
}

// GaugeMean averages the label sets of the first gauge of names present
// (a fraction such as KV cache usage, per rank); false as for GaugeSum.
func (s Snapshot) GaugeMean(names ...string) (float64, bool) {
	vals, ok := s.gauge(names)
	if !ok || len(vals) == 0 {
		return 0, false
	}
	sum := 0.0
	for _, v := range vals {
		sum += v
	}
	return sum / float64(len(vals)), true
}

func (s Snapshot) gauge(names []string) ([]float64, bool) {
	for _, name := range names {
		f, ok := s.Families[name]
		if !ok || f.Kind != Gauge || len(f.Series) == 0 {
			continue
		}
		vals := make([]float64, 0, len(f.Series))
		for _, se := range f.Series {
			if math.IsNaN(se.Value) || math.IsInf(se.Value, 0) {
				return nil, false
			}
			vals = append(vals, se.Value)
		}
		return vals, true
	}
	return nil, false
}
