package httpconn

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/internal/testkit"
)

var errTestResent = errors.New("test: resent")

// seen counts the requests a test server read, by X-Request-Id.
type seen struct {
	mu sync.Mutex
	n  map[string]int
}

func (s *seen) add(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int{}
	}
	s.n[r.Header.Get(RequestIDHeader)]++
}

func (s *seen) get(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[id]
}

// send sends a POST with a new request id through c and reads its whole
// answer.
func send(t *testing.T, c *Conn, header http.Header) (engine.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := header.Clone()
	if h == nil {
		h = http.Header{}
	}
	SetRequestID(h)
	hreq, err := c.NewRequest(context.Background(), http.MethodPost, "/p", []byte(`{}`), "application/json", h)
	if err != nil {
		t.Fatal(err)
	}
	var res engine.Result
	resp, _, err := c.Send(ctx, "POST /p", hreq, &res)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	return res, c.Finish(ctx, "test", "POST /p", resp, false, &res, err)
}

func newTestConn(url string) *Conn {
	return New(Config{Pkg: "test", Base: url, MaxBurst: 4, MaxBody: 1 << 20, ErrResent: errTestResent})
}

// TestFreshConnectionFailureIsFinal: a request whose connection was
// opened for it, and that the server closes without answering, fails and
// is not written again: the server may have read it.
func TestFreshConnectionFailureIsFinal(t *testing.T) {
	var s seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.add(r)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	c := newTestConn(srv.URL)
	res, err := send(t, c, nil)
	if err == nil || engine.KindOf(err) != engine.KindReset {
		t.Fatalf("error %v, want one of kind reset", err)
	}
	if res.Resent != 0 || s.get(res.RequestID) != 1 {
		t.Errorf("Resent %d, the server read the request %d times; want 0 and once", res.Resent, s.get(res.RequestID))
	}
}

// TestAnswerStartedIsFinal: on a reused connection, a failure after the
// first byte of an answer (a status line cut short) is returned, not
// retried: the server was answering.
func TestAnswerStartedIsFinal(t *testing.T) {
	var s seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.add(r)
		if r.Header.Get("X-Mode") != "cut" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		_, _ = rw.WriteString("HTTP/1.1 2")
		_ = rw.Flush()
		conn.Close()
	}))
	defer srv.Close()
	c := newTestConn(srv.URL)
	if _, err := send(t, c, nil); err != nil {
		t.Fatal(err)
	}
	res, err := send(t, c, http.Header{"X-Mode": {"cut"}})
	if err == nil {
		t.Fatal("a cut status line succeeded")
	}
	if res.Connect != nil {
		t.Errorf("Connect %v: the second request should have reused the first one's connection", *res.Connect)
	}
	if res.Resent != 0 || s.get(res.RequestID) != 1 {
		t.Errorf("Resent %d, the server read the request %d times; want 0 and once", res.Resent, s.get(res.RequestID))
	}
}

// TestRequestIDHeaders: a request carries a new X-Request-Id, or the
// caller's own, and the id a server echoes (as vLLM does with
// --enable-request-id-headers) is the result's ServerRequestID.
func TestRequestIDHeaders(t *testing.T) {
	got := make(chan http.Header, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.Header().Set(RequestIDHeader, r.Header.Get(RequestIDHeader))
	}))
	defer srv.Close()
	c := newTestConn(srv.URL)
	res, err := send(t, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := testkit.RecvWithin(t, got, testkit.Patience)
	if h.Get(RequestIDHeader) != res.RequestID || !strings.HasPrefix(res.RequestID, "ib-") || res.ServerRequestID != res.RequestID {
		t.Errorf("X-Request-Id sent %q, Result.RequestID %q, ServerRequestID %q: want one new id in all three", h.Get(RequestIDHeader), res.RequestID, res.ServerRequestID)
	}
	res, err = send(t, c, http.Header{RequestIDHeader: {"mine"}})
	if err != nil {
		t.Fatal(err)
	}
	if h = testkit.RecvWithin(t, got, testkit.Patience); h.Get(RequestIDHeader) != "mine" || res.RequestID != "mine" {
		t.Errorf("X-Request-Id sent %q, Result.RequestID %q: want the caller's, mine", h.Get(RequestIDHeader), res.RequestID)
	}
}

// TestResetBeforeAnswerIsResent: on a reused connection, a reset before
// any byte of an answer (the server closed the connection with the
// request unread) sends the request again on another connection, once
// per such failure; a reset on the fresh connection it then takes is
// final.
func TestResetBeforeAnswerIsResent(t *testing.T) {
	var s seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.add(r)
		if r.Header.Get("X-Mode") != "reset" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close with a reset
		}
		conn.Close()
	}))
	defer srv.Close()
	c := newTestConn(srv.URL)
	if _, err := send(t, c, nil); err != nil {
		t.Fatal(err)
	}
	res, err := send(t, c, http.Header{"X-Mode": {"reset"}})
	if engine.KindOf(err) != engine.KindReset {
		t.Fatalf("error %v, want one of kind reset", err)
	}
	if res.Resent != 1 || s.get(res.RequestID) != 2 || res.Connect == nil {
		t.Errorf("Resent %d, the server read the request %d times, Connect %v; want 1, twice, the second on a connection opened for it",
			res.Resent, s.get(res.RequestID), res.Connect)
	}
}

func TestRequestIDsUnique(t *testing.T) {
	ids := map[string]bool{}
	for range 1000 {
		id := NewRequestID()
		if ids[id] || len(id) != len("ib-")+24 {
			t.Fatalf("id %q: repeated or not ib- and 24 hex digits", id)
		}
		ids[id] = true
	}
}

func TestPrintable(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc-123", 200, "abc-123"},
		{"a\r\nb\x00c\u00e9", 200, "abc"},
		{"abcdef", 3, "abc"},
	} {
		if got := Printable(tc.in, tc.n); got != tc.want {
			t.Errorf("Printable(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// FuzzPrintable: what Printable keeps of a server's header is printable
// ASCII, at most n bytes, in the order the input had it.
func FuzzPrintable(f *testing.F) {
	f.Add("chatcmpl-abc", 200)
	f.Add("a\r\nSet-Cookie: x\x00\u00e9", 5)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = max(0, min(n, 1000))
		got := Printable(s, n)
		if len(got) > n {
			t.Fatalf("Printable(%q, %d) = %q: longer than %d", s, n, got, n)
		}
		i := 0
		for j := 0; j < len(got); j++ {
			c := got[j]
			if c < 0x20 || c >= 0x7f {
				t.Fatalf("Printable(%q, %d) = %q: byte %#x is not printable ASCII", s, n, got, c)
			}
			for i < len(s) && s[i] != c {
				i++
			}
			if i == len(s) {
				t.Fatalf("Printable(%q, %d) = %q: not a subsequence of the input", s, n, got)
			}
			i++
		}
	})
}

// TestResendToAGoneServerIsFinal: a request whose reused connection the
// server closed goes out again, and when the server has gone altogether
// (its listener closed, so the new connection is refused) that failure is
// final at once: an attempt that got no connection is not a reused one.
func TestResendToAGoneServerIsFinal(t *testing.T) {
	var s seen
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.add(r)
		if r.Header.Get("X-Mode") != "gone" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		srv.Listener.Close()
		conn.Close()
	}))
	defer srv.Close()
	c := newTestConn(srv.URL)
	if _, err := send(t, c, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := send(t, c, http.Header{"X-Mode": {"gone"}})
	if err == nil {
		t.Fatal("a request to a server that went away succeeded")
	}
	if k := engine.KindOf(err); k == engine.KindTimeout || k == engine.KindCanceled {
		t.Fatalf("error of kind %s after %v (%v): want the refused connection at once", k, time.Since(start), err)
	}
	if s.get(res.RequestID) != 1 {
		t.Errorf("the server read the request %d times, want once", s.get(res.RequestID))
	}
}
