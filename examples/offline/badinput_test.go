package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/promptsize/hf/hftest"
)

// TestBadInputSendsNothing gives offline bad values for every flag, with a
// server that counts what reaches it as --base-url (and no --model, so a
// run that went on would ask for the model list): each is a usage error
// (exit 2) in one line naming the value at fault, and nothing is sent.
func TestBadInputSendsNothing(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "not expected", http.StatusTeapot)
	}))
	defer srv.Close()
	tok, corrupt := hftest.WriteTokenizer(t), hftest.WriteCorruptTokenizer(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--num-seqs", "0"}, "--num-seqs must be at least 1, got 0"},
		{[]string{"--num-seqs", "-4"}, "got -4"},
		{[]string{"--min-input-len", "0"}, "input range [0, 512]"},
		{[]string{"--max-input-len", "-1"}, "input range"},
		{[]string{"--min-input-len", "600"}, "input range [600, 512]"},
		{[]string{"--min-output-len", "0"}, "output range [0, 128]"},
		{[]string{"--max-output-len", "8"}, "output range [16, 8]"},
		{[]string{"--seed", "-1"}, `invalid value "-1" for flag -seed`},
		{[]string{"--api-key-env", "INFERBENCH_TEST_UNSET_KEY"}, "--api-key-env INFERBENCH_TEST_UNSET_KEY: the variable is unset or empty"},
		{[]string{"--timeout", "-1s"}, "--timeout must not be negative, got -1s"},
		{[]string{"--timeout", "soon"}, `invalid value "soon" for flag -timeout`},
		{[]string{"stray"}, `unexpected argument "stray"`},
		{[]string{"--tokenizer", "/nonexistent/tokenizer"}, "--tokenizer /nonexistent/tokenizer"},
		{[]string{"--tokenizer", corrupt}, "--tokenizer " + corrupt},
		{[]string{"--tokenizer", tok, "--min-input-len", "10", "--max-input-len", "40"}, "pp=10 is below the chat template's overhead of 19 tokens"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			before := hits.Load()
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"--base-url", srv.URL}, tc.args...), &stdout, &stderr)
			if code := cli.ExitCode(err); code != cli.ExitUsage {
				t.Fatalf("exit %d (err %v), want %d", code, err, cli.ExitUsage)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
				t.Errorf("message %q: want one line containing %q", msg, tc.want)
			}
			if n := hits.Load() - before; n != 0 {
				t.Errorf("the server got %d requests", n)
			}
		})
	}
}
