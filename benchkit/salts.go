package benchkit

import (
	"context"
	"fmt"

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
	over, err := b.Overhead(ctx)
	if err != nil {
		return "", err
	}
	p, err := b.Build(ctx, over+n)
	if err != nil {
		return "", fmt.Errorf("%w: shared prefix of %d tokens: %w", ErrBadLoad, n, err)
	}
	return p.Messages[len(p.Messages)-1].Content + "\n", nil
}
