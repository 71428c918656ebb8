package warncode_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/warncode"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// TestClassify holds texts the scan cannot render (a trace's note, built
// piece by piece; a disaggregation check's notes; warnings carried in
// another's), and texts as runs wrote them.
func TestClassify(t *testing.T) {
	for _, c := range []struct{ text, code string }{
		{"traces/mooncake.jsonl: 12031 rows; skipped 2 bad (hash-ids 1, order 1), 5 failures", "trace_rows_skipped"},
		{"share.jsonl: 40 rows; skipped 3 shorter than 31 tokens (the chat template's, which no prompt can be below; lines 4, 9, 12)", "trace_rows_skipped"},
		{"disaggregated: the engine reports the prefill ran locally; it should have run remotely", "prefill_check"},
		{"disaggregated: the engine does not report where a request's prefill ran (exo falls back to local prefill without saying so): compare", "prefill_check"},
		{"decode_alone: warmup 1 of 2 failed: 503 Service Unavailable", "warmup_failed"},
		{"A: 3 of 40 requests failed: the latency figures are over the completed ones", "compare_failures"},
		{"B: the client was the bottleneck (client_saturated): its latencies include its own queueing", "client_saturated"},
		{"server metrics: no server figures: scrape after the run: connection refused", "server_scrape_failed"},
		{"planning: exo: node n1 reports no disk space: disk check skipped", "exo_planning"},
		{"planning the prefill placement: exo: plan mlx-community/Llama-3.2-1B-Instruct-4bit: storage_size_megabytes is unknown (0): no disk check and no download", "exo_planning"},
		{"target met after 5 repeats (at least 2, at most 10): gen_tps.mean ±4.1% ≤ 5%", "precision_stop"},
		{"rate +Inf/s: the client was the bottleneck (lag p99 120 ms); its lag counts in the backlog", "client_saturated"},
		{"openai: request resent on a new connection: the server had closed the reused connection it went out on before any byte of an answer (1 time(s)); it was written again on another, and Trace.Start is when that one was handed over", "request_resent"},
		{"timing: invalid trace: chunk 3 is 2ms before 1ms (chunks must be in order of arrival)", "invalid_trace"},
		// Unknown texts, and texts that only look like a kind's.
		{"", warncode.Other},
		{"something new happened", warncode.Other},
		{"<script>alert(1)</script>", warncode.Other},
		{"A: ", warncode.Other},
		{"C: 3 of 40 requests failed: the latency figures are over the completed ones", warncode.Other},
		{"  cluster snapshot: x", warncode.Other},
		{"many of 40 requests failed (3 timeout); their rows say why", warncode.Other},
		// A text two kinds' phrases match: neither.
		{"instance i of instance j not gone: x already runs on the cluster", warncode.Other},
	} {
		if got := warncode.Classify(c.text).Code; got != c.code {
			t.Errorf("Classify(%q) = %s, want %s", c.text, got, c.code)
		}
	}
}

// TestKinds checks the catalogue: codes snake_case and unique, every
// kind with its meaning and advice as sentences, Other last.
func TestKinds(t *testing.T) {
	ks := warncode.Kinds()
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	seen := map[string]bool{}
	for _, k := range ks {
		if !snake.MatchString(k.Code) || seen[k.Code] {
			t.Errorf("code %q: want a new snake_case name", k.Code)
		}
		seen[k.Code] = true
		for _, s := range []string{k.Meaning, k.Advice} {
			if s == "" || !strings.HasSuffix(s, ".") || strings.ContainsAny(s, "<>") {
				t.Errorf("%s: %q: want a sentence without markup", k.Code, s)
			}
		}
	}
	if ks[len(ks)-1].Code != warncode.Other {
		t.Errorf("the last kind is %s, want %s", ks[len(ks)-1].Code, warncode.Other)
	}
}

// TestDocumented requires docs/WARNINGS.md to have a row for every
// code with its meaning and advice, and no code the catalogue lacks.
func TestDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testkit.RepoRoot(t), "docs", "WARNINGS.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var codes []string
	for _, k := range warncode.Kinds() {
		codes = append(codes, k.Code)
		row := regexp.MustCompile("(?m)^\\| `" + k.Code + "` \\|.*$").FindString(doc)
		if row == "" {
			t.Errorf("docs/WARNINGS.md has no row for %s", k.Code)
		} else if !strings.Contains(row, "| "+k.Meaning+" | "+k.Advice+" |") {
			t.Errorf("docs/WARNINGS.md's row for %s does not say the catalogue's meaning and advice", k.Code)
		}
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\|").FindAllStringSubmatch(doc, -1) {
		if !slices.Contains(codes, m[1]) {
			t.Errorf("docs/WARNINGS.md has a row for %s, which the catalogue lacks", m[1])
		}
	}
}

// TestRunWarnings classifies the warnings of a real run on the embedded
// engine: every request at once (no steady state), one output token, no
// stream under a TTFT objective.
func TestRunWarnings(t *testing.T) {
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer srv.Close()
	c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := &benchkit.Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}, NoStream: true}
	run, err := l.Run(ctx, benchkit.Lengths{Input: 32, Output: 1}, benchkit.Traffic{Rate: 5000, NumRequests: 24}, timing.SLO{TTFT: 1})
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, w := range run.Summary.Warnings {
		k := warncode.Classify(w)
		if k.Code == warncode.Other {
			t.Errorf("%q has no kind", w)
		}
		codes = append(codes, k.Code)
	}
	for _, want := range []string{"steady_state_none", "tg1_undefined", "not_streamed"} {
		if !slices.Contains(codes, want) {
			t.Errorf("the run's warnings %q have codes %v, want %s among them", run.Summary.Warnings, codes, want)
		}
	}
}

// FuzzClassify: any text has a kind of the catalogue, the same each time.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{"", "A: B: A: x", "cluster snapshot: \x00", "7 of 7 requests failed (", "planning: planning: planning: planning: x"} {
		f.Add(s)
	}
	codes := map[string]bool{}
	for _, k := range warncode.Kinds() {
		codes[k.Code] = true
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := warncode.Classify(s)
		if !codes[k.Code] || warncode.Classify(s) != k {
			t.Errorf("Classify(%q) = %v", s, k)
		}
	})
}
