package rxstamp_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine/internal/rxstamp"
	"github.com/inferbench/inferbench/engine/internal/rxstamp/rxtest"
)

// TestReadCarriesArrival writes on one end, waits, then reads on the other:
// the read's instant is the write's, not the read's, on Linux.
func TestReadCarriesArrival(t *testing.T) {
	if !rxstamp.Supported {
		t.Skip("this platform gives no receive instants")
	}
	rxtest.Warm(t) // the kernel stamps from a moment after the first socket asks
	c, s := rxtest.Pair(t)
	rc := rxstamp.Of(c)
	if rc == nil {
		t.Fatalf("Wrap gave %T, want a *Conn", c)
	}
	const wait = 30 * time.Millisecond
	buf := make([]byte, 64)
	clock := rxstamp.Clock(rc, time.Time{})
	var prev time.Time
	for i := range 3 {
		before := time.Now()
		if _, err := s.Write([]byte("data: x\n\n")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(wait) // the subject: a read that comes late (a floor, not a bound)
		n, err := c.Read(buf)
		read := time.Now()
		if err != nil || n == 0 {
			t.Fatalf("read %d: %d bytes, %v", i, n, err)
		}
		ns, ok := rc.Last()
		if !ok {
			t.Fatalf("read %d: no receive instant", i)
		}
		// The kernel stamps a loopback packet as the write sends it, so
		// the instant lies between the write's start and the read, a
		// whole wait before the read (a third of it is left for a
		// deferred transmit).
		if ns < before.UnixNano() || ns > read.Add(-wait*2/3).UnixNano() {
			t.Errorf("read %d: receive instant %v after the write began and %v before the read; want ≥ 0 and ≥ %v",
				i, time.Duration(ns-before.UnixNano()), time.Duration(read.UnixNano()-ns), wait*2/3)
		}
		at := clock()
		if at.UnixNano() != ns {
			t.Errorf("read %d: Clock read %v after the receive instant", i, time.Duration(at.UnixNano()-ns))
		}
		if at.Before(prev) {
			t.Errorf("read %d: Clock went back by %v", i, prev.Sub(at))
		}
		if at.Sub(before) < 0 || read.Sub(at) < wait*2/3 {
			t.Errorf("read %d: Clock %v after the write began and %v before the read (monotonic)", i, at.Sub(before), read.Sub(at))
		}
		prev = at
	}
}

type wrapped struct{ net.Conn }

func (w wrapped) NetConn() net.Conn { return w.Conn }

type loop struct{ net.Conn }

func (l *loop) NetConn() net.Conn { return l }

func TestOf(t *testing.T) {
	c, _ := rxtest.Pair(t)
	want := rxstamp.Of(c)
	if rxstamp.Supported && want == nil {
		t.Fatal("no *Conn from a TCP dial")
	}
	if got := rxstamp.Of(tls.Client(wrapped{c}, &tls.Config{})); got != want {
		t.Errorf("through tls and a NetConn wrapper: %p, want %p", got, want)
	}
	if got := rxstamp.Of(nil); got != nil {
		t.Errorf("Of(nil) = %p", got)
	}
	if got := rxstamp.Of(&loop{}); got != nil {
		t.Errorf("a NetConn that returns itself: %p", got)
	}
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	if rxstamp.Wrap(p1) != p1 || rxstamp.Of(p1) != nil {
		t.Error("a pipe was wrapped")
	}
}

// TestReadErrors: a wrapped connection fails as net.TCPConn does, so that
// net/http tells timeouts, closes and ends apart.
func TestReadErrors(t *testing.T) {
	c, s := rxtest.Pair(t)
	buf := make([]byte, 8)
	c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err := c.Read(buf)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("past the deadline: %v, want a timeout", err)
	}
	c.SetReadDeadline(time.Time{})
	s.Close()
	if n, err := c.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("after the peer closed: %d, %v; want 0, io.EOF", n, err)
	}
	c.Close()
	if _, err := c.Read(buf); !errors.Is(err, net.ErrClosed) {
		t.Errorf("after Close: %v, want net.ErrClosed", err)
	}
	if n, err := c.Read(nil); n != 0 {
		t.Errorf("empty read: %d, %v", n, err)
	}
}
