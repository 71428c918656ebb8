package browser_test

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/internal/browser"
	"github.com/inferbench/inferbench/internal/browser/browsertest"
	"github.com/inferbench/inferbench/internal/testkit"
)

// clean is a page with nothing wrong: a title, two figures by data-key, a
// plot with its accessible name.
const clean = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>A page</title></head><body>
<table><tr><th>TTFT p50 (ms)</th><td data-key="ttft.p50">12.34 [11.20, 13.10]</td></tr>
<tr><th>n</th><td data-key="ttft.n"> 30 </td></tr></table>
<svg xmlns="http://www.w3.org/2000/svg" width="100" height="50" role="img" aria-label="A plot"><title>A plot</title><rect width="10" height="10"/></svg>
</body></html>`

func write(t *testing.T, name, page string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOpen opens a clean page and pages that each do one wrong thing in
// one browser: the clean one has no problem and its figures, title, plot,
// timing and screenshot are read back; each wrong one is caught, so that
// the check of the report pages can fail.
func TestOpen(t *testing.T) {
	exe := browsertest.Need(t)
	ctx := context.Background()
	b, err := browser.Start(ctx, browser.Options{Exec: exe, Timeout: testkit.Patience})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	res, err := b.Open(ctx, write(t, "clean.html", clean))
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Problems(map[string]string{"ttft.p50": "12.34", "ttft.n": "30"}); len(p) > 0 {
		t.Errorf("a clean page has problems: %q", p)
	}
	if res.Title != "A page" || res.Keys["ttft.p50"] != "12.34 [11.20, 13.10]" || !slices.Equal(res.SVGs, []string{"A plot"}) {
		t.Errorf("read back title %q, keys %q, plots %q", res.Title, res.Keys, res.SVGs)
	}
	if res.Load <= 0 || res.Painted < res.Load || res.Bytes != int64(len(clean)) {
		t.Errorf("load %v, drawn %v, %d bytes", res.Load, res.Painted, res.Bytes)
	}
	img, err := png.Decode(bytes.NewReader(res.Screenshot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if w := img.Bounds().Dx(); w != browser.DefaultWidth {
		t.Errorf("screenshot %d px wide, want %d", w, browser.DefaultWidth)
	}
	for _, c := range []struct {
		name string
		want map[string]string
		miss string
	}{
		{"ttft.p50 shows another figure", map[string]string{"ttft.p50": "12.3"}, `data-key "ttft.p50" shows`},
		{"a key missing", map[string]string{"e2e.p50": "1"}, `no element has data-key "e2e.p50"`},
	} {
		if p := strings.Join(res.Problems(c.want), "\n"); !strings.Contains(p, c.miss) {
			t.Errorf("%s: problems %q lack %q", c.name, p, c.miss)
		}
	}

	// One page that does every wrong thing: each is caught by its own
	// problem. It has no title; the alert comes last, as it holds the
	// page's script until it is answered.
	bad := `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<style>@import url("http://127.0.0.1:1/s.css");</style></head><body>
<img src="http://127.0.0.1:1/x" alt=""><img src="missing.png" alt="">
<svg width="10" height="10"></svg><p data-key="k">1</p><p data-key="k">2</p>
<table><caption>Wide</caption><tr><td style="min-width:3000px">x</td></tr></table>
<script>console.error("boom", 42)</script><script>null.x</script><script>alert(1)</script>
</body></html>`
	res, err = b.Open(ctx, write(t, "bad.html", bad))
	if err != nil {
		t.Fatal(err)
	}
	problems := strings.Join(res.Problems(nil), "\n")
	for _, want := range []string{
		"console.error: boom 42",
		"exception: Uncaught TypeError",
		"dialog (alert): 1",
		"the page requested http://127.0.0.1:1/x",
		"request failed: http://127.0.0.1:1/x: net::ERR_",
		"the page requested http://127.0.0.1:1/s.css",
		"missing.png",
		"the page has no title",
		"plot 1 (<svg>) has no aria-label",
		`data-key "k" names more than one element`,
		`wider than the window: <table> "Wide" ends at`,
	} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems of the bad page lack %q:\n%s", want, problems)
		}
	}

	if _, err := b.Open(ctx, filepath.Join(t.TempDir(), "none.html")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("opening a missing file: %v", err)
	}
}

// TestNoBrowser: a browser named by the environment that is not there is
// an error wrapping ErrNoBrowser that says how to install one.
func TestNoBrowser(t *testing.T) {
	t.Setenv(browser.Env, filepath.Join(t.TempDir(), "no-chromium"))
	_, err := browser.Open(context.Background(), "x.html", browser.Options{})
	if !errors.Is(err, browser.ErrNoBrowser) || !strings.Contains(err.Error(), "scripts/chromium.sh") {
		t.Errorf("Open without a browser: %v", err)
	}
}

func TestNumberAndShows(t *testing.T) {
	for _, c := range []struct {
		cell string
		v    float64
		ok   bool
	}{{"12.34 [11.20, 13.10]", 12.34, true}, {" 30 ", 30, true}, {"none", 0, false}, {"", 0, false}, {"30 / 30 / 30 / 0", 30, true}} {
		if v, ok := browser.Number(c.cell); v != c.v || ok != c.ok {
			t.Errorf("Number(%q) = %v, %v; want %v, %v", c.cell, v, ok, c.v, c.ok)
		}
	}
	if !browser.Shows("12.34 [11.20, 13.10]", "12.34") || browser.Shows("12.345", "12.34") || !browser.Shows(" 7 ", "7") {
		t.Error("Shows matches a prefix that is not a whole figure, or misses one")
	}
}

// FuzzNumber: any text parses without a panic, and a number it finds is
// the text's first field.
func FuzzNumber(f *testing.F) {
	for _, s := range []string{"12.34 [11.20, 13.10]", "none", "", "1e9", "NaN x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := browser.Number(s)
		if ok && !browser.Shows(strings.TrimSpace(s), strings.Fields(s)[0]) {
			t.Errorf("Number(%q) = %v from a field the cell does not start with", s, v)
		}
	})
}
