// Package hostile serves misbehaving HTTP responses on loopback, for the
// tests that prove inferbench survives servers and files that lie, stall,
// redirect, echo secrets or send absurd numbers.
//
// A Server is a real listener on 127.0.0.1 (httptest) that records every
// request it receives, so a test can assert both what the client did with
// the answer and what it sent (headers, how many requests, which paths).
// Handlers for particular attacks live beside this file, one file a theme.
package hostile

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// A Request is what the server received: enough to check that a client did
// not leak a credential or follow a redirect it should not have.
type Request struct {
	Method string
	Path   string // URL path and raw query, as sent
	Host   string
	Header http.Header
	Body   []byte
}

// A Server is a loopback HTTP server that records its requests.
type Server struct {
	*httptest.Server

	mu   sync.Mutex
	reqs []Request
}

// New starts a Server that answers with h and closes when t ends. The
// request body is read (up to 1 MiB) before h runs and handed to h again,
// so h may read it too.
func New(t testing.TB, h http.Handler) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.mu.Lock()
		s.reqs = append(s.reqs, Request{
			Method: r.Method,
			Path:   r.URL.RequestURI(),
			Host:   r.Host,
			Header: r.Header.Clone(),
			Body:   body,
		})
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		s.CloseClientConnections()
		s.Close()
	})
	return s
}

// Requests returns a copy of the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Count returns how many requests the server has received.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// SSE returns a handler that answers 200 text/event-stream and writes each
// event as one "data: <event>\n\n" frame, flushing after each, then
// "data: [DONE]\n\n" unless noDone.
func SSE(noDone bool, events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f, _ := w.(http.Flusher)
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
			if f != nil {
				f.Flush()
			}
		}
		if !noDone {
			io.WriteString(w, "data: [DONE]\n\n")
		}
	}
}

// JSON returns a handler that answers status with body as
// application/json.
func JSON(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}
