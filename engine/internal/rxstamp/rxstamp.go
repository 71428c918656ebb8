// Package rxstamp stamps what a TCP connection reads with the instant the
// kernel received it, so that a stream's chunk instants do not depend on
// when the reading goroutine was scheduled.
//
// A client that stamps each chunk when its Read returns measures the
// server and its own scheduler together: when many streams' bytes arrive
// at once, the Go runtime wakes their readers one after another (in the
// reverse order of their arrival, as its network poller lists them), and
// on a busy host the process may not run at all until the sender yields
// the CPU. On Linux, a socket with SO_TIMESTAMPNS receives, with each
// recvmsg, the kernel's receive instant of the last packet it returned;
// Conn keeps that instant, and Clock turns it into the reading instant of
// an engine.SSEReader. Elsewhere (other systems, and linux/386, whose
// recvmsg goes through socketcall; Supported says which), and on
// connections that are not TCP, Wrap returns its connection unchanged and
// Clock reads time.Now.
//
// The instant a read is stamped with is never earlier than the arrival of
// the last byte it returned and never later than the read's return: the
// packets of one read arrive in order and the stamp is the last one's.
// Bytes that a buffer above the connection kept from an earlier read carry
// that read's instant; a read that returns both buffered bytes and newer
// ones carries the newer instant. Linux turns receive stamping on shortly
// after the first socket asks for it (and off after the last one closes):
// a read that comes without an instant is stamped with time.Now.
package rxstamp

import (
	"context"
	"net"
	"time"
)

// DialFunc is the shape of net.Dialer.DialContext and of
// http.Transport.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Dialer returns a DialFunc that dials with dial and wraps the connection
// with Wrap.
func Dialer(dial DialFunc) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return c, err
		}
		return Wrap(c), nil
	}
}

// Of returns the Conn under c, looking through connections that name the
// one they wrap with a NetConn method (as *tls.Conn does), or nil when
// there is none.
func Of(c net.Conn) *Conn {
	for range 8 { // a bound, against a NetConn that returns itself
		switch v := c.(type) {
		case nil:
			return nil
		case *Conn:
			return v
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// Clock returns a clock for the reads of one response on c: each reading
// is time.Now moved back to the kernel's receive instant of the last read
// on c, when c has one that is not in the future, and never earlier than
// since or the clock's previous reading. Its readings keep the monotonic
// clock (since's too, when it has one), so differences with other time.Now
// readings are as exact as theirs. With a nil c, or where the platform
// gives no receive instants, it is time.Now. Call it only right after a
// read on c has returned bytes (as an engine.SSEReader calls its Now, or
// once the response's headers are read); it is not safe for concurrent
// use.
func Clock(c *Conn, since time.Time) func() time.Time {
	if c == nil {
		return time.Now
	}
	prev := since
	return func() time.Time {
		t := time.Now()
		if ns, ok := c.Last(); ok {
			if d := time.Duration(ns - t.UnixNano()); d < 0 {
				t = t.Add(d)
			}
		}
		if t.Before(prev) {
			t = prev
		}
		prev = t
		return t
	}
}
