//go:build linux && !386

package rxstamp

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Supported says this platform gives receive instants: Linux, but for
// 386, whose recvmsg goes through socketcall.
const Supported = true

// Conn is a TCP connection whose reads record the kernel's receive instant
// of the last packet each returned. Its methods other than Read are the
// wrapped connection's.
type Conn struct {
	net.Conn
	raw  syscall.RawConn
	last atomic.Int64 // Unix ns of the last read's newest packet; 0: none

	// One read at a time (as net/http reads) uses what follows: the
	// message header, its one iovec and control buffer, the closure
	// RawConn.Read calls and its results, all kept here so that a read
	// allocates nothing.
	oob    []byte
	msg    syscall.Msghdr
	iov    syscall.Iovec
	p      []byte
	n      int
	rerr   syscall.Errno
	readFn func(fd uintptr) bool
}

// Wrap turns on receive timestamps on a *net.TCPConn and returns it
// wrapped in a *Conn; any other connection, or one whose socket refuses the
// option, is returned as it is.
func Wrap(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return c
	}
	rc := &Conn{Conn: c, raw: raw, oob: make([]byte, syscall.CmsgSpace(int(unsafe.Sizeof(syscall.Timespec{})))*2)}
	rc.readFn = rc.recvmsg
	return rc
}

// recvmsg is one recvmsg(2) of c.p with c's control buffer, for
// RawConn.Read: it reports false (wait and call again) on EAGAIN.
func (c *Conn) recvmsg(fd uintptr) bool {
	for {
		c.iov.Base = &c.p[0]
		c.iov.SetLen(len(c.p))
		c.msg = syscall.Msghdr{Iov: &c.iov, Control: &c.oob[0]}
		c.msg.Iovlen = 1
		c.msg.SetControllen(len(c.oob))
		r, _, e := syscall.Syscall(syscall.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&c.msg)), 0)
		c.n, c.rerr = int(r), e
		if e != syscall.EINTR {
			break
		}
	}
	if raceEnabled && c.rerr == 0 {
		// syscall.Read tells the race detector that what was written
		// to any descriptor before happens before this read; a bare
		// recvmsg does not. A read of no bytes (which returns at once
		// and takes nothing) does it, so that a program's data handed
		// over through a socket (a test's handler and its client) is
		// seen as ordered.
		syscall.Read(int(fd), nil)
	}
	return c.rerr != syscall.EAGAIN
}

// Read reads as the wrapped connection would, with recvmsg, and records the
// receive instant that comes with the bytes. A read that returns bytes
// without one clears the record, so that Last never pairs bytes with an
// older read's instant.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return c.Conn.Read(p)
	}
	c.p = p
	err := c.raw.Read(c.readFn)
	n, rerr, oobn := c.n, c.rerr, int(c.msg.Controllen)
	c.p, c.iov.Base = nil, nil // hold no caller's buffer past the read
	if err != nil {
		// The poller's error (a deadline, a closed connection) is already
		// a *net.OpError; keep its cause under a read's name.
		var op *net.OpError
		if errors.As(err, &op) {
			err = op.Err
		}
		return 0, c.opError(err)
	}
	if rerr != 0 {
		return 0, c.opError(os.NewSyscallError("recvmsg", rerr))
	}
	if n == 0 {
		return 0, io.EOF
	}
	c.last.Store(stampOf(c.oob[:oobn]))
	return n, nil
}

// opError wraps err as net.TCPConn's Read does, so that callers that look
// for timeouts, net.ErrClosed or syscall errors find them.
func (c *Conn) opError(err error) error {
	return &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// Last returns the receive instant of the newest packet of the last read
// that returned bytes, in Unix nanoseconds, and whether there is one.
func (c *Conn) Last() (int64, bool) {
	ns := c.last.Load()
	return ns, ns != 0
}

// stampOf returns the SCM_TIMESTAMPNS instant among the control messages,
// or 0.
func stampOf(oob []byte) int64 {
	hdr := int(unsafe.Sizeof(syscall.Cmsghdr{}))
	for len(oob) >= hdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return 0
		}
		data := oob[syscall.CmsgLen(0):l]
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS && len(data) >= int(unsafe.Sizeof(syscall.Timespec{})) {
			var ts syscall.Timespec
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&ts)), unsafe.Sizeof(ts)), data)
			return ts.Nano()
		}
		next := syscall.CmsgSpace(l - syscall.CmsgLen(0))
		if next > len(oob) {
			return 0
		}
		oob = oob[next:]
	}
	return 0
}
