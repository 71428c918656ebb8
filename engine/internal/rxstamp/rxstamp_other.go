//go:build !linux || 386

package rxstamp

import "net"

// Supported says this platform gives receive instants: it does not.
const Supported = false

// Conn is a connection whose reads record the kernel's receive instant;
// this platform has none, so Wrap never makes one.
type Conn struct {
	net.Conn
}

// Wrap returns c: this platform gives no receive instants.
func Wrap(c net.Conn) net.Conn { return c }

// Last reports no instant.
func (c *Conn) Last() (int64, bool) { return 0, false }
