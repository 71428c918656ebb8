package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/internal/progtest"
)

// punctualClock is a schedule clock on which every wait ends exactly at
// its deadline: Sleep moves the time on by d and returns. With it, and
// sends marked at their dispatch (progtest.Punctual), every request goes out at
// its intended instant however loaded the machine is.
type punctualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *punctualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *punctualClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

// TestServeLoadSaturationGate: a client slowed by 40 ms a request, at
// 50 requests/s (a bound of max(5 ms, 10 % of 20 ms)), exits 3 and says
// why in the table and the results JSON; --allow-saturated exits 0 with
// the same record; at 2 requests/s a client that keeps its schedule
// exactly (a punctual clock, so no machine load can lag it) exits 0.
func TestServeLoadSaturationGate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		rate      string
		slow      time.Duration
		allow     bool
		wantExit  int
		saturated bool
	}{
		{"slowed client", "50", 40 * time.Millisecond, false, cli.ExitSaturated, true},
		{"slowed client allowed", "50", 40 * time.Millisecond, true, cli.ExitOK, true},
		{"easy rate", "2", 0, false, cli.ExitOK, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run.json")
			args := []string{"--rate", tc.rate, "--num-requests", "4", "--pp", "64", "--tg", "2", "--seed", "3", "--json-out", out}
			if tc.allow {
				args = append(args, "--allow-saturated")
			}
			var h hooks
			if tc.slow > 0 {
				h.wrap = progtest.SlowClient(tc.slow)
			} else {
				h.wrap, h.clock = progtest.Punctual, &punctualClock{now: time.Unix(1e9, 0)}
			}
			var stdout, stderr bytes.Buffer
			err := runWith(context.Background(), args, &stdout, &stderr, h)
			if got := cli.ExitCode(err); got != tc.wantExit {
				t.Fatalf("exit %d (%v), want %d\nstdout:\n%s", got, err, tc.wantExit, stdout.String())
			}
			doc := readDoc(t, out)
			if doc.Meta.ClientSaturated != tc.saturated || len(doc.Meta.Client) != 1 {
				t.Fatalf("results JSON: client_saturated %v, health %+v; want %v", doc.Meta.ClientSaturated, doc.Meta.Client, tc.saturated)
			}
			ch := doc.Meta.Client[0]
			if doc.Summary == nil || doc.Summary.Client == nil || doc.Summary.Client.Saturated != tc.saturated || ch.DispatchLagP99S == nil {
				t.Errorf("the run's summary holds no client health with a dispatch lag: %+v", doc.Summary)
			}
			if tc.saturated {
				if !strings.Contains(ch.Reason, "schedule lag p99") || ch.LagP99S < tc.slow.Seconds() {
					t.Errorf("reason %q, lag p99 %g s; want the lag, at least the %v delay", ch.Reason, ch.LagP99S, tc.slow)
				}
				if !strings.Contains(stdout.String(), "CLIENT SATURATED") {
					t.Errorf("the table does not say the client was saturated:\n%s", stdout.String())
				}
				if !tc.allow && !strings.Contains(err.Error(), "schedule lag p99") {
					t.Errorf("error %q does not give the reason", err)
				}
			} else {
				if strings.Contains(stdout.String(), "CLIENT SATURATED") {
					t.Errorf("an easy run reported saturation:\n%s", stdout.String())
				}
				if ch.LagMaxS != 0 {
					t.Errorf("schedule lag max %g s on a punctual clock, want 0", ch.LagMaxS)
				}
			}
		})
	}
}
