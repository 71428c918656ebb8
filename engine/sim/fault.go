package sim

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// A FaultKind names one way a chat request can go wrong on purpose. The
// package documentation describes what each does on the wire.
type FaultKind string

// The fault kinds.
const (
	FaultNone              FaultKind = ""
	FaultStatus500         FaultKind = "500"
	FaultStatus503         FaultKind = "503"
	FaultResetBeforeHeader FaultKind = "reset-before-headers"
	FaultResetMidStream    FaultKind = "reset-mid-stream"
	FaultCutWithoutDone    FaultKind = "cut-without-done"
	FaultMalformedChunk    FaultKind = "malformed-chunk"
	FaultErrorEvent        FaultKind = "error-event"
	FaultStall             FaultKind = "stall"
	FaultSlowDrip          FaultKind = "slow-drip"
	FaultWrongContentType  FaultKind = "wrong-content-type"
	FaultOversizedLine     FaultKind = "oversized-line"
	FaultUnknownModel      FaultKind = "unknown-model"
	FaultEmptyBody         FaultKind = "empty-body"
)

// FaultKinds lists every kind but FaultNone.
func FaultKinds() []FaultKind {
	return []FaultKind{
		FaultStatus500, FaultStatus503, FaultResetBeforeHeader, FaultResetMidStream,
		FaultCutWithoutDone, FaultMalformedChunk, FaultErrorEvent, FaultStall,
		FaultSlowDrip, FaultWrongContentType, FaultOversizedLine, FaultUnknownModel,
		FaultEmptyBody,
	}
}

// Defaults of a Fault's parameters.
const (
	DefaultStall     = 30 * time.Second
	DefaultDrip      = time.Millisecond
	DefaultDripBytes = 8
	DefaultOversize  = 2 << 20
)

// A Fault is a fault to inject and its parameters. The zero value injects
// nothing.
type Fault struct {
	Kind FaultKind
	// After is the number of data chunks (tokens, with StreamChunk 1)
	// written before a mid-stream fault fires; 0 means 1 and a negative
	// value fires before the first chunk.
	After int
	// Duration is how long a stall lasts (0 means DefaultStall) or the
	// pause between the pieces of a slow drip (0 means DefaultDrip).
	Duration time.Duration
	// Size is the length in bytes of an oversized line (0 means
	// DefaultOversize).
	Size int
}

// String formats f as ParseFault reads it, e.g. "stall; after=2; duration=50ms".
func (f Fault) String() string {
	var b strings.Builder
	b.WriteString(string(f.Kind))
	if f.After != 0 {
		fmt.Fprintf(&b, "; after=%d", f.After)
	}
	if f.Duration != 0 {
		fmt.Fprintf(&b, "; duration=%s", f.Duration)
	}
	if f.Size != 0 {
		fmt.Fprintf(&b, "; size=%d", f.Size)
	}
	return b.String()
}

func (f Fault) after() int {
	if f.After == 0 {
		return 1
	}
	return max(f.After, 0)
}

func (f Fault) stall() time.Duration {
	if f.Duration <= 0 {
		return DefaultStall
	}
	return f.Duration
}

func (f Fault) drip() time.Duration {
	if f.Duration <= 0 {
		return DefaultDrip
	}
	return f.Duration
}

func (f Fault) size() int {
	if f.Size <= 0 {
		return DefaultOversize
	}
	return f.Size
}

// ParseFault reads a FaultHeader value: a kind, then optional
// "; key=value" parameters: after (an integer), duration (a Go duration)
// and size (bytes). "none" and "" give the zero Fault, which also turns
// off the server's Options.Fault for that request.
func ParseFault(v string) (Fault, error) {
	parts := strings.Split(v, ";")
	f := Fault{Kind: FaultKind(strings.ToLower(strings.TrimSpace(parts[0])))}
	if f.Kind == "none" {
		f.Kind = FaultNone
	}
	if f.Kind != FaultNone && !validKind(f.Kind) {
		return Fault{}, fmt.Errorf("sim: unknown fault kind %q: expected one of %q or none", parts[0], FaultKinds())
	}
	for _, p := range parts[1:] {
		k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
		k, val = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(val)
		if !ok {
			return Fault{}, fmt.Errorf("sim: fault parameter %q: expected key=value", p)
		}
		var err error
		switch k {
		case "after":
			f.After, err = strconv.Atoi(val)
		case "duration":
			f.Duration, err = time.ParseDuration(val)
			if err == nil && f.Duration < 0 {
				err = fmt.Errorf("negative duration")
			}
		case "size":
			f.Size, err = strconv.Atoi(val)
			if err == nil && (f.Size < 0 || f.Size > 1<<30) {
				err = fmt.Errorf("outside [0, 1 GiB]")
			}
		default:
			return Fault{}, fmt.Errorf("sim: fault parameter %q: expected after, duration or size", k)
		}
		if err != nil {
			return Fault{}, fmt.Errorf("sim: fault parameter %s=%q: %w", k, val, err)
		}
	}
	return f, nil
}

func validKind(k FaultKind) bool {
	for _, x := range FaultKinds() {
		if x == k {
			return true
		}
	}
	return false
}

// resetConn closes the request's connection with a TCP RST (SO_LINGER 0),
// after flushing what was written when flush is set (without it, not even
// the status line goes out).
func resetConn(w http.ResponseWriter, flush bool) {
	rc := http.NewResponseController(w)
	if flush {
		_ = rc.Flush()
	}
	conn, _, err := rc.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}

// wait sleeps d or until ctx or closed is done; it reports whether the
// whole d passed.
func wait(ctx context.Context, closed <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-closed:
		return false
	}
}

// out writes a response body, dripping it in DefaultDripBytes pieces when
// the fault says so, and flushing after every write.
type out struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	ctx    context.Context
	closed <-chan struct{}
	drip   time.Duration
}

func newOut(w http.ResponseWriter, r *http.Request, closed <-chan struct{}, f Fault) *out {
	o := &out{w: w, rc: http.NewResponseController(w), ctx: r.Context(), closed: closed}
	if f.Kind == FaultSlowDrip {
		o.drip = f.drip()
	}
	return o
}

func (o *out) write(b []byte) error {
	if o.drip == 0 {
		if _, err := o.w.Write(b); err != nil {
			return err
		}
		return o.rc.Flush()
	}
	for len(b) > 0 {
		n := min(DefaultDripBytes, len(b))
		if _, err := o.w.Write(b[:n]); err != nil {
			return err
		}
		if err := o.rc.Flush(); err != nil {
			return err
		}
		b = b[n:]
		if len(b) > 0 && !wait(o.ctx, o.closed, o.drip) {
			return context.Canceled
		}
	}
	return nil
}
