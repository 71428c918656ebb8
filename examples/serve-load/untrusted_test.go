package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/internal/hostile"
)

// tokenizeWords answers vLLM's /tokenize with a count of 3 plus the
// whitespace-separated words of every message: a chat template of 3
// tokens over a tokenizer of one token per word.
func tokenizeWords(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n := 3
	for _, m := range req.Messages {
		n += len(strings.Fields(m.Content))
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"count":%d,"max_model_len":4096}`, n)
}

// serveChat starts a hostile server that counts with tokenizeWords and
// answers every chat completion with chat.
func serveChat(t *testing.T, chat http.HandlerFunc) *hostile.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/tokenize", tokenizeWords)
	mux.HandleFunc("/v1/chat/completions", chat)
	return hostile.New(t, mux)
}

// TestServeLoadCountsWithItsCounter: a server that sends no usage at all
// (no per-chunk, no final) leaves the chunk counts to the counter that
// built the prompts (here the server's /tokenize): the rows carry the
// counted total, not one token per chunk, and no "unknown" warning.
func TestServeLoadCountsWithItsCounter(t *testing.T) {
	srv := serveChat(t, hostile.SSE(false,
		`{"id":"c","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
		`{"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"one two"}}]}`,
		`{"id":"c","model":"m","choices":[{"index":0,"delta":{"content":" three"}}]}`,
		`{"id":"c","model":"m","choices":[{"index":0,"delta":{"content":" four five six"},"finish_reason":"length"}]}`))
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "rows.jsonl")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"--base-url", srv.URL, "--model", "m", "--pp", "40", "--tg", "6",
		"--num-requests", "2", "--max-concurrency", "1", "--timeout", "10s", "--jsonl", jsonl}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	rows := readRows(t, jsonl)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	for _, r := range rows {
		if r.Failed() || r.Tokens() != 6 {
			t.Errorf("row %d: completion_tokens %d (error %q), want 6 counted by the counter", r.Index, r.Tokens(), r.Error)
		}
		for _, w := range r.Warnings {
			if strings.Contains(w.Message, "unknown") {
				t.Errorf("row %d warns %q: the counter was not handed to the client", r.Index, w)
			}
		}
	}
}

// TestServeLoadImplausibleUsage: a chunk whose usage claims 1e18 or 2e7
// completion tokens for --tg 4 ends its request as an implausible_usage
// row naming both numbers, with no figures, instead of a panic or a
// per-token allocation; the run ends with exit status 1 (some failed).
func TestServeLoadImplausibleUsage(t *testing.T) {
	for _, claim := range []string{"1000000000000000000", "20000000"} {
		t.Run(claim, func(t *testing.T) {
			srv := serveChat(t, hostile.SSE(false,
				`{"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"hi"}}],"usage":{"prompt_tokens":40,"completion_tokens":1,"total_tokens":41}}`,
				`{"id":"c","model":"m","choices":[{"index":0,"delta":{"content":" there"}}],"usage":{"prompt_tokens":40,"completion_tokens":`+claim+`,"total_tokens":41}}`))
			jsonl := filepath.Join(t.TempDir(), "rows.jsonl")
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{"--base-url", srv.URL, "--model", "m", "--pp", "40", "--tg", "4",
				"--num-requests", "1", "--timeout", "10s", "--jsonl", jsonl}, &stdout, &stderr)
			if code := cli.ExitCode(err); code != cli.ExitFailed {
				t.Errorf("exit status %d (%v), want 1", code, err)
			}
			rows := readRows(t, jsonl)
			if len(rows) != 1 {
				t.Fatalf("%d rows, want 1", len(rows))
			}
			r := rows[0]
			if r.ErrorKind != string(engine.KindImplausibleUsage) || !strings.Contains(r.Error, claim) || !strings.Contains(r.Error, "20") {
				t.Errorf("row error %q (%s), want implausible_usage naming %s and the bound", r.Error, r.ErrorKind, claim)
			}
			if r.TTFTS != nil || r.TPOTS != nil || len(r.ITLS) != 0 || r.CompletionTokens != nil {
				t.Errorf("row keeps figures: ttft %v tpot %v itl %d, completion_tokens %v", r.TTFTS, r.TPOTS, len(r.ITLS), r.CompletionTokens)
			}
		})
	}
}
