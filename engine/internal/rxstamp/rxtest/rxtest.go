// Package rxtest serves streams in lockstep with a late reader, to test
// that adapters stamp chunks with their arrival, not with their read.
package rxtest

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine/internal/rxstamp"
	"github.com/inferbench/inferbench/timing"
)

// A Flush is when the server handed one event to the kernel: after
// Before, before After (wall clock).
type Flush struct{ Before, After time.Time }

// Lockstep is a server and a dialer that work together. Every read on a
// connection the dialer made waits Delay before it reads, then tells the
// server; the server writes each event only once a read has returned
// since its last write. No read can return two events, and every event is
// read at least Delay after it was written: a client that stamps events
// when its reads return is Delay late, one that stamps arrivals is not.
type Lockstep struct {
	Events [][]byte      // written in turn, each flushed alone, after the headers
	Header http.Header   // response headers
	Delay  time.Duration // each read's wait before it reads

	read    chan struct{}
	mu      sync.Mutex
	flushes []Flush
}

// New returns a Lockstep for events.
func New(header http.Header, delay time.Duration, events ...[]byte) *Lockstep {
	return &Lockstep{Events: events, Header: header, Delay: delay, read: make(chan struct{}, 1)}
}

// ServeHTTP writes the headers and then the events, each after the client
// has read what came before (or after a second, so that a client that
// reads nothing does not hang the test).
func (l *Lockstep) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for k, vs := range l.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	for _, ev := range l.Events {
		select {
		case <-l.read:
		case <-time.After(time.Second):
		case <-r.Context().Done():
			return
		}
		w.Write(ev)
		before := time.Now()
		fl.Flush()
		after := time.Now()
		l.mu.Lock()
		l.flushes = append(l.flushes, Flush{before, after})
		l.mu.Unlock()
	}
}

// Flushes returns the instants of the events written so far.
func (l *Lockstep) Flushes() []Flush {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Flush(nil), l.flushes...)
}

// Pair returns the two ends of a loopback TCP connection: the client's,
// dialed through rxstamp.Dialer (a *rxstamp.Conn where Supported), and
// the server's. Both close when the test ends.
func Pair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		s, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- s
	}()
	c, err := rxstamp.Dialer((&net.Dialer{}).DialContext)(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, ok := <-accepted
	if !ok {
		c.Close()
		t.Fatal("rxtest: accepting the loopback connection failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

// Warm makes sure the kernel stamps received packets before a test relies
// on it: Linux turns stamping on a moment after a socket first asks (a
// deferred static key, off again when the last such socket closes), and a
// read before then is stamped when it returns. Warm opens a stamped
// loopback connection, waits until a read on it carries an instant, and
// keeps it open until the test ends.
func Warm(t testing.TB) {
	t.Helper()
	if !rxstamp.Supported {
		return
	}
	c, s := Pair(t)
	rc := rxstamp.Of(c)
	buf := make([]byte, 8)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := s.Write([]byte{1}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(buf); err != nil {
			t.Fatal(err)
		}
		if _, ok := rc.Last(); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("rxtest: the kernel stamped no read within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// CheckArrivals reports through t each chunk whose instant is not
// inside the flush of the event at its index: a chunk stamped when its
// read returned is Delay late.
func (l *Lockstep) CheckArrivals(t testing.TB, chunks []timing.Chunk) {
	t.Helper()
	fl := l.Flushes()
	if len(fl) < len(chunks) {
		t.Fatalf("%d chunks read, only %d events flushed", len(chunks), len(fl))
	}
	for i, ch := range chunks {
		at := ch.At.UnixNano()
		if at < fl[i].Before.UnixNano() || at > fl[i].After.UnixNano() {
			t.Errorf("chunk %d stamped %v after its flush began (the flush took %v); want within the flush",
				i, time.Duration(at-fl[i].Before.UnixNano()), fl[i].After.Sub(fl[i].Before))
		}
	}
}

// Dial wraps dial: its connections delay every read and tell the server
// when one returned.
func (l *Lockstep) Dial(dial rxstamp.DialFunc) rxstamp.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return c, err
		}
		return &lateConn{Conn: c, l: l}, nil
	}
}

type lateConn struct {
	net.Conn
	l *Lockstep
}

func (c *lateConn) Read(p []byte) (int, error) {
	time.Sleep(c.l.Delay)
	n, err := c.Conn.Read(p)
	if n > 0 {
		select {
		case c.l.read <- struct{}{}:
		default:
		}
	}
	return n, err
}

// NetConn returns the connection underneath, where rxstamp.Of looks.
func (c *lateConn) NetConn() net.Conn { return c.Conn }
