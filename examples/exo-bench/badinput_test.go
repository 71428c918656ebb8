package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/inferbench/inferbench/promptsize/hf/hftest"
)

// TestBadInputSendsNothing gives exo-bench bad values for every kind of
// flag, against a server that counts what reaches it as --host/--port:
// each is exit status 2 with one line on stderr naming the flag or value at
// fault, no results file, and no request at all.
func TestBadInputSendsNothing(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "not expected", http.StatusTeapot)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	tok, corrupt, empty := hftest.WriteTokenizer(t), hftest.WriteCorruptTokenizer(t), t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--pp", "0"}, "pp=0"},
		{[]string{"--pp", "-3"}, "pp=-3"},
		{[]string{"--pp", "x"}, `"x" is not an integer`},
		{[]string{"--tg", "0"}, "tg=0"},
		{[]string{"--repeat", "0"}, "--repeat=0"},
		{[]string{"--repeat", "-1"}, "--repeat=-1"},
		{[]string{"--concurrency", "0"}, "concurrency=0"},
		{[]string{"--concurrency", "-2"}, "concurrency=-2"},
		{[]string{"--warmup", "-1"}, "--warmup=-1"},
		{[]string{"--format", "xml"}, `--format="xml"`},
		{[]string{"--metrics-interval", "0"}, "--metrics-interval=0"},
		{[]string{"--metrics-interval", "NaN"}, "--metrics-interval=NaN"},
		{[]string{"--timeout", "0"}, "--timeout=0"},
		{[]string{"--timeout", "-5"}, "--timeout=-5"},
		{[]string{"--timeout", "Inf"}, "--timeout=+Inf"},
		{[]string{"--grace", "-1"}, "--grace=-1"},
		{[]string{"--settle-timeout", "-1"}, "--settle-timeout=-1"},
		{[]string{"--pause-repeat", "-2"}, "--pause-repeat=-2"},
		{[]string{"--pause-group", "NaN"}, "--pause-group=NaN"},
		{[]string{"--min-nodes", "0"}, "--min-nodes=0"},
		{[]string{"--max-nodes", "0"}, "--max-nodes=0"},
		{[]string{"--instance-meta", "x"}, `--instance-meta="x"`},
		{[]string{"--sharding", "x"}, `--sharding="x"`},
		{[]string{"--port", "0"}, "--port=0"},
		{[]string{"--port", "70000"}, "--port=70000"},
		{[]string{"--preset", "fast"}, "--preset names simulated hardware"},
		{[]string{"stray"}, "unexpected arguments"},
		{[]string{"--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"--tokenizer", "/nonexistent/tokenizer"}, "--tokenizer /nonexistent/tokenizer"},
		{[]string{"--tokenizer", corrupt}, "--tokenizer " + corrupt},
		{[]string{"--tokenizer", empty}, "--tokenizer " + empty},
		// Below the chat template's overhead, counted with the tokenizer
		// before the cluster is asked anything.
		{[]string{"--pp", "10"}, "pp=10 is below the chat template's overhead of 19 tokens"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			before := hits.Load()
			dir := t.TempDir()
			args := append([]string{"--host", u.Hostname(), "--port", u.Port(), "--model", "m", "--tokenizer", tok,
				"--pp", "64", "--tg", "8", "--json-out", filepath.Join(dir, "out.json")}, tc.args...)
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), args, &stdout, &stderr)
			var msg bytes.Buffer
			if code := exitCode(err, &msg); code != 2 {
				t.Fatalf("exit %d (err %v), want 2", code, err)
			}
			if line := msg.String(); strings.Count(line, "\n") != 1 || !strings.HasPrefix(line, "exo-bench: ") || !strings.Contains(line, tc.want) {
				t.Errorf("stderr %q: want one line containing %q", line, tc.want)
			}
			if n := hits.Load() - before; n != 0 {
				t.Errorf("the server got %d requests", n)
			}
			if _, err := os.Stat(filepath.Join(dir, "out.json")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("results written for bad input: %v", err)
			}
		})
	}
}
