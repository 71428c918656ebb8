package metrics

import (
	"strings"
	"testing"
)

func TestBusy(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		n          float64
		known      bool
	}{
		{"vllm two ranks", `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 2
vllm:num_requests_running{engine="1",model_name="m"} 1
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 4
`, 7, true},
		{"idle sglang", `# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m"} 0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="m"} 0
`, 0, true},
		{"no gauges", `# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="m"} 9
`, 0, false},
		{"NaN gauge", `# TYPE tgi_queue_size gauge
tgi_queue_size NaN
`, 0, false},
		{"negative gauge", `# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing -1
`, 0, false},
		{"a counter of the name is not a gauge", `# TYPE tgi_batch_current_size counter
tgi_batch_current_size 3
`, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(strings.NewReader(tc.text), Options{})
			if err != nil {
				t.Fatal(err)
			}
			n, known := s.Busy()
			if n != tc.n || known != tc.known {
				t.Errorf("Busy() = %v, %v; want %v, %v", n, known, tc.n, tc.known)
			}
		})
	}
}

func TestGauges(t *testing.T) {
	s, err := Parse(strings.NewReader(`# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 2
vllm:num_requests_running{engine="1",model_name="m"} 3
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.75
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="m"} +Inf
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := s.GaugeSum(RunningNames...); n != 5 || !ok {
		t.Errorf("running = %v, %v; want 5 over both ranks", n, ok)
	}
	if f, ok := s.GaugeMean(KVUsageNames...); f != 0.5 || !ok {
		t.Errorf("KV usage = %v, %v; want the ranks' mean 0.5", f, ok)
	}
	if _, ok := s.GaugeSum(WaitingNames...); ok {
		t.Error("an infinite gauge was read")
	}
	if _, ok := s.GaugeMean("tgi_queue_size"); ok {
		t.Error("an absent gauge was read")
	}
}
