package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/rxstamp"
	"github.com/inferbench/inferbench/engine/internal/rxstamp/rxtest"
)

// TestChunksStampedOnArrival: every read of the stream waits 30 ms before
// it reads, and the server writes each chunk only after the previous read
// returned. With the real clock, each chunk's instant is the kernel's
// receive instant of its bytes, inside the server's flush; a client that
// stamped its reads would be 30 ms late on every chunk.
func TestChunksStampedOnArrival(t *testing.T) {
	if !rxstamp.Supported {
		t.Skip("this platform gives no receive instants")
	}
	rxtest.Warm(t)
	for _, tc := range []struct {
		name string
		tls  bool
	}{{"http", false}, {"https", true}} {
		t.Run(tc.name, func(t *testing.T) { testStampedOnArrival(t, tc.tls) })
	}
}

// testStampedOnArrival runs TestChunksStampedOnArrival over plain HTTP
// or, with tls, over HTTPS, where the TLS layer reads the stamped
// connection and rxstamp.Of finds it under the *tls.Conn.
func testStampedOnArrival(t *testing.T, tls bool) {
	const delay = 30 * time.Millisecond
	var events [][]byte
	for i := range 4 {
		events = append(events, fmt.Appendf(nil, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t%d \"},\"finish_reason\":null}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", i, i+1, i+4))
	}
	events = append(events, []byte("data: [DONE]\n\n"))
	ls := rxtest.New(http.Header{"Content-Type": {"text/event-stream"}}, delay, events...)
	srv := httptest.NewUnstartedServer(ls)
	var opts *Options
	if tls {
		srv.StartTLS()
		opts = &Options{InsecureSkipVerify: true}
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL, opts)
	tr := c.conn.Bench.Transport.(*http.Transport)
	tr.DialContext = ls.Dial(tr.DialContext)

	res, err := c.Complete(context.Background(), engine.Request{Model: "m", MaxTokens: 4, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Trace.Chunks) != 4 {
		t.Fatalf("%d chunks read, want 4", len(res.Trace.Chunks))
	}
	ls.CheckArrivals(t, res.Trace.Chunks)
	for i, ch := range res.Trace.Chunks {
		at := ch.At.UnixNano()
		if i > 0 {
			// The monotonic difference agrees with the wall-clock one.
			mono, wall := ch.At.Sub(res.Trace.Chunks[i-1].At), time.Duration(at-res.Trace.Chunks[i-1].At.UnixNano())
			if d := mono - wall; d < -time.Millisecond || d > time.Millisecond {
				t.Errorf("chunk %d: monotonic gap %v, wall-clock gap %v", i, mono, wall)
			}
		}
	}
	if ttft := res.Trace.Chunks[0].At.Sub(res.Trace.Start); ttft <= 0 {
		t.Errorf("TTFT %v, want positive", ttft)
	}
}

// TestInjectedClockStampsReads: a client with its own clock stamps chunks
// from that clock, never from the kernel's.
func TestInjectedClockStampsReads(t *testing.T) {
	ls := rxtest.New(http.Header{"Content-Type": {"text/event-stream"}}, 0,
		[]byte("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\n\n"),
		[]byte("data: [DONE]\n\n"))
	srv := httptest.NewServer(ls)
	t.Cleanup(srv.Close)
	fixed := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newClient(t, srv.URL, &Options{Now: func() time.Time { return fixed }})
	tr := c.conn.Bench.Transport.(*http.Transport)
	tr.DialContext = ls.Dial(tr.DialContext)
	res, err := c.Complete(context.Background(), engine.Request{Model: "m", MaxTokens: 4, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Trace.Chunks) != 1 || !res.Trace.Chunks[0].At.Equal(fixed) {
		t.Errorf("chunks %+v, want one at the injected clock's %v", res.Trace.Chunks, fixed)
	}
}
