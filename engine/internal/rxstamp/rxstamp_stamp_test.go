//go:build linux && !386

package rxstamp

import (
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestStampOf reads SCM_TIMESTAMPNS among other control messages and
// gives 0, never a panic, for truncated or lying headers.
func TestStampOf(t *testing.T) {
	ts := syscall.NsecToTimespec(1_700_000_000_123_456_789)
	msg := func(level, typ int32, data []byte) []byte {
		b := make([]byte, syscall.CmsgSpace(len(data)))
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&b[0]))
		h.Level, h.Type = level, typ
		h.SetLen(syscall.CmsgLen(len(data)))
		copy(b[syscall.CmsgLen(0):], data)
		return b
	}
	tsb := unsafe.Slice((*byte)(unsafe.Pointer(&ts)), unsafe.Sizeof(ts))
	stamp := msg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, tsb)
	other := msg(syscall.SOL_IP, 1, []byte{1, 2, 3})
	for _, c := range []struct {
		name string
		oob  []byte
		want int64
	}{
		{"alone", stamp, ts.Nano()},
		{"after another", append(append([]byte{}, other...), stamp...), ts.Nano()},
		{"none", other, 0},
		{"empty", nil, 0},
		{"truncated", stamp[:len(stamp)-4], 0},
		{"header only", stamp[:syscall.CmsgLen(0)-1], 0},
	} {
		if got := stampOf(c.oob); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	bad := append([]byte{}, stamp...)
	(*syscall.Cmsghdr)(unsafe.Pointer(&bad[0])).SetLen(1 << 20)
	if got := stampOf(bad); got != 0 {
		t.Errorf("length past the buffer: %d", got)
	}
	(*syscall.Cmsghdr)(unsafe.Pointer(&bad[0])).SetLen(2)
	if got := stampOf(bad); got != 0 {
		t.Errorf("length under a header: %d", got)
	}
}

// TestClockNeverGoesBack: a read without a receive instant falls back to
// time.Now, and a later one with an older instant does not move the clock
// back.
func TestClockNeverGoesBack(t *testing.T) {
	rc := &Conn{}
	since := time.Now().Add(time.Hour)
	if got := Clock(rc, since)(); !got.Equal(since) {
		t.Errorf("a clock since %v read %v", since, got)
	}
	clock := Clock(rc, time.Time{})
	t0 := clock() // no instant: time.Now
	rc.last.Store(t0.Add(-time.Second).UnixNano())
	if t1 := clock(); t1.Before(t0) {
		t.Errorf("clock went back by %v", t0.Sub(t1))
	}
	rc.last.Store(time.Now().Add(time.Hour).UnixNano()) // a future instant (a stepped clock) is not used
	if t2, now := clock(), time.Now(); t2.After(now) {
		t.Errorf("clock read %v in the future", t2.Sub(now))
	}
	if Clock(nil, time.Time{})().IsZero() {
		t.Error("Clock(nil) read zero")
	}
}
