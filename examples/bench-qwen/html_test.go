package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit/cli"
	htmlreport "github.com/inferbench/inferbench/benchkit/report"
	"github.com/inferbench/inferbench/internal/browser/browsertest"
	"github.com/inferbench/inferbench/internal/progtest"
)

// TestHTMLPage replays the short run with --html: the page is written,
// fetches nothing, shows the JSON's figures of each scale by data-key,
// mini-sglang's and ours, with the note on the ITL's interval; the help
// describes the flag.
func TestHTMLPage(t *testing.T) {
	var help bytes.Buffer
	_ = run(context.Background(), []string{"-h"}, &help, &help)
	progtest.DescribesHTML(t, help.String())
	dir := t.TempDir()
	page, out := filepath.Join(dir, "sub", "q.html"), filepath.Join(dir, "q.json")
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), shortArgs("--json-out", out, "--html", page, "--allow-saturated"), &stdout, &stderr); err != nil {
		t.Fatalf("run = %v\n%s", err, stderr.String())
	}
	d := readDocument(t, out)
	h, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(h)
	progtest.FetchesNothing(t, html)
	got := progtest.PageKeys(html)
	if len(d.Runs) != 2 {
		t.Fatalf("%d scales in the JSON, want 2", len(d.Runs))
	}
	for i, r := range d.Runs {
		s, m := summary(r.Load), r.Mini
		if m == nil || s.TTFT.P50 == nil || s.ITL.Mean == nil {
			t.Fatalf("scale %g: no mini-sglang figures or no TTFT p50 or ITL mean", r.Scale)
		}
		k := fmt.Sprintf("scale%d.", i)
		want := map[string]string{
			k + "requests":                          fmt.Sprint(s.Requests),
			k + "ttft.p50":                          htmlreport.FormatMS(*s.TTFT.P50),
			k + "itl.mean":                          htmlreport.FormatMS(*s.ITL.Mean),
			k + "minisglang.ttft.p50":               fmt.Sprintf("%.2f", m.TTFTms.P50),
			k + "minisglang.tpot.avg":               fmt.Sprintf("%.2f", m.TPOTms.Avg),
			k + "minisglang.e2e.p90":                htmlreport.FormatMS(m.E2Es.P90),
			k + "minisglang.num_tokens":             fmt.Sprint(m.Tokens),
			"overview." + k + "ttft.p50":            htmlreport.FormatMS(*s.TTFT.P50),
			"overview." + k + "minisglang.ttft.p90": fmt.Sprintf("%.2f", m.TTFTms.P90),
		}
		for key, w := range want {
			// A figure with an interval is followed by it.
			if g, ok := got[key]; !ok || (g != w && !strings.HasPrefix(g, w+" [")) {
				t.Errorf("data-key %s: page shows %q, the JSON %q", key, g, w)
			}
		}
	}
	for _, want := range []string{"SIMULATED", "so they are too narrow", "Why mini-sglang", "Per-request timeline of scale 0.05", "Per-request timeline of scale 0.1"} {
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

// TestHTMLInterrupted: a run interrupted after its first scale writes the
// page of that scale alone.
func TestHTMLInterrupted(t *testing.T) {
	page := filepath.Join(t.TempDir(), "q.html")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := runWith(ctx, shortArgs("--html", page, "--allow-saturated"), &stdout, &stderr, hooks{afterScale: func(int) { cancel() }})
	if cli.ExitCode(err) != cli.ExitInterrupted {
		t.Fatalf("run = %v; want interrupted (exit 130)", err)
	}
	h, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if html := string(h); !strings.Contains(html, "Scale 0.05") || strings.Contains(html, "Scale 0.1") || !strings.Contains(html, "Scales measured</th><td>1 of 2<") {
		t.Error("the interrupted run's page does not hold its first scale alone")
	}
}
