package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/internal/browser"
	"github.com/inferbench/inferbench/internal/browser/browsertest"
)

// writePage writes page into a file in a temporary folder.
func writePage(t testing.TB, page string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// maxOpen is how long the page of a 2,000-request run may take to reach
// its load event in headless Chromium, as the median of three opens.
const maxOpen = 2 * time.Second

// TestBrowserLargePage opens the page of a 2,000-request run, whose
// model, target, warnings and errors carry markup, in headless Chromium:
// it weighs under 2 MB, logs no error, runs none of the markup (no
// dialog, no request), shows the document's TTFT figures, and reaches its
// load event within 2 s (failed only on the median of three opens). Its
// speed is BenchmarkOpen2000's.
func TestBrowserLargePage(t *testing.T) {
	b := browsertest.Start(t)
	doc := loadDoc(2000)
	path := writePage(t, render(t, doc, Options{}))
	s := doc.AllRuns()[0].Summary
	want := map[string]string{
		"run0.ttft.n":    fmt.Sprint(s.TTFT.N),
		"run0.ttft.p50":  FormatMS(*s.TTFT.P50),
		"run0.ttft.mean": FormatMS(*s.TTFT.Mean) + " [" + FormatMS(s.TTFT.MeanCI[0]) + ", " + FormatMS(s.TTFT.MeanCI[1]) + "]",
	}
	res := browsertest.Check(t, b, path, want)
	if res.Bytes >= 2<<20 {
		t.Errorf("page of 2,000 requests is %d bytes, over 2 MB", res.Bytes)
	}
	// The figure itself, read as a number, is the document's in ms.
	if v, ok := browser.Number(res.Keys["run0.ttft.p50"]); !ok || math.Abs(v-*s.TTFT.P50*1000) > 0.005 {
		t.Errorf("TTFT p50 cell %q, want %v ms", res.Keys["run0.ttft.p50"], *s.TTFT.P50*1000)
	}
	if !slices.ContainsFunc(res.SVGs, func(l string) bool { return strings.Contains(l, "timeline") }) {
		t.Errorf("no timeline among the plots %q", res.SVGs)
	}
	loads := []time.Duration{res.Load}
	if res.Load > maxOpen {
		for range 2 {
			r, err := b.Open(t.Context(), path)
			if err != nil {
				t.Fatal(err)
			}
			loads = append(loads, r.Load)
		}
		slices.Sort(loads)
		if loads[1] > maxOpen {
			t.Errorf("the page of 2,000 requests reached its load event in a median %v of three opens %v, over %v", loads[1], loads, maxOpen)
		}
	}
	t.Logf("%d bytes, load event at %v (opens: %v), drawn at %v", res.Bytes, res.Load, loads, res.Painted)
}

// BenchmarkOpen2000 opens the page of a 2,000-request run in headless
// Chromium and reports the median time to its load event (open-ms) and to
// its first drawing after it (drawn-ms), and its size.
func BenchmarkOpen2000(b *testing.B) {
	browsertest.Need(b)
	br, err := browser.Start(b.Context(), browser.Options{NoScreenshot: true})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	path := writePage(b, render(b, loadDoc(2000), Options{}))
	var loads, drawn []float64
	var size int64
	for b.Loop() {
		r, err := br.Open(b.Context(), path)
		if err != nil {
			b.Fatal(err)
		}
		loads = append(loads, r.Load.Seconds()*1000)
		drawn = append(drawn, r.Painted.Seconds()*1000)
		size = r.Bytes
	}
	b.ReportMetric(median(loads), "open-ms")
	b.ReportMetric(median(drawn), "drawn-ms")
	b.ReportMetric(float64(size), "page-bytes")
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s) == 0 {
		return math.NaN()
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
