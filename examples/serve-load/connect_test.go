package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// connectServer serves /tokenize (one token a word), /v1/models (the
// prewarm's target) and a streamed chat completion of three tokens with
// cumulative usage; without keep-alives it closes every connection after
// its response, which defeats any prewarm.
func connectServer(t *testing.T, keepAlive bool) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/tokenize", tokenizeWords)
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for i, text := range []string{"one", " two", " three"} {
			final := ""
			if i == 2 {
				final = `,"finish_reason":"length"`
			}
			io.WriteString(w, `data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"`+text+`"}`+final+`}],"usage":{"prompt_tokens":40,"completion_tokens":`+string(rune('1'+i))+`,"total_tokens":41}}`+"\n\n")
		}
		io.WriteString(w, "data: [DONE]\n\n")
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.SetKeepAlivesEnabled(keepAlive)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// TestServeLoadConnectS: with its connections prewarmed, an open loop at
// an infinite rate capped at 4 in flight sends all 8 requests on open
// connections (connect_s null on every row, no dial warning); against a
// server that closes every connection after its response the prewarm
// cannot help, every request dials (connect_s set), and the summary
// counts the dials and warns.
func TestServeLoadConnectS(t *testing.T) {
	for _, tc := range []struct {
		name      string
		keepAlive bool
		args      []string
	}{
		{"prewarmed rate inf", true, []string{"--rate", "inf", "--max-concurrency", "4", "--num-requests", "8"}},
		{"prewarmed burst", true, []string{"--burst", "4"}},
		{"prewarm defeated rate inf", false, []string{"--rate", "inf", "--max-concurrency", "4", "--num-requests", "8"}},
		{"prewarm defeated burst", false, []string{"--burst", "4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := connectServer(t, tc.keepAlive)
			dir := t.TempDir()
			jsonl, out := filepath.Join(dir, "rows.jsonl"), filepath.Join(dir, "run.json")
			var stdout, stderr bytes.Buffer
			// --allow-saturated: dials are under test, not the client's
			// schedule, which a loaded machine may lag past the gate.
			args := append([]string{"--allow-saturated", "--base-url", srv.URL, "--model", "m", "--pp", "40", "--tg", "3",
				"--timeout", "10s", "--jsonl", jsonl, "--json-out", out}, tc.args...)
			if err := run(context.Background(), args, &stdout, &stderr); err != nil {
				t.Fatalf("run: %v\n%s", err, stderr.String())
			}
			rows := readRows(t, jsonl)
			doc := readDoc(t, out)
			if doc.Summary == nil || len(rows) == 0 || len(doc.Requests) != len(rows) {
				t.Fatalf("%d JSONL rows, %d results rows, summary %v", len(rows), len(doc.Requests), doc.Summary)
			}
			dialed := 0
			for _, r := range rows {
				if r.Failed() {
					t.Fatalf("row %d failed: %s", r.Index, r.Error)
				}
				switch {
				case tc.keepAlive && r.ConnectS != nil:
					t.Errorf("row %d: connect_s %g on a prewarmed connection, want null", r.Index, *r.ConnectS)
				case !tc.keepAlive && (r.ConnectS == nil || *r.ConnectS < 0):
					t.Errorf("row %d: connect_s %v, want the dial's duration (every connection is closed after one response)", r.Index, r.ConnectS)
				}
				if r.ConnectS != nil {
					dialed++
				}
			}
			warned := false
			for _, w := range doc.Summary.Warnings {
				warned = warned || strings.HasPrefix(w, "new connections:")
			}
			if doc.Summary.Dialed != dialed || warned != (dialed > 0) {
				t.Errorf("summary dialed %d, dial warning %v; the rows have %d dials\nwarnings: %q", doc.Summary.Dialed, warned, dialed, doc.Summary.Warnings)
			}
		})
	}
}
