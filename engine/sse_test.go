package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
)

// chunkReader returns its chunks one per Read call, then err (io.EOF when
// nil).
type chunkReader struct {
	chunks []string
	err    error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		return 0, io.EOF
	}
	n := copy(p, r.chunks[0])
	if n < len(r.chunks[0]) {
		r.chunks[0] = r.chunks[0][n:]
	} else {
		r.chunks = r.chunks[1:]
	}
	return n, nil
}

// tickClock returns instants 1 ns, 2 ns, ... after base, one per call, so
// an event's instant tells which Read delivered it.
func tickClock() func() time.Time {
	var n int64
	return func() time.Time {
		n++
		return time.Unix(0, n)
	}
}

// ev is an Event in a form cmp can compare: Read is the number of the
// Read call whose instant the event carries.
type ev struct {
	Type engine.EventType
	Name string
	Data string
	Read int64
}

func collect(t *testing.T, sr *engine.SSEReader) []ev {
	t.Helper()
	var got []ev
	for sr.Next() {
		e := sr.Event()
		got = append(got, ev{e.Type, string(e.Name), string(e.Data), e.At.UnixNano()})
	}
	return got
}

const exoFinal = `data: {"id":"3f7e","object":"chat.completion","choices":[{"index":0,"delta":{"role":"assistant","content":" a"},"finish_reason":"length"}],"usage":{"prompt_tokens":4096,"completion_tokens":128,"total_tokens":4224}}` + "\n\n" +
	`: generation_stats {"prompt_tps":2315.4,"generation_tps":187.2,"prompt_tokens":4096,"generation_tokens":128,"peak_memory_usage":{"in_bytes":2415919104},"prefix_cache_hit":"none"}` + "\n\n" +
	"data: [DONE]\n\n"

func TestSSEReader(t *testing.T) {
	exoChunk := `{"id":"3f7e","object":"chat.completion","choices":[{"index":0,"delta":{"role":"assistant","content":" a"},"finish_reason":"length"}],"usage":{"prompt_tokens":4096,"completion_tokens":128,"total_tokens":4224}}`
	exoStats := `generation_stats {"prompt_tps":2315.4,"generation_tps":187.2,"prompt_tokens":4096,"generation_tokens":128,"peak_memory_usage":{"in_bytes":2415919104},"prefix_cache_hit":"none"}`
	tests := []struct {
		name   string
		chunks []string
		want   []ev
	}{{
		name:   "exo final segment in one read",
		chunks: []string{exoFinal},
		want: []ev{
			{engine.EventData, "", exoChunk, 1},
			{engine.EventComment, "", exoStats, 1},
			{engine.EventDone, "", "[DONE]", 1},
		},
	}, {
		name: "exo stream, one read per line",
		chunks: []string{
			": keep-alive\n\n",
			`: prefill_progress {"PrefillProgressChunk":{"model":"m","processed_tokens":4096,"total_tokens":8191}}` + "\n\n",
			"data: {\"a\":1}\n\n",
			"data: {\"a\":2}\n\n",
			"data: [DONE]\n\n",
		},
		want: []ev{
			{engine.EventComment, "", "keep-alive", 1},
			{engine.EventComment, "", `prefill_progress {"PrefillProgressChunk":{"model":"m","processed_tokens":4096,"total_tokens":8191}}`, 2},
			{engine.EventData, "", `{"a":1}`, 3},
			{engine.EventData, "", `{"a":2}`, 4},
			{engine.EventDone, "", "[DONE]", 5},
		},
	}, {
		name:   "instant is the read that completes the data line, not the blank line",
		chunks: []string{"data: {\"a\"", ":1}\n", "\n", "data: [DONE]\n", "\n"},
		want: []ev{
			{engine.EventData, "", `{"a":1}`, 2},
			{engine.EventDone, "", "[DONE]", 4},
		},
	}, {
		name:   "multi-line data joined with LF; no space after colon; space kept beyond the first",
		chunks: []string{"data:first\ndata:  second\ndata\ndata: \n\ndata: [DONE]\n\n"},
		want: []ev{
			{engine.EventData, "", "first\n second\n\n", 1},
			{engine.EventDone, "", "[DONE]", 1},
		},
	}, {
		name:   "CRLF line ends",
		chunks: []string{"data: x\r\n\r\n: c\r\ndata: [DONE]\r\n\r\n"},
		want: []ev{
			{engine.EventData, "", "x", 1},
			{engine.EventComment, "", "c", 1},
			{engine.EventDone, "", "[DONE]", 1},
		},
	}, {
		name:   "lone CR line ends",
		chunks: []string{"data: x\r\rdata: y\rdata: z\r\rdata: [DONE]\r\r"},
		want: []ev{
			{engine.EventData, "", "x", 1},
			{engine.EventData, "", "y\nz", 1},
			{engine.EventDone, "", "[DONE]", 1},
		},
	}, {
		name:   "CRLF split between reads is one line end",
		chunks: []string{"data: x\r", "\n\r", "\ndata: [DONE]\r", "\n\r", "\n"},
		want: []ev{
			{engine.EventData, "", "x", 1},
			{engine.EventDone, "", "[DONE]", 3},
		},
	}, {
		name:   "byte order mark skipped, even split",
		chunks: []string{"\xEF\xBB", "\xBFdata: x\n\ndata: [DONE]\n\n"},
		want: []ev{
			{engine.EventData, "", "x", 2},
			{engine.EventDone, "", "[DONE]", 2},
		},
	}, {
		name:   "named events, id and retry ignored, unknown fields ignored",
		chunks: []string{"id: 7\nretry: 10\nevent: delta\nfoo: bar\ndata: x\n\ndata: y\n\ndata: [DONE]\n\n"},
		want: []ev{
			{engine.EventData, "delta", "x", 1},
			{engine.EventData, "", "y", 1},
			{engine.EventDone, "", "[DONE]", 1},
		},
	}, {
		name:   "blank lines without data dispatch nothing",
		chunks: []string{"\n\n\nevent: ping\n\nid: 3\n\ndata: [DONE]\n\n"},
		want:   []ev{{engine.EventDone, "", "[DONE]", 1}},
	}, {
		name:   "comment between data lines comes first",
		chunks: []string{"data: a\n: mid\ndata: b\n\ndata: [DONE]\n\n"},
		want: []ev{
			{engine.EventComment, "", "mid", 1},
			{engine.EventData, "", "a\nb", 1},
			{engine.EventDone, "", "[DONE]", 1},
		},
	}, {
		name: "error events",
		chunks: []string{
			`data: {"error":{"message":"boom","type":"InternalServerError","code":500}}` + "\n\n" +
				`data: {"object":"error","message":"bad","type":"BadRequestError","code":400}` + "\n\n" +
				"event: error\ndata: plain text\n\n" +
				"event: error\n\n" +
				`data: {"error": null, "id": "x"}` + "\n\n" +
				`data: {"id": "x", "error": {"message": "not first"}}` + "\n\n" +
				"data: [DONE]\n\n",
		},
		want: []ev{
			{engine.EventError, "", `{"error":{"message":"boom","type":"InternalServerError","code":500}}`, 1},
			{engine.EventError, "", `{"object":"error","message":"bad","type":"BadRequestError","code":400}`, 1},
			{engine.EventError, "error", "plain text", 1},
			{engine.EventError, "error", "", 1},
			{engine.EventData, "", `{"error": null, "id": "x"}`, 1},
			{engine.EventData, "", `{"id": "x", "error": {"message": "not first"}}`, 1},
			{engine.EventDone, "", "[DONE]", 1},
		},
	}, {
		name:   "final [DONE] without its blank line",
		chunks: []string{"data: x\n\ndata: [DONE]"},
		want: []ev{
			{engine.EventData, "", "x", 1},
			{engine.EventDone, "", "[DONE]", 1},
		},
	}, {
		name:   "nothing read after [DONE]",
		chunks: []string{"data: [DONE]\n\n", "data: late\n\n"},
		want:   []ev{{engine.EventDone, "", "[DONE]", 1}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &chunkReader{chunks: append([]string(nil), tc.chunks...)}
			sr := engine.NewSSEReader(r, &engine.SSEOptions{Now: tickClock()})
			got := collect(t, sr)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events mismatch (-want +got):\n%s", diff)
			}
			if err := sr.Err(); err != nil {
				t.Errorf("Err() = %v, want nil", err)
			}
			if sr.Next() {
				t.Error("Next() = true after the end")
			}
		})
	}
}

func TestSSEReaderEnds(t *testing.T) {
	reset := errors.New("read tcp: connection reset by peer")
	tests := []struct {
		name     string
		chunks   []string
		readErr  error
		opts     engine.SSEOptions
		want     []ev
		wantKind engine.Kind
		wantIs   error
	}{
		{name: "clean end without [DONE]", chunks: []string{"data: x\n\n"},
			want: []ev{{engine.EventData, "", "x", 1}}, wantKind: engine.KindTruncated, wantIs: engine.ErrNoDone},
		{name: "clean end without [DONE], DoneOptional", chunks: []string{"data: x\n\n"}, opts: engine.SSEOptions{DoneOptional: true},
			want: []ev{{engine.EventData, "", "x", 1}}},
		{name: "empty input", wantKind: engine.KindTruncated, wantIs: engine.ErrNoDone},
		{name: "cut inside an event", chunks: []string{"data: x\n\ndata: {\"id\":"},
			want: []ev{{engine.EventData, "", "x", 1}}, wantKind: engine.KindTruncated, wantIs: engine.ErrNoDone},
		{name: "cut inside an event, DoneOptional", chunks: []string{"data: x\n"}, opts: engine.SSEOptions{DoneOptional: true},
			wantKind: engine.KindTruncated, wantIs: engine.ErrNoDone},
		{name: "cut after a complete line, before its blank line", chunks: []string{"data: x\n"},
			wantKind: engine.KindTruncated, wantIs: engine.ErrNoDone},
		{name: "connection reset mid-stream", chunks: []string{"data: x\n\ndata: y"}, readErr: reset,
			want: []ev{{engine.EventData, "", "x", 1}}, wantKind: engine.KindTruncated, wantIs: reset},
		{name: "unexpected EOF", chunks: []string{"data: x\n\n"}, readErr: io.ErrUnexpectedEOF,
			want: []ev{{engine.EventData, "", "x", 1}}, wantKind: engine.KindTruncated, wantIs: io.ErrUnexpectedEOF},
		{name: "body read cancelled", chunks: []string{": keep-alive\n"}, readErr: fmt.Errorf("read: %w", context.Canceled),
			want: []ev{{engine.EventComment, "", "keep-alive", 1}}, wantKind: engine.KindCanceled, wantIs: context.Canceled},
		{name: "body read deadline", readErr: context.DeadlineExceeded, wantKind: engine.KindTimeout, wantIs: context.DeadlineExceeded},
		{name: "line over the bound", chunks: []string{"data: x\n\n", "data: " + strings.Repeat("y", 20) + "\n\n"}, opts: engine.SSEOptions{MaxLineBytes: 16},
			want: []ev{{engine.EventData, "", "x", 1}}, wantKind: engine.KindMalformed, wantIs: engine.ErrLineTooLong},
		{name: "line at the bound is fine", chunks: []string{"data: " + strings.Repeat("y", 10) + "\r\n\r\ndata: [DONE]\r\n\r\n"}, opts: engine.SSEOptions{MaxLineBytes: 16},
			// The buffer holds at most MaxLineBytes+2 bytes, so the second
			// line needs a second read.
			want: []ev{{engine.EventData, "", strings.Repeat("y", 10), 1}, {engine.EventDone, "", "[DONE]", 2}}},
		{name: "event data over the bound", chunks: []string{"data: 0123456\ndata: 0123456\ndata: 0123456\n\n"}, opts: engine.SSEOptions{MaxLineBytes: 16},
			wantKind: engine.KindMalformed, wantIs: engine.ErrLineTooLong},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Now = tickClock()
			sr := engine.NewSSEReader(&chunkReader{chunks: tc.chunks, err: tc.readErr}, &opts)
			got := collect(t, sr)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events mismatch (-want +got):\n%s", diff)
			}
			err := sr.Err()
			if k := engine.KindOf(err); k != tc.wantKind {
				t.Errorf("KindOf(Err()) = %q, want %q (err: %v)", k, tc.wantKind, err)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("Err() = %v, want it to wrap %v", err, tc.wantIs)
			}
			var e *engine.Error
			if err != nil && !errors.As(err, &e) {
				t.Errorf("Err() is %T, want *engine.Error", err)
			}
		})
	}
}

// endless yields the same byte forever.
type endless byte

func (b endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

func TestSSEReaderEndlessLineIsBounded(t *testing.T) {
	for _, c := range []byte{'a', '\r'} {
		sr := engine.NewSSEReader(io.MultiReader(strings.NewReader("data: "), endless('a')), &engine.SSEOptions{MaxLineBytes: 1000})
		if c == '\r' {
			// Endless lone CRs are endless blank lines: the reader must keep
			// going without growing, so stop it after a bounded input.
			sr = engine.NewSSEReader(io.LimitReader(endless('\r'), 1<<16), &engine.SSEOptions{MaxLineBytes: 1000})
		}
		for sr.Next() {
		}
		want := engine.KindMalformed
		if c == '\r' {
			want = engine.KindTruncated
		}
		if k := engine.KindOf(sr.Err()); k != want {
			t.Errorf("endless %q: KindOf(Err()) = %q, want %q (%v)", c, k, want, sr.Err())
		}
	}
}

// zeroReader returns (0, nil) forever.
type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestSSEReaderNoProgress(t *testing.T) {
	sr := engine.NewSSEReader(zeroReader{}, nil)
	if sr.Next() {
		t.Fatal("Next() = true on a reader that returns nothing")
	}
	if !errors.Is(sr.Err(), io.ErrNoProgress) {
		t.Errorf("Err() = %v, want io.ErrNoProgress", sr.Err())
	}
}

func TestSSEReaderReset(t *testing.T) {
	sr := engine.NewSSEReader(strings.NewReader("data: a\n\ndata: [DONE]\n\n"), &engine.SSEOptions{Now: tickClock()})
	first := collect(t, sr)
	sr.Reset(strings.NewReader("data: b\n"))
	if sr.Next() || engine.KindOf(sr.Err()) != engine.KindTruncated {
		t.Fatalf("second stream: Next true or Err %v, want truncated", sr.Err())
	}
	sr.Reset(strings.NewReader(": c\n\ndata: [DONE]\n\n"))
	third := collect(t, sr)
	if sr.Err() != nil {
		t.Fatal(sr.Err())
	}
	want := []ev{{engine.EventData, "", "a", 1}, {engine.EventDone, "", "[DONE]", 1}}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("first stream (-want +got):\n%s", diff)
	}
	// The clock is kept across Reset and keeps ticking: the second stream's
	// one read was the second tick.
	want = []ev{{engine.EventComment, "", "c", 3}, {engine.EventDone, "", "[DONE]", 3}}
	if diff := cmp.Diff(want, third); diff != "" {
		t.Errorf("third stream (-want +got):\n%s", diff)
	}
}

func TestEventComment(t *testing.T) {
	for _, tc := range []struct{ data, name, payload string }{
		{"generation_stats {\"a\":1}", "generation_stats", `{"a":1}`},
		{"keep-alive", "keep-alive", ""},
		{"", "", ""},
	} {
		name, payload := engine.Event{Type: engine.EventComment, Data: []byte(tc.data)}.Comment()
		if string(name) != tc.name || string(payload) != tc.payload {
			t.Errorf("Comment(%q) = %q, %q; want %q, %q", tc.data, name, payload, tc.name, tc.payload)
		}
	}
}

func TestEventServerError(t *testing.T) {
	for _, tc := range []struct {
		data string
		want engine.StreamError
	}{
		{`{"error":{"message":"boom","type":"InternalServerError","code":500}}`, engine.StreamError{Message: "boom", Type: "InternalServerError", Code: 500}},
		{`{"object":"error","message":"bad","type":"BadRequestError","code":400}`, engine.StreamError{Message: "bad", Type: "BadRequestError", Code: 400}},
		{`{"error":{"message":"m","code":"429"}}`, engine.StreamError{Message: "m", Code: 429}},
		{"plain text", engine.StreamError{Message: "plain text"}},
	} {
		got := engine.Event{Type: engine.EventError, Data: []byte(tc.data)}.ServerError()
		if diff := cmp.Diff(tc.want, *got); diff != "" {
			t.Errorf("ServerError(%s) mismatch (-want +got):\n%s", tc.data, diff)
		}
	}
	e := &engine.StreamError{Message: "boom", Type: "InternalServerError", Code: 500}
	if got, want := e.Error(), "server reported an error in the stream (code 500) InternalServerError: boom"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestEventTypeString(t *testing.T) {
	got := []string{engine.EventData.String(), engine.EventComment.String(), engine.EventDone.String(), engine.EventError.String(), engine.EventType(0).String()}
	want := []string{"data", "comment", "done", "error", "EventType(0)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("String mismatch (-want +got):\n%s", diff)
	}
}

func TestSSEReaderZeroValue(t *testing.T) {
	var sr engine.SSEReader
	if sr.Next() || sr.Err() == nil {
		t.Fatalf("zero SSEReader: Next true or Err nil (%v), want an error saying it has no input", sr.Err())
	}
	sr.Reset(strings.NewReader("data: x\n\ndata: [DONE]\n\n"))
	var got []string
	for sr.Next() {
		got = append(got, sr.Event().Type.String()+" "+string(sr.Event().Data))
	}
	if diff := cmp.Diff([]string{"data x", "done [DONE]"}, got); diff != "" || sr.Err() != nil {
		t.Errorf("zero SSEReader after Reset (-want +got):\n%s\nerr: %v", diff, sr.Err())
	}
}
