package metrics

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
)

// tgiText writes a window's worth of TGI's /metrics as its router exposes
// them (router/src/server.rs: metrics-exporter-prometheus, counters without
// _total, every *duration histogram on the buckets 0.0001 × 1.5^k, k = 1 …
// 35), for requests of the given queue, inference and total times and
// mean times per token.
func tgiText(queue, inference, total, perToken []float64, running float64) string {
	var bounds []float64
	v := 0.0001
	for range 35 {
		v *= 1.5
		bounds = append(bounds, v)
	}
	var b strings.Builder
	hist := func(name string, obs []float64) {
		fmt.Fprintf(&b, "# TYPE %s histogram\n", name)
		sum := 0.0
		for _, o := range obs {
			sum += o
		}
		for _, ub := range bounds {
			n := 0
			for _, o := range obs {
				if o <= ub {
					n++
				}
			}
			fmt.Fprintf(&b, "%s_bucket{le=\"%s\"} %d\n", name, strconv.FormatFloat(ub, 'g', -1, 64), n)
		}
		fmt.Fprintf(&b, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %v\n%s_count %d\n", name, len(obs), name, sum, name, len(obs))
	}
	fmt.Fprintf(&b, "# TYPE tgi_request_count counter\ntgi_request_count %d\n", len(queue))
	fmt.Fprintf(&b, "# TYPE tgi_request_success counter\ntgi_request_success %d\n", len(queue))
	fmt.Fprintf(&b, "# TYPE tgi_queue_size gauge\ntgi_queue_size 0\n# TYPE tgi_batch_current_size gauge\ntgi_batch_current_size %v\n", running)
	hist("tgi_request_queue_duration", queue)
	hist("tgi_request_inference_duration", inference)
	hist("tgi_request_duration", total)
	hist("tgi_request_mean_time_per_token_duration", perToken)
	return b.String()
}

// TestTGIWindow: TGI's families read through the same window: its queue,
// inference and total durations and its mean time per token, exact means
// over the window's requests, its request counter without _total, and
// its batch gauges for idleness.
func TestTGIWindow(t *testing.T) {
	q0, i0, t0, p0 := []float64{0.002}, []float64{0.4}, []float64{0.41}, []float64{0.02}
	q1 := append(q0, 0.010, 0.030, 0.050)
	i1 := append(i0, 0.5, 0.7, 0.9)
	t1 := append(t0, 0.52, 0.74, 0.96)
	p1 := append(p0, 0.025, 0.035, 0.045)
	before, err := Parse(strings.NewReader(tgiText(q0, i0, t0, p0, 0)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	after, err := Parse(strings.NewReader(tgiText(q1, i1, t1, p1, 2)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n, known := after.Busy(); !known || n != 2 {
		t.Errorf("Busy = %v, %v; want TGI's batch of 2", n, known)
	}
	w, warns := Delta(before, after)
	if len(warns) != 0 {
		t.Fatalf("warnings %v", warns)
	}
	if w.Server() != ServerTGI || !w.HasRequestCounter() {
		t.Errorf("server %q, request counter %v; want TGI's", w.Server(), w.HasRequestCounter())
	}
	if n, ok := w.Requests(); !ok || n != 3 {
		t.Errorf("Requests = %v, %v; want tgi_request_success's 3", n, ok)
	}
	for _, c := range []struct {
		name string
		get  func() (Hist, bool)
		want float64
	}{
		{"queue", w.Queue, (0.010 + 0.030 + 0.050) / 3},
		{"inference", w.Inference, (0.5 + 0.7 + 0.9) / 3},
		{"e2e", w.E2E, (0.52 + 0.74 + 0.96) / 3},
		{"tpot", w.TPOT, (0.025 + 0.035 + 0.045) / 3},
	} {
		h, ok := c.get()
		if !ok || h.Count != 3 || !strings.HasPrefix(h.Family, "tgi_") {
			t.Errorf("%s: %+v, %v; want TGI's histogram over 3 requests", c.name, h, ok)
			continue
		}
		if m, _ := h.Mean(); math.Abs(m-c.want) > 1e-12 {
			t.Errorf("%s mean %v; want %v", c.name, m, c.want)
		}
		p, _ := h.Quantile(0.5)
		if p.Lower >= p.Upper || p.Value < p.Lower || p.Value > p.Upper {
			t.Errorf("%s p50 %v: bounds out of order", c.name, p)
		}
	}
}
