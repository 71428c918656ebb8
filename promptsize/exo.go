package promptsize

import (
	"context"
	"fmt"
	"strings"
)

// ExoSearch builds a prompt the way exo's benchmark client does
// (PromptSizer in exo's bench/exo_bench.py), kept as a reference to compare
// the Builder with: same counts asked for, same failure modes.
//
// It counts the request with empty content (base), estimates the tokens per
// atom from a sample of 100 atoms,
//
//	rate = (count(atom×100) − base) / 100,   estimate = ⌊(target − base) / rate⌋,
//
// binary-searches the smallest atom count n in [0, 2·estimate + 100) whose
// count is at least target, counts atom×n once more to verify it, and fails
// if that count is not target (exo's "Overshot" error, here an
// *UnreachableError) or if target is below base (an *OverheadError). There
// is no system message, no memo and no repair. Prompt.Calls counts every
// Counter call, the base included; exo measures the base once per sizer, so
// its later builds cost one call fewer.
func ExoSearch(ctx context.Context, c Counter, target int, atom string) (Prompt, error) {
	calls := 0
	count := func(content string) (int, error) {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("promptsize: exo search stopped after %d counter calls: %w", calls, err)
		}
		calls++
		n, err := c.Count(ctx, requestMessages("", content))
		if err != nil {
			return 0, fmt.Errorf("promptsize: counting a request with %d bytes of content: %w", len(content), err)
		}
		return n, nil
	}
	if atom == "" {
		return Prompt{}, fmt.Errorf("promptsize: exo search needs a non-empty atom")
	}
	base, err := count("")
	if err != nil {
		return Prompt{}, err
	}
	if target < base {
		return Prompt{}, &OverheadError{Target: target, Overhead: base, Template: base}
	}
	sample, err := count(strings.Repeat(atom, 100))
	if err != nil {
		return Prompt{}, err
	}
	rate := float64(sample-base) / 100
	if rate <= 0 {
		return Prompt{}, fmt.Errorf("promptsize: 100 atoms %q add %d tokens; expected a positive count", atom, sample-base)
	}
	estimate := int(float64(target-base) / rate)
	low, high := 0, 2*estimate+100
	for low < high {
		mid := (low + high) / 2
		n, err := count(strings.Repeat(atom, mid))
		if err != nil {
			return Prompt{}, err
		}
		if n < target {
			low = mid + 1
		} else {
			high = mid
		}
	}
	content := strings.Repeat(atom, low)
	n, err := count(content)
	if err != nil {
		return Prompt{}, err
	}
	if n != target {
		return Prompt{}, &UnreachableError{Target: target, Tried: []string{
			fmt.Sprintf("exo search with atom %q: %d atoms count %d (overshot)", atom, low, n)}}
	}
	return Prompt{
		Target: target, Tokens: n, Content: content, Messages: requestMessages("", content),
		Overhead: base, Fill: atomSource{atom}.describe(), Units: low, Calls: calls,
	}, nil
}
