package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
)

// postOllama posts body to the Ollama dialect's /api/chat.
func postOllama(t *testing.T, s *Server, body string) *http.Response {
	t.Helper()
	resp, err := testkit.Client.Post(s.OllamaURL()+"/api/chat", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestOllamaStream: a stream is application/x-ndjson, one line per token
// with text, done false and no counts, then a final object with
// done_reason and every count and duration; a stop at the end of
// sequence counts one token more than it sends.
func TestOllamaStream(t *testing.T) {
	for _, tc := range []struct {
		name, options, reason string
		eos                   int
	}{
		{"length", `{"num_predict":6}`, "length", 0},
		{"stop", `{"num_predict":20000}`, "stop", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewServer(Options{Preset: Fast(), NaturalLength: 40})
			defer s.Close()
			// A prompt whose natural length is a few tokens.
			prompt := ""
			for i := 0; prompt == ""; i++ {
				p := fmt.Sprintf("hi %d", i)
				if naturalLength(templateIDs([]promptsize.Message{{Role: "user", Content: p}}), 42, 40) >= 8 {
					prompt = p
				}
			}
			resp := postOllama(t, s, `{"model":"`+s.Model()+`:latest","messages":[{"role":"user","content":"`+prompt+`"}],"options":`+tc.options+`}`)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
				t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			sc := bufio.NewScanner(resp.Body)
			lines := 0
			var final map[string]any
			for sc.Scan() {
				var m map[string]any
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					t.Fatalf("line %q: %v", sc.Text(), err)
				}
				if _, err := time.Parse(time.RFC3339Nano, m["created_at"].(string)); err != nil {
					t.Errorf("created_at: %v", err)
				}
				if m["done"] == true {
					final = m
					continue
				}
				lines++
				if _, ok := m["eval_count"]; ok || m["done_reason"] != nil {
					t.Errorf("content line %q carries counts or done_reason", sc.Text())
				}
				if msg := m["message"].(map[string]any); msg["role"] != "assistant" || msg["content"] == "" {
					t.Errorf("content line %q", sc.Text())
				}
			}
			if final == nil {
				t.Fatal("no final object")
			}
			if final["done_reason"] != tc.reason {
				t.Errorf("done_reason %v, want %s", final["done_reason"], tc.reason)
			}
			for _, k := range []string{"total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"} {
				if v, ok := final[k].(float64); !ok || v <= 0 {
					t.Errorf("%s = %v, want > 0", k, final[k])
				}
			}
			if n := int(final["eval_count"].(float64)); n != lines+tc.eos {
				t.Errorf("eval_count %d over %d lines, want %d more", n, lines, tc.eos)
			}
			if p, e, tot := final["prompt_eval_duration"].(float64), final["eval_duration"].(float64), final["total_duration"].(float64); p+e > tot {
				t.Errorf("prompt_eval %v + eval %v > total %v", p, e, tot)
			}
		})
	}
}

// TestOllamaErrors: Ollama's error bodies and statuses, its answer to a
// request without messages, and the version and tags routes.
func TestOllamaErrors(t *testing.T) {
	s := NewServer(Options{Preset: Fast()})
	defer s.Close()
	for _, tc := range []struct {
		body string
		code int
		want string
	}{
		{`{"model":"nope","messages":[{"role":"user","content":"x"}]}`, 404, `{"error":"model \"nope\" not found, try pulling it first"}`},
		{`{"messages":[]}`, 400, `{"error":"model is required"}`},
		{``, 400, `{"error":"missing request body"}`},
		{`{"model":"` + s.Model() + `","messages":[]}`, 200, `"done_reason":"load","done":true}`},
		{`{"model":"` + s.Model() + `","stream":false,"messages":[{"role":"user","content":"x"}],"options":{"num_predict":"many"}}`, 500, `{"error":"option \"num_predict\" must be of type integer"}`},
	} {
		resp := postOllama(t, s, tc.body)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.code || !strings.HasSuffix(string(b), tc.want) || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("%s: %d %q (%s), want %d ending %s", tc.body, resp.StatusCode, b, resp.Header.Get("Content-Type"), tc.code, tc.want)
		}
	}
	for path, want := range map[string]string{
		"/api/version": `{"version":"0.6.5"}`,
		"/api/tags":    `{"models":[{"name":"` + s.Model() + `:latest","model":"` + s.Model() + `:latest","modified_at":"`,
	} {
		resp, err := testkit.Client.Get(s.OllamaURL() + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.HasPrefix(string(b), want) {
			t.Errorf("GET %s: %s, want it to start %s", path, b, want)
		}
	}
}

// TestOllamaPromptEvalIncludesTheWait: prompt_eval_duration starts when
// the request reaches a loaded instance and ends at its first token, so a
// request that waited for a batch slot has the wait in it, as Ollama's
// runner starts its clock before waiting for a parallel slot.
func TestOllamaPromptEvalIncludesTheWait(t *testing.T) {
	s := NewServer(Options{Preset: Fast(), MaxRunning: 1})
	defer s.Close()
	tr := traced(s)
	const n = 4
	got := make(chan int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := testkit.Client.Post(s.OllamaURL()+"/api/chat", "application/json", strings.NewReader(fmt.Sprintf(
				`{"model":%q,"stream":false,"messages":[{"role":"user","content":"request %d"}],"options":{"num_predict":8}}`, s.Model(), i)))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var v struct {
				PromptEvalDuration int64 `json:"prompt_eval_duration"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
				t.Error(err)
				return
			}
			got <- v.PromptEvalDuration
		})
	}
	testkit.WaitWithin(t, &wg, testkit.Patience)
	close(got)
	var server, want []int64
	for d := range got {
		server = append(server, d)
	}
	waited := 0
	for _, r := range tr.take() {
		want = append(want, int64(r.f.first-r.f.arrival))
		if r.f.admitted > r.f.arrival {
			waited++
		}
	}
	slices.Sort(server)
	slices.Sort(want)
	if !slices.Equal(server, want) {
		t.Errorf("prompt_eval_duration %v; want first token − arrival %v", server, want)
	}
	if waited == 0 {
		t.Error("no request waited for the one batch slot: the test shows nothing")
	}
}
