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

	"github.com/google/go-cmp/cmp"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/internal/progtest"
)

// stillClock is a burst clock that never moves: every request of the
// burst is dispatched at the release instant.
type stillClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stillClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stillClock) Sleep(ctx context.Context, d time.Duration) error { return ctx.Err() }

// TestOfflineSaturationGate: a burst of 4 whose client is slowed by 40 ms
// a request (a bound of max(5 ms, 0.5 ms × 4)) exits 3 and says why on
// stdout and in the results JSON, in meta and in the run's summary;
// --allow-saturated exits 0 with the same record; a burst released on a
// clock that does not move (no machine load can skew it) exits 0.
func TestOfflineSaturationGate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		slow      time.Duration
		allow     bool
		wantExit  int
		saturated bool
	}{
		{"slowed client", 40 * time.Millisecond, false, cli.ExitSaturated, true},
		{"slowed client allowed", 40 * time.Millisecond, true, cli.ExitOK, true},
		{"punctual burst", 0, false, cli.ExitOK, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run.json")
			args := []string{"--num-seqs", "4", "--min-input-len", "40", "--max-input-len", "60", "--min-output-len", "2", "--max-output-len", "4",
				"--seed", "3", "--json-out", out}
			if tc.allow {
				args = append(args, "--allow-saturated")
			}
			h := hooks{wrap: progtest.Punctual, clock: &stillClock{now: time.Unix(1e9, 0)}}
			if tc.slow > 0 {
				h = hooks{wrap: progtest.SlowClient(tc.slow)}
			}
			var stdout, stderr bytes.Buffer
			err := runWith(context.Background(), args, &stdout, &stderr, h)
			if got := cli.ExitCode(err); got != tc.wantExit {
				t.Fatalf("exit %d (%v), want %d\nstdout:\n%s", got, err, tc.wantExit, stdout.String())
			}
			b, rerr := os.ReadFile(out)
			if rerr != nil {
				t.Fatal(rerr)
			}
			doc := newLoadDocument()
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Meta.ClientSaturated != tc.saturated || len(doc.Meta.Client) != 1 || doc.Summary == nil || doc.Summary.Client == nil {
				t.Fatalf("results JSON: client_saturated %v, health %+v, summary %+v; want %v and one health in meta and the summary", doc.Meta.ClientSaturated, doc.Meta.Client, doc.Summary, tc.saturated)
			}
			ch := doc.Meta.Client[0]
			if diff := cmp.Diff(*doc.Summary.Client, ch); diff != "" {
				t.Errorf("the summary's health differs from meta's (-summary +meta):\n%s", diff)
			}
			if ch.DispatchLagP99S == nil {
				t.Errorf("no dispatch lag in %+v", ch)
			}
			if tc.saturated {
				if !strings.Contains(ch.Reason, "at once") || ch.LagP99S < tc.slow.Seconds() {
					t.Errorf("reason %q, lag p99 %g s; want the burst's bound, a lag of at least the %v delay", ch.Reason, ch.LagP99S, tc.slow)
				}
				if !strings.Contains(stdout.String(), "CLIENT SATURATED") {
					t.Errorf("stdout does not say the client was saturated:\n%s", stdout.String())
				}
				if !tc.allow && !strings.Contains(err.Error(), "schedule lag p99") {
					t.Errorf("error %q does not give the reason", err)
				}
				return
			}
			if strings.Contains(stdout.String(), "CLIENT SATURATED") {
				t.Errorf("a punctual burst reported saturation:\n%s", stdout.String())
			}
			if ch.LagMaxS != 0 || *ch.DispatchLagMaxS != 0 {
				t.Errorf("lag max %g s, dispatch lag max %g s on a still clock, want 0", ch.LagMaxS, *ch.DispatchLagMaxS)
			}
		})
	}
}
