package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/promptsize/hf/hftest"
)

// TestBadInputSendsNothing gives serve-load bad values for every kind of
// flag, with a server that counts what reaches it as --base-url: each is a
// usage error (exit 2) in one line that names the flag or value at fault,
// and the server sees no request at all.
func TestBadInputSendsNothing(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "not expected", http.StatusTeapot)
	}))
	defer srv.Close()
	tok, corrupt := hftest.WriteTokenizer(t), hftest.WriteCorruptTokenizer(t)
	// A results file's directory is made when missing; one under a plain
	// file cannot be.
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string // in the message
	}{
		{[]string{"--input-len", "0"}, "input length must be at least 1 token, got 0"},
		{[]string{"--input-len", "-5"}, "got -5"},
		{[]string{"--output-len", "-1"}, "output length must be at least 1 token, got -1"},
		{[]string{"--pp", "0"}, "got 0"},
		{[]string{"--num-requests", "-1"}, "number of requests must not be negative, got -1"},
		{[]string{"--duration", "-1s"}, "duration must not be negative"},
		{[]string{"--max-concurrency", "-1"}, "max concurrency must not be negative, got -1"},
		{[]string{"--burst", "-3"}, "burst must not be negative, got -3"},
		{[]string{"--rate", "-2"}, "-2"},
		{[]string{"--timeout", "-1s"}, "--timeout and --grace must not be negative"},
		{[]string{"--grace", "-1s"}, "--timeout and --grace must not be negative"},
		{[]string{"--warmup", "-1"}, "--warmup must not be negative, got -1"},
		{[]string{"--slo-attainment", "0"}, "--slo-attainment must be in (0, 1], got 0"},
		{[]string{"--slo-attainment", "1.5"}, "got 1.5"},
		{[]string{"--slo-e2e", "-3"}, "--slo-e2e must be a non-negative number"},
		{[]string{"--search-max", "-1"}, "--search-max must not be negative"},
		{[]string{"--find-max-rate", "--slo-e2e", "100", "--search-start", "0"}, "--search-start must be a positive rate, got 0"},
		{[]string{"--find-max-rate", "--slo-e2e", "100", "--search-tolerance", "0"}, "--search-tolerance must be a positive number, got 0"},
		{[]string{"--format", "yaml"}, `--format must be table, markdown or json, got "yaml"`},
		{[]string{"--num-requests", "x"}, `invalid value "x" for flag -num-requests`},
		{[]string{"--tokenizer", "/nonexistent/tokenizer"}, "--tokenizer /nonexistent/tokenizer"},
		{[]string{"--tokenizer", corrupt}, "--tokenizer " + corrupt},
		// A prompt below the chat template's overhead is refused with the
		// overhead named, before the model list or /tokenize is asked.
		{[]string{"--tokenizer", tok, "--pp", "10"}, "pp=10 is below the chat template's overhead of 19 tokens"},
		{[]string{"--tokenizer", tok, "--input-len", "20", "--range-ratio", "0.5"}, "pp=10 is below the chat template's overhead of 19 tokens"},
		{[]string{"--jsonl", filepath.Join(notDir, "rows.jsonl")}, "--jsonl"},
		{[]string{"--json-out", filepath.Join(notDir, "r.json")}, "--json-out"},
		{[]string{"--api-key-env", "INFERBENCH_TEST_UNSET_KEY"}, "--api-key-env INFERBENCH_TEST_UNSET_KEY: the variable is unset or empty"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			before := hits.Load()
			// No --model: a run that went on would ask for the model list.
			args := append([]string{"--base-url", srv.URL}, tc.args...)
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), args, &stdout, &stderr)
			if code := cli.ExitCode(err); code != cli.ExitUsage {
				t.Fatalf("exit %d (err %v), want %d", code, err, cli.ExitUsage)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
				t.Errorf("message %q: want one line containing %q", msg, tc.want)
			}
			if n := hits.Load() - before; n != 0 {
				t.Errorf("the server got %d requests", n)
			}
		})
	}
	if hftest.TinyOverhead != 19 {
		t.Fatal("hftest.TinyOverhead changed without the messages above")
	}
}
