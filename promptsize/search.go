package promptsize

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxCallsPerBuild bounds the Counter calls of one Build, so that a counter
// that is not monotonic in the content cannot keep the search going forever.
const maxCallsPerBuild = 400

// searcher runs the counter calls of one build and remembers their results.
type searcher struct {
	ctx     context.Context
	counter Counter
	system  string
	memo    map[string]int
	calls   int
	// after, when set, makes the request head followed by one user
	// message, in place of the system message and the user message.
	after bool
	head  []Message
}

// messages returns the request whose last user message is content.
func (s *searcher) messages(content string) []Message {
	if !s.after {
		return requestMessages(s.system, content)
	}
	return append(slices.Clone(s.head), Message{Role: "user", Content: content})
}

func newSearcher(ctx context.Context, c Counter, system string) *searcher {
	return &searcher{ctx: ctx, counter: c, system: system, memo: make(map[string]int)}
}

// messages returns the request for content: the system message, if any, and
// one user message.
func requestMessages(system, content string) []Message {
	if system == "" {
		return []Message{{Role: "user", Content: content}}
	}
	return []Message{{Role: "system", Content: system}, {Role: "user", Content: content}}
}

// count returns the token count of the request whose user message is
// content, calling the Counter only for content not counted before. Every
// step of the search comes through here, so it is where the build hears
// its context: a cancelled one stops it even when the count is memoised.
func (s *searcher) count(content string) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, fmt.Errorf("promptsize: build stopped after %d counter calls: %w", s.calls, err)
	}
	if n, ok := s.memo[content]; ok {
		return n, nil
	}
	if s.calls >= maxCallsPerBuild {
		return 0, fmt.Errorf("promptsize: gave up after %d counter calls; expected a count that grows with the content", s.calls)
	}
	s.calls++
	n, err := s.counter.Count(s.ctx, s.messages(content))
	if err != nil {
		return 0, fmt.Errorf("promptsize: counting a request with %d bytes of content: %w", len(content), err)
	}
	if n < 0 {
		return 0, fmt.Errorf("promptsize: counter returned %d tokens for %d bytes of content; expected a count >= 0", n, len(content))
	}
	s.memo[content] = n
	return n, nil
}

// outcome is the result of solving for one source.
type outcome struct {
	found   bool
	content string // without the salt prefix
	units   int    // whole units of the source in content
	repair  string // how the count was made exact after an overshoot; "" if not needed
	rate    float64
	note    string // for an UnreachableError when !found
	// spaced marks a found content that ends in white space, the only
	// repair this source found: the Builder takes it only when no other
	// source does better.
	spaced bool
}

// solve looks for n units of src (plus a repair at the end) such that the
// request with content pre+text counts exactly target tokens, given
// base = count(pre) < target and a guess of the tokens per unit.
//
// The unit count is found by a safeguarded secant search on the count
// g(n) = count(pre + src.text(n)), which real tokenizers make close to
// linear: g(n) ≈ base + rate·n. The first probe is
//
//	n₁ = ⌈(target − base) / rate⌉
//
// with rate remembered from earlier builds or guessed; each later probe
// extrapolates through the measured points, or, once the target is
// bracketed by lo < hi with g(lo) < target < g(hi), interpolates
//
//	n = lo + round((target − g(lo)) · (hi − lo) / (g(hi) − g(lo)))
//
// falling back to bisection when the same end of the bracket moves twice
// in a row (the Illinois rule). Counts are memoised, so no content is
// counted twice. When the count jumps over the target between two unit
// counts (an overshoot: tokenizer merges at the boundary), solve repairs it:
// first by cutting inside the next unit (bisecting over its characters),
// then by appending a tail of each of tails (repeated k times) to the
// longest content that stayed below the target.
func (s *searcher) solve(src source, pre string, target, base int, rate float64, tails []string) (outcome, error) {
	g := func(n int) (int, error) { return s.count(pre + src.text(n)) }
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		rate = 1
	}
	if target == base {
		return outcome{found: true, content: "", rate: rate}, nil
	}
	// maxBytes bounds the text tried: a source adding fewer than one token
	// per 64 bytes is not one to build a prompt from.
	maxBytes := 64*(target-base) + 4096

	lo, flo := 0, base
	hi, fhi := -1, 0
	n := lo + max(1, int(math.Ceil(float64(target-flo)/rate)))
	side, streak := 0, 0
	for {
		f, err := g(n)
		if err != nil {
			return outcome{}, err
		}
		if f == target {
			return outcome{found: true, content: src.text(n), units: n, rate: float64(f-base) / float64(n)}, nil
		}
		newSide := -1
		if f < target {
			lo, flo = n, f
		} else {
			hi, fhi = n, f
			newSide = 1
		}
		if newSide == side {
			streak++
		} else {
			side, streak = newSide, 1
		}
		if hi >= 0 && hi-lo <= 1 {
			break
		}
		if hi < 0 {
			// Extrapolate from the measured rate.
			r := rate
			if lo > 0 && flo > base {
				r = float64(flo-base) / float64(lo)
			}
			step := int(math.Ceil(float64(target-flo) / r))
			if flo == base {
				step = max(step, lo) // no growth yet: at least double
			}
			n = lo + max(1, step)
			if len(src.text(n)) > maxBytes {
				return outcome{note: fmt.Sprintf("%s: %d %s gave only %d tokens; it grows too slowly to reach %d",
					src.describe(), lo, src.unitName(), flo, target)}, nil
			}
			continue
		}
		if streak >= 2 {
			n = lo + (hi-lo)/2
		} else {
			n = lo + int(math.Round(float64(target-flo)*float64(hi-lo)/float64(fhi-flo)))
		}
		n = min(max(n, lo+1), hi-1)
	}

	// Overshoot: g(lo) < target < g(hi) with hi = lo+1.
	rate = float64(fhi-base) / float64(hi)
	low := src.text(lo)
	high := src.text(hi)
	below, fbelow := low, flo // the longest content known to count below target
	above := fhi
	// A repair whose content ends in white space is kept only as a last
	// resort: a chat template that trims a message and one that does not
	// count it differently (see atomSource.text).
	var spaced *outcome
	exact := func(o outcome) (outcome, bool) {
		if !endsInSpace(o.content) {
			return o, true
		}
		if spaced == nil {
			spaced = &o
		}
		return outcome{}, false
	}
	// (a) Cut inside unit hi.
	a, b := len(low), len(high)
	for {
		c := runeBoundaryBetween(high, a, b)
		if c < 0 {
			break
		}
		f, err := s.count(pre + high[:c])
		if err != nil {
			return outcome{}, err
		}
		if f == target {
			if o, ok := exact(outcome{found: true, content: high[:c], units: lo, rate: rate,
				repair: fmt.Sprintf("cut inside unit %d of %s", hi, src.describe())}); ok {
				return o, nil
			}
			b = c // look for a shorter cut that counts as much
			continue
		}
		if f < target {
			a = c
			if f >= fbelow {
				below, fbelow = high[:c], f
			}
		} else {
			b = c
			above = min(above, f)
		}
	}
	// (b) A tail of another atom after the longest content below target.
	bases := []string{below}
	if below != low {
		bases = append(bases, low)
	}
	var tried []string
	for _, t := range tails {
		tried = append(tried, fmt.Sprintf("%q", t))
		for _, body := range bases {
			fb, err := s.count(pre + body)
			if err != nil {
				return outcome{}, err
			}
			for k := 1; k <= min(target-fb, 16); k++ {
				content := body + strings.Repeat(t, k)
				f, err := s.count(pre + content)
				if err != nil {
					return outcome{}, err
				}
				if f == target {
					if o, ok := exact(outcome{found: true, content: content, units: lo, rate: rate,
						repair: fmt.Sprintf("tail %q×%d", t, k)}); ok {
						return o, nil
					}
					continue
				}
				if f > target {
					above = min(above, f)
					break
				}
				fbelow = max(fbelow, f)
			}
		}
	}
	if spaced != nil {
		o := *spaced
		o.spaced = true
		return o, nil
	}
	note := fmt.Sprintf("%s: %d %s count %d and %d count %d", src.describe(), lo, src.unitName(), flo, hi, fhi)
	if len(high)-len(low) > 1 {
		note += ", cuts inside the last unit"
	}
	if len(tried) > 0 {
		note += ", tails " + strings.Join(tried, ", ")
	}
	note += fmt.Sprintf(" came no closer than %d and %d", fbelow, above)
	return outcome{note: note, rate: rate}, nil
}

// endsInSpace reports whether s ends in white space.
func endsInSpace(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && unicode.IsSpace(r)
}
