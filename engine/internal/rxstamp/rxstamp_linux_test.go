package rxstamp

import (
	"syscall"
	"testing"
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
