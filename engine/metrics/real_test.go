package metrics

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The expositions under testdata/prom are real prometheus_client 0.16 text
// of vLLM's and SGLang's families, written by scripts/gen_server_goldens.py;
// truth.json says what was observed between each scrape and the previous.
type truthFile struct {
	Scenarios map[string][]truthScrape `json:"scenarios"`
}

type truthScrape struct {
	File     string                 `json:"file"`
	Families map[string]truthFamily `json:"families"`
}

type truthFamily struct {
	Kind string    `json:"kind"`
	Obs  []float64 `json:"obs"`
	Sum  float64   `json:"sum"`
	Inc  float64   `json:"inc"`
}

func loadTruth(t *testing.T) truthFile {
	t.Helper()
	b, err := os.ReadFile("testdata/prom/truth.json")
	if err != nil {
		t.Fatal(err)
	}
	var tf truthFile
	if err := json.Unmarshal(b, &tf); err != nil {
		t.Fatal(err)
	}
	return tf
}

func promGolden(t *testing.T, name string) Snapshot {
	t.Helper()
	return golden(t, filepath.Join("prom", name))
}

// between gathers what truth says was observed after scrape i up to scrape
// j: observations, sums and increments.
func between(scrapes []truthScrape, i, j int) map[string]truthFamily {
	out := map[string]truthFamily{}
	for _, s := range scrapes[i+1 : j+1] {
		for name, f := range s.Families {
			g := out[name]
			g.Kind = f.Kind
			g.Obs = append(g.Obs, f.Obs...)
			g.Sum += f.Sum
			g.Inc += f.Inc
			out[name] = g
		}
	}
	return out
}

// quantileQs are the q checked against order statistics: the printed ones,
// the ends, and odd ones between.
var quantileQs = []float64{0, 0.01, 0.1, 0.25, 0.333, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1}

// checkOrderStatistics fails when a percentile's bucket, feasible interval
// or printed point does not hold the true order statistic of obs.
func checkOrderStatistics(t *testing.T, name string, h Hist, obs []float64) {
	t.Helper()
	sorted := slices.Clone(obs)
	slices.Sort(sorted)
	for _, q := range quantileQs {
		p, ok := h.Quantile(q)
		if !ok {
			t.Errorf("%s: no p%v", name, q)
			continue
		}
		k := max(int(math.Ceil(q*float64(len(sorted))-1e-9)), 1)
		x := sorted[k-1]
		checkHolds(t, name, p, x)
	}
}

// checkHolds is the promise of Percentile: the true x within the bucket,
// within [Min, Max], and a printed point within [Min, Max].
func checkHolds(t *testing.T, name string, p Percentile, x float64) {
	t.Helper()
	inBucket := x <= p.Upper && (x > p.Lower || p.Closed && x == p.Lower)
	if !inBucket {
		t.Errorf("%s p%v: true %v outside the bucket of %+v", name, p.Q, x, p)
	}
	if x < p.Min || x > p.Max {
		t.Errorf("%s p%v: true %v outside the feasible [%v, %v] (%v)", name, p.Q, x, p.Min, p.Max, p)
	}
	if p.Min < p.Lower || p.Max > p.Upper || p.Min > p.Max {
		t.Errorf("%s p%v: feasible [%v, %v] not within the bucket (%v, %v]", name, p.Q, p.Min, p.Max, p.Lower, p.Upper)
	}
	if p.Point && (p.Value < p.Min || p.Value > p.Max) {
		t.Errorf("%s p%v: point %v printed outside [%v, %v]", name, p.Q, p.Value, p.Min, p.Max)
	}
	if p.Inconsistent {
		t.Errorf("%s p%v: the sum contradicts the buckets (%+v)", name, p.Q, p)
	}
}

// TestRealWindows: between every two scrapes of each server, the window
// holds what was observed: counts and counters exact, means exact to the
// rounding of a sum, every percentile's bucket and feasible interval
// holding the true order statistic.
func TestRealWindows(t *testing.T) {
	tf := loadTruth(t)
	for _, sc := range []string{"vllm", "vllm_lazy", "sglang"} {
		scrapes := tf.Scenarios[sc]
		if len(scrapes) < 2 {
			t.Fatalf("%s: %d scrapes in truth.json", sc, len(scrapes))
		}
		snaps := make([]Snapshot, len(scrapes))
		for i, s := range scrapes {
			snaps[i] = promGolden(t, s.File)
		}
		for i := range scrapes {
			for j := i + 1; j < len(scrapes); j++ {
				label := scrapes[i].File + "→" + scrapes[j].File
				w, warns := Delta(snaps[i], snaps[j])
				if len(warns) != 0 {
					t.Errorf("%s: warnings %v", label, warns)
				}
				checkWindow(t, label, w, between(scrapes, i, j))
			}
		}
	}
}

func checkWindow(t *testing.T, label string, w Window, truth map[string]truthFamily) {
	t.Helper()
	for name, f := range w.Families {
		if _, ok := truth[name]; ok {
			continue
		}
		// Nothing observed: every delta is zero.
		h, _ := w.Histogram(name)
		if v, _ := w.Counter(name); v != 0 || h.Count != 0 || h.Sum != 0 {
			t.Errorf("%s: %s moved (%v, %+v) with nothing observed", label, name, v, h)
		}
		_ = f
	}
	requests := 0.0
	for name, tr := range truth {
		switch tr.Kind {
		case "counter":
			v, ok := w.Counter(name)
			if !ok || v != tr.Inc {
				t.Errorf("%s: %s = %v, %v; want %v", label, name, v, ok, tr.Inc)
			}
			if slices.Contains(RequestNames, name) {
				requests = tr.Inc
			}
		case "histogram":
			h, ok := w.Histogram(name)
			if !ok {
				t.Errorf("%s: %s missing", label, name)
				continue
			}
			if h.Count != float64(len(tr.Obs)) {
				t.Errorf("%s: %s count %v, want %d", label, name, h.Count, len(tr.Obs))
			}
			if m, ok := h.Mean(); !ok || math.Abs(m-tr.Sum/float64(len(tr.Obs))) > 1e-12*math.Abs(m) {
				t.Errorf("%s: %s mean %v, want %v", label, name, m, tr.Sum/float64(len(tr.Obs)))
			}
			checkOrderStatistics(t, label+" "+name, h, tr.Obs)
		default:
			t.Fatalf("%s: kind %q in truth.json", name, tr.Kind)
		}
	}
	if n, ok := w.Requests(); !ok || n != requests || !w.HasRequestCounter() {
		t.Errorf("%s: requests %v, %v (counter %v); want %v", label, n, ok, w.HasRequestCounter(), requests)
	}
	if err := w.CheckRequests(int(requests)); err != nil {
		t.Errorf("%s: %v", label, err)
	}
}

// TestFreshServers: what each server serves before its first request. vLLM
// makes every child at start (series at zero); vLLM's families made lazily
// are declared with no sample, which the text parser drops and Parse keeps;
// SGLang through its multiprocess collector serves nothing.
func TestFreshServers(t *testing.T) {
	eager := promGolden(t, "vllm_fresh.txt")
	if f := eager.Families["vllm:e2e_request_latency_seconds"]; f == nil || len(f.Series) != 2 || f.Series[0].Count != 0 || f.Series[0].Created == 0 {
		t.Errorf("eager vLLM e2e family: %+v", f)
	}
	lazy := promGolden(t, "vllm_lazy_fresh.txt")
	if len(lazy.Families) == 0 || lazy.Server() != ServerVLLM {
		t.Fatalf("lazy vLLM, fresh: %d families, server %q; want its declared families", len(lazy.Families), lazy.Server())
	}
	for name, want := range map[string]Kind{
		"vllm:time_to_first_token_seconds": Histogram,
		"vllm:request_success_total":       Counter,
		"vllm:num_requests_running":        Gauge,
		"vllm:iteration_tokens_total":      Histogram,
	} {
		if f := lazy.Families[name]; f == nil || f.Kind != want || len(f.Series) != 0 {
			t.Errorf("lazy vLLM, fresh: %s = %+v; want a declared %v with no series", name, f, want)
		}
	}
	if n, known := lazy.Busy(); known || n != 0 {
		t.Errorf("declared gauges with no sample read as known: %v", n)
	}
	sg := promGolden(t, "sglang_fresh.txt")
	if len(sg.Families) != 0 || sg.Server() != ServerUnknown {
		t.Errorf("SGLang, fresh: %v (%q)", sg.Families, sg.Server())
	}
	for file, want := range map[string]Server{"vllm_k.txt": ServerVLLM, "sglang_k.txt": ServerSGLang} {
		if got := promGolden(t, file).Server(); got != want {
			t.Errorf("%s: server %q, want %q", file, got, want)
		}
	}
	// A window from a fresh lazy server: its request counter, declared
	// before, is there; a window from nothing to nothing holds zero.
	w, warns := Delta(lazy, lazy)
	if len(warns) != 0 || !w.HasRequestCounter() || w.Server() != ServerVLLM {
		t.Errorf("fresh to fresh: %v, counter %v, server %q", warns, w.HasRequestCounter(), w.Server())
	}
	if n, ok := w.Requests(); !ok || n != 0 {
		t.Errorf("fresh to fresh: %v requests, %v", n, ok)
	}
	if _, ok := w.TTFT(); ok {
		t.Error("a TTFT histogram from a family with no series")
	}
}

// TestRealSeriesAppearing: a series that first appears between the scrapes
// is counted from zero. SGLang counts cached tokens only once a request
// has some; vLLM made lazily has no series before its first request.
func TestRealSeriesAppearing(t *testing.T) {
	tf := loadTruth(t)
	k, more := promGolden(t, "sglang_k.txt"), promGolden(t, "sglang_more.txt")
	if _, ok := k.Families["sglang:cached_tokens_total"]; ok {
		t.Fatal("sglang_k.txt already counts cached tokens; the golden no longer tests a series appearing")
	}
	w, warns := Delta(k, more)
	want := tf.Scenarios["sglang"][2].Families["sglang:cached_tokens_total"].Inc
	if v, ok := w.CachedTokens(); len(warns) != 0 || !ok || v != want || want == 0 {
		t.Errorf("cached tokens appearing: %v, %v (%v); want %v", v, ok, warns, want)
	}
	prompt := tf.Scenarios["sglang"][2].Families["sglang:prompt_tokens_total"].Inc
	if r, ok := w.PrefixHitRate(); !ok || r != want/prompt {
		t.Errorf("SGLang hit rate %v, %v; want %v/%v", r, ok, want, prompt)
	}
}

// TestRealRestartRefused: a restart between the scrapes is refused, for the
// families whose values went down and, through _created, for those a
// restarted server has already counted past.
func TestRealRestartRefused(t *testing.T) {
	cases := []struct {
		before, after string
		reason        string // a reason some warning must give
	}{
		{"vllm_more.txt", "vllm_restart_small.txt", "restart"},
		{"vllm_more.txt", "vllm_restart_big.txt", "_created"},
		{"vllm_k.txt", "vllm_restart_big.txt", "_created"},
		{"sglang_more.txt", "sglang_restart.txt", "went down"},
	}
	for _, c := range cases {
		before, after := promGolden(t, c.before), promGolden(t, c.after)
		w, warns := Delta(before, after)
		found := false
		refused := map[string]bool{}
		for _, x := range warns {
			refused[x.Family] = true
			found = found || strings.Contains(x.Reason, c.reason)
		}
		if !found {
			t.Errorf("%s→%s: no warning saying %q in %v", c.before, c.after, c.reason, warns)
		}
		for _, name := range []string{"vllm:request_success_total", "vllm:prompt_tokens_total", "vllm:time_to_first_token_seconds", "sglang:num_requests_total"} {
			if f, ok := before.Families[name]; ok && len(f.Series) > 0 && !refused[name] {
				t.Errorf("%s→%s: %s not refused (window %+v)", c.before, c.after, name, w.Families[name])
			}
		}
		if _, ok := w.Requests(); ok {
			t.Errorf("%s→%s: a request count across a restart", c.before, c.after)
		}
	}
	// The restart that only _created shows: every counter went up.
	before, after := promGolden(t, "vllm_more.txt"), promGolden(t, "vllm_restart_big.txt")
	b, _ := Delta(Snapshot{}, before)
	a, _ := Delta(Snapshot{}, after)
	nb, _ := b.Counter("vllm:prompt_tokens_total")
	na, _ := a.Counter("vllm:prompt_tokens_total")
	if na <= nb {
		t.Errorf("vllm_restart_big.txt counts %v prompt tokens, not more than the %v before it", na, nb)
	}
}

// TestSGLangTokenWeightedITL: SGLang adds a batch's whole interval to the
// sum and its token count to the bucket of interval/tokens; the count is
// tokens, the mean per token exact.
func TestSGLangTokenWeightedITL(t *testing.T) {
	tf := loadTruth(t)
	w, _ := Delta(promGolden(t, "sglang_fresh.txt"), promGolden(t, "sglang_more.txt"))
	h, ok := w.ITL()
	tr := between(tf.Scenarios["sglang"], 0, 2)["sglang:inter_token_latency_seconds"]
	if !ok || h.Family != "sglang:inter_token_latency_seconds" || h.Count != float64(len(tr.Obs)) {
		t.Fatalf("ITL %+v, %v; want %d tokens", h, ok, len(tr.Obs))
	}
	gen, _ := w.OutputTokens()
	reqs, _ := w.Requests()
	if h.Count != gen-reqs {
		t.Errorf("ITL counts %v tokens; the server generated %v in %v requests (the first token of each has no ITL)", h.Count, gen, reqs)
	}
}
