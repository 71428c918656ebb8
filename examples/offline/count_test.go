package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/promptsize/hf"
	"github.com/inferbench/inferbench/promptsize/hf/hftest"
)

// noUsageServer answers every chat request with a non-streamed completion
// of reply that carries no usage block (as some servers and gateways do),
// each with its own response id, or with sameID when it is set.
func noUsageServer(t *testing.T, reply string, sameID bool) *httptest.Server {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		id := "chatcmpl-" + strconv.FormatInt(n.Add(1), 10)
		if sameID {
			id = "chatcmpl-same"
		}
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": reply}, "finish_reason": "length"}}})
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRepliesWithoutUsageAreCounted: against a server whose replies carry
// no usage, every row's completion_tokens is the tokenizer's count of its
// text, the row and the summary say the client counted it, and the summary's
// total is their sum; with response ids a row cannot be matched by, the
// rows stay at 0 and the summary says why.
func TestRepliesWithoutUsageAreCounted(t *testing.T) {
	dir := hftest.WriteTokenizer(t)
	tok, err := hf.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	const reply = "the quick brown fox jumps over the lazy dog"
	want := tok.CountText(reply)
	if want < 2 {
		t.Fatalf("the test tokenizer counts %d tokens in %q; expected several", want, reply)
	}
	for _, sameID := range []bool{false, true} {
		srv := noUsageServer(t, reply, sameID)
		out := filepath.Join(t.TempDir(), "out.json")
		var stdout, stderr bytes.Buffer
		// --allow-saturated: the counting is under test, not the burst's
		// skew, which a loaded machine may push past the gate.
		err := run(context.Background(), []string{"--allow-saturated", "--base-url", srv.URL, "--model", "m", "--tokenizer", dir, "--num-seqs", "3",
			"--min-input-len", "40", "--max-input-len", "50", "--min-output-len", "4", "--max-output-len", "4", "--json-out", out}, &stdout, &stderr)
		if err != nil {
			t.Fatalf("sameID=%v: run: %v\n%s", sameID, err, stderr.String())
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		doc := newLoadDocument()
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Summary == nil || len(doc.Requests) != 3 {
			t.Fatalf("sameID=%v: results %+v, expected one run of 3 requests", sameID, doc)
		}
		run := benchkit.LoadRun{Summary: *doc.Summary, Requests: doc.Requests}
		sumWarn := strings.Join(run.Summary.Warnings, "\n")
		if sameID {
			for _, r := range run.Requests {
				if r.Tokens() != 0 {
					t.Errorf("shared id: row %d has %d completion tokens, expected 0 (its text cannot be matched)", r.Index, r.Tokens())
				}
			}
			if !strings.Contains(sumWarn, "not unique") {
				t.Errorf("shared id: the summary warnings %q do not say the replies could not be matched", run.Summary.Warnings)
			}
			continue
		}
		for _, r := range run.Requests {
			if r.Tokens() != want {
				t.Errorf("row %d: completion_tokens %d, expected the tokenizer's %d", r.Index, r.Tokens(), want)
			}
			counted := slices.IndexFunc(r.Warnings, func(w benchkit.Warning) bool { return w.Code == benchkit.WarnClientCounted })
			if counted < 0 || !strings.Contains(r.Warnings[counted].Message, warnCounted) || !strings.Contains(r.Warnings[counted].Message, dir) {
				t.Errorf("row %d: warnings %q do not say the client counted with %s", r.Index, r.Warnings, dir)
			}
			// The short-generation check ran on 0 tokens; it is run again
			// on the count: asked for 4, the row is short only when the
			// text holds fewer.
			if r.HasWarning(benchkit.WarnShortGeneration) != (want < 4) {
				t.Errorf("row %d: %d tokens of 4, warnings %q: the short-generation warning was not redone on the count", r.Index, want, r.Warnings)
			}
		}
		if got := run.Summary.TotalOutputTokens; got != 3*want {
			t.Errorf("summary total_output_tokens %d, expected %d", got, 3*want)
		}
		if !strings.Contains(sumWarn, warnCounted+": 3 of 3") {
			t.Errorf("summary warnings %q do not say 3 of 3 replies were counted by the client", run.Summary.Warnings)
		}
		if !strings.Contains(stdout.String(), "Total: "+strconv.Itoa(3*want)+" output tokens") {
			t.Errorf("stdout does not report the counted total %d:\n%s", 3*want, stdout.String())
		}
	}
}
