package exo

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/rxstamp"
	"github.com/inferbench/inferbench/engine/internal/rxstamp/rxtest"
)

// TestChunksStampedOnArrival: every read of the stream waits 30 ms before
// it reads, and the server writes each chunk only after the previous read
// returned. With the real clock each chunk's instant is the kernel's
// receive instant of its bytes, inside the server's flush, not 30 ms
// later when the read returned.
func TestChunksStampedOnArrival(t *testing.T) {
	if !rxstamp.Supported {
		t.Skip("this platform gives no receive instants")
	}
	rxtest.Warm(t)
	var events [][]byte
	for i := range 3 {
		events = append(events, fmt.Appendf(nil, "data: {\"id\":\"r\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\" t%d\"}}]}\n\n", i))
	}
	events = append(events, []byte("data: {\"id\":\"r\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\" t3\"},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,\"total_tokens\":7}}\n\n"),
		[]byte("data: [DONE]\n\n"))
	ls := rxtest.New(http.Header{"Content-Type": {"text/event-stream"}}, 30*time.Millisecond, events...)
	c, _ := newTestClient(t, ls, nil)
	tr := c.bench.Transport.(*http.Transport)
	tr.DialContext = ls.Dial(tr.DialContext)

	res, err := c.Complete(context.Background(), engine.Request{Model: "m", MaxTokens: 4, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Trace.Chunks) != 4 {
		t.Fatalf("%d chunks read, want 4", len(res.Trace.Chunks))
	}
	ls.CheckArrivals(t, res.Trace.Chunks)
}
