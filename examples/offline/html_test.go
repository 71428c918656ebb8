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

	"github.com/inferbench/inferbench/benchkit/report"
	"github.com/inferbench/inferbench/internal/browser/browsertest"
	"github.com/inferbench/inferbench/internal/progtest"
)

// TestHTMLPage runs a small batch on the embedded engine with --html and
// --json-out: the page fetches nothing and shows the JSON's figures under
// their data-keys, as its tables print them; the help describes the flag.
func TestHTMLPage(t *testing.T) {
	var help bytes.Buffer
	_ = run(context.Background(), []string{"-h"}, &help, &help)
	progtest.DescribesHTML(t, help.String())
	dir := t.TempDir()
	page, out := filepath.Join(dir, "sub", "o.html"), filepath.Join(dir, "o.json")
	args := []string{"--allow-saturated", "--num-seqs", "12", "--min-input-len", "40", "--max-input-len", "90", "--min-output-len", "5", "--max-output-len", "20",
		"--seed", "7", "--html", page, "--json-out", out}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run = %v; stderr:\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	doc := newLoadDocument()
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	h, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(h)
	progtest.FetchesNothing(t, html)
	s := doc.Summary
	if s == nil || s.OutputThroughput == nil || s.E2E.P50 == nil {
		t.Fatalf("results lack a throughput or an E2E p50: %+v", s)
	}
	keys := progtest.PageKeys(html)
	want := map[string]string{
		"output_throughput":  fmt.Sprintf("%.1f", *s.OutputThroughput),
		"total_throughput":   fmt.Sprintf("%.1f", *s.TotalThroughput),
		"request_throughput": fmt.Sprintf("%.2f", *s.RequestThroughput),
		"e2e.n":              fmt.Sprint(s.E2E.N),
		"e2e.max":            report.FormatMS(*s.E2E.Max),
		"schedule_lag.n":     fmt.Sprint(s.ScheduleLag.N),
		"tokens":             fmt.Sprintf("%d / %d", s.TotalInputTokens, s.TotalOutputTokens),
	}
	for k, v := range want {
		if keys[k] != v {
			t.Errorf("data-key %s shows %q, the JSON %q", k, keys[k], v)
		}
	}
	if p50 := report.FormatMS(*s.E2E.P50); !strings.HasPrefix(keys["e2e.p50"], p50+" [") {
		t.Errorf("data-key e2e.p50 shows %q, the JSON %s ms", keys["e2e.p50"], p50)
	}
	for _, w := range []string{"SIMULATED", "Offline batch: the run", doc.Meta.Provenance.Nonce, "have no interval", "All 12 requests."} {
		if !strings.Contains(html, w) {
			t.Errorf("page lacks %q", w)
		}
	}
	// The text checked above against the results file is what a browser
	// shows, with no error logged and nothing fetched.
	browsertest.CheckAsShown(t, page)
}
