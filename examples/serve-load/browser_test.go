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

// TestHTMLInBrowser runs a small load and a two-rate sweep on the
// embedded engine with --html and opens each page in headless Chromium:
// it logs no error, requests nothing besides itself, and every figure it
// shows by data-key is the results file's, as the page prints it
// (latencies in ms with two decimals and their intervals, rates with one);
// each latency is also read back as a number and compared with the JSON's
// seconds.
func TestHTMLInBrowser(t *testing.T) {
	b := browsertest.Start(t)
	for _, c := range []struct {
		name string
		args []string
		runs int
		plot string
	}{
		{"one run", []string{"--num-requests", "30", "--rate", "200", "--slo-ttft", "60000"}, 1, "Per-request timeline"},
		{"sweep", []string{"--num-requests", "8", "--rate", "50,200"}, 2, "SIMULATED: Latency against offered rate"},
	} {
		page, doc := runHTML(t, c.args...)
		runs := doc.AllRuns()
		if len(runs) != c.runs {
			t.Fatalf("%s: %d runs, want %d", c.name, len(runs), c.runs)
		}
		want, ms, rates := map[string]string{}, map[string]float64{}, map[string]float64{}
		for i, r := range runs {
			if r.Summary.Failed != 0 {
				t.Fatalf("%s: run %d has %d failed requests", c.name, i, r.Summary.Failed)
			}
			figures(fmt.Sprintf("run%d.", i), r.Summary, want, ms, rates)
		}
		path := filepath.Join(t.TempDir(), strings.ReplaceAll(c.name, " ", "-")+".html")
		if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		res := browsertest.Check(t, b, path, want)
		for k, v := range ms {
			if got, ok := browser.Number(res.Keys[k]); !ok || math.Abs(got-v*1000) > 0.005+1e-9 {
				t.Errorf("%s: %s shows %q, want %.4f ms (the JSON's %v s)", c.name, k, res.Keys[k], v*1000, v)
			}
		}
		for k, v := range rates {
			if got, ok := browser.Number(res.Keys[k]); !ok || math.Abs(got-v) > 0.05+1e-9 {
				t.Errorf("%s: %s shows %q, want %.2f (the JSON's)", c.name, k, res.Keys[k], v)
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
			t.Errorf("%s: figures on the page that this test does not check against the JSON: %q", c.name, unchecked)
		}
		if !slices.Contains(res.SVGs, c.plot) {
			t.Errorf("%s: plots %q lack %q", c.name, res.SVGs, c.plot)
		}
		if !strings.Contains(res.Title, doc.Meta.Model) {
			t.Errorf("%s: title %q does not name the model %q", c.name, res.Title, doc.Meta.Model)
		}
	}
}

// figures adds what the page must show for summary s, by data-key under
// prefix: to want each cell's text (or the text it starts with), to ms
// the latencies in seconds and to rates the throughputs, to compare as
// numbers.
func figures(prefix string, s benchkit.Summary, want map[string]string, ms, rates map[string]float64) {
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
}
