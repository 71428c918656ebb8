package testkit

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatal, Fatalf and Skip record what
// ended the test and end the goroutine, as the real ones do.
type recorder struct {
	testing.TB
	ended chan string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.ended <- "fatal: " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) {
	r.ended <- "fatal: " + fmt.Sprint(args...)
	runtime.Goexit()
}

func (r *recorder) Skip(args ...any) {
	r.ended <- "skip: " + fmt.Sprint(args...)
	runtime.Goexit()
}

// run calls f with a recorder on a goroutine of its own and returns how
// f ended the test ("fatal: ..." or "skip: ..."), or "" when f returned.
func run(t *testing.T, f func(testing.TB)) string {
	t.Helper()
	r := &recorder{TB: t, ended: make(chan string, 1)}
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		f(r)
	}()
	select {
	case <-returned:
	case <-time.After(Patience):
		t.Fatalf("f neither returned nor failed in %v", Patience)
	}
	select {
	case msg := <-r.ended:
		return msg
	default:
		return ""
	}
}

func TestRecvWithin(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if got := RecvWithin(t, ch, time.Second); got != 7 {
		t.Errorf("RecvWithin = %d, want 7", got)
	}
	close(ch)
	if v, ok := RecvOKWithin(t, ch, time.Second); v != 0 || ok {
		t.Errorf("RecvOKWithin on a closed channel = %d, %v; want 0, false", v, ok)
	}
	if msg := run(t, func(tb testing.TB) { RecvWithin(tb, make(chan int), 10*time.Millisecond) }); !strings.HasPrefix(msg, "fatal: ") {
		t.Error("RecvWithin on a silent channel returned; want a failure")
	}
	if msg := run(t, func(tb testing.TB) { RecvOKWithin(tb, make(chan int), 10*time.Millisecond) }); !strings.HasPrefix(msg, "fatal: ") {
		t.Error("RecvOKWithin on a silent channel returned; want a failure")
	}
}

func TestSendWithin(t *testing.T) {
	ch := make(chan int, 1)
	SendWithin(t, ch, 7, time.Second)
	if got := RecvWithin(t, ch, time.Second); got != 7 {
		t.Errorf("received %d, want 7", got)
	}
	if msg := run(t, func(tb testing.TB) { SendWithin(tb, make(chan int), 1, 10*time.Millisecond) }); !strings.HasPrefix(msg, "fatal: ") {
		t.Error("SendWithin with no receiver returned; want a failure")
	}
}

func TestWaitWithin(t *testing.T) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { time.Sleep(time.Millisecond); wg.Done() }()
	if msg := run(t, func(tb testing.TB) { WaitWithin(tb, &wg, Patience) }); msg != "" {
		t.Errorf("WaitWithin on a group that finishes failed: %s", msg)
	}
	var stuck sync.WaitGroup
	stuck.Add(1)
	defer stuck.Done()
	if msg := run(t, func(tb testing.TB) { WaitWithin(tb, &stuck, 10*time.Millisecond) }); !strings.HasPrefix(msg, "fatal: ") {
		t.Error("WaitWithin on a group that never finishes returned; want a failure")
	}
}

func TestWaitContext(t *testing.T) {
	var wg sync.WaitGroup
	if err := WaitContext(context.Background(), &wg); err != nil {
		t.Errorf("WaitContext on an empty group = %v, want nil", err)
	}
	wg.Add(1)
	defer wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := WaitContext(ctx, &wg); err != context.DeadlineExceeded {
		t.Errorf("WaitContext on a stuck group = %v, want the context's DeadlineExceeded", err)
	}
}

func TestCommandKilledAtDeadline(t *testing.T) {
	start := time.Now()
	err := Command(t, 50*time.Millisecond, "sleep", "60").Run()
	if err == nil || time.Since(start) > 30*time.Second {
		t.Errorf("sleep 60 under a 50 ms deadline: %v after %v; want it killed at once", err, time.Since(start))
	}
}
