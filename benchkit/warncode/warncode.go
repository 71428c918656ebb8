// Package warncode gives each warning inferbench writes a stable code,
// what it means and what to do about it.
//
// The warnings of a run (RunInfo.Warnings, Summary.Warnings, the
// documents' warnings, a capacity search's, a comparison's, the server
// view's) are plain text, as the results file holds them. Classify reads
// a text's leading phrase, the project's own words, and names its Kind.
// A server's or a file's text stands only where the message has a
// placeholder, and there it cannot give a warning another kind's code: a
// text two kinds' phrases both match is classified as Other, as is a text
// no kind knows. docs/WARNINGS.md lists the kinds.
package warncode

import (
	"regexp"
	"strings"
)

// Other is the code of a warning no kind knows.
const Other = "other"

// Kind is one kind of warning.
type Kind struct {
	// Code is the kind's stable name, snake_case.
	Code string
	// Meaning says what the warning tells about the figures.
	Meaning string
	// Advice says what to do about it.
	Advice string
}

var other = Kind{Code: Other,
	Meaning: "A warning this catalogue does not know (an older or newer inferbench, or a library's own).",
	Advice:  "Read the message: it says what limits the figures."}

// Classify gives text its kind: the one kind whose leading phrase it
// has, or Other when none or more than one has it. A warning that carries
// another's (a comparison's "A: …", a phase's "decode_alone: …", the
// server view's "server metrics: …") is the kind of the one it carries.
func Classify(text string) Kind {
	return classify(text, 0)
}

func classify(text string, depth int) Kind {
	var found *entry
	for i := range catalogue {
		e := &catalogue[i]
		if e.match(text) {
			if found != nil && found.Code != e.Code {
				return other
			}
			found = e
		}
	}
	if found != nil {
		return found.Kind
	}
	if depth < 3 {
		for _, w := range wrappers {
			if m := w.FindString(text); m != "" {
				return classify(text[len(m):], depth+1)
			}
		}
	}
	return other
}

// Kinds returns every kind, Other last, in the catalogue's order.
func Kinds() []Kind {
	out := make([]Kind, 0, len(catalogue)+1)
	for _, e := range catalogue {
		out = append(out, e.Kind)
	}
	return append(out, other)
}

// entry is a kind with the leading phrases of its messages.
type entry struct {
	Kind
	phrases []leading
}

// leading is one leading phrase: its words between placeholders (the
// first its prefix), and the whole of it.
type leading struct {
	words []string
	re    *regexp.Regexp
}

func (e *entry) match(text string) bool {
	for _, p := range e.phrases {
		if p.has(text) && p.re.MatchString(text) {
			return true
		}
	}
	return false
}

// has reports whether text begins with the phrase's first words and
// holds the others: what every match has, quicker to tell.
func (p leading) has(text string) bool {
	if !strings.HasPrefix(text, p.words[0]) {
		return false
	}
	for _, w := range p.words[1:] {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}

// phrase compiles a leading phrase: its text literally, each {} any text
// (a placeholder of the message: a name, an error, a server's words) and
// each {n} a number the message formats.
func phrase(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`(?s)\A`)
	for p != "" {
		i := strings.IndexByte(p, '{')
		switch {
		case i < 0:
			b.WriteString(regexp.QuoteMeta(p))
			p = ""
		case strings.HasPrefix(p[i:], "{}"):
			b.WriteString(regexp.QuoteMeta(p[:i]) + ".*")
			p = p[i+2:]
		case strings.HasPrefix(p[i:], "{n}"):
			b.WriteString(regexp.QuoteMeta(p[:i]) + `[-+]?(?:[0-9][0-9.eE+-]*|Inf|NaN)`)
			p = p[i+3:]
		default:
			b.WriteString(regexp.QuoteMeta(p[:i+1]))
			p = p[i+1:]
		}
	}
	return regexp.MustCompile(b.String())
}

func kind(code, meaning, advice string, phrases ...string) entry {
	e := entry{Kind: Kind{Code: code, Meaning: meaning, Advice: advice}}
	for _, p := range phrases {
		words := strings.Split(strings.ReplaceAll(p, "{n}", "{}"), "{}")
		e.phrases = append(e.phrases, leading{words: words, re: phrase(p)})
	}
	return e
}

// wrappers are the leading labels of warnings that carry another one.
var wrappers = []*regexp.Regexp{
	regexp.MustCompile(`\A[AB]: `),
	regexp.MustCompile(`\A[AB]'s run: `),
	regexp.MustCompile(`\A(disaggregated|decode_alone|prefill_alone): `),
	regexp.MustCompile(`\Aplanning(?: the (?:prefill|decode) placement)?: `),
	regexp.MustCompile(`\Aserver metrics: `),
}
