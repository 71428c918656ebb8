package metrics

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
