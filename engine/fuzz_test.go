package engine_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
)

// pieceReader returns at most k bytes per Read.
type pieceReader struct {
	b []byte
	k int
}

func (r *pieceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := min(r.k, len(p), len(r.b))
	copy(p, r.b[:n])
	r.b = r.b[n:]
	return n, nil
}

// fuzzEvent is an Event without its instant, plus its instant for the
// ordering checks.
type fuzzEvent struct {
	Type engine.EventType
	Name string
	Data string
}

// readAll reads r to the end and returns its events, their instants and
// the final error.
func readAll(r io.Reader, max int) ([]fuzzEvent, []time.Time, error) {
	sr := engine.NewSSEReader(r, &engine.SSEOptions{MaxLineBytes: max, Now: tickClock()})
	var evs []fuzzEvent
	var ats []time.Time
	for sr.Next() {
		e := sr.Event()
		evs = append(evs, fuzzEvent{e.Type, string(e.Name), string(e.Data)})
		ats = append(ats, e.At)
	}
	return evs, ats, sr.Err()
}

// encode writes events as a well-formed stream.
func encode(evs []fuzzEvent) []byte {
	var b bytes.Buffer
	for _, e := range evs {
		if e.Type == engine.EventComment {
			b.WriteString(": " + e.Data + "\n")
			continue
		}
		if e.Name != "" {
			b.WriteString("event: " + e.Name + "\n")
		}
		if !(e.Name == "error" && e.Data == "") {
			for _, line := range strings.Split(e.Data, "\n") {
				b.WriteString("data: " + line + "\n")
			}
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

func FuzzSSE(f *testing.F) {
	seeds := []string{
		exoFinal,
		": keep-alive\n\n: prefill_progress {\"PrefillProgressChunk\":{\"processed_tokens\":1}}\n\ndata: {\"a\":1}\n\ndata: [DONE]\n\n",
		"data: x\r\n\r\n: c\r\ndata: [DONE]\r\n\r\n",
		"data: x\r\rdata: y\rdata: z\r\rdata: [DONE]\r\r",
		"\xEF\xBB\xBFdata: x\n\ndata: [DONE]\n\n",
		"data:first\ndata:  second\ndata\ndata: \n\n",
		"event: error\ndata: plain\n\nevent: error\n\n",
		`data: {"error":{"message":"boom","code":500}}` + "\n\ndata: [DONE]\n\n",
		`data: {"object":"error","message":"bad"}` + "\n\n",
		"data: x\n\ndata: {\"id\":",
		"data: [DONE]",
		"data: " + strings.Repeat("y", 100) + "\n\n",
		"id: 1\nretry: 5\nevent: e\nfoo\n:\n\n",
		"",
		"\r\n\r\r\n\n",
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint8(i%5+1))
	}
	f.Fuzz(func(t *testing.T, in []byte, k uint8) {
		const max = 64
		whole, _, wholeErr := readAll(bytes.NewReader(in), max)
		pieces, ats, piecesErr := readAll(&pieceReader{b: in, k: int(k%16) + 1}, max)

		// The events and the outcome do not depend on how the bytes were
		// split into reads.
		if diff := cmp.Diff(whole, pieces); diff != "" {
			t.Fatalf("events differ between one read and reads of %d bytes (-whole +pieces):\n%s", k%16+1, diff)
		}
		if engine.KindOf(wholeErr) != engine.KindOf(piecesErr) {
			t.Fatalf("errors differ: whole %v, pieces %v", wholeErr, piecesErr)
		}

		// Invariants of each event and of the end.
		// Instants do not decrease among comments, nor among the other
		// events (a comment between an event's data lines comes out
		// before that event, with a later instant).
		last := map[bool]time.Time{}
		for i, e := range pieces {
			isComment := e.Type == engine.EventComment
			if ats[i].Before(last[isComment]) {
				t.Fatalf("event %d (%v) at %v is before an earlier one at %v", i, e.Type, ats[i], last[isComment])
			}
			last[isComment] = ats[i]
			if strings.ContainsRune(e.Data, '\r') || strings.ContainsAny(e.Name, "\r\n") {
				t.Fatalf("event %d holds a CR or a line end: %+v", i, e)
			}
			if e.Type == engine.EventComment && strings.Contains(e.Data, "\n") {
				t.Fatalf("comment %d holds LF: %q", i, e.Data)
			}
			if e.Type == engine.EventDone && i != len(pieces)-1 {
				t.Fatalf("event %d is [DONE] but %d events follow", i, len(pieces)-1-i)
			}
			if len(e.Data) > max {
				t.Fatalf("event %d has %d bytes of data, over the bound %d", i, len(e.Data), max)
			}
		}
		done := len(pieces) > 0 && pieces[len(pieces)-1].Type == engine.EventDone
		if done != (piecesErr == nil) {
			t.Fatalf("ended at [DONE] = %v but Err = %v", done, piecesErr)
		}
		var e *engine.Error
		if piecesErr != nil && !errors.As(piecesErr, &e) {
			t.Fatalf("Err is %T, want *engine.Error", piecesErr)
		}

		// Round trip: the events, written out well-formed, read back the same.
		again, _, againErr := readAll(bytes.NewReader(encode(pieces)), 1<<20)
		if diff := cmp.Diff(pieces, again); diff != "" {
			t.Fatalf("round trip changed the events (-first +again):\n%s", diff)
		}
		if done != (againErr == nil) {
			t.Fatalf("round trip: ended at [DONE] = %v but Err = %v", done, againErr)
		}
	})
}

func FuzzParseGenerationStats(f *testing.F) {
	for _, s := range []string{
		`{"prompt_tps":2315.4,"generation_tps":187.2,"prompt_tokens":4096,"generation_tokens":128,"peak_memory_usage":{"in_bytes":2415919104},"prefix_cache_hit":"none"}`,
		`{"prompt_tps": 1, "peak_memory_usage": {"inBytes": 7}, "prefix_cache_hit": "exact"}`,
		`{"peak_memory_usage": {"inBytes": 1, "in_bytes": 2}}`,
		`null`, `{}`, `[]`, `{"prompt_tokens": 1e400}`, `{"prefix_cache_hit": 3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := engine.ParseGenerationStats(in)
		if err != nil {
			return
		}
		if s.PrefixCacheHit == "" {
			t.Fatalf("decoded stats have an empty prefix_cache_hit, want %q", engine.PrefixCacheNone)
		}
		b, err := s.MarshalJSON()
		if err != nil {
			return // NaN and ±Inf cannot be encoded; decoding never yields them
		}
		back, err := engine.ParseGenerationStats(b)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
		}
		if diff := cmp.Diff(s, back); diff != "" {
			t.Fatalf("round trip changed the stats (-first +again):\n%s", diff)
		}
	})
}

func FuzzNewStatusError(f *testing.F) {
	for _, s := range []string{
		`{"error": {"message": "No instance found for model m", "type": "Not Found", "param": null, "code": 404}}`,
		`{"error": "x"}`, `{"object":"error","message":"bad","code":"400"}`, `{"detail": [1]}`, `{"message": {"a": 1}}`,
		"plain", "", strings.Repeat("é", 600),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		e := engine.NewStatusError(500, body)
		if kept := strings.TrimSuffix(e.Body, "…"); len(kept) > engine.MaxBodyExcerpt || !bytes.HasPrefix(body, []byte(kept)) {
			t.Fatalf("Body excerpt %q is not a prefix of at most %d bytes", e.Body, engine.MaxBodyExcerpt)
		}
		if !strings.Contains(e.Error(), "500") {
			t.Fatalf("Error() = %q does not name the status", e.Error())
		}
	})
}
