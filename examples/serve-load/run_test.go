package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/internal/progtest"
)

func TestNoFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	// No flags means no --allow-saturated: a loaded machine may lag the
	// client past the saturation gate (exit 3), which is not what this
	// test is about, so that one error is accepted.
	if err := run(context.Background(), nil, &stdout, &stderr); err != nil && !errors.Is(err, cli.ErrClientSaturated) {
		t.Fatalf("run() = %v; stderr:\n%s", err, stderr.String())
	}
	first, _, _ := strings.Cut(stderr.String(), "\n")
	if !strings.Contains(first, "embedded simulated engine") || !strings.Contains(first, "simulated") {
		t.Errorf("first stderr line %q does not say the embedded simulated engine is measured", first)
	}
	if !strings.Contains(stdout.String(), "simulated") || !strings.Contains(stdout.String(), "32/32") {
		t.Errorf("stdout lacks the simulated label or 32/32 completed requests:\n%s", stdout.String())
	}
	progtest.Fits(t, "stdout", stdout.String())
	progtest.Fits(t, "stderr", stderr.String())
}

// TestBadFlags checks that every bad command line is a usage error (exit
// 2) and that nothing reaches the server.
func TestBadFlags(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "not expected", http.StatusTeapot)
	}))
	defer srv.Close()
	cases := [][]string{
		{"--rate", "0"},
		{"--rate", "fast"},
		{"--rate", "1,,2"},
		{"--rate", "inf", "--num-requests", "0"},
		{"--pp", "100", "--input-len", "100"},
		{"--pp", "100", "--range-ratio", "0.5"},
		{"--range-ratio", "1"},
		{"--output-len", "0"},
		{"--burst", "4", "--rate", "2"},
		{"--find-max-rate"},
		{"--find-max-rate", "--slo-ttft", "100", "--rate", "1,2"},
		{"--find-max-rate", "--slo-ttft", "100", "--search-factor", "1"},
		{"--slo-ttft", "-1"},
		{"--slo-tpot", "10", "--stream=false"},
		{"--format", "xml"},
		{"--burstiness", "-1"},
		{"--max-concurrency", "-2"},
		{"--api-key-env", "INFERBENCH_TEST_UNSET_VARIABLE"},
		{"--no-such-flag"},
		{"stray"},
		{"--sim-preset", "nope"},
		{"--pp", "3", "--num-requests", "2"}, // below the chat template's overhead
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			// The embedded engine is used for the last case: prompts are
			// built before anything is sent.
			if !strings.Contains(strings.Join(args, " "), "--pp 3") && !strings.Contains(strings.Join(args, " "), "sim-preset") {
				args = append([]string{"--base-url", srv.URL, "--model", "m"}, args...)
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), args, &stdout, &stderr)
			if code := cli.ExitCode(err); code != cli.ExitUsage {
				t.Errorf("run(%q) = %v (exit %d); want a usage error (exit 2)", args, err, code)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server got %d requests from bad command lines; want 0", n)
	}
}

// TestJSONFieldNames locks the field names of the results file that other
// tools read.
func TestJSONFieldNames(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	// --allow-saturated: the field names are under test, not the client's
	// schedule, which a loaded machine may lag past the gate.
	args := []string{"--allow-saturated", "--num-requests", "6", "--rate", "50", "--input-len", "64", "--output-len", "8", "--range-ratio", "0.5",
		"--slo-ttft", "1000", "--json-out", out, "--format", "json", "--seed", "3"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run = %v; stderr:\n%s", err, stderr.String())
	}
	file, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(file, &doc); err != nil {
		t.Fatal(err)
	}
	if !json.Valid(stdout.Bytes()) {
		t.Errorf("--format json wrote invalid JSON to stdout")
	}
	var rows []map[string]any
	if err := json.Unmarshal(doc["requests"], &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 {
		t.Fatalf("%d request rows; want 6", len(rows))
	}
	wantRow := []string{"response_id", "pp_target", "pp_tokens", "server_prompt_tokens", "completion_tokens",
		"intended_send_s", "send_offset_s", "ttft_s", "tpot_s", "e2e_s", "itl_s", "icl_s", "error"}
	for _, k := range wantRow {
		if _, ok := rows[0][k]; !ok {
			t.Errorf("request row lacks %q", k)
		}
	}
	for _, r := range rows {
		// Every prompt is exact and the embedded engine counts as the
		// client does.
		if r["pp_tokens"] != r["pp_target"] || r["server_prompt_tokens"] != r["pp_target"] {
			t.Errorf("row %v: pp_target %v, pp_tokens %v, server_prompt_tokens %v; want all equal", r["index"], r["pp_target"], r["pp_tokens"], r["server_prompt_tokens"])
		}
		if r["completion_tokens"] != r["tg_target"] {
			t.Errorf("row %v: %v completion tokens; asked for %v", r["index"], r["completion_tokens"], r["tg_target"])
		}
		// tg − 1 per-token gaps, one per token after the first chunk's.
		if itl, ok := r["itl_s"].([]any); !ok || float64(len(itl)) != r["tg_target"].(float64)-1 {
			t.Errorf("row %v: itl_s = %v; want tg_target − 1 gaps", r["index"], r["itl_s"])
		}
	}
	var sum map[string]any
	if err := json.Unmarshal(doc["summary"], &sum); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ttft_s", "tpot_s", "itl_s", "e2e_s"} {
		st, _ := sum[k].(map[string]any)
		for _, q := range []string{"mean", "p50", "p90", "p99"} {
			if _, ok := st[q]; !ok {
				t.Errorf("summary.%s lacks %q", k, q)
			}
		}
	}
	for _, k := range []string{"output_throughput_tok_s", "total_throughput_tok_s", "request_throughput_rps", "goodput", "dispatch_skew_s", "schedule_lag_s"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("summary lacks %q", k)
		}
	}
	skew, _ := sum["dispatch_skew_s"].(map[string]any)
	var keys []string
	for k := range skew {
		// A figure's interval is there when the sample bounds it (a
		// p99 needs 368 samples), around the figure.
		if fig, ok := strings.CutSuffix(k, "_ci"); ok {
			ci, _ := skew[k].([]any)
			if v, ok := skew[fig].(float64); !ok || len(ci) != 2 || ci[0].(float64) > v || v > ci[1].(float64) {
				t.Errorf("dispatch_skew_s.%s = %v around %s %v", k, skew[k], fig, skew[fig])
			}
			continue
		}
		keys = append(keys, k)
	}
	// The skew is summarised as every other sample is (benchkit.Quantiles).
	if diff := cmp.Diff([]string{"max", "mean", "n", "p50", "p90", "p99"}, sorted(keys)); diff != "" {
		t.Errorf("dispatch_skew_s keys (-want +got):\n%s", diff)
	}
}

func sorted(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// TestFindMaxRate checks that the rate --find-max-rate reports meets the
// SLO when run again, and that 1.5 times it does not.
//
// The server decodes one request at a time (MaxRunning 1) on the H100
// preset, and the requests arrive at nearly regular gaps (burstiness 100),
// so the sim's cost model gives its capacity: one request per service time
// S, the prefill of 64 tokens and 32 decode steps (about 0.21 s). Below
// capacity a request never waits for another, and its TTFT is two engine
// steps (about 13 ms); above it the queue grows by a share of S with every
// arrival. The search probes 0.85 and 1.275 times the capacity: at the
// first no request waits, at the second the 12th and later requests wait
// longer than the TTFT objective of 2.5 S, half of the run. The objective
// is hundreds of milliseconds above the TTFT of a request that does not
// wait, so the machine's own scheduling delays, even on a loaded machine,
// do not decide a run; the queue in the simulated schedule does.
func TestFindMaxRate(t *testing.T) {
	if testing.Short() {
		t.Skip("about 20 s of simulated load")
	}
	const in, out = 64, 32
	p := sim.H100Llama8B()
	srv := sim.NewServer(sim.Options{Preset: p, Nodes: 1, MaxRunning: 1})
	defer srv.Close()
	service := p.PrefillTime(in, 0, 0)
	for i := range out {
		service += p.DecodeStep([]int{in + i})
	}
	capacity := 1 / service.Seconds()
	slo := 2.5 * service.Seconds() * 1000
	t.Logf("service time %v, capacity %.3g req/s, TTFT objective %.0f ms", service, capacity, slo)
	// The search, not the client's health, is under test: a loaded
	// machine may lag a request past the saturation gate's bound.
	common := []string{"--allow-saturated", "--base-url", srv.VLLMURL, "--model", srv.Model(), "--input-len", fmt.Sprint(in), "--output-len", fmt.Sprint(out),
		"--num-requests", "24", "--burstiness", "100", "--slo-ttft", fmt.Sprint(slo), "--seed", "1", "--format", "json"}
	doc := runJSON(t, append(common, "--find-max-rate", "--search-start", fmt.Sprint(0.85*capacity),
		"--search-factor", "1.5", "--search-tolerance", "0.6")...)
	if doc.MaxRate == nil || doc.MaxRate.RateRPS <= 0 {
		t.Fatalf("no max rate reported: %+v", doc.MaxRate)
	}
	r := doc.MaxRate.RateRPS
	t.Logf("max rate %g req/s (bracket %g–%g, %d probes)", r, doc.MaxRate.Lo, doc.MaxRate.Hi, doc.MaxRate.Probes)
	if doc.MaxRate.Lo > capacity || doc.MaxRate.Hi < capacity {
		t.Errorf("the search's bracket %g–%g req/s does not hold the capacity of the cost model, %.3g req/s", doc.MaxRate.Lo, doc.MaxRate.Hi, capacity)
	}
	at := runJSON(t, append(common, "--rate", fmt.Sprint(r))...)
	if at.Summary.MeetsSLO == nil || !*at.Summary.MeetsSLO {
		t.Errorf("re-run at %g req/s: goodput %+v; want it to meet the SLO\n%s", r, at.Summary.Goodput, sendsAndTTFTs(at))
	}
	above := runJSON(t, append(common, "--rate", fmt.Sprint(1.5*r))...)
	if above.Summary.MeetsSLO == nil || *above.Summary.MeetsSLO {
		t.Errorf("run at 1.5 × %g req/s: goodput %+v; want it to miss the SLO\n%s", r, above.Summary.Goodput, sendsAndTTFTs(above))
	}
}

// sendsAndTTFTs lists when each request of a run was due, when it was
// sent and its TTFT, for the message of a failed check.
func sendsAndTTFTs(doc benchkit.LoadDocument) string {
	var b strings.Builder
	for _, r := range doc.Requests {
		ttft := "-"
		if r.TTFTS != nil {
			ttft = fmt.Sprintf("%.3f", *r.TTFTS)
		}
		fmt.Fprintf(&b, "request %d: due %.3f s, sent %.3f s, TTFT %s s %s\n", r.Index, r.IntendedSendS, r.SendOffsetS, ttft, r.Error)
	}
	return b.String()
}

func runJSON(t *testing.T, args ...string) benchkit.LoadDocument {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), args, &stdout, &stderr); err != nil && !errors.Is(err, cli.ErrRequestsFailed) {
		t.Fatalf("run(%q) = %v; stderr:\n%s", args, err, stderr.String())
	}
	doc := newLoadDocument()
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("decode results: %v", err)
	}
	return doc
}
