package benchkit

import (
	"context"
	"fmt"
	"strings"

	"github.com/inferbench/inferbench/promptsize"
)

// sharedPrefix returns the text every salt starts with when requests are
// to share n tokens after the chat template (a prefix-cache ablation), ""
// for n ≤ 0: the user content of an exact prompt, without the white space
// at its end, and a newline, the whole exactly n tokens when a salt
// follows. Whether that newline is a token of its own before a salt's
// first character (a BPE tokenizer's "\n") or joins it (the embedded
// engine's tokenizer), and whether the white space cut from the end was a
// token, is counted, not assumed: the content is made a token shorter or
// longer to match, or, when no length does (a newline of its own is one
// token too many for n = 1), goes without the newline. The prompts then
// share exactly n content tokens and differ from the salt's first
// (promptsize.RunSalt).
func sharedPrefix(ctx context.Context, b *promptsize.Builder, n int) (string, error) {
	if n <= 0 {
		return "", nil
	}
	over, err := b.Overhead(ctx)
	if err != nil {
		return "", err
	}
	count := func(content string) (int, error) {
		msgs := []promptsize.Message{{Role: "user", Content: content}}
		if b.System != "" {
			msgs = append([]promptsize.Message{{Role: "system", Content: b.System}}, msgs...)
		}
		c, err := b.Counter.Count(ctx, msgs)
		if err != nil {
			return 0, fmt.Errorf("benchkit: count a shared prefix: %w", err)
		}
		return c - over, nil
	}
	// A salt as the requests' begin, and its own count: what the shared
	// text adds before it is its share of every prompt.
	probe := promptsize.RunSalt("k3f9x2ab", 0, 0)
	alone, err := count(probe)
	if err != nil {
		return "", err
	}
	var tried []string
	for _, sep := range []string{"\n", ""} {
		for _, k := range []int{n, n - 1, n + 1, n - 2, n + 2} {
			if k < 1 {
				continue
			}
			p, err := b.Build(ctx, over+k)
			if err != nil {
				return "", fmt.Errorf("%w: shared prefix of %d tokens: %w", ErrBadLoad, n, err)
			}
			text := strings.TrimRight(p.Messages[len(p.Messages)-1].Content, " \t\r\n") + sep
			with, err := count(text + probe)
			if err != nil {
				return "", err
			}
			if with-alone == n {
				return text, nil
			}
			tried = append(tried, fmt.Sprintf("%d", with-alone))
		}
	}
	return "", fmt.Errorf("%w: no shared prefix of exactly %d tokens before a salt: the texts tried add %s tokens", ErrBadLoad, n, strings.Join(tried, ", "))
}
