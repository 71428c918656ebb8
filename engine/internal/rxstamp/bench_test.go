package rxstamp

import (
	"net"
	"testing"
)

// BenchmarkRead reads 256-byte messages over loopback through a wrapped
// connection (recvmsg with a receive instant, on Linux) and through the
// plain *net.TCPConn, for the cost of the stamp per read.
func BenchmarkRead(b *testing.B) {
	for _, bc := range []struct {
		name string
		wrap bool
	}{{"plain", false}, {"stamped", true}} {
		b.Run(bc.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() {
				s, err := ln.Accept()
				if err != nil {
					return
				}
				defer s.Close()
				msg := make([]byte, 256)
				ack := make([]byte, 1)
				for {
					if _, err := s.Write(msg); err != nil {
						return
					}
					if _, err := s.Read(ack); err != nil {
						return
					}
				}
			}()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			if bc.wrap {
				c = Wrap(c)
			}
			defer c.Close()
			buf := make([]byte, 4096)
			ack := []byte{1}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for got := 0; got < 256; {
					n, err := c.Read(buf)
					if err != nil {
						b.Fatal(err)
					}
					got += n
				}
				if _, err := c.Write(ack); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
