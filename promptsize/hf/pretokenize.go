package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dlclark/regexp2"
)

// behavior is a Split pre-tokenizer's SplitDelimiterBehavior: what becomes
// of the text a pattern matched.
type behavior int

const (
	removed            behavior = iota // matches are dropped
	isolated                           // matches become pieces of their own
	mergedWithPrevious                 // a match joins the piece before it
	mergedWithNext                     // a match joins the piece after it
	contiguous                         // adjacent matches join into one piece
)

var behaviors = map[string]behavior{
	"Removed":            removed,
	"Isolated":           isolated,
	"MergedWithPrevious": mergedWithPrevious,
	"MergedWithNext":     mergedWithNext,
	"Contiguous":         contiguous,
}

// gpt2Pattern is the split the ByteLevel pre-tokenizer applies when its
// use_regex is true.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// A splitStep cuts every piece it is given with one pattern, a regular
// expression (run with regexp2, which has the lookahead Go's regexp lacks)
// or a literal string.
type splitStep struct {
	re       *regexp2.Regexp
	fast     fastMatcher // when non-nil, used instead of re (same matches)
	literal  string
	behavior behavior
	invert   bool
}

// preTokenizer is the declared pre-tokenizer sequence: the Split steps in
// order, and whether a ByteLevel step ends it (the model then works on
// bytes).
type preTokenizer struct {
	steps     []splitStep
	byteLevel bool
}

const supportedPreTokenizers = "Sequence, Split (String or Regex pattern, any behavior), ByteLevel without add_prefix_space as the last step"

func parsePreTokenizer(raw json.RawMessage, path string, pt *preTokenizer) error {
	if isNull(raw) {
		return nil
	}
	c, err := parseComponent(raw, path)
	if err != nil {
		return err
	}
	if pt.byteLevel {
		return unsupported(path, fmt.Sprintf("pre-tokenizer %q after ByteLevel", c.Type), supportedPreTokenizers)
	}
	switch c.Type {
	case "Sequence":
		for i, sub := range c.PreTokenizers {
			if err := parsePreTokenizer(sub, fmt.Sprintf("%s.pretokenizers[%d]", path, i), pt); err != nil {
				return err
			}
		}
		return nil
	case "Split":
		b, ok := behaviors[c.Behavior]
		if !ok {
			return unsupported(path, fmt.Sprintf("Split behavior %q", c.Behavior), "Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous")
		}
		st := splitStep{behavior: b, invert: c.Invert}
		switch {
		case c.Pattern != nil && c.Pattern.Regex != nil:
			re, err := regexp2.Compile(*c.Pattern.Regex, regexp2.None)
			if err != nil {
				return fmt.Errorf("hf: tokenizer.json: %s: expected a regular expression regexp2 compiles, found %q: %w", path, *c.Pattern.Regex, err)
			}
			// regexp2 backtracks: a pattern like (a+)+$ takes exponential
			// time on some texts. A match that runs past the timeout ends
			// the split with an error Count reports (scratch.err).
			re.MatchTimeout = splitMatchTimeout
			st.re = re
			st.fast = fastMatcherFor(*c.Pattern.Regex)
		case c.Pattern != nil && c.Pattern.String != nil && *c.Pattern.String != "":
			st.literal = *c.Pattern.String
		default:
			return unsupported(path, "Split without a non-empty String or Regex pattern", supportedPreTokenizers)
		}
		pt.steps = append(pt.steps, st)
		return nil
	case "ByteLevel":
		if c.AddPrefixSpace {
			return unsupported(path, "ByteLevel with add_prefix_space", supportedPreTokenizers)
		}
		if c.UseRegex {
			pt.steps = append(pt.steps, splitStep{re: regexp2.MustCompile(gpt2Pattern, regexp2.None), behavior: isolated})
		}
		pt.byteLevel = true
		return nil
	default:
		return unsupported(path, fmt.Sprintf("pre-tokenizer type %q", c.Type), supportedPreTokenizers)
	}
}

// splitMatchTimeout bounds one regexp2 match of a Split pattern: far above
// what a real pattern takes (microseconds), far below a hang.
const splitMatchTimeout = time.Second

// ErrPatternTimeout is wrapped by the error of Count when a pre-tokenizer
// regular expression ran past its match timeout (catastrophic backtracking).
var ErrPatternTimeout = errors.New("a pre-tokenizer pattern exceeded its match timeout")

// span is a part of a piece: byte offsets and whether the pattern matched it.
type span struct {
	start, end int
	match      bool
}

// split appends to dst the pieces that st cuts s into. Empty pieces are
// dropped, as Hugging Face drops them.
func (st *splitStep) split(dst []string, s string, sc *scratch) []string {
	spans := st.find(sc.spans[:0], s, sc)
	sc.spans = spans
	if st.invert {
		for i := range spans {
			spans[i].match = !spans[i].match
		}
	}
	switch st.behavior {
	case isolated:
		for _, sp := range spans {
			dst = append(dst, s[sp.start:sp.end])
		}
	case removed:
		for _, sp := range spans {
			if !sp.match {
				dst = append(dst, s[sp.start:sp.end])
			}
		}
	case mergedWithPrevious:
		prevMatch := false
		first := len(dst)
		for _, sp := range spans {
			if sp.match && !prevMatch && len(dst) > first {
				// Extend the previous piece, which ends where sp starts.
				last := dst[len(dst)-1]
				dst[len(dst)-1] = s[sp.start-len(last) : sp.end]
			} else {
				dst = append(dst, s[sp.start:sp.end])
			}
			prevMatch = sp.match
		}
	case mergedWithNext:
		// Walk backwards, as Hugging Face does, then restore the order.
		first := len(dst)
		prevMatch := false
		for i := len(spans) - 1; i >= 0; i-- {
			sp := spans[i]
			if sp.match && !prevMatch && len(dst) > first {
				last := dst[len(dst)-1]
				dst[len(dst)-1] = s[sp.start : sp.end+len(last)]
			} else {
				dst = append(dst, s[sp.start:sp.end])
			}
			prevMatch = sp.match
		}
		for i, j := first, len(dst)-1; i < j; i, j = i+1, j-1 {
			dst[i], dst[j] = dst[j], dst[i]
		}
	case contiguous:
		prevMatch := false
		first := len(dst)
		for _, sp := range spans {
			if sp.match && prevMatch && len(dst) > first {
				last := dst[len(dst)-1]
				dst[len(dst)-1] = s[sp.start-len(last) : sp.end]
			} else {
				dst = append(dst, s[sp.start:sp.end])
			}
			prevMatch = sp.match
		}
	}
	return dst
}

// find covers s with spans: the non-empty matches of the pattern and the
// gaps between them, in order.
func (st *splitStep) find(spans []span, s string, sc *scratch) []span {
	prev := 0
	add := func(start, end int) {
		if start == end {
			return
		}
		if prev < start {
			spans = append(spans, span{prev, start, false})
		}
		spans = append(spans, span{start, end, true})
		prev = end
	}
	switch {
	case st.fast != nil:
		for i := 0; i < len(s); {
			if e := st.fast(s, i); e > i {
				add(i, e)
				i = e
				continue
			}
			_, n := decode(s, i)
			i += n
		}
	case st.re == nil:
		for i := 0; i < len(s); {
			j := strings.Index(s[i:], st.literal)
			if j < 0 {
				break
			}
			add(i+j, i+j+len(st.literal))
			i += j + len(st.literal)
		}
	default:
		runes, offs := sc.runesOf(s)
		m, err := st.re.FindRunesMatch(runes)
		for err == nil && m != nil {
			add(offs[m.Index], offs[m.Index+m.Length])
			m, err = st.re.FindNextMatch(m)
		}
		if err != nil && sc.err == nil {
			// The rest of the piece stays unsplit; Count returns the error.
			sc.err = fmt.Errorf("hf: pre-tokenizer pattern %.60q: %w (%w)", st.re.String(), ErrPatternTimeout, err)
		}
	}
	if prev < len(s) {
		spans = append(spans, span{prev, len(s), false})
	}
	return spans
}

// runesOf decodes s into the scratch rune buffer and records the byte
// offset of every rune (and of the end), because regexp2 reports matches in
// runes.
func (sc *scratch) runesOf(s string) ([]rune, []int) {
	runes, offs := sc.runes[:0], sc.offs[:0]
	// An invalid byte decodes as one utf8.RuneError, so every byte stays
	// addressable.
	for i, r := range s {
		runes = append(runes, r)
		offs = append(offs, i)
	}
	offs = append(offs, len(s))
	sc.runes, sc.offs = runes, offs
	return runes, offs
}
