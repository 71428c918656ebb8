package hostile

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
)

// Attacks on the numbers a server reports: token counts that are absurd,
// negative or falling, rates no hardware reaches, and more text than the
// request allowed. Each handler answers any path; route it where the
// client sends completions.

// Usage is one usage block as a hostile server spells it: counts are
// int64, so that 1e18 and negatives go on the wire as plain JSON integers
// a decoder into int accepts.
type Usage struct {
	Prompt, Completion int64
}

// JSON returns u as an OpenAI usage object.
func (u Usage) JSON() string {
	return fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, u.Prompt, u.Completion, u.Prompt+u.Completion)
}

// ChatChunk returns one chat.completion.chunk event payload (what follows
// "data: ") with content as choice 0's delta and, when usage is not "",
// the raw JSON usage object.
func ChatChunk(content, usage string) string {
	c, _ := json.Marshal(content)
	if usage == "" {
		return fmt.Sprintf(`{"id":"hostile","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":%s},"finish_reason":null}]}`, c)
	}
	return fmt.Sprintf(`{"id":"hostile","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":%s},"finish_reason":null}],"usage":%s}`, c, usage)
}

// UsageStream returns a handler that streams one token chunk a usage
// block, in order, then [DONE]. With cumulative counts 1, 2, 3 it is an
// honest stream; UsageStream(Usage{8, 1}, Usage{8, 1e18}) is the jump to
// 1e18 that used to panic a client sizing its inter-token latencies from
// it, Usage{8, 2e7} the one that allocated 20 M entries, Usage{8, 5},
// Usage{8, 3} a count that falls.
func UsageStream(usages ...Usage) http.HandlerFunc {
	events := make([]string, len(usages))
	for i, u := range usages {
		events[i] = ChatChunk("t", u.JSON())
	}
	return SSE(false, events...)
}

// StatsStream returns a handler that streams n token chunks without usage,
// then exo's ": generation_stats <stats>" comment with stats as raw JSON,
// then [DONE].
func StatsStream(n int, stats string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for range n {
			fmt.Fprintf(w, "data: %s\n\n", ChatChunk("t", ""))
		}
		fmt.Fprintf(w, ": generation_stats %s\n\ndata: [DONE]\n\n", stats)
	}
}

// ExoStats returns exo's generation_stats object with the given figures
// (peak memory 1 GiB, no prefix cache hit).
func ExoStats(promptTPS, generationTPS float64, promptTokens, generationTokens int64) string {
	return fmt.Sprintf(`{"prompt_tps":%v,"generation_tps":%v,"prompt_tokens":%d,"generation_tokens":%d,"peak_memory_usage":{"inBytes":1073741824},"prefix_cache_hit":"none"}`,
		promptTPS, generationTPS, promptTokens, generationTokens)
}

// CompletionBody returns a non-streamed chat.completion body with text as
// the message and, when not "", usage and generation_stats as raw JSON
// (exo's bench endpoint sends generation_stats, OpenAI servers usage).
func CompletionBody(text, usage, stats string) string {
	c, _ := json.Marshal(text)
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":"hostile","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"length"}]`, c)
	if usage != "" {
		fmt.Fprintf(&b, `,"usage":%s`, usage)
	}
	if stats != "" {
		fmt.Fprintf(&b, `,"generation_stats":%s`, stats)
	}
	b.WriteString("}")
	return b.String()
}

// A Flood streams text without end: chunk after chunk of ChunkBytes bytes
// of text, no usage, until Total bytes of text are written or the client
// goes away. Written says how much text it sent, so a test can show the
// client stopped reading long before Total. The zero ChunkBytes is 4096.
type Flood struct {
	ChunkBytes int
	Total      int64

	written atomic.Int64
}

// ServeHTTP implements http.Handler.
func (f *Flood) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	size := f.ChunkBytes
	if size <= 0 {
		size = 4096
	}
	frame := []byte("data: " + ChatChunk(strings.Repeat("x", size), "") + "\n\n")
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	for f.written.Load() < f.Total {
		if r.Context().Err() != nil {
			return
		}
		if _, err := w.Write(frame); err != nil {
			return
		}
		f.written.Add(int64(size))
		if fl != nil {
			fl.Flush()
		}
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

// Written returns how many bytes of text the flood has sent.
func (f *Flood) Written() int64 { return f.written.Load() }
