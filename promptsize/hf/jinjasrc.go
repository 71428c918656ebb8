package hf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Chat templates are lexed here the way Python's Jinja2 lexes them under
// transformers' settings (trim_blocks, lstrip_blocks, keep_trailing_newline
// off), and handed to github.com/ardanlabs/jinja as an equivalent template
// in which that library has no whitespace decision left to make:
//
//   - Whitespace control ({%- -%}, {%+ +%}, trim_blocks, lstrip_blocks) is
//     applied here, with Jinja2's rules, and every stretch of text becomes a
//     print of a string literal, so the library's own trimming, which
//     differs from Jinja2's, finds no text to act on.
//   - String literals are decoded as Jinja2 decodes them (Python's
//     unicode-escape: backslash-newline continues the line, \xhh, \uXXXX,
//     octal, ...) and written back in a form the library reads verbatim.
//   - Comments and {% raw %} blocks are resolved here.
//   - Filters whose library behaviour differs from transformers' (tojson,
//     items, format, ...) are renamed to replacements the renderer supplies.
//   - Every print, for-loop body and macro body calls into the render budget
//     (see renderBudget), which is how a template's work is bounded.
//
// Nothing of the template's logic is interpreted here: expressions and
// statements pass through token for token.

// Names the rewritten template calls; the renderer defines them.
const (
	fnOut   = "inferbench_out"   // every print: counts output bytes
	fnTick  = "inferbench_tick"  // every loop iteration
	fnEnter = "inferbench_enter" // every macro call: depth and count
	fnLeave = "inferbench_leave" // every macro return
	fnIter  = "inferbench_iter"  // every for-loop iterable
)

// overriddenFilters are the filters renamed to "inferbench_" + name, whose
// replacements (pyfilters.go) follow Python and transformers.
var overriddenFilters = map[string]bool{
	"tojson": true, "items": true, "format": true, "from_json": true,
	"length": true, "count": true,
}

// maxTemplateSource bounds the size of a template source.
const maxTemplateSource = 4 << 20

// rewriteTemplate returns the ardanlabs/jinja source equivalent to the
// Jinja2 source src.
func rewriteTemplate(src string) (string, error) {
	out, _, err := rewriteTemplateSites(src)
	return out, err
}

// rewriteTemplateSites is rewriteTemplate that also returns the sites of
// the checked operations (jinjaexpr.go) the rewritten template calls.
func rewriteTemplateSites(src string) (string, []exprSite, error) {
	if len(src) > maxTemplateSource {
		return "", nil, fmt.Errorf("the template is %d bytes, more than the %d accepted", len(src), maxTemplateSource)
	}
	// Jinja2 normalises every newline to \n and drops one trailing newline
	// (keep_trailing_newline=False) before lexing.
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	src = strings.TrimSuffix(src, "\n")

	var b strings.Builder
	b.Grow(len(src) * 2)
	lineStarting := true
	pos := 0
	var sites []exprSite
	line, lineAt := 1, 0 // the line of the source at index lineAt
	for pos < len(src) {
		open := indexOpener(src, pos)
		if open < 0 {
			emitText(&b, src[pos:])
			break
		}
		text := src[pos:open]
		kind := src[open+1] // '{', '%' or '#'
		sign := byte(0)
		if open+2 < len(src) && (src[open+2] == '-' || src[open+2] == '+') {
			sign = src[open+2]
		}
		rawEnd := -1
		if kind == '%' {
			rawEnd = matchRawBegin(src, open)
		}
		text = stripBefore(text, sign, kind != '{', lineStarting)
		emitText(&b, text)
		switch {
		case rawEnd >= 0:
			// {% raw %}...{% endraw %}: the body is text.
			bodyStart := rawEnd
			rel, endSign, after, ok := findEndRaw(src, bodyStart)
			if !ok {
				return "", nil, errors.New("missing end of raw directive")
			}
			body := stripBefore(src[bodyStart:rel], endSign, true, src[rawEnd-1] == '\n')
			emitText(&b, body)
			pos = after
		case kind == '#':
			end, ok := findCommentEnd(src, open+2)
			if !ok {
				return "", nil, errors.New("missing end of comment tag")
			}
			pos = end
		default:
			start := open + 2
			if sign != 0 {
				start++
			}
			content, rawEnd, end, err := lexTag(src, start, kind)
			if err != nil {
				return "", nil, err
			}
			line += strings.Count(src[lineAt:open], "\n")
			lineAt = open
			if kind == '{' {
				expr, err := rewriteExprTag(src[start:rawEnd], line, &sites)
				if err != nil {
					// Not modelled: the library reads it as it is.
					expr = "(" + content + ")"
				}
				b.WriteString("{{ " + fnOut + "(" + expr + ") }}")
			} else {
				writeBlock(&b, content, src[start:rawEnd], line, &sites)
			}
			pos = end
		}
		lineStarting = pos > 0 && src[pos-1] == '\n'
	}
	return b.String(), sites, nil
}

// indexOpener returns the index of the first "{{", "{%" or "{#" at or after
// pos, or -1.
func indexOpener(src string, pos int) int {
	for i := pos; ; {
		j := strings.IndexByte(src[i:], '{')
		if j < 0 {
			return -1
		}
		i += j
		if i+1 < len(src) && (src[i+1] == '{' || src[i+1] == '%' || src[i+1] == '#') {
			return i
		}
		i++
	}
}

// stripBefore applies the whitespace control of a tag with sign ('-', '+'
// or 0) to the text before it, as Jinja2's OptionalLStrip does: "-" strips
// all trailing whitespace; otherwise, with lstrip_blocks, a block or comment
// tag alone on its line after only blanks takes those blanks away.
func stripBefore(text string, sign byte, lstrip, lineStarting bool) string {
	if sign == '-' {
		return strings.TrimRightFunc(text, isPySpace)
	}
	if sign == '+' || !lstrip {
		return text
	}
	lpos := strings.LastIndexByte(text, '\n') + 1
	if lpos > 0 || lineStarting {
		rest := text[lpos:]
		if rest != "" && strings.TrimLeftFunc(rest, isPySpace) == "" {
			return text[:lpos]
		}
	}
	return text
}

// isPySpace is Python's str.isspace for one rune (\s of Python's re).
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// skipPySpace returns the index after the whitespace run at i.
func skipPySpace(src string, i int) int {
	for i < len(src) {
		r, n := utf8.DecodeRuneInString(src[i:])
		if !isPySpace(r) {
			break
		}
		i += n
	}
	return i
}

// matchRawBegin matches {%(-|+|)\s*raw\s*(-%}\s*|%}) at open and returns the
// index after it, or -1.
func matchRawBegin(src string, open int) int {
	i := open + 2
	if i < len(src) && (src[i] == '-' || src[i] == '+') {
		i++
	}
	i = skipPySpace(src, i)
	if !strings.HasPrefix(src[i:], "raw") {
		return -1
	}
	i = skipPySpace(src, i+3)
	switch {
	case strings.HasPrefix(src[i:], "-%}"):
		return skipPySpace(src, i+3)
	case strings.HasPrefix(src[i:], "%}"):
		return i + 2
	}
	return -1
}

// findEndRaw finds the first {%(-|+|)\s*endraw\s*(+%}|-%}\s*|%}\n?) at or
// after from: the start of the tag, its sign and the index after it.
func findEndRaw(src string, from int) (start int, sign byte, after int, ok bool) {
	for i := from; ; {
		j := strings.Index(src[i:], "{%")
		if j < 0 {
			return 0, 0, 0, false
		}
		start = i + j
		k := start + 2
		sign = 0
		if k < len(src) && (src[k] == '-' || src[k] == '+') {
			sign = src[k]
			k++
		}
		k = skipPySpace(src, k)
		if strings.HasPrefix(src[k:], "endraw") {
			k = skipPySpace(src, k+6)
			if end, ok := matchBlockEnd(src, k); ok {
				return start, sign, end, true
			}
		}
		i = start + 2
	}
}

// matchBlockEnd matches +%} | -%}\s* | %}\n? at i.
func matchBlockEnd(src string, i int) (int, bool) {
	switch {
	case strings.HasPrefix(src[i:], "+%}"):
		return i + 3, true
	case strings.HasPrefix(src[i:], "-%}"):
		return skipPySpace(src, i+3), true
	case strings.HasPrefix(src[i:], "%}"):
		i += 2
		if i < len(src) && src[i] == '\n' {
			i++
		}
		return i, true
	}
	return 0, false
}

// findCommentEnd finds the first +#} | -#}\s* | #}\n? at or after from and
// returns the index after it.
func findCommentEnd(src string, from int) (int, bool) {
	for i := from; i < len(src); i++ {
		switch {
		case strings.HasPrefix(src[i:], "+#}"):
			return i + 3, true
		case strings.HasPrefix(src[i:], "-#}"):
			return skipPySpace(src, i+3), true
		case strings.HasPrefix(src[i:], "#}"):
			i += 2
			if i < len(src) && src[i] == '\n' {
				i++
			}
			return i, true
		}
	}
	return 0, false
}

// lexTag reads the inside of a {{ }} (kind '{') or {% %} (kind '%') tag from
// start as Jinja2's lexer does: string literals, balanced brackets (an end
// marker inside brackets is an operator), and the end marker with its
// whitespace control. It returns the content rewritten for the library and
// the index where the end marker starts and the index after it.
func lexTag(src string, start int, kind byte) (string, int, int, error) {
	var b strings.Builder
	var stack []byte
	afterPipe := false
	for i := start; i < len(src); {
		if len(stack) == 0 {
			if kind == '%' {
				if end, ok := matchBlockEnd(src, i); ok {
					return b.String(), i, end, nil
				}
			} else {
				switch {
				case strings.HasPrefix(src[i:], "-}}"):
					return b.String(), i, skipPySpace(src, i+3), nil
				case strings.HasPrefix(src[i:], "}}"):
					return b.String(), i, i + 2, nil
				}
			}
		}
		c := src[i]
		switch {
		case c == '\'' || c == '"':
			lit, n, err := decodePyString(src[i:])
			if err != nil {
				return "", 0, 0, err
			}
			b.WriteString(quoteForLibrary(lit))
			i += n
			afterPipe = false
			continue
		case isPySpace(rune(c)):
			b.WriteByte(c)
			i++
			continue
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			name := src[i:j]
			if afterPipe && overriddenFilters[name] {
				name = "inferbench_" + name
			}
			b.WriteString(name)
			i = j
			afterPipe = false
			continue
		case c == '(' || c == '[' || c == '{':
			stack = append(stack, map[byte]byte{'(': ')', '[': ']', '{': '}'}[c])
		case c == ')' || c == ']' || c == '}':
			if len(stack) == 0 {
				return "", 0, 0, fmt.Errorf("unexpected '%c'", c)
			}
			if want := stack[len(stack)-1]; want != c {
				return "", 0, 0, fmt.Errorf("unexpected '%c', expected '%c'", c, want)
			}
			stack = stack[:len(stack)-1]
		}
		afterPipe = c == '|'
		b.WriteByte(c)
		i++
	}
	if kind == '%' {
		return "", 0, 0, errors.New("unexpected end of template: a {% tag is not closed")
	}
	return "", 0, 0, errors.New("unexpected end of template: a {{ tag is not closed")
}

// writeBlock writes a statement tag, with the budget calls a for-loop body
// and a macro body start with, and a macro body ends with. content is the
// tag as lexTag wrote it, raw its source: if, elif, for and set statements
// have their expressions rewritten (jinjaexpr.go), others pass as content.
func writeBlock(b *strings.Builder, content, raw string, line int, sites *[]exprSite) {
	word := strings.TrimLeftFunc(content, isPySpace)
	if i := strings.IndexFunc(word, func(r rune) bool { return !(r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)) }); i >= 0 {
		word = word[:i]
	}
	if word == "endmacro" {
		b.WriteString("{{ " + fnLeave + "() }}")
	}
	if stmt, ok, err := rewriteStatement(raw, line, sites); ok && err == nil {
		content = stmt
	} else if word == "for" {
		content = wrapForIterable(content)
	}
	b.WriteString("{% " + content + " %}")
	switch word {
	case "for":
		b.WriteString("{{ " + fnTick + "() }}")
	case "macro":
		b.WriteString("{{ " + fnEnter + "() }}")
	}
}

// wrapForIterable rewrites "for T in EXPR [if C] [recursive]" (content as
// lexTag wrote it) to iterate over fnIter((EXPR)), which checks the value
// as Python would (none is not iterable) and its size against the budget
// before the library expands it. Content it cannot split is returned as is.
func wrapForIterable(content string) string {
	type word struct{ start, end int }
	var words []word // identifiers outside brackets and strings
	depth := 0
	for i := 0; i < len(content); {
		c := content[i]
		switch {
		case c == '"':
			i++
			for i < len(content) && content[i] != '"' {
				if content[i] == '\\' {
					i++
				}
				i++
			}
			i++
			continue
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(content) && (content[j] == '_' || content[j] >= 'a' && content[j] <= 'z' || content[j] >= 'A' && content[j] <= 'Z' || content[j] >= '0' && content[j] <= '9') {
				j++
			}
			if depth == 0 {
				words = append(words, word{i, j})
			}
			i = j
			continue
		}
		i++
	}
	from, to := -1, len(content)
	for _, w := range words {
		name := content[w.start:w.end]
		switch {
		case from < 0 && name == "in":
			from = w.end
		case from >= 0 && (name == "if" || name == "recursive"):
			if w.start < to {
				to = w.start
			}
		}
	}
	if from < 0 || strings.TrimSpace(content[from:to]) == "" {
		return content
	}
	return content[:from] + " " + fnIter + "((" + content[from:to] + ")) " + content[to:]
}

// emitText writes text as a print of a string literal.
func emitText(b *strings.Builder, text string) {
	if text == "" {
		return
	}
	b.WriteString("{{ " + fnOut + "(")
	b.WriteString(quoteForLibrary(text))
	b.WriteString(") }}")
}

// quoteForLibrary writes s as a double-quoted literal that ardanlabs/jinja
// reads back as exactly s.
func quoteForLibrary(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// decodePyString decodes the Jinja2 string literal at the start of s (quote
// included) and returns its value and length. The value is what Jinja2
// computes: the body decoded with Python's unicode-escape codec.
func decodePyString(s string) (string, int, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); {
		c := s[i]
		if c == q {
			return b.String(), i + 1, nil
		}
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(s) {
			break
		}
		e := s[i+1]
		i += 2
		switch e {
		case '\n':
			// line continuation: nothing
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'x', 'u', 'U':
			width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+width > len(s) {
				return "", 0, fmt.Errorf("string literal: truncated \\%c escape", e)
			}
			n, err := strconv.ParseUint(s[i:i+width], 16, 32)
			if err != nil || n > unicode.MaxRune {
				return "", 0, fmt.Errorf("string literal: bad \\%c escape %q", e, s[i:i+width])
			}
			b.WriteRune(rune(n))
			i += width
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n := int(e - '0')
			for k := 0; k < 2 && i < len(s) && s[i] >= '0' && s[i] <= '7'; k++ {
				n = n*8 + int(s[i]-'0')
				i++
			}
			b.WriteRune(rune(n))
		default:
			// Python keeps an unknown escape as it is.
			b.WriteByte('\\')
			i--
		}
	}
	return "", 0, errors.New("unexpected end of template: a string literal is not closed")
}
