package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit/report"
	"github.com/inferbench/inferbench/internal/browser/browsertest"
	"github.com/inferbench/inferbench/internal/progtest"
)

// TestHTMLPage runs a two-cell sweep on the embedded engine with --html
// and --json-out: the page fetches nothing, shows the JSON's comparison
// figures under their data-keys, each phase's mean TTFT of the JSON's
// rows with its interval, and plots against pp; the help describes the
// flag.
func TestHTMLPage(t *testing.T) {
	var help bytes.Buffer
	_ = run(context.Background(), []string{"-h"}, &help, &help)
	progtest.DescribesHTML(t, help.String())
	dir := t.TempDir()
	page, out := filepath.Join(dir, "sub", "pd.html"), filepath.Join(dir, "pd.json")
	e, clean := embedded(t, nil)
	var stdout, stderr bytes.Buffer
	args := []string{"--pp", "1100,2200", "--tg", "8", "--html", page, "--json-out", out}
	if err := runEnv(context.Background(), args, &stdout, &stderr, e); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	clean()
	doc := readDoc(t, out)
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	progtest.FetchesNothing(t, html)
	keys := progtest.PageKeys(html)
	if len(doc.Comparison) != 2 {
		t.Fatalf("%d cells in the results, want 2", len(doc.Comparison))
	}
	for i, c := range doc.Comparison {
		if len(c.Phases) != 3 || len(c.Speedups) != 2 {
			t.Fatalf("cell %d: %d phases, %d speedups", i, len(c.Phases), len(c.Speedups))
		}
		for _, f := range c.Phases {
			k := fmt.Sprintf("comparison%d.%s.", i, f.Phase)
			if f.TTFTS == nil || f.ElapsedS == nil || f.GenerationTPS == nil {
				t.Fatalf("%s lacks a figure: %+v", k, f)
			}
			for key, want := range map[string]string{"requests": fmt.Sprint(f.Requests), "elapsed_s": report.FormatMS(*f.ElapsedS),
				"ttft_s": report.FormatMS(*f.TTFTS), "generation_tps": fmt.Sprintf("%.2f", *f.GenerationTPS)} {
				if keys[k+key] != want {
					t.Errorf("data-key %s%s shows %q, the JSON %q", k, key, keys[k+key], want)
				}
			}
			// The mean of the rows' TTFT, with an interval after it.
			sum, n := 0.0, 0
			for _, r := range doc.Runs {
				if r.Phase == f.Phase && r.PPTarget == c.PP && r.TTFTS != nil {
					sum += *r.TTFTS
					n++
				}
			}
			k = fmt.Sprintf("cell%d.%s.ttft.mean", i, f.Phase)
			if want := report.FormatMS(sum/float64(n)) + " ["; n != 2 || !strings.HasPrefix(keys[k], want) {
				t.Errorf("data-key %s shows %q, the rows' mean of %d %q…", k, keys[k], n, want)
			}
		}
		for _, s := range c.Speedups {
			k := fmt.Sprintf("comparison%d.speedup.%s.elapsed", i, s.Baseline)
			if want := fmt.Sprintf("%.2f", *s.Elapsed); keys[k] != want {
				t.Errorf("data-key %s shows %q, the JSON %q", k, keys[k], want)
			}
		}
	}
	for _, w := range []string{"SIMULATED", doc.Meta.LinkID, doc.Meta.Provenance.Nonce, ">prompt length pp (tokens)<", "<svg"} {
		if !strings.Contains(html, w) {
			t.Errorf("page lacks %q", w)
		}
	}
	if !strings.Contains(stderr.String(), "page: "+page) {
		t.Errorf("stderr does not name the page:\n%s", stderr.String())
	}
	// The text checked above against the results file is what a browser
	// shows, with no error logged and nothing fetched.
	browsertest.CheckAsShown(t, page)
}
