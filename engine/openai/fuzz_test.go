package openai

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/adaptertest"
)

// seedEvents returns every recorded stream and the data of every event in
// them, for the fuzz corpora.
func seedEvents(f *testing.F) (streams, datas [][]byte) {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.sse"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no recorded streams: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		streams = append(streams, b)
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				datas = append(datas, []byte(d))
			}
		}
	}
	return streams, datas
}

// FuzzParseChunk feeds arbitrary event data to the chunk parser, read as a
// chat chunk and as a text_completion chunk. It must never panic; what it
// accepts must parse the same way twice, the fast decoder must agree with
// it, and a chunk it accepts must contribute exactly its text to a stream.
func FuzzParseChunk(f *testing.F) {
	_, datas := seedEvents(f)
	for _, d := range datas {
		f.Add(d)
	}
	for _, r := range replayEvents(f) {
		f.Add(r)
	}
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":null}}],"usage":null}`))
	f.Add([]byte(`{"choices":[{"index":1,"delta":{"content":"other choice"}}]}`))
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":["not","a","string"]}}]}`))
	f.Add([]byte(`{"choices":[],"error":null}`))
	f.Add([]byte(`{"id":"x","error":"overloaded"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null}]}`))
	f.Add([]byte(`{"choices":[{"index":0,"text":"a","delta":{"content":"b"}}]}`))
	f.Add([]byte(`{"choices":[{"index":0,"text":null}],"usage":{"prompt_tokens":2,"prompt_tokens_details":{"cached_tokens":3}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, completion := range []bool{false, true} {
			p, err := parseChunk(data, completion)
			if err != nil {
				continue
			}
			q, err := parseChunk(data, completion)
			if err != nil || p.Text != q.Text || p.FinishReason != q.FinishReason || (p.Usage == nil) != (q.Usage == nil) {
				t.Fatalf("parsing %q twice gave %+v then %+v, %v", data, p, q, err)
			}
			var (
				dec chunkDecoder
				v   chunkView
			)
			if err := dec.decode(data, &v, completion); err != nil {
				t.Fatalf("completion=%v: parseChunk accepts %q, the decoder refuses it: %v", completion, data, err)
			}
			if string(v.reasoning) != p.Reasoning || string(v.content) != p.Content || string(v.tool) != p.Tool ||
				string(v.finish) != p.FinishReason || v.choice != p.Choice || (v.usage == nil) != (p.Usage == nil) {
				t.Fatalf("completion=%v: %q: decoder reasoning %q content %q tool %q finish %q choice %v, parser %+v",
					completion, data, v.reasoning, v.content, v.tool, v.finish, v.choice, p)
			}
			if v.usage != nil {
				a, aok := v.usage.Cached()
				b, bok := p.Usage.Cached()
				if a != b || aok != bok || v.usage.PromptTokens != p.Usage.PromptTokens || v.usage.CompletionTokens != p.Usage.CompletionTokens ||
					(v.usage.ReasoningTokens == nil) != (p.Usage.ReasoningTokens == nil) ||
					(v.usage.ReasoningTokens != nil && *v.usage.ReasoningTokens != *p.Usage.ReasoningTokens) {
					t.Fatalf("completion=%v: %q: decoder usage %+v, parser %+v", completion, data, *v.usage, *p.Usage)
				}
			}
			if bytes.ContainsAny(data, "\r\n") {
				continue // not a single data line
			}
			c, err := New("http://127.0.0.1:9", &Options{DoneOptional: true})
			if err != nil {
				t.Fatal(err)
			}
			var res engine.Result
			stream := "data: " + string(data) + "\n\ndata: [DONE]\n\n"
			req := engine.Request{}
			if completion {
				req.Prompt = &engine.Prompt{Text: "p"}
			}
			if err := c.readStream(context.Background(), strings.NewReader(stream), nil, req, &res); err != nil {
				switch engine.KindOf(err) {
				case engine.KindStreamError, engine.KindImplausibleUsage:
					continue // an error object, or counts the reader bounds
				}
				t.Fatalf("completion=%v: stream of an accepted chunk %q failed: %v", completion, data, err)
			}
			// A chunk of each kind with text, and one more when a
			// reasoning block left in the content is split from the
			// answer after it.
			parts := 0
			for _, s := range []string{p.Reasoning, p.Content, p.Tool} {
				if s != "" {
					parts++
				}
			}
			if n := len(res.Trace.Chunks); res.Text != p.Text || n < parts || n > parts+1 {
				t.Fatalf("completion=%v: chunk %q: stream text %q with %d chunks, parser text %q in %d parts", completion, data, res.Text, n, p.Text, parts)
			}
		}
	})
}

// replayEvents returns the data of every event of the replay corpus.
func replayEvents(f *testing.F) [][]byte {
	f.Helper()
	var out [][]byte
	for _, r := range loadReplays(f) {
		for _, w := range r.writes {
			for _, line := range strings.Split(string(w.data), "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok {
					out = append(out, []byte(d))
				}
			}
		}
	}
	return out
}

// FuzzReadStream feeds arbitrary bytes to the stream reader, as the
// answer to a chat request or to a text completion. It must never panic,
// must fail only with the kinds a stream can fail with, and must keep the
// trace's invariants: chunks in order, non-negative counts, one chunk per
// piece of text.
func FuzzReadStream(f *testing.F) {
	streams, _ := seedEvents(f)
	for _, r := range loadReplays(f) {
		var b []byte
		for _, w := range r.writes {
			b = append(b, w.data...)
		}
		streams = append(streams, b)
	}
	for _, s := range streams {
		f.Add(s, false, false)
		f.Add(s, false, true)
		f.Add(s[:len(s)/2], true, false)
	}
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}],\"usage\":{\"completion_tokens\":5}}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}],\"usage\":{\"completion_tokens\":2}}\n\ndata: [DONE]\n\n"), false, false)
	f.Add([]byte("event: error\ndata: boom\n\n"), false, false)
	f.Add([]byte("data: {\"choices\":[],\"usage\":{\"completion_tokens\":2},\"timings\":{\"prompt_n\":3,\"prompt_ms\":1.5,\"predicted_n\":2,\"predicted_ms\":-1}}\n\ndata: [DONE]\n\n"), false, false)
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\nerror: {\"code\":400,\"message\":\"full\"}\n\n"), true, false)
	f.Add([]byte("data: {\"error\":{\"message\":\"oom\",\"http_status_code\":422}}\n\ndata: [DONE]\n\n"), false, false)
	f.Add([]byte(": keep-alive\r\n\r\ndata: [DONE]\r\n\r\n"), true, false)
	f.Add([]byte("data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":null}],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1}}\n\ndata: {\"choices\":[{\"index\":0,\"text\":\" ab\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":5}}}\n\ndata: [DONE]\n\n"), false, true)
	f.Fuzz(func(t *testing.T, body []byte, doneOptional, completion bool) {
		clk := adaptertest.NewStepClock()
		c, err := New("http://127.0.0.1:9", &Options{Now: clk.Now, DoneOptional: doneOptional,
			CountText: func(_ context.Context, s string) (int, error) { return len(strings.Fields(s)), nil }})
		if err != nil {
			t.Fatal(err)
		}
		var res engine.Result
		req := engine.Request{MaxTokens: 4, IgnoreEOS: true}
		if completion {
			req.Prompt = &engine.Prompt{Tokens: []int{1, 2, 3, 4}}
		}
		err = c.readStream(context.Background(), adaptertest.NewFeeder(body, "\n\n"), nil, req, &res)
		switch k := engine.KindOf(err); k {
		case engine.KindNone, engine.KindTruncated, engine.KindMalformed, engine.KindStreamError, engine.KindImplausibleUsage:
		default:
			t.Fatalf("error of kind %q: %v", k, err)
		}
		if res.Trace.End.IsZero() {
			t.Fatal("End not set")
		}
		for i, ch := range res.Trace.Chunks {
			if ch.Tokens < 0 {
				t.Fatalf("chunk %d has %d tokens", i, ch.Tokens)
			}
			if i > 0 && ch.At.Before(res.Trace.Chunks[i-1].At) {
				t.Fatalf("chunk %d at %v before chunk %d at %v", i, ch.At, i-1, res.Trace.Chunks[i-1].At)
			}
			if ch.At.After(res.Trace.End) {
				t.Fatalf("chunk %d after End", i)
			}
		}
		if len(res.Trace.Chunks) > 0 && res.Text == "" {
			t.Fatalf("%d chunks but no text", len(res.Trace.Chunks))
		}
		if u := res.Usage; u != nil {
			if n, ok := u.Cached(); ok && (n < 0 || n > u.PromptTokens) {
				t.Fatalf("cached_tokens %d kept with prompt_tokens %d", n, u.PromptTokens)
			}
			if completion && u.PromptTokens > engine.MaxPlausiblePromptTokens(req) {
				t.Fatalf("prompt_tokens %d kept for a prompt of 4 token ids", u.PromptTokens)
			}
		}
		// With the server's count, every chunk carried a token and the
		// counts add up to it, or a warning says they cannot (a failed
		// request carries no note on its counts).
		if res.Usage != nil && len(res.Trace.Chunks) > 0 {
			for i, ch := range res.Trace.Chunks {
				if ch.Tokens < 1 {
					t.Fatalf("chunk %d has %d tokens with a final usage of %d", i, ch.Tokens, res.Usage.CompletionTokens)
				}
			}
			if err != nil {
				return
			}
			if n := res.Trace.Tokens() + res.Trace.HiddenTokens; n != res.Usage.CompletionTokens && !errors.Is(errors.Join(res.Warnings...), ErrTokenMismatch) {
				t.Fatalf("the chunks carry %d tokens and %d are hidden, usage says %d, and no warning says so: %v",
					res.Trace.Tokens(), res.Trace.HiddenTokens, res.Usage.CompletionTokens, res.Warnings)
			}
			if h := res.Trace.HiddenTokens; h > 0 && !errors.Is(errors.Join(res.Warnings...), ErrHiddenTokens) {
				t.Fatalf("%d hidden tokens and no warning says so: %v", h, res.Warnings)
			}
		}
	})
}
