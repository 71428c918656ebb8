package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine/metrics/view"
	"github.com/inferbench/inferbench/internal/testkit"
)

// The server view (engine/metrics/view) read from the sim's /metrics,
// against the schedule's truth: every observation the scheduler made.

// completeAll sends the bodies at once to url and returns the responses,
// in order; safe for the test's goroutines, bounded by ctx.
func completeAll(ctx context.Context, t *testing.T, url string, bodies []string) []completionResp {
	t.Helper()
	out := make([]completionResp, len(bodies))
	errs := make([]error, len(bodies))
	var wg sync.WaitGroup
	for i, b := range bodies {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(b))
			if err != nil {
				errs[i] = err
				return
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := testkit.Client.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				errs[i] = fmt.Errorf("status %d: %s", resp.StatusCode, raw)
				return
			}
			errs[i] = json.Unmarshal(raw, &out[i])
		})
	}
	testkit.WaitWithin(t, &wg, testkit.Patience)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// testScraper reads s's /metrics with bounds that suit a test.
func testScraper(s *Server) *view.Scraper {
	return &view.Scraper{URL: s.URL + "/metrics", Timeout: 5 * time.Second, IdleWait: 10 * time.Second, Settle: -1}
}

// figureTruth pairs each of a view's figures with the true observations.
func figureTruth(v *view.View, x samples) map[string]struct {
	f  *view.Figure
	xs []float64
} {
	return map[string]struct {
		f  *view.Figure
		xs []float64
	}{
		"ttft": {v.TTFT, x.ttft}, "itl": {v.ITL, x.itl}, "tpot": {v.TPOT, x.tpot}, "e2e": {v.E2E, x.e2e},
		"queue": {v.Queue, x.queue}, "prefill": {v.Prefill, x.prefill}, "decode": {v.Decode, x.decode}, "inference": {v.Inference, x.inference},
	}
}

// TestServerViewFreshSGLang: an SGLang that has served nothing yet (its
// histograms and counters made at their first observation, its first
// scrape gauges only) measured at once gives a view whose counts are the
// client's and whose means are the schedule's, exactly, with no warning.
func TestServerViewFreshSGLang(t *testing.T) {
	s := newFast(t, Options{Metrics: MetricsSGLang, MaxRunning: 2})
	tr := traced(s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := testScraper(s).Start(ctx)
	run.Ready()
	var bodies []string
	for i, out := range []int{3, 9, 1, 14, 6, 11} {
		bodies = append(bodies, completionBody(s.Model(), ids(20+9*i, 7000+100*i), out, `,"ignore_eos":true`))
	}
	resps := completeAll(ctx, t, s.VLLMURL+"/v1/completions", bodies)
	prompt, output := 0, 0
	for _, r := range resps {
		prompt += r.Usage.PromptTokens
		output += r.Usage.CompletionTokens
	}
	v := run.Finish(ctx, view.Counts{Completed: len(resps), Sent: len(resps), OutputTokens: &output})
	x := trueSamples(t, tr.take())
	if v == nil || v.Server != "SGLang" || len(v.Warnings) != 0 {
		t.Fatalf("view %+v; want SGLang's, without warnings", v)
	}
	if v.Requests == nil || *v.Requests != float64(len(resps)) || v.PromptTokens == nil || *v.PromptTokens != float64(prompt) ||
		v.OutputTokens == nil || *v.OutputTokens != float64(output) || prompt != x.prompt || output != x.generated {
		t.Errorf("server requests %v, prompt %v, output %v; want the client's %d, %d, %d (the schedule's %d, %d)",
			v.Requests, v.PromptTokens, v.OutputTokens, len(resps), prompt, output, x.prompt, x.generated)
	}
	for name, c := range map[string]struct {
		f  *view.Figure
		xs []float64
	}{"ttft": {v.TTFT, x.ttft}, "e2e": {v.E2E, x.e2e}, "queue": {v.Queue, x.queue}, "itl": {v.ITL, x.itl}} {
		if c.f == nil || c.f.Count != float64(len(c.xs)) {
			t.Errorf("%s: %+v; want %d observations", name, c.f, len(c.xs))
			continue
		}
		sum := 0.0
		for _, x := range c.xs {
			sum += x
		}
		if want := sum / float64(len(c.xs)); !relClose(c.f.Mean, want) {
			t.Errorf("%s: mean %v; want the schedule's %v", name, c.f.Mean, want)
		}
	}
}

// printedNumber reads the figures of a printed percentile.
var printedNumber = regexp.MustCompile(`[-+]?[0-9][0-9.]*(e[-+]?[0-9]+)?`)

// allowed reports whether v can be the k-th smallest (from 1) of
// observations whose bucket counts (over layout, +Inf last) and sum are
// those of xs: within its bucket, and with the others placed within
// theirs, a sum reaching S from below and from above.
func allowed(layout, xs []float64, k int, v float64) bool {
	bounds := append(slices.Clone(layout), math.Inf(1))
	n := make([]float64, len(bounds))
	sum := 0.0
	for _, x := range xs {
		sum += x
		i, _ := slices.BinarySearch(bounds, x)
		n[i]++
	}
	b, below := 0, 0.0
	for below+n[b] < float64(k) {
		below += n[b]
		b++
	}
	lower := func(i int) float64 {
		if i == 0 {
			return 0
		}
		return bounds[i-1]
	}
	if v < lower(b) || v > bounds[b] {
		return false
	}
	r := float64(k) - below
	lo, hi := (r-1)*lower(b)+(n[b]-r+1)*v, r*v
	if n[b] > r {
		hi += (n[b] - r) * bounds[b]
	}
	for i := range bounds {
		if i != b && n[i] > 0 {
			lo += n[i] * lower(i)
			hi += n[i] * bounds[i]
		}
	}
	slack := 1e-9 * (math.Abs(sum) + math.Abs(lo))
	return lo <= sum+slack && sum <= hi+slack
}

// TestServerViewPercentilesHoldTheTruth: on the embedded engine's vLLM
// /metrics, every percentile the view prints (as the tables print it, in
// milliseconds to three digits) holds the true order statistic, and a
// point is printed only where the buckets and the exact sum allow it; each
// figure's count and mean are the schedule's. Two windows: a run that
// queues and spreads its figures over the default buckets, and short
// requests one at a time, whose queue and prefill times all fall in the
// first (0, 300 ms] bucket, where histogram_quantile's p99 of 297 ms is
// ruled out by their mean.
func TestServerViewPercentilesHoldTheTruth(t *testing.T) {
	s := NewServer(Options{Preset: M4MaxLlama8B(), MaxRunning: 3})
	t.Cleanup(s.Close)
	tr := traced(s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := s.VLLMURL + "/v1/completions"

	run := testScraper(s).Start(ctx)
	run.Ready()
	var bodies []string
	for i, n := range [][2]int{{40, 4}, {300, 18}, {200, 12}, {60, 20}, {90, 1}, {150, 15}, {20, 9}, {400, 6}, {120, 16}, {70, 3}, {250, 10}, {30, 14}} {
		bodies = append(bodies, completionBody(s.Model(), ids(n[0], 1000*(i+1)), n[1], `,"ignore_eos":true`))
	}
	resps := completeAll(ctx, t, url, bodies)
	v := run.Finish(ctx, view.Counts{Completed: len(resps), Sent: len(resps)})
	points, printed, _ := checkPrinted(t, v, trueSamples(t, tr.take()), len(resps))
	if points == 0 {
		t.Errorf("queued run: no point among %d printed percentiles", printed)
	}

	run = testScraper(s).Start(ctx)
	run.Ready()
	for i := range 6 {
		completeAll(ctx, t, url, []string{completionBody(s.Model(), ids(24, 50000+100*i), 3, `,"ignore_eos":true`)})
	}
	v = run.Finish(ctx, view.Counts{Completed: 6, Sent: 6})
	points, printed, ruledOut := checkPrinted(t, v, trueSamples(t, tr.take()), 6)
	if ruledOut == 0 || points == printed {
		t.Errorf("one at a time: %d of %d percentiles with a point, %d interpolations ruled out; want some ruled out and left unprinted", points, printed, ruledOut)
	}
}

// checkPrinted checks every figure of v against the schedule's truth x of
// n requests, and counts the percentiles printed with a point, all those
// printed, and those whose interpolated figure the buckets and the sum
// rule out.
func checkPrinted(t *testing.T, v *view.View, x samples, n int) (points, printed, ruledOut int) {
	t.Helper()
	if v == nil || v.Server != "vLLM" || len(v.Warnings) != 0 || v.Requests == nil || *v.Requests != float64(n) {
		t.Fatalf("view %+v; want vLLM's over %d requests, without warnings", v, n)
	}
	for name, c := range figureTruth(v, x) {
		if c.f == nil || c.f.Count != float64(len(c.xs)) {
			t.Errorf("%s: %+v; want %d observations", name, c.f, len(c.xs))
			continue
		}
		sum := 0.0
		for _, x := range c.xs {
			sum += x
		}
		if want := sum / float64(len(c.xs)); !relClose(c.f.Mean, want) {
			t.Errorf("%s: mean %v; want the schedule's %v", name, c.f.Mean, want)
		}
		sorted := slices.Clone(c.xs)
		slices.Sort(sorted)
		for _, pc := range []struct {
			q float64
			p view.Percentile
		}{{0.5, c.f.P50}, {0.9, c.f.P90}, {0.99, c.f.P99}} {
			k := max(int(math.Ceil(pc.q*float64(len(sorted)))), 1)
			truth := sorted[k-1]
			s := pc.p.Format(1000, 3)
			printed++
			nums := printedNumber.FindAllString(s, -1)
			vals := make([]float64, len(nums))
			for i, m := range nums {
				f, err := strconv.ParseFloat(m, 64)
				if err != nil {
					t.Fatalf("%s p%v: %q: %v", name, pc.q*100, s, err)
				}
				vals[i] = f
			}
			// The printed interval, and the point where one is printed.
			var lo float64
			hi, point := math.Inf(1), math.NaN()
			switch {
			case strings.HasPrefix(s, "≥ "):
				lo = vals[0]
			case strings.HasPrefix(s, "≤ "):
				lo, hi = 0, vals[0]
			case strings.HasPrefix(s, "(") || strings.HasPrefix(s, "["):
				lo, hi = vals[0], vals[1]
			case len(vals) == 1:
				lo, hi = vals[0], vals[0]
			case len(vals) == 3:
				point, lo, hi = vals[0], vals[1], vals[2]
			default:
				t.Fatalf("%s p%v: %q: not a form Format writes", name, pc.q*100, s)
			}
			if tm := truth * 1000; tm < lo*(1-1e-6) || tm > hi*(1+1e-6) {
				t.Errorf("%s p%v: printed %q; the true order statistic %.6g ms lies outside", name, pc.q*100, s, tm)
			}
			if !allowed(c.f.Buckets, c.xs, k, pc.p.Value) {
				ruledOut++ // histogram_quantile's figure, which Format keeps out
			}
			if !math.IsNaN(point) {
				points++
				if !pc.p.Point || strconv.FormatFloat(pc.p.Value*1000, 'g', 3, 64) != nums[0] || !allowed(c.f.Buckets, c.xs, k, pc.p.Value) {
					t.Errorf("%s p%v: printed %q, the point %v, which the buckets and the sum rule out", name, pc.q*100, s, pc.p.Value)
				}
			}
		}
		t.Logf("%-9s n %3d mean %8.3f ms  p50 %-22s p90 %-22s p99 %s", name, len(c.xs), c.f.Mean*1e3,
			c.f.P50.Format(1000, 3), c.f.P90.Format(1000, 3), c.f.P99.Format(1000, 3))
	}
	t.Logf("%d of %d percentiles printed with a point; %d interpolated figures the buckets and the sum rule out", points, printed, ruledOut)
	return points, printed, ruledOut
}
