package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	htmlreport "github.com/inferbench/inferbench/benchkit/report"
	"github.com/inferbench/inferbench/internal/browser/browsertest"
	"github.com/inferbench/inferbench/internal/progtest"
)

// TestHTMLPage runs small sessions on the embedded engine with its cache
// on and off and --html: the page is written beside the JSON, fetches
// nothing, draws TTFT by turn, and shows the JSON's figures by data-key;
// the help describes the flag.
func TestHTMLPage(t *testing.T) {
	var help bytes.Buffer
	_ = run(context.Background(), []string{"-h"}, &help, &help)
	progtest.DescribesHTML(t, help.String())
	dir := t.TempDir()
	page, out := filepath.Join(dir, "sub", "mt.html"), filepath.Join(dir, "mt.json")
	args := []string{"--sim-preset", "fast", "--sessions", "2", "--turns", "3", "--user-tokens", "40", "--output-len", "4",
		"--plot", "", "--json-out", out, "--html", page}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s%s", err, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc benchkit.SessionsDocument
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	h, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(h)
	progtest.FetchesNothing(t, html)
	got := progtest.PageKeys(html)
	if len(doc.Runs) != 2 {
		t.Fatalf("%d runs, want radix and naive", len(doc.Runs))
	}
	for i, r := range doc.Runs {
		k := fmt.Sprintf("run%d.", i)
		want := map[string]string{k + "requests": fmt.Sprint(r.Summary.Requests), k + "cached_tokens": fmt.Sprint(r.Summary.CachedTokens)}
		if p := r.Summary.TTFT.P50; p != nil {
			want[k+"ttft.p50"] = htmlreport.FormatMS(*p)
		}
		for _, ts := range r.Turns {
			tk := fmt.Sprintf("%sturn%d.", k, ts.Turn)
			want[tk+"cached_tokens"] = fmt.Sprint(ts.CachedTokens)
			if ts.TTFT.P50 == nil {
				t.Fatalf("%s turn %d has no TTFT p50", r.PrefixCache, ts.Turn)
			}
			want[tk+"ttft.p50"] = htmlreport.FormatMS(*ts.TTFT.P50)
		}
		for key, w := range want {
			// A p50 is followed by its interval or "[interval: none]".
			if g, ok := got[key]; !ok || (g != w && !strings.HasPrefix(g, w+" [")) {
				t.Errorf("data-key %s: page shows %q, the JSON %q", key, g, w)
			}
		}
	}
	for _, want := range []string{"SIMULATED", doc.Meta.Provenance.Nonce, `aria-label="SIMULATED: TTFT by turn"`, "run 1: prefix cache radix", "run 2: prefix cache naive", "Per-request timeline"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if !strings.Contains(stderr.String(), page) {
		t.Errorf("stderr does not name the page:\n%s", stderr.String())
	}
	// The text checked above against the results file is what a browser
	// shows, with no error logged and nothing fetched.
	browsertest.CheckAsShown(t, page)
}
