package benchkit

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/inferbench/inferbench/promptsize"
)

// sharedPrefix returns the text every salt starts with when requests are
// to share n tokens after the chat template (a prefix-cache ablation): the
// user content of an exact prompt of the overhead plus n tokens, and a
// newline. n ≤ 0 gives "".
func sharedPrefix(ctx context.Context, b *promptsize.Builder, n int) (string, error) {
	if n <= 0 {
		return "", nil
	}
	over, err := Overhead(ctx, b)
	if err != nil {
		return "", err
	}
	p, err := b.Build(ctx, over+n)
	if err != nil {
		return "", fmt.Errorf("%w: shared prefix of %d tokens: %w", ErrBadLoad, n, err)
	}
	return p.Messages[len(p.Messages)-1].Content + "\n", nil
}

// RunNonce returns an invocation's run nonce (promptsize.NewNonce): drawn
// from seed when seeded is true (the command's --seed was given), so that
// the run's prompts can be reproduced, else from the operating system's
// random source, so that no two invocations send a common prompt.
func RunNonce(seed uint64, seeded bool) string {
	if !seeded {
		return promptsize.NewNonce(nil)
	}
	return promptsize.NewNonce(rand.NewPCG(seed, 0x6e6f6e6365)) // "nonce"
}
