package adaptertest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// A Closer is a loopback server of the OpenAI chat completions API that
// behaves as llama.cpp's server does with its connections: it answers a
// streamed request with "Keep-Alive: timeout=5, max=100" and then closes
// the TCP connection, and keeps the connection of an unstreamed answer.
//
// With Linger set it closes a streamed answer's connection only once the
// client has written its next request on it, which it drops unanswered:
// every reuse of such a connection then fails before any byte of an
// answer, where the real server's close races the client's reuse.
type Closer struct {
	*httptest.Server
	// Linger: see the type's doc.
	Linger bool
	// ServerHeader is the Server header of every answer ("" for none).
	ServerHeader string

	mu       sync.Mutex
	answered map[string][]time.Time // request id → when its answered requests arrived
	dropped  map[string][]time.Time // request id → when its dropped requests arrived
}

// NewCloser starts a Closer; serverHeader is its Server header and linger
// its Linger. It is closed when the test ends.
func NewCloser(t testing.TB, serverHeader string, linger bool) *Closer {
	c := &Closer{Linger: linger, ServerHeader: serverHeader, answered: map[string][]time.Time{}, dropped: map[string][]time.Time{}}
	c.Server = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.Close)
	return c
}

// Answered returns the arrival instants of the answered requests that
// carried id (its X-Request-Id).
func (c *Closer) Answered(id string) []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.answered[id]...)
}

// Dropped returns the arrival instants of the requests with id that the
// server dropped unanswered on a connection it closed.
func (c *Closer) Dropped(id string) []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.dropped[id]...)
}

// Counts returns how many requests were answered and how many dropped.
func (c *Closer) Counts() (answered, dropped int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range c.answered {
		answered += len(v)
	}
	for _, v := range c.dropped {
		dropped += len(v)
	}
	return answered, dropped
}

// closerStream is the stream a Closer answers with: a role chunk, three
// tokens, the final usage.
const closerStream = `data: {"id":"chatcmpl-c","object":"chat.completion.chunk","model":"closer","choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}

data: {"id":"chatcmpl-c","object":"chat.completion.chunk","model":"closer","choices":[{"index":0,"delta":{"content":"one"}}]}

data: {"id":"chatcmpl-c","object":"chat.completion.chunk","model":"closer","choices":[{"index":0,"delta":{"content":" two"}}]}

data: {"id":"chatcmpl-c","object":"chat.completion.chunk","model":"closer","choices":[{"index":0,"delta":{"content":" three"},"finish_reason":"length"}]}

data: {"id":"chatcmpl-c","object":"chat.completion.chunk","model":"closer","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}

data: [DONE]

`

// closerBody is the unstreamed answer.
const closerBody = `{"id":"chatcmpl-c","object":"chat.completion","model":"closer","choices":[{"index":0,"message":{"role":"assistant","content":"one two three"},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`

func (c *Closer) record(m map[string][]time.Time, id string, at time.Time) {
	c.mu.Lock()
	m[id] = append(m[id], at)
	c.mu.Unlock()
}

func (c *Closer) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(r.Body)
	c.record(c.answered, r.Header.Get("X-Request-Id"), at)
	if c.ServerHeader != "" {
		w.Header().Set("Server", c.ServerHeader)
	}
	if !strings.Contains(string(body), `"stream":true`) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, closerBody)
		return
	}
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	fmt.Fprintf(rw, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nKeep-Alive: timeout=5, max=100\r\nTransfer-Encoding: chunked\r\n")
	if c.ServerHeader != "" {
		fmt.Fprintf(rw, "Server: %s\r\n", c.ServerHeader)
	}
	fmt.Fprintf(rw, "\r\n%x\r\n%s\r\n0\r\n\r\n", len(closerStream), closerStream)
	if err := rw.Flush(); err != nil || !c.Linger {
		return
	}
	// Linger: wait for the next request on this connection, then drop it.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	next, err := http.ReadRequest(rw.Reader)
	if err != nil {
		return // the client closed the connection, or never reused it
	}
	c.record(c.dropped, next.Header.Get("X-Request-Id"), time.Now())
	// Closing with the request unread resets the connection; the client
	// sees it fail before any byte of an answer either way.
	_, _ = io.Copy(io.Discard, next.Body)
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	_, _ = bufio.NewReader(conn).Peek(1) // until the client closes its side
}
