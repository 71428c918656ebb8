package benchkit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
)

// TestRunnerGrace interrupts a run while a burst of three is in flight:
// with a grace period the three requests finish and succeed, and no
// further burst is released; when the grace period passes first, the
// requests still running are cancelled. Either way the three rows reach
// the sinks and the error wraps context.Canceled.
func TestRunnerGrace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		grace    time.Duration
		finish   bool // let the requests end after the interrupt
		wantKind engine.Kind
	}{
		{"requests end within the grace period", time.Hour, true, engine.KindNone},
		{"grace period passes first", 10 * time.Millisecond, false, engine.KindCanceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fe := &fakeEngine{block: make(chan struct{}), started: make(chan struct{}, 16)}
			var col Collector
			ctx, cancel := context.WithCancel(context.Background())
			r := &Runner{Engine: fe, Model: "m", Builder: &promptsize.Builder{Counter: wordCounter}, Sinks: []Sink{&col}, Grace: tc.grace}
			go func() {
				for range 3 {
					<-fe.started
				}
				cancel()
				if tc.finish {
					close(fe.block)
				}
			}()
			rep, err := r.Run(ctx, Plan{PP: []int{20}, TG: []int{4}, Concurrency: []int{3}, Repeat: 5})
			if !errors.Is(err, context.Canceled) || !rep.Interrupted {
				t.Fatalf("err %v interrupted %v, want context.Canceled and true", err, rep.Interrupted)
			}
			if len(col.Requests()) != 3 || fe.calls.Load() != 3 {
				t.Fatalf("rows %d calls %d, want the 3 in flight recorded and nothing more sent", len(col.Requests()), fe.calls.Load())
			}
			for _, row := range col.Requests() {
				if engine.Kind(row.ErrorKind) != tc.wantKind {
					t.Errorf("in-flight row: kind %q (%s), want %q", row.ErrorKind, row.Error, tc.wantKind)
				}
				if tc.wantKind == engine.KindNone && row.Tokens() != 4 {
					t.Errorf("finished row has %d tokens, want 4", row.Tokens())
				}
			}
		})
	}
}
