package exo

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/internal/hostile"
)

// hostileRequest is a bench request for 16 tokens with a short prompt: the
// plausible bounds are 32 completion tokens, 4096 + 64 + 8 prompt tokens
// and 32 × 1024 bytes of text.
func hostileRequest(stream bool) engine.Request {
	return engine.Request{Model: llama, Messages: []engine.Message{{Role: "user", Content: "a a a a "}},
		MaxTokens: 16, Stream: stream, IgnoreEOS: true}
}

// completeAgainst sends req to a hostile server answering h, with a
// safety deadline far beyond what an honest answer takes, and returns the
// result, the error and the bytes the process allocated meanwhile (the
// server's allocations included).
func completeAgainst(t *testing.T, h http.Handler, req engine.Request) (engine.Result, uint64, error) {
	t.Helper()
	s := hostile.New(t, h)
	c, err := New(s.URL, fastOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := c.Complete(ctx, req)
	runtime.ReadMemStats(&after)
	return res, after.TotalAlloc - before.TotalAlloc, err
}

// wantImplausible checks that err is of kind implausible_usage and names
// every one of nums.
func wantImplausible(t *testing.T, err error, nums ...string) {
	t.Helper()
	if k := engine.KindOf(err); k != engine.KindImplausibleUsage {
		t.Fatalf("error %v of kind %q, want %q", err, k, engine.KindImplausibleUsage)
	}
	for _, n := range nums {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not name %s", err, n)
		}
	}
}

// maxAlloc bounds what one hostile request may make the process allocate:
// generous (a loopback server, an HTTP client and their buffers), and far
// below what the attacks used to cost (2.26 GB for a 2e7 count, 677 MB for
// 200 MB of text).
const maxAlloc = 64 << 20

// u is a usage block of p prompt and c completion tokens.
func u(p, c int64) hostile.Usage { return hostile.Usage{Prompt: p, Completion: c} }

// TestHostileStreamUsage: a streamed usage count that jumps to 1e18 or
// 2e7, goes negative or falls, or a prompt count past the prompt's bytes,
// ends the request with implausible_usage naming the count and its bound;
// the result keeps what arrived, its trace stays valid and small, and
// nothing is sized from the count.
func TestHostileStreamUsage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		usages []hostile.Usage
		nums   []string
	}{
		{"1e18", []hostile.Usage{u(8, 1), u(8, 2), u(8, 1e18)}, []string{"1000000000000000000", "32"}},
		{"2e7", []hostile.Usage{u(8, 1), u(8, 2e7)}, []string{"20000000", "32"}},
		{"first chunk absurd", []hostile.Usage{u(8, 1e18)}, []string{"1000000000000000000", "32"}},
		{"negative", []hostile.Usage{u(8, 1), u(8, -5)}, []string{"-5"}},
		{"falls", []hostile.Usage{u(8, 1), u(8, 5), u(8, 3)}, []string{"5", "3", "fell"}},
		{"prompt 1e18", []hostile.Usage{u(1e18, 1)}, []string{"1000000000000000000", "4168"}},
		{"negative prompt", []hostile.Usage{u(-7, 1)}, []string{"-7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, alloc, err := completeAgainst(t, hostile.UsageStream(tc.usages...), hostileRequest(true))
			wantImplausible(t, err, tc.nums...)
			last := tc.usages[len(tc.usages)-1]
			if res.Usage == nil || int64(res.Usage.CompletionTokens) != last.Completion || int64(res.Usage.PromptTokens) != last.Prompt {
				t.Errorf("usage %+v, want the last one received, %+v", res.Usage, last)
			}
			if err := res.Trace.Validate(); err != nil {
				t.Errorf("trace: %v", err)
			}
			if n := res.Trace.Tokens(); n > engine.MaxPlausibleCount(16) {
				t.Errorf("trace carries %d tokens", n)
			}
			if alloc > maxAlloc {
				t.Errorf("allocated %d bytes", alloc)
			}
		})
	}
}

// TestHostileStreamStats: exo's generation_stats comment with an absurd
// count or rate makes the streamed request implausible; the stats are kept.
func TestHostileStreamStats(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stats string
		nums  []string
	}{
		{"generation_tokens 2e18", hostile.ExoStats(100, 20, 12, 2e18), []string{"2000000000000000000", "32"}},
		{"generation_tps 6.5e19", hostile.ExoStats(100, 6.5e19, 12, 4), []string{"6.5e+19", "1e+07"}},
		{"negative generation_tps", hostile.ExoStats(100, -3461.8, 12, 4), []string{"-3461.8"}},
		{"prompt_tps 1e12", hostile.ExoStats(1e12, 20, 12, 4), []string{"1e+12", "1e+07"}},
		{"prompt_tokens 1e9", hostile.ExoStats(100, 20, 1e9, 4), []string{"1000000000", "4168"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _, err := completeAgainst(t, hostile.StatsStream(4, tc.stats), hostileRequest(true))
			wantImplausible(t, err, tc.nums...)
			if res.ServerStats == nil || len(res.Trace.Chunks) != 4 {
				t.Errorf("stats %v, %d chunks; want the stats and the 4 chunks received", res.ServerStats, len(res.Trace.Chunks))
			}
		})
	}
}

// TestHostileBody: absurd or negative usage and generation_stats in a
// non-streamed bench body make the request implausible, naming the number
// and its bound; the result keeps them.
func TestHostileBody(t *testing.T) {
	honest := hostile.ExoStats(100, 20, 12, 16)
	for _, tc := range []struct {
		name         string
		usage, stats string
		nums         []string
	}{
		{"generation_tps 6.5e19", "", hostile.ExoStats(100, 6.5e19, 12, 16), []string{"6.5e+19", "1e+07"}},
		{"generation_tps negative", "", hostile.ExoStats(100, -3461.8, 12, 16), []string{"-3461.8"}},
		{"generation_tokens 2e18", "", hostile.ExoStats(100, 20, 12, 2e18), []string{"2000000000000000000", "32"}},
		{"generation_tokens negative", "", hostile.ExoStats(100, 20, 12, -1), []string{"-1"}},
		{"usage completion 2e18", hostile.Usage{Prompt: 12, Completion: 2e18}.JSON(), honest, []string{"2000000000000000000", "32"}},
		{"usage prompt negative", hostile.Usage{Prompt: -12, Completion: 16}.JSON(), honest, []string{"-12"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := hostile.CompletionBody("t t t", tc.usage, tc.stats)
			res, _, err := completeAgainst(t, hostile.JSON(http.StatusOK, body), hostileRequest(false))
			wantImplausible(t, err, tc.nums...)
			if res.ServerStats == nil || res.Text != "t t t" {
				t.Errorf("stats %v, text %q: want what was received", res.ServerStats, res.Text)
			}
		})
	}
}

// TestHostileTextFlood: a stream of text without end for 16 tokens ends
// with implausible_usage as soon as it carried more text than 16 tokens
// could decode to (or more chunks than tokens), long before the flood
// ends; at most MaxKeptText of it is kept and the allocations stay small.
func TestHostileTextFlood(t *testing.T) {
	for _, chunk := range []int{64, 4096, 512 << 10} {
		t.Run(fmt.Sprintf("%dB chunks", chunk), func(t *testing.T) {
			f := &hostile.Flood{ChunkBytes: chunk, Total: 200 << 20}
			res, alloc, err := completeAgainst(t, f, hostileRequest(true))
			wantImplausible(t, err, "32")
			if len(res.Text) > engine.MaxKeptText {
				t.Errorf("kept %d bytes of text", len(res.Text))
			}
			if w := f.Written(); w > 16<<20 {
				t.Errorf("the flood wrote %d bytes before the client stopped", w)
			}
			if alloc > maxAlloc {
				t.Errorf("allocated %d bytes", alloc)
			}
		})
	}
}

// TestKeptTextBounded: a plausible answer longer than MaxKeptText (2000
// tokens of 1000 bytes) succeeds with every token counted from the stream,
// the first MaxKeptText bytes of its text kept and a warning saying so.
func TestKeptTextBounded(t *testing.T) {
	const n = 2000
	events := make([]string, n)
	piece := strings.Repeat("é", 500)
	for i := range events {
		events[i] = hostile.ChatChunk(piece, hostile.Usage{Prompt: 8, Completion: int64(i + 1)}.JSON())
	}
	req := hostileRequest(true)
	req.MaxTokens = n
	res, _, err := completeAgainst(t, hostile.SSE(false, events...), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Trace.Tokens() != n {
		t.Errorf("%d tokens, want %d", res.Trace.Tokens(), n)
	}
	if len(res.Text) != engine.MaxKeptText || !strings.HasPrefix(res.Text, piece) {
		t.Errorf("kept %d bytes of text, want %d from the start", len(res.Text), engine.MaxKeptText)
	}
	var warned bool
	for _, w := range res.Warnings {
		warned = warned || strings.Contains(w.Error(), "2000000 bytes of generated text")
	}
	if !warned {
		t.Errorf("warnings %v, want one saying the text was cut", res.Warnings)
	}
}
