package hf

import (
	"unicode"
	"unicode/utf8"
)

// Hand-written matchers for the Split regexes of well-known tokenizers.
// regexp2 is exact but spends most of an encode looking up Unicode
// categories; these functions follow the same backtracking semantics
// (alternatives tried in order, greedy quantifiers giving back one rune at a
// time, the same Unicode tables: \s is unicode.IsSpace, \p{L} unicode.L, and
// so on). A pattern that is not one of these strings, byte for byte, runs on
// regexp2. FuzzFastSplit checks every matcher against regexp2.

// A fastMatcher returns the end of the match that starts exactly at byte i
// of s, or -1 when the pattern matches nothing starting there.
type fastMatcher func(s string, i int) int

const (
	// llama3Pattern is the pre-tokenizer regex of Llama 3.x.
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// qwen2Pattern is Llama 3's with single digits (Qwen2, Qwen2.5, Qwen3).
	qwen2Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// o200kPattern is the pre-tokenizer regex of o200k_base (gpt-oss).
	o200kPattern = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// deepseekDigits, deepseekCJK and deepseekMain are DeepSeek V3's three
	// Split regexes, applied in that order. The CJK ranges and the CR and LF
	// of the last one are literal characters in tokenizer.json.
	deepseekDigits = `\p{N}{1,3}`
	deepseekCJK    = "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"
	deepseekMain   = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
)

// fastMatcherFor returns the hand-written matcher of a pattern, or nil.
func fastMatcherFor(pattern string) fastMatcher {
	switch pattern {
	case llama3Pattern:
		return func(s string, i int) int { return matchLlama(s, i, 3) }
	case qwen2Pattern:
		return func(s string, i int) int { return matchLlama(s, i, 1) }
	case o200kPattern:
		return matchO200k
	case deepseekDigits:
		return func(s string, i int) int { return numbers(s, i, 3) }
	case deepseekCJK:
		return matchDeepseekCJK
	case deepseekMain:
		return matchDeepseekMain
	}
	return nil
}

func decode(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

func isCRLF(r rune) bool { return r == '\r' || r == '\n' }

// contraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at i: the end, or -1.
// Case-insensitive as regexp2 is: the input rune lowered with unicode.ToLower.
func contraction(s string, i int) int {
	if i >= len(s) || s[i] != '\'' {
		return -1
	}
	lower := func(j int) (rune, int) {
		if j >= len(s) {
			return -1, 0
		}
		r, n := decode(s, j)
		return unicode.ToLower(r), n
	}
	c1, n1 := lower(i + 1)
	switch c1 {
	case 's', 't', 'm', 'd':
		return i + 1 + n1
	case 'r', 'v':
		if c2, n2 := lower(i + 1 + n1); c2 == 'e' {
			return i + 1 + n1 + n2
		}
	case 'l':
		if c2, n2 := lower(i + 1 + n1); c2 == 'l' {
			return i + 1 + n1 + n2
		}
	}
	return -1
}

// run returns the end of the longest run of runes from i that satisfy in.
func run(s string, i int, in func(rune) bool) int {
	for i < len(s) {
		r, n := decode(s, i)
		if !in(r) {
			break
		}
		i += n
	}
	return i
}

// numbers matches \p{N}{1,max} at i.
func numbers(s string, i, max int) int {
	j := i
	for k := 0; k < max && j < len(s); k++ {
		r, n := decode(s, j)
		if !unicode.IsNumber(r) {
			break
		}
		j += n
	}
	if j == i {
		return -1
	}
	return j
}

// whitespace matches the three whitespace alternatives that end all these
// patterns, in order, at i where s[i] is whitespace:
//
//	\s*[\r\n]+  the run up to and including its last CR or LF;
//	\s+(?!\S)   else the run less its last rune, when the run has two or
//	            more runes and is followed by a non-space (the whole run at
//	            the end of s);
//	\s+         else the whole run.
func whitespace(s string, i int) int {
	end, lastNL, lastStart, runes := i, -1, i, 0
	for end < len(s) {
		r, n := decode(s, end)
		if !unicode.IsSpace(r) {
			break
		}
		if isCRLF(r) {
			lastNL = end
		}
		lastStart = end
		end += n
		runes++
	}
	switch {
	case runes == 0:
		return -1
	case lastNL >= 0:
		return lastNL + 1
	case end == len(s) || runes < 2:
		return end
	default:
		return lastStart
	}
}

// matchLlama is llama3Pattern (maxDigits 3) or qwen2Pattern (maxDigits 1).
func matchLlama(s string, i, maxDigits int) int {
	r, n := decode(s, i)
	if r == '\'' {
		if e := contraction(s, i); e >= 0 {
			return e
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if unicode.IsLetter(r) {
		return run(s, i, unicode.IsLetter)
	}
	if !isCRLF(r) && !unicode.IsNumber(r) && i+n < len(s) {
		if r2, _ := decode(s, i+n); unicode.IsLetter(r2) {
			return run(s, i+n, unicode.IsLetter)
		}
	}
	// \p{N}{1,max}
	if unicode.IsNumber(r) {
		return numbers(s, i, maxDigits)
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
	j := i
	if r == ' ' {
		j++
	}
	if k := run(s, j, isOther); k > j {
		return run(s, k, isCRLF)
	}
	return whitespace(s, i)
}

// isOther is [^\s\p{L}\p{N}].
func isOther(r rune) bool { return !unicode.IsSpace(r) && !unicode.IsLetter(r) && !unicode.IsNumber(r) }

// isUpperish is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and isLowerish
// [\p{Ll}\p{Lm}\p{Lo}\p{M}] of o200kPattern.
func isUpperish(r rune) bool {
	if r < utf8.RuneSelf {
		return 'A' <= r && r <= 'Z'
	}
	return unicode.Is(unicode.Lu, r) || unicode.Is(unicode.Lt, r) || unicode.Is(unicode.Lm, r) || unicode.Is(unicode.Lo, r) || unicode.IsMark(r)
}

func isLowerish(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z'
	}
	return unicode.Is(unicode.Ll, r) || unicode.Is(unicode.Lm, r) || unicode.Is(unicode.Lo, r) || unicode.IsMark(r)
}

// isO200kPrefix is [^\r\n\p{L}\p{N}].
func isO200kPrefix(r rune) bool { return !isCRLF(r) && !unicode.IsLetter(r) && !unicode.IsNumber(r) }

// letterWord1 matches U*W+C? from p (U runes satisfying upper, W runes
// satisfying lower, C a contraction), backtracking U* one rune at a time
// until W+ can start.
func letterWord1(s string, p int, upper, lower func(rune) bool) int {
	a := run(s, p, upper)
	for b := a; ; {
		if b < len(s) {
			if r, _ := decode(s, b); lower(r) {
				e := run(s, b, lower)
				if c := contraction(s, e); c >= 0 {
					return c
				}
				return e
			}
		}
		if b == p {
			return -1
		}
		_, n := utf8.DecodeLastRuneInString(s[p:b])
		b -= n
	}
}

// letterWord2 matches U+W*C? from p.
func letterWord2(s string, p int, upper, lower func(rune) bool) int {
	a := run(s, p, upper)
	if a == p {
		return -1
	}
	e := run(s, a, lower)
	if c := contraction(s, e); c >= 0 {
		return c
	}
	return e
}

// o200kClasses are the character classes in which the o200k-style patterns
// (o200k_base, Kimi K2) differ: the upperish and lowerish letters of the two
// word alternatives, and what may follow the run of punctuation.
type o200kClasses struct {
	upper, lower, punctTail func(rune) bool
}

var o200kBaseClasses = o200kClasses{
	upper:     isUpperish,
	lower:     isLowerish,
	punctTail: func(r rune) bool { return isCRLF(r) || r == '/' },
}

func matchO200k(s string, i int) int {
	r, n := decode(s, i)
	return matchO200kWith(s, i, r, n, &o200kBaseClasses)
}

// matchO200kWith matches the alternatives of o200kPattern, with the classes
// of c, at i, where the rune r of n bytes starts.
func matchO200kWith(s string, i int, r rune, n int, c *o200kClasses) int {
	prefix := isO200kPrefix(r)
	// The two word alternatives, each with the optional prefix taken, then not.
	if prefix {
		if e := letterWord1(s, i+n, c.upper, c.lower); e >= 0 {
			return e
		}
	}
	if e := letterWord1(s, i, c.upper, c.lower); e >= 0 {
		return e
	}
	if prefix {
		if e := letterWord2(s, i+n, c.upper, c.lower); e >= 0 {
			return e
		}
	}
	if e := letterWord2(s, i, c.upper, c.lower); e >= 0 {
		return e
	}
	if unicode.IsNumber(r) {
		return numbers(s, i, 3)
	}
	// ` ?[^\s\p{L}\p{N}]+` then a run of c.punctTail ([\r\n/]* in o200k)
	j := i
	if r == ' ' {
		j++
	}
	if k := run(s, j, isOther); k > j {
		return run(s, k, c.punctTail)
	}
	return whitespace(s, i)
}

func isDeepseekCJK(r rune) bool {
	return (r >= 0x4e00 && r <= 0x9fa5) || (r >= 0x3040 && r <= 0x309f) || (r >= 0x30a0 && r <= 0x30ff)
}

func matchDeepseekCJK(s string, i int) int {
	if e := run(s, i, isDeepseekCJK); e > i {
		return e
	}
	return -1
}

func isASCIIPunct(r rune) bool {
	return r < utf8.RuneSelf && r > ' ' && r < 0x7f && !('0' <= r && r <= '9') && !('a' <= r && r <= 'z') && !('A' <= r && r <= 'Z')
}

func isASCIILetter(r rune) bool { return ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') }

func isPS(r rune) bool { return unicode.IsPunct(r) || unicode.IsSymbol(r) }

func isLM(r rune) bool { return unicode.IsLetter(r) || unicode.IsMark(r) }

func matchDeepseekMain(s string, i int) int {
	r, n := decode(s, i)
	// [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
	if isASCIIPunct(r) {
		if e := run(s, i+1, isASCIILetter); e > i+1 {
			return e
		}
	}
	// [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
	if !isCRLF(r) && !unicode.IsLetter(r) && !isPS(r) {
		if e := run(s, i+n, isLM); e > i+n {
			return e
		}
	}
	if isLM(r) {
		return run(s, i, isLM)
	}
	// ` ?[\p{P}\p{S}]+[\r\n]*`
	j := i
	if r == ' ' {
		j++
	}
	if k := run(s, j, isPS); k > j {
		return run(s, k, isCRLF)
	}
	return whitespace(s, i)
}
