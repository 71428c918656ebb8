package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	htmlreport "github.com/inferbench/inferbench/benchkit/report"
	"github.com/inferbench/inferbench/internal/browser"
	"github.com/inferbench/inferbench/internal/browser/browsertest"
)

// TestHTMLInBrowser runs a small load on the embedded engine with --html
// and opens the page in headless Chromium: it logs no error, requests
// nothing besides itself, and every figure it shows by data-key is the
// results file's, as the page prints it (latencies in ms with two
// decimals and their intervals, rates with one); each latency is also
// read back as a number and compared with the JSON's seconds.
func TestHTMLInBrowser(t *testing.T) {
	browsertest.Need(t)
	page, doc := runHTML(t, "--num-requests", "30", "--rate", "200", "--slo-ttft", "60000")
	path := filepath.Join(t.TempDir(), "serve-load.html")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := doc.AllRuns()
	if len(runs) != 1 || runs[0].Summary.Failed != 0 {
		t.Fatalf("want one run with no failure: %+v", runs)
	}
	want, ms, rates := figures("run0.", runs[0].Summary)
	res := browsertest.CheckPage(t, path, want)

	for k, v := range ms {
		if got, ok := browser.Number(res.Keys[k]); !ok || math.Abs(got-v*1000) > 0.005+1e-9 {
			t.Errorf("%s shows %q, want %.4f ms (the JSON's %v s)", k, res.Keys[k], v*1000, v)
		}
	}
	for k, v := range rates {
		if got, ok := browser.Number(res.Keys[k]); !ok || math.Abs(got-v) > 0.05+1e-9 {
			t.Errorf("%s shows %q, want %.2f (the JSON's)", k, res.Keys[k], v)
		}
	}
	var unchecked []string
	for k := range res.Keys {
		if _, ok := want[k]; !ok {
			unchecked = append(unchecked, k)
		}
	}
	slices.Sort(unchecked)
	if len(unchecked) > 0 {
		t.Errorf("figures on the page that this test does not check against the JSON: %q", unchecked)
	}
	if !slices.Contains(res.SVGs, "Per-request timeline") {
		t.Errorf("plots %q lack the timeline", res.SVGs)
	}
	if !strings.Contains(res.Title, doc.Meta.Model) {
		t.Errorf("title %q does not name the model %q", res.Title, doc.Meta.Model)
	}
}

// figures is what the page must show for summary s, by data-key: want
// holds each cell's text (or the text it starts with), ms the latencies
// in seconds and rates the throughputs, to compare as numbers.
func figures(prefix string, s benchkit.Summary) (want map[string]string, ms, rates map[string]float64) {
	want, ms, rates = map[string]string{}, map[string]float64{}, map[string]float64{}
	latency := func(p string, s benchkit.Summary) {
		for _, f := range []struct {
			name string
			q    benchkit.Quantiles
		}{{"ttft", s.TTFT}, {"tpot", s.TPOT}, {"itl", s.ITL}, {"e2e", s.E2E}} {
			k := p + f.name
			want[k+".n"] = fmt.Sprint(f.q.N)
			for _, v := range []struct {
				name string
				v    *float64
				ci   *[2]float64
			}{{"mean", f.q.Mean, f.q.MeanCI}, {"p50", f.q.P50, f.q.P50CI}, {"p90", f.q.P90, f.q.P90CI}, {"p99", f.q.P99, f.q.P99CI}, {"max", f.q.Max, nil}} {
				switch {
				case v.v == nil:
					want[k+"."+v.name] = "none"
				case v.name == "max":
					want[k+"."+v.name] = htmlreport.FormatMS(*v.v)
				case v.ci == nil:
					want[k+"."+v.name] = htmlreport.FormatMS(*v.v) + " [interval: none]"
				default:
					want[k+"."+v.name] = htmlreport.FormatMS(*v.v) + " [" + htmlreport.FormatMS(v.ci[0]) + ", " + htmlreport.FormatMS(v.ci[1]) + "]"
				}
				if v.v != nil {
					ms[k+"."+v.name] = *v.v
				}
			}
		}
	}
	latency(prefix, s)
	if s.Steady != nil {
		latency(prefix+"steady.", *s.Steady)
	}
	rate := func(k string, v *float64) {
		if v == nil {
			want[prefix+k] = "none"
			return
		}
		want[prefix+k] = fmt.Sprintf("%.1f", *v)
		rates[prefix+k] = *v
	}
	rate("request_rate", s.RequestRate)
	rate("achieved_rate", s.AchievedRate)
	rate("request_throughput", s.RequestThroughput)
	rate("output_throughput", s.OutputThroughput)
	rate("total_throughput", s.TotalThroughput)
	want[prefix+"duration_s"] = fmt.Sprintf("%.1f", s.DurationS)
	want[prefix+"peak_in_flight"] = fmt.Sprint(s.PeakInFlight)
	want[prefix+"requests"] = fmt.Sprintf("%d / %d / %d / %d", s.Scheduled, s.Requests, s.Completed, s.Failed)
	want[prefix+"tokens"] = fmt.Sprintf("%d / %d", s.TotalInputTokens, s.TotalOutputTokens)
	if g := s.Goodput; g != nil {
		want[prefix+"goodput"] = fmt.Sprintf("%d of %d", g.Good, g.Total)
		if s.MeetsSLO != nil {
			want[prefix+"meets_slo"] = fmt.Sprint(*s.MeetsSLO)
		}
	}
	return want, ms, rates
}
