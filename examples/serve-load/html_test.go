package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	htmlreport "github.com/inferbench/inferbench/benchkit/report"
	"github.com/inferbench/inferbench/internal/progtest"
)

// runHTML runs serve-load on the embedded engine with --html and
// --json-out and returns the page and the JSON document.
func runHTML(t *testing.T, args ...string) (string, benchkit.LoadDocument) {
	t.Helper()
	dir := t.TempDir()
	page, out := filepath.Join(dir, "sub", "r.html"), filepath.Join(dir, "r.json")
	var stdout, stderr bytes.Buffer
	args = append([]string{"--allow-saturated", "--input-len", "40", "--output-len", "4", "--seed", "5", "--html", page, "--json-out", out}, args...)
	if err := run(context.Background(), args, &stdout, &stderr); err != nil && !errors.Is(err, cli.ErrRequestsFailed) {
		t.Fatalf("run(%q) = %v; stderr:\n%s", args, err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	doc := newLoadDocument()
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("decode results: %v", err)
	}
	h, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	progtest.FetchesNothing(t, string(h))
	return string(h), doc
}

// TestHTMLHostileModel asks the embedded engine for a model named as
// markup: every request fails, and the page shows the name and the
// errors, which carry it, as text.
func TestHTMLHostileModel(t *testing.T) {
	page, doc := runHTML(t, "--num-requests", "3", "--model", "<script>alert(1)</script>")
	if doc.Summary == nil || doc.Summary.Failed != 3 {
		t.Fatalf("want 3 failed requests: %+v", doc.Summary)
	}
	if strings.Contains(page, "<script") || !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the model name is not escaped on the page")
	}
	if !strings.Contains(page, "Errors of the failed requests") {
		t.Error("the page does not list the requests' errors")
	}
}

// TestHTMLPage runs a small load on the embedded engine: --html writes a
// page that fetches nothing and shows the JSON's figures as its table
// prints them.
func TestHTMLPage(t *testing.T) {
	var help bytes.Buffer
	_ = run(context.Background(), []string{"-h"}, &help, &help)
	progtest.DescribesHTML(t, help.String())
	page, doc := runHTML(t, "--num-requests", "30", "--rate", "200", "--slo-ttft", "60000")
	if doc.Summary == nil || doc.Summary.TTFT.P50 == nil || doc.Summary.Failed != 0 {
		t.Fatalf("results have failures or no TTFT p50: %+v", doc.Summary)
	}
	s := doc.Summary
	row := regexp.MustCompile(`<tr><th scope="row">TTFT</th>.*?</tr>`).FindString(page)
	if p50 := htmlreport.FormatMS(*s.TTFT.P50); !strings.Contains(row, `data-key="run0.ttft.p50">`+p50) {
		t.Errorf("TTFT row does not show the JSON's p50 %s ms: %s", p50, row)
	}
	g := doc.Summary.Goodput
	if g == nil {
		t.Fatal("results have no goodput under --slo-ttft")
	}
	for _, want := range []string{"SIMULATED", doc.Meta.Provenance.Nonce, "Per-request timeline", "All 30 requests.", fmt.Sprintf("%d of %d (", g.Good, g.Total)} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if (s.Steady != nil) != strings.Contains(page, "Latency over the steady state") {
		t.Errorf("steady state in the JSON %v, but the page says otherwise", s.Steady != nil)
	}
}

// TestHTMLSweep: a sweep's page draws the latency against the offered
// rate.
func TestHTMLSweep(t *testing.T) {
	page, doc := runHTML(t, "--num-requests", "8", "--rate", "50,200")
	if len(doc.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(doc.Runs))
	}
	if !strings.Contains(page, `aria-label="SIMULATED: Latency against offered rate"`) || strings.Count(page, "Per-request timeline.") != 2 {
		t.Error("a sweep's page lacks its rate plot or a run's timeline")
	}
}

// TestHTMLClaimed: --html is claimed like --json-out: a page another run
// holds is refused (exit 2) and left as it was; a previous page is gone
// as soon as a run starts, so that a run that fails never leaves it
// looking current.
func TestHTMLClaimed(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "r.html")
	if err := os.WriteFile(page, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	holder, err := cli.LockOutputs("other-serve-load", page)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err = run(context.Background(), []string{"--num-requests", "2", "--html", page}, &stdout, &stderr)
	holder.Release()
	if code := cli.ExitCode(err); code != cli.ExitUsage || !strings.Contains(err.Error(), page) {
		t.Fatalf("exit %d (%v), want %d naming %s", code, err, cli.ExitUsage, page)
	}
	if b, _ := os.ReadFile(page); string(b) != "old" {
		t.Errorf("the held page was changed: %q", b)
	}
	// Claimed, then the run fails at once: no server answers.
	err = run(context.Background(), []string{"--num-requests", "2", "--html", page, "--base-url", "http://127.0.0.1:1", "--model", "m"}, &stdout, &stderr)
	if err == nil {
		t.Fatal("a run against no server succeeded")
	}
	if _, statErr := os.Stat(page); !errors.Is(statErr, os.ErrNotExist) && !strings.Contains(readFile(t, page), "<!DOCTYPE html>") {
		t.Errorf("the previous page is still there after a failed run (%v)", err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
