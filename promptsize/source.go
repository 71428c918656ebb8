package promptsize

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A source is a text that grows by units: repeated atoms, or the words of a
// corpus. text(n) is the first n units and is always a prefix of text(n+1),
// so a cut between two unit ends is also a prefix of the text.
type source interface {
	// describe names the source in Prompt.Fill and in error messages.
	describe() string
	// unitName is the plural noun for the units ("atoms", "words").
	unitName() string
	// rateKey groups sources whose tokens per unit are alike.
	rateKey() string
	// text returns the first n units.
	text(n int) string
}

// atomSource repeats one atom.
type atomSource struct{ atom string }

func (s atomSource) describe() string { return fmt.Sprintf("atom %q", s.atom) }
func (s atomSource) unitName() string { return "atoms" }
func (s atomSource) rateKey() string  { return "atom:" + s.atom }

// text is n atoms without the white space around them ("a a a" for n = 3
// of "a " or of " a"), unless they are nothing but white space. A chat
// template may trim a message (Llama 3's Hugging Face template does) where
// the server's own does not (Ollama's Go templates): content that begins
// or ends in white space would be counted one way by the client and
// another by such a server.
func (s atomSource) text(n int) string {
	t := strings.Repeat(s.atom, n)
	if trimmed := strings.TrimSpace(t); trimmed != "" {
		return trimmed
	}
	return t
}

// corpusSource cuts a corpus at word ends. The corpus is unbounded: more is
// asked of more() when the words run out, so the last word of what is held
// is never used until the text after it is known.
type corpusSource struct {
	name string
	// more returns a text at least minBytes long that begins with every
	// shorter text it returned before.
	more func(minBytes int) string
	// offset is where the source starts in the corpus.
	offset int
	// all is the corpus text held so far (from offset); ends[i] is the byte
	// offset of the end of word i+1 in all.
	all  string
	ends []int
}

func (s *corpusSource) describe() string {
	if s.offset == 0 {
		return s.name
	}
	return fmt.Sprintf("%s from byte %d", s.name, s.offset)
}
func (s *corpusSource) unitName() string { return "words" }
func (s *corpusSource) rateKey() string  { return "corpus" }

func (s *corpusSource) text(n int) string {
	if n <= 0 {
		return ""
	}
	for len(s.ends) < n {
		s.grow(max(2*len(s.all), 8*n+4096))
	}
	return s.all[:s.ends[n-1]]
}

func (s *corpusSource) grow(minBytes int) {
	full := s.more(s.offset + minBytes)
	s.all = full[s.offset:]
	s.ends = wordEnds(s.all, s.ends)
}

// wordEnds returns the byte offsets that end a word followed by white space
// in text: a cut there drops the space, so content never ends in one. It
// resumes after the ends already found (text having only grown).
func wordEnds(text string, ends []int) []int {
	i := 0
	if len(ends) > 0 {
		i = ends[len(ends)-1]
	}
	inWord := false
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		space := unicode.IsSpace(r)
		if space && inWord {
			ends = append(ends, i)
		}
		inWord = !space
		i += size
	}
	return ends
}

// sentenceStarts returns up to n byte offsets (after the first) where a
// sentence or paragraph starts in text: after ". ", "! ", "? " or a newline.
func sentenceStarts(text string, n int) []int {
	var out []int
	for i := 0; i+1 < len(text) && len(out) < n; i++ {
		c := text[i]
		if (c == '.' || c == '!' || c == '?' || c == '\n') && (text[i+1] == ' ' || text[i+1] == '\n') {
			j := i + 1
			for j < len(text) && (text[j] == ' ' || text[j] == '\n') {
				j++
			}
			if j < len(text) {
				out = append(out, j)
			}
			i = j - 1
		}
	}
	return out
}

// repeatCorpus returns a more() for a caller's corpus: the corpus itself, then
// repeated after a blank line as often as needed.
func repeatCorpus(corpus string) func(int) string {
	return func(minBytes int) string {
		if len(corpus) >= minBytes {
			return corpus
		}
		var sb strings.Builder
		for sb.Len() < minBytes {
			if sb.Len() > 0 {
				sb.WriteString("\n\n")
			}
			sb.WriteString(corpus)
		}
		return sb.String()
	}
}

// runeBoundaryBetween returns a rune boundary of s strictly between lo and
// hi, as near their middle as it can, or -1 if there is none.
func runeBoundaryBetween(s string, lo, hi int) int {
	mid := (lo + hi) / 2
	for j := mid; j > lo; j-- {
		if utf8.RuneStart(s[j]) {
			return j
		}
	}
	for j := mid + 1; j < hi; j++ {
		if utf8.RuneStart(s[j]) {
			return j
		}
	}
	return -1
}
