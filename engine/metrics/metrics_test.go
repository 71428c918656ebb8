package metrics

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

func parseString(t *testing.T, text string) Snapshot {
	t.Helper()
	s, err := Parse(strings.NewReader(text), Options{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

func golden(t *testing.T, name string) Snapshot {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return parseString(t, string(b))
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// The goldens come from scripts/gen_metrics_goldens.py; the window holds four
// requests over two engines, whose observations are restated here.
func TestGoldenWindow(t *testing.T) {
	w, warns := Delta(golden(t, "vllm_before.txt"), golden(t, "vllm_after.txt"))
	if len(warns) != 0 {
		t.Fatalf("warnings: %v", warns)
	}
	counters := []struct {
		name string
		get  func() (float64, bool)
		want float64
	}{
		{"requests", w.Requests, 4},
		{"prompt", w.PromptTokens, 1000},
		{"output", w.OutputTokens, 12},
		{"hit rate", w.PrefixHitRate, 0.4},
	}
	for _, c := range counters {
		got, ok := c.get()
		if !ok || !near(got, c.want) {
			t.Errorf("%s = %v, %v; want %v", c.name, got, ok, c.want)
		}
	}
	if err := w.CheckRequests(4); err != nil {
		t.Error(err)
	}
	if err := w.CheckRequests(5); err == nil {
		t.Error("CheckRequests(5) accepted a window of 4 requests")
	}

	hists := []struct {
		name string
		get  func() (Hist, bool)
		obs  []float64
	}{
		{"ttft", w.TTFT, []float64{0.05, 0.15, 0.2, 3.0}},
		{"itl", w.ITL, []float64{0.02, 0.03, 0.04, 0.06, 0.02, 0.08, 0.12, 0.3}},
		{"e2e", w.E2E, []float64{0.4, 0.9, 1.2, 6.0}},
		{"queue", w.Queue, []float64{0.001, 0.002, 0.003, 0.004}},
		{"prefill", w.Prefill, []float64{0.05, 0.15, 0.2, 3.0}},
		{"decode", w.Decode, []float64{0.35, 0.75, 1.0, 3.0}},
	}
	for _, c := range hists {
		h, ok := c.get()
		if !ok {
			t.Errorf("%s: missing", c.name)
			continue
		}
		sum := 0.0
		for _, v := range c.obs {
			sum += v
		}
		if m, ok := h.Mean(); !ok || !near(m, sum/float64(len(c.obs))) || h.Count != float64(len(c.obs)) {
			t.Errorf("%s: mean %v count %v, want %v over %d", c.name, m, h.Count, sum/float64(len(c.obs)), len(c.obs))
		}
		for _, q := range []float64{0.01, 0.25, 0.5, 0.9, 0.99} {
			p, ok := h.Quantile(q)
			if !ok || p.AtLeast {
				t.Errorf("%s p%v: %v %v", c.name, q, p, ok)
				continue
			}
			want := handQuantile(h.Layout(), c.obs, q)
			if !near(p.Value, want) || p.Value < p.Lower || p.Value > p.Upper {
				t.Errorf("%s p%v = %v, hand %v", c.name, q, p, want)
			}
		}
	}
	// The TTFT median, by hand: rank 2 lands in (0.1, 0.25], which holds
	// observations 2 and 3; 0.1 + 0.15·(2−1)/2.
	h, _ := w.TTFT()
	p, _ := h.Quantile(0.5)
	if !near(p.Value, 0.175) || p.Lower != 0.1 || p.Upper != 0.25 {
		t.Errorf("ttft p50 = %v, want 0.175 [0.1, 0.25]", p)
	}
	if l := h.Layout(); len(l) != 23 || l[0] != 0.001 || !math.IsInf(l[22], 1) {
		t.Errorf("layout %v", l)
	}
}

// handQuantile recomputes histogram_quantile from raw observations and a
// layout: bucket counts, rank q·N, linear interpolation.
func handQuantile(layout, obs []float64, q float64) float64 {
	cum := make([]float64, len(layout))
	for i, le := range layout {
		for _, v := range obs {
			if v <= le {
				cum[i]++
			}
		}
	}
	rank := q * float64(len(obs))
	for i := range cum {
		if cum[i] >= rank {
			lo, below := 0.0, 0.0
			if i > 0 {
				lo, below = layout[i-1], cum[i-1]
			}
			return lo + (layout[i]-lo)*(rank-below)/(cum[i]-below)
		}
	}
	return math.NaN()
}

func TestRestartRefused(t *testing.T) {
	w, warns := Delta(golden(t, "vllm_after.txt"), golden(t, "vllm_before.txt"))
	if _, ok := w.Requests(); ok {
		t.Error("a request count from a window whose counter went down")
	}
	if _, ok := w.TTFT(); ok {
		t.Error("a TTFT histogram from a window whose counts went down")
	}
	found := false
	for _, x := range warns {
		if x.Family == "vllm:request_success_total" && strings.Contains(x.Reason, "restart") {
			found = true
		}
	}
	if !found {
		t.Errorf("no restart warning for vllm:request_success_total in %v", warns)
	}
}

const histTmpl = `# TYPE h histogram
h_bucket{engine="0",le="%s"} %s
h_bucket{engine="0",le="+Inf"} %s
h_sum{engine="0"} %s
h_count{engine="0"} %s
`

func hist(le, c, inf, sum, count string) string {
	return fmt.Sprintf(histTmpl, le, c, inf, sum, count)
}

func TestRefusals(t *testing.T) {
	base := hist("1", "1", "2", "3", "2")
	cases := []struct {
		name, before, after, reason string
	}{
		{"changed buckets", base, hist("2", "2", "3", "4", "3"), "bucket set changed"},
		{"counter down", "# TYPE c counter\nc 5\n", "# TYPE c counter\nc 4\n", "restart"},
		{"NaN counter", "# TYPE c counter\nc 1\n", "# TYPE c counter\nc NaN\n", "NaN"},
		{"negative counter", "# TYPE c counter\nc -1\n", "# TYPE c counter\nc 1\n", "negative"},
		{"NaN bucket", base, hist("1", "NaN", "3", "4", "3"), "NaN"},
		{"no +Inf", base, "# TYPE h histogram\nh_bucket{le=\"1\"} 3\nh_sum 4\nh_count 3\n", "without a +Inf"},
		{"series gone", "# TYPE c counter\nc{a=\"1\"} 1\nc{a=\"2\"} 1\n", "# TYPE c counter\nc{a=\"1\"} 2\n", "restart"},
		{"+Inf not count", base, hist("1", "2", "3", "4", "4"), "+Inf"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, warns := Delta(parseString(t, c.before), parseString(t, c.after))
			if len(w.Families) != 0 {
				t.Errorf("figures kept: %v", w.Families)
			}
			if len(warns) != 1 || !strings.Contains(warns[0].Reason, c.reason) {
				t.Errorf("warnings %v, want one containing %q", warns, c.reason)
			}
		})
	}
}

func TestRanksSummedAndLabelOrder(t *testing.T) {
	before := `# TYPE h histogram
h_bucket{engine="0",model_name="m",le="1"} 1
h_bucket{engine="0",model_name="m",le="+Inf"} 1
h_sum{engine="0",model_name="m"} 0.5
h_count{engine="0",model_name="m"} 1
# TYPE c counter
c{model_name="m",engine="0"} 1
c{model_name="m",engine="1"} 10
`
	after := `# TYPE h histogram
h_bucket{model_name="m",engine="0",le="1"} 3
h_bucket{model_name="m",engine="0",le="+Inf"} 4.0
h_sum{model_name="m",engine="0"} 4.5
h_count{model_name="m",engine="0"} 4.0
h_bucket{model_name="m",engine="1",le="1"} 1e0
h_bucket{model_name="m",engine="1",le="+Inf"} 2
h_sum{model_name="m",engine="1"} 3
h_count{model_name="m",engine="1"} 2
# TYPE c counter
c{engine="0",model_name="m"} 3.5
c{engine="1",model_name="m"} 12
`
	w, warns := Delta(parseString(t, before), parseString(t, after))
	if len(warns) != 0 {
		t.Fatal(warns)
	}
	f := w.Families["c"]
	if len(f.Series) != 1 || f.Series[0].Value != 4.5 || f.Series[0].Labels["model_name"] != "m" || f.Series[0].Labels["engine"] != "" {
		t.Errorf("counter ranks not summed: %+v", f.Series)
	}
	h, ok := w.Histogram("h")
	if !ok || h.Count != 5 || h.Sum != 7 || h.Buckets[0].Count != 3 || h.Buckets[1].Count != 5 {
		t.Fatalf("histogram ranks not summed: %+v", h)
	}
	// Rank 4.5 of 5 lands in +Inf: histogram_quantile says only "≥ 1",
	// but the sum bounds it: the two observations past 1 sum to 7 − 3·(at
	// most 1) ≥ 4, so the larger is at least 2, and at most 7 − 1 (the
	// other above 1) − 0 (the three below at least 0) = 6.
	p, _ := h.Quantile(0.9)
	if !p.AtLeast || p.Value != 1 || p.Point || math.Abs(p.Min-2) > 1e-6 || math.Abs(p.Max-6) > 1e-6 || p.String() != "[2, 6]" {
		t.Errorf("p90 = %+v %v, want ≥ 1 bounded to [2, 6]", p, p)
	}
	p, _ = h.Quantile(0.5)
	if p.Value != 2.5/3 || p.Lower != 0 || p.Upper != 1 {
		t.Errorf("p50 = %v, want 0.8333 [0, 1]", p)
	}
	if _, ok := (Hist{}).Quantile(0.5); ok {
		t.Error("a quantile of an empty histogram")
	}
	if _, ok := h.Quantile(1.5); ok {
		t.Error("a quantile for q > 1")
	}
}

func TestNamesOldAndNew(t *testing.T) {
	old := `# TYPE vllm:time_per_output_token_seconds histogram
vllm:time_per_output_token_seconds_bucket{le="0.1"} 1
vllm:time_per_output_token_seconds_bucket{le="+Inf"} 1
vllm:time_per_output_token_seconds_sum 0.05
vllm:time_per_output_token_seconds_count 1
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 100
# TYPE llamacpp:prompt_seconds_total counter
llamacpp:prompt_seconds_total 0.5
# TYPE llamacpp:prompt_tokens_seconds gauge
llamacpp:prompt_tokens_seconds 999
`
	w, _ := Delta(Snapshot{}, parseString(t, old))
	if h, ok := w.ITL(); !ok || h.Family != "vllm:time_per_output_token_seconds" {
		t.Errorf("old ITL name not read: %+v %v", h, ok)
	}
	if v, ok := w.LlamaCppPromptSpeed(); !ok || v != 200 {
		t.Errorf("llama.cpp prompt speed %v %v", v, ok)
	}
	if _, ok := w.Families["llamacpp:prompt_tokens_seconds"]; ok {
		t.Error("a gauge in the window")
	}
	if v, ok := w.Counter("llamacpp:prompt_tokens"); !ok || v != 100 {
		t.Errorf("counter without _total not found: %v", v)
	}
}

func TestHostileBodies(t *testing.T) {
	big := strings.Repeat("# padding padding padding\n", 1<<20)
	if _, err := Parse(strings.NewReader(big), Options{}); !errors.Is(err, ErrBodyTooLarge) {
		t.Errorf("over the byte limit: %v", err)
	}
	var b strings.Builder
	b.WriteString("# TYPE c counter\n")
	for i := range 1_000_000 {
		fmt.Fprintf(&b, "c{i=\"%d\"} 1\n", i)
	}
	if _, err := Parse(strings.NewReader(b.String()), Options{}); !errors.Is(err, ErrTooManySamples) {
		t.Errorf("a million series: %v", err)
	}
	if _, err := Parse(strings.NewReader("# TYPE c counter\nc 1\n"), Options{MaxBytes: math.MaxInt64}); err != nil {
		t.Errorf("the largest byte limit: %v", err)
	}
	if _, err := Parse(strings.NewReader("# TYPE c counter\nc 1\n"), Options{MaxBytes: 20}); !errors.Is(err, ErrBodyTooLarge) {
		t.Errorf("one byte over the limit: %v", err)
	}
	if _, err := Parse(strings.NewReader("# TYPE c counter\nc 1\n"), Options{MaxBytes: 21}); err != nil {
		t.Errorf("exactly at the limit: %v", err)
	}
	if _, err := Parse(strings.NewReader("garbage{{{\n"), Options{}); err == nil {
		t.Error("garbage parsed")
	}
}

func TestScrape(t *testing.T) {
	body, err := os.ReadFile("testdata/vllm_after.txt")
	if err != nil {
		t.Fatal(err)
	}
	var accept string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			accept = r.Header.Get("Accept")
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			w.Write(body)
		case "/slow":
			<-r.Context().Done()
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	s, err := Scrape(context.Background(), srv.Client(), srv.URL+"/metrics", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if accept != Accept {
		t.Errorf("Accept %q", accept)
	}
	if f := s.Families["vllm:time_to_first_token_seconds"]; f == nil || f.Kind != Histogram || len(f.Series) != 2 {
		t.Errorf("TTFT family: %+v", f)
	}
	for name := range s.Families {
		if strings.HasSuffix(name, "_created") {
			t.Errorf("%s kept", name)
		}
	}
	if _, err := Scrape(context.Background(), srv.Client(), srv.URL+"/missing", Options{}); err == nil {
		t.Error("a 404 scraped")
	}
	if _, err := Scrape(context.Background(), srv.Client(), srv.URL+"/metrics", Options{MaxBytes: 100}); !errors.Is(err, ErrBodyTooLarge) {
		t.Errorf("small byte limit: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Scrape(ctx, srv.Client(), srv.URL+"/slow", Options{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timeout: %v", err)
	}
}

func FuzzScrape(f *testing.F) {
	// Small seeds: the mutator does far more with them than with a whole
	// golden; the goldens are parsed by the ordinary tests.
	f.Add([]byte(hist("0.5", "1", "2", "0.9", "2")))
	f.Add([]byte("# TYPE vllm:time_to_first_token_seconds histogram\n" +
		"vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.1\",model_name=\"m\"} 1.0\n" +
		"vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 3.0\n" +
		"vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\"} 3.0\n" +
		"vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"m\"} 0.7\n" +
		"# TYPE vllm:request_success_total counter\n" +
		"vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"m\"} 3.0\n"))
	f.Add([]byte(hist("1", "NaN", "3", "4", "3")))
	f.Add([]byte("# TYPE c counter\nc{engine=\"0\"} 1\nc{engine=\"1\"} 2\n"))
	ref, _ := os.ReadFile("testdata/vllm_before.txt")
	before, err := Parse(strings.NewReader(string(ref)), Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := Parse(strings.NewReader(string(body)), Options{MaxBytes: 1 << 16, MaxSamples: 1000})
		if err != nil {
			return
		}
		for _, pair := range [][2]Snapshot{{before, s}, {s, before}, {s, s}} {
			w, _ := Delta(pair[0], pair[1])
			for name := range w.Families {
				if h, ok := w.Histogram(name); ok {
					h.Mean()
					for _, q := range []float64{0, 0.5, 0.99, 1} {
						p, ok := h.Quantile(q)
						if !ok {
							continue
						}
						if !p.AtLeast && (p.Value < p.Lower || p.Value > p.Upper) {
							t.Fatalf("%s q%v = %v outside its bucket", name, q, p)
						}
						if !(p.Lower <= p.Min && p.Min <= p.Max && p.Max <= p.Upper) || p.Point && (p.Value < p.Min || p.Value > p.Max) {
							t.Fatalf("%s q%v = %+v: the feasible interval or the point out of place", name, q, p)
						}
						p.Format(1000, 3)
					}
				}
				w.Counter(name)
			}
		}
	})
}
