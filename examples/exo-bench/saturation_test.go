package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/engine"
)

// staggered is a client that cannot release a burst at once: its k-th
// request goes out k × gap after the k-th call (taken in call order), so
// that any 4 requests are at least 3 × gap apart, however loaded the
// machine is.
func staggered(gap time.Duration) func(engine.Engine) engine.Engine {
	return func(e engine.Engine) engine.Engine {
		var mu sync.Mutex
		k := 0
		return engine.Func(func(ctx context.Context, req engine.Request) (engine.Result, error) {
			mu.Lock()
			at := time.Now().Add(time.Duration(k) * gap)
			k++
			mu.Unlock()
			engine.NotifySend(ctx, at) // the first mark is the send instant
			t := time.NewTimer(time.Until(at))
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return engine.Result{}, ctx.Err()
			}
			return e.Complete(ctx, req)
		})
	}
}

// together is a client that releases every burst of n requests at one
// instant: the n calls wait for each other and all mark the instant the
// last of them arrived, so the burst's skew is 0 whatever the machine.
func together(n int) func(engine.Engine) engine.Engine {
	return func(e engine.Engine) engine.Engine {
		var mu sync.Mutex
		waiting, release, at := 0, make(chan struct{}), time.Time{}
		return engine.Func(func(ctx context.Context, req engine.Request) (engine.Result, error) {
			mu.Lock()
			ch := release
			if waiting++; waiting == n {
				at = time.Now()
				waiting, release = 0, make(chan struct{})
				close(ch)
			}
			mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return engine.Result{}, ctx.Err()
			}
			mu.Lock()
			t := at
			mu.Unlock()
			engine.NotifySend(ctx, t)
			return e.Complete(ctx, req)
		})
	}
}

// TestExoBenchSaturationGate: bursts of 4 whose requests leave 20 ms
// apart (a skew of at least 60 ms, over the bound of max(5 ms, 0.5 ms ×
// 4)) exit 3 and name the bursts on the table's stream and in the results
// JSON; --allow-saturated exits 0 with the same record; bursts released
// at one instant exit 0 with no saturated burst.
func TestExoBenchSaturationGate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		wrap      func(engine.Engine) engine.Engine
		allow     bool
		wantExit  int
		saturated bool
	}{
		{"staggered client", staggered(20 * time.Millisecond), false, cli.ExitSaturated, true},
		{"staggered client allowed", staggered(20 * time.Millisecond), true, cli.ExitOK, true},
		{"bursts released together", together(4), false, cli.ExitOK, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.json")
			args := []string{"--preset", "fast", "--pp", "64", "--tg", "4", "--concurrency", "4", "--repeat", "2",
				"--no-system-metrics", "--json-out", out}
			if tc.allow {
				args = append(args, "--allow-saturated")
			}
			var stdout, stderr bytes.Buffer
			err := runWith(context.Background(), args, &stdout, &stderr, hooks{wrap: tc.wrap})
			if got := cli.ExitCode(err); got != tc.wantExit {
				t.Fatalf("exit %d (%v), want %d\nstdout:\n%s\nstderr:\n%s", got, err, tc.wantExit, stdout.String(), stderr.String())
			}
			b, rerr := os.ReadFile(out)
			if rerr != nil {
				t.Fatal(rerr)
			}
			var doc exoDocument
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Meta.ClientSaturated != tc.saturated {
				t.Fatalf("client_saturated %v, bursts %+v; want %v", doc.Meta.ClientSaturated, doc.Meta.SaturatedBursts, tc.saturated)
			}
			if !tc.saturated {
				for _, r := range doc.Runs {
					if r.DispatchSkewS != 0 {
						t.Errorf("request %d of repeat %d: skew %g s, want 0", r.RequestIndex, r.RepeatIndex, r.DispatchSkewS)
					}
				}
				if strings.Contains(stdout.String(), "CLIENT SATURATED") {
					t.Errorf("bursts released together reported saturation:\n%s", stdout.String())
				}
				return
			}
			if len(doc.Meta.SaturatedBursts) != 2 {
				t.Fatalf("saturated bursts %+v, want both repeats", doc.Meta.SaturatedBursts)
			}
			for _, bh := range doc.Meta.SaturatedBursts {
				if bh.N != 4 || bh.SkewS < 0.06 || bh.BoundS != 0.005 || !strings.Contains(bh.Burst, "conc=4/repeat=") {
					t.Errorf("burst %+v; want 4 requests skewed at least 60 ms against 5 ms", bh)
				}
			}
			if !strings.Contains(stdout.String(), "CLIENT SATURATED") || !strings.Contains(stdout.String(), "dispatch skew") {
				t.Errorf("the table does not say the client was saturated:\n%s", stdout.String())
			}
			if !tc.allow && !strings.Contains(err.Error(), "dispatch skew") {
				t.Errorf("error %q does not give the reason", err)
			}
		})
	}
}
