package benchkit

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// TestSweepSaltsDiffer: the runs of a sweep never resend each other's
// prompts, every salt ends with the Load's nonce, a Load without one
// draws one, and a shared prefix puts the same text before every salt.
func TestSweepSaltsDiffer(t *testing.T) {
	for _, shared := range []int{0, 24} {
		var mu sync.Mutex
		var contents []string
		eng := engine.Func(func(_ context.Context, req engine.Request) (engine.Result, error) {
			mu.Lock()
			contents = append(contents, req.Messages[len(req.Messages)-1].Content)
			mu.Unlock()
			return engine.Result{}, nil
		})
		l := &Load{Engine: eng, Model: "m", Builder: &promptsize.Builder{Counter: sim.Counter{}}, SharedPrefix: shared}
		_, err := l.Sweep(context.Background(), Lengths{Input: 120, Output: 2}, Traffic{NumRequests: 5}, []float64{1e6, 2e6, 4e6}, timing.SLO{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Nonce) != promptsize.NonceLen {
			t.Fatalf("Load.Nonce %q after a sweep, want a drawn nonce", l.Nonce)
		}
		if len(contents) != 15 {
			t.Fatalf("%d requests sent, want 15", len(contents))
		}
		prefix := ""
		if shared > 0 {
			p, err := sharedPrefix(context.Background(), l.Builder, shared)
			if err != nil || p == "" {
				t.Fatalf("shared prefix: %q, %v", p, err)
			}
			prefix = p
		}
		seen := map[string]bool{}
		for _, c := range contents {
			rest, ok := strings.CutPrefix(c, prefix)
			salt, _, _ := strings.Cut(rest, "\n")
			if !ok || !strings.HasSuffix(salt, "."+l.Nonce) {
				t.Fatalf("shared %d: content %.60q does not start with the shared text and a salt of nonce %q", shared, c, l.Nonce)
			}
			if seen[salt] {
				t.Errorf("salt %q sent twice in one sweep", salt)
			}
			seen[salt] = true
		}
	}
}
