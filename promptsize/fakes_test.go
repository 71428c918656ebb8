package promptsize_test

import (
	"context"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/inferbench/inferbench/promptsize"
)

// fakeTokenizer imitates a byte-level BPE tokenizer behind a ChatML-like
// template, closely enough to exercise the Builder the way real ones do:
//
//   - the text is split into pieces as GPT-style pre-tokenizers do: a word
//     (letters, with one leading space), a number (digits, with one leading
//     space), punctuation, and runs of white space, where a space before a
//     word or number joins that word;
//   - a word costs ⌈bytes/4⌉ tokens, a number ⌈digits/3⌉, punctuation
//     ⌈bytes/2⌉ and a white-space run ⌈bytes/4⌉;
//   - with mergeEvery = m > 0, every m-th word piece costs one token more
//     (a merge that splits differently), so the count jumps by 2 at some
//     lengths and some targets cannot be hit with whole atoms;
//   - with double set, every piece costs twice as much, so only targets at
//     an even distance from the overhead can be hit at all.
//
// A request costs system (fixed template tokens, like a default system
// prompt or a date header), 5 per message plus its role and content, and 3
// for the generation prompt.
type fakeTokenizer struct {
	system     int
	mergeEvery int
	double     bool
	calls      atomic.Int64
}

func newBPE() *fakeTokenizer     { return &fakeTokenizer{system: 15} }
func newMerging() *fakeTokenizer { return &fakeTokenizer{system: 15, mergeEvery: 5} }
func newDouble() *fakeTokenizer  { return &fakeTokenizer{system: 15, double: true} }

// overhead is the count of one empty user message: 15 + 5 + 1 ("user") + 3.
const fakeOverhead = 24

func (f *fakeTokenizer) Count(ctx context.Context, msgs []promptsize.Message) (int, error) {
	f.calls.Add(1)
	n := f.system + 3
	for _, m := range msgs {
		n += 5 + f.text(m.Role) + f.text(m.Content)
	}
	return n, nil
}

func (f *fakeTokenizer) text(s string) int {
	total, words := 0, 0
	for _, p := range pieces(s) {
		var t int
		switch p.kind {
		case pieceWord:
			t = (p.size + 3) / 4
			words++
			if f.mergeEvery > 0 && words%f.mergeEvery == 0 {
				t++
			}
		case pieceNumber:
			t = (p.digits + 2) / 3
		case pieceSpace:
			t = (p.size + 3) / 4
		default:
			t = (p.size + 1) / 2
		}
		if f.double {
			t *= 2
		}
		total += t
	}
	return total
}

const (
	pieceWord = iota
	pieceNumber
	pieceSpace
	piecePunct
)

type piece struct{ kind, size, digits int }

// pieces splits s as described on fakeTokenizer.
func pieces(s string) []piece {
	var out []piece
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		start := i
		lead := 0
		if r == ' ' && i+1 < len(s) {
			next, _ := utf8.DecodeRuneInString(s[i+1:])
			if !unicode.IsSpace(next) {
				lead = 1
				i++
				r, size = next, utf8.RuneLen(next)
				if size < 0 {
					size = 1
				}
			}
		}
		switch {
		case unicode.IsLetter(r):
			for i < len(s) {
				r, size = utf8.DecodeRuneInString(s[i:])
				if !unicode.IsLetter(r) {
					break
				}
				i += size
			}
			out = append(out, piece{kind: pieceWord, size: i - start})
		case unicode.IsDigit(r):
			d := 0
			for i < len(s) {
				r, size = utf8.DecodeRuneInString(s[i:])
				if !unicode.IsDigit(r) {
					break
				}
				i += size
				d++
			}
			out = append(out, piece{kind: pieceNumber, size: i - start, digits: d})
		case unicode.IsSpace(r) && lead == 0:
			// A run of white space, leaving a last space that precedes a
			// non-space to the next piece.
			for i < len(s) {
				r, size = utf8.DecodeRuneInString(s[i:])
				if !unicode.IsSpace(r) {
					break
				}
				if r == ' ' && i+1 < len(s) && i > start {
					next, _ := utf8.DecodeRuneInString(s[i+1:])
					if !unicode.IsSpace(next) {
						break
					}
				}
				i += size
			}
			out = append(out, piece{kind: pieceSpace, size: i - start})
		default:
			for i < len(s) {
				r, size = utf8.DecodeRuneInString(s[i:])
				if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsSpace(r) {
					break
				}
				i += size
			}
			if i == start+lead {
				i += size // an invalid byte or other rune: one piece
			}
			out = append(out, piece{kind: piecePunct, size: i - start})
		}
	}
	return out
}

// callCounter counts the calls made to c.
type callCounter struct {
	c promptsize.Counter
	n atomic.Int64
}

func (c *callCounter) Count(ctx context.Context, msgs []promptsize.Message) (int, error) {
	c.n.Add(1)
	return c.c.Count(ctx, msgs)
}
