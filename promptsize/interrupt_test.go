package promptsize_test

import (
	"context"
	"errors"
	"testing"

	"github.com/inferbench/inferbench/promptsize"
)

// cancelAt is a Counter that never looks at its context, as a CPU-bound
// tokenizer does not, and cancels the build's context during its k-th
// call, as a SIGINT arriving then would.
type cancelAt struct {
	inner  promptsize.Counter
	k      int
	cancel context.CancelFunc
	calls  int
}

func (c *cancelAt) Count(ctx context.Context, m []promptsize.Message) (int, error) {
	c.calls++
	if c.calls == c.k {
		c.cancel()
	}
	return c.inner.Count(context.Background(), m)
}

// TestBuildHearsCancelBetweenSteps cancels a build at every step of its
// search in turn (the template overhead, the secant search, and the
// repairs of an overshoot: cuts inside a unit and tails), with a counter
// that ignores its context: the build stops at that step, with an error
// wrapping context.Canceled, and asks the counter nothing more.
func TestBuildHearsCancelBetweenSteps(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fill   promptsize.Fill
		target int
		repair bool // look from target up for a build that repairs
		inner  func() promptsize.Counter
		atoms  []string
	}{
		{"atoms", promptsize.FillAtoms, 5000, false, func() promptsize.Counter { return newMerging() }, nil},
		{"corpus", promptsize.FillCorpus, 5000, false, func() promptsize.Counter { return newBPE() }, nil},
		{"corpus-repair", promptsize.FillCorpus, 4000, true, func() promptsize.Counter { return newMerging() }, nil},
		{"atoms-repair", promptsize.FillAtoms, fakeOverhead, true, func() promptsize.Counter { return newMerging() }, []string{"a "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The uncancelled build's steps.
			var full *cancelAt
			var p promptsize.Prompt
			for end := tc.target + 200; tc.target < end; tc.target++ {
				full = &cancelAt{inner: tc.inner(), cancel: func() {}}
				var err error
				p, err = (&promptsize.Builder{Counter: full, Fill: tc.fill, Atoms: tc.atoms}).Build(context.Background(), tc.target)
				if err != nil && !tc.repair {
					t.Fatal(err)
				}
				if err == nil && (!tc.repair || p.Repair != "") {
					break
				}
			}
			if tc.repair && p.Repair == "" {
				t.Fatal("no target of 200 tried needs a repair")
			}
			if full.calls < 3 {
				t.Fatalf("only %d counter calls; the test needs a search", full.calls)
			}
			t.Logf("pp=%d: %d steps, repair %q", tc.target, full.calls, p.Repair)
			for k := 1; k <= full.calls; k++ {
				ctx, cancel := context.WithCancel(context.Background())
				c := &cancelAt{inner: tc.inner(), k: k, cancel: cancel}
				_, err := (&promptsize.Builder{Counter: c, Fill: tc.fill, Atoms: tc.atoms}).Build(ctx, tc.target)
				cancel()
				if k == full.calls && err == nil {
					continue // cancelled during the last step: the prompt was found
				}
				if !errors.Is(err, context.Canceled) {
					t.Errorf("cancelled at step %d: %v, want context.Canceled", k, err)
				}
				if c.calls != k {
					t.Errorf("cancelled at step %d: the counter was called %d times", k, c.calls)
				}
			}
		})
	}
}
