package httpsafe

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Redacted is what replaces a secret in redacted text.
const Redacted = "[REDACTED]"

// decodeLevels is how many times Redact decodes escapes when it looks for
// a secret: once for a server that escaped the echoed header, twice for
// text escaped again on its way (a JSON string inside a JSON string).
const decodeLevels = 2

// Redact returns text with every occurrence of each non-empty secret
// replaced by Redacted. An occurrence is found as sent and in any escaped
// form: the secret is searched in text, in text with its escapes decoded
// once, and decoded twice, and every span of text that decodes to the
// secret is replaced, however its characters were written (mixed forms
// included). The escapes decoded are JSON's (\uXXXX with surrogate pairs,
// \/, \\, \", \b, \f, \n, \r, \t), \xHH, \UXXXXXXXX and \', percent
// encoding (%HH) and HTML numeric character references (&#NN; and
// &#xHH;).
func Redact(text string, secrets ...string) string {
	if !anySecret(secrets) {
		return text
	}
	return string(redact([]byte(text), secrets))
}

// RedactBytes is Redact for a byte slice. It returns b itself when there is
// nothing to redact, else a new slice.
func RedactBytes(b []byte, secrets ...string) []byte {
	if !anySecret(secrets) {
		return b
	}
	return redact(b, secrets)
}

// Contains reports whether text holds one of the secrets in any form
// Redact finds.
func Contains(text string, secrets ...string) bool {
	return anySecret(secrets) && len(spans([]byte(text), secrets)) > 0
}

func anySecret(secrets []string) bool {
	for _, s := range secrets {
		if s != "" {
			return true
		}
	}
	return false
}

// RedactError returns err with the secrets removed from its text. It
// returns err itself when its text holds none; otherwise a wrapper whose
// Error is redacted and whose Unwrap is err, so that errors.Is and
// errors.As still see the chain. (Whatever a caller extracts with
// errors.As keeps its own text: redact the server's text where it enters
// such a value, too.)
func RedactError(err error, secrets ...string) error {
	if err == nil || !Contains(err.Error(), secrets...) {
		return err
	}
	return &redactedError{err: err, secrets: secrets}
}

// redactedError hides secrets in the text of the error it wraps.
type redactedError struct {
	err     error
	secrets []string
}

func (e *redactedError) Error() string { return Redact(e.err.Error(), e.secrets...) }
func (e *redactedError) Unwrap() error { return e.err }

// sensitiveHeaders are the request headers whose values are credentials.
var sensitiveHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key", "Api-Key"}

// HeaderSecrets returns the credentials among h's values, for Redact: the
// values of Authorization, Proxy-Authorization, Cookie, X-Api-Key and
// Api-Key, and for an "<scheme> <token>" value (Bearer, Basic) the token
// alone as well.
func HeaderSecrets(h http.Header) []string {
	var out []string
	for _, name := range sensitiveHeaders {
		for _, v := range h.Values(name) {
			v = strings.TrimSpace(v)
			if v == "" {
				continue
			}
			out = append(out, v)
			if _, tok, ok := strings.Cut(v, " "); ok {
				if tok = strings.TrimSpace(tok); tok != "" {
					out = append(out, tok)
				}
			}
		}
	}
	return out
}

// A view is text with its escapes decoded some number of times: b is the
// decoded bytes, and b[i] came from src[start[i]:end[i]] of the original
// text.
type view struct {
	b          []byte
	start, end []int
}

// redact replaces every span of text found by spans.
func redact(text []byte, secrets []string) []byte {
	sp := spans(text, secrets)
	if len(sp) == 0 {
		return text
	}
	var out bytes.Buffer
	out.Grow(len(text))
	at := 0
	for _, s := range sp {
		out.Write(text[at:s[0]])
		out.WriteString(Redacted)
		at = s[1]
	}
	out.Write(text[at:])
	return out.Bytes()
}

// spans returns the sorted, merged spans [start, end) of text that hold a
// secret, as sent or escaped.
func spans(text []byte, secrets []string) [][2]int {
	v := view{b: text}
	identity := true // v.start[i] == i and v.end[i] == i+1, not materialised
	var found [][2]int
	for level := 0; ; level++ {
		for _, s := range secrets {
			if s == "" {
				continue
			}
			for i := 0; i+len(s) <= len(v.b); {
				j := bytes.Index(v.b[i:], []byte(s))
				if j < 0 {
					break
				}
				a, z := i+j, i+j+len(s)-1
				if identity {
					found = append(found, [2]int{a, z + 1})
				} else {
					found = append(found, [2]int{v.start[a], v.end[z]})
				}
				i = a + 1
			}
		}
		if level == decodeLevels || !hasEscape(v.b) {
			break
		}
		if identity {
			v.start, v.end = make([]int, len(text)), make([]int, len(text))
			for i := range text {
				v.start[i], v.end[i] = i, i+1
			}
			identity = false
		}
		v = decode(v)
	}
	return merge(found)
}

// hasEscape reports whether b may hold an escape decode would change.
func hasEscape(b []byte) bool {
	return bytes.IndexByte(b, '\\') >= 0 || bytes.IndexByte(b, '%') >= 0 || bytes.Contains(b, []byte("&#"))
}

// merge sorts spans and joins those that overlap or touch.
func merge(sp [][2]int) [][2]int {
	if len(sp) < 2 {
		return sp
	}
	// Insertion sort: the list is short and mostly in order.
	for i := 1; i < len(sp); i++ {
		for j := i; j > 0 && sp[j][0] < sp[j-1][0]; j-- {
			sp[j], sp[j-1] = sp[j-1], sp[j]
		}
	}
	out := sp[:1]
	for _, s := range sp[1:] {
		last := &out[len(out)-1]
		if s[0] <= last[1] {
			last[1] = max(last[1], s[1])
			continue
		}
		out = append(out, s)
	}
	return out
}

// decode decodes one level of escapes in v.
func decode(v view) view {
	out := view{b: make([]byte, 0, len(v.b)), start: make([]int, 0, len(v.b)), end: make([]int, 0, len(v.b))}
	emit := func(p []byte, from, to int) {
		for _, c := range p {
			out.b = append(out.b, c)
			out.start = append(out.start, v.start[from])
			out.end = append(out.end, v.end[to-1])
		}
	}
	var buf [utf8.UTFMax]byte
	b := v.b
	for i := 0; i < len(b); {
		p, n := escapeAt(b[i:], buf[:0])
		if n == 0 {
			emit(b[i:i+1], i, i+1)
			i++
			continue
		}
		emit(p, i, i+n)
		i += n
	}
	return out
}

// escapeAt decodes the escape at the start of b, appending its bytes to
// dst. n is the escape's length in b, 0 when b does not start with one.
func escapeAt(b, dst []byte) (p []byte, n int) {
	switch b[0] {
	case '%':
		if c, ok := hexByte(b[1:]); ok {
			return append(dst, c), 3
		}
	case '&':
		return charRef(b, dst)
	case '\\':
		if len(b) < 2 {
			return nil, 0
		}
		switch b[1] {
		case '/', '\\', '"', '\'':
			return append(dst, b[1]), 2
		case 'b':
			return append(dst, '\b'), 2
		case 'f':
			return append(dst, '\f'), 2
		case 'n':
			return append(dst, '\n'), 2
		case 'r':
			return append(dst, '\r'), 2
		case 't':
			return append(dst, '\t'), 2
		case 'x':
			if c, ok := hexByte(b[2:]); ok {
				return append(dst, c), 4
			}
		case 'u':
			r, ok := hexRune(b[2:], 4)
			if !ok {
				return nil, 0
			}
			if r >= 0xD800 && r < 0xDC00 && len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
				if lo, ok := hexRune(b[8:], 4); ok && lo >= 0xDC00 && lo < 0xE000 {
					return utf8.AppendRune(dst, 0x10000+(r-0xD800)<<10+(lo-0xDC00)), 12
				}
			}
			if r >= 0xD800 && r < 0xE000 {
				return nil, 0 // a lone surrogate: not a character
			}
			return utf8.AppendRune(dst, r), 6
		case 'U':
			r, ok := hexRune(b[2:], 8)
			if ok && utf8.ValidRune(r) {
				return utf8.AppendRune(dst, r), 10
			}
		}
	}
	return nil, 0
}

// charRef decodes an HTML numeric character reference, &#NN; or &#xHH;.
func charRef(b, dst []byte) ([]byte, int) {
	if len(b) < 4 || b[1] != '#' {
		return nil, 0
	}
	base, i := 10, 2
	if b[2] == 'x' || b[2] == 'X' {
		base, i = 16, 3
	}
	j := i
	for j < len(b) && j-i < 8 && isDigit(b[j], base) {
		j++
	}
	if j == i || j >= len(b) || b[j] != ';' {
		return nil, 0
	}
	n, err := strconv.ParseUint(string(b[i:j]), base, 32)
	if err != nil || !utf8.ValidRune(rune(n)) {
		return nil, 0
	}
	return utf8.AppendRune(dst, rune(n)), j + 1
}

func isDigit(c byte, base int) bool {
	if base == 10 {
		return c >= '0' && c <= '9'
	}
	_, ok := unhex(c)
	return ok
}

func hexByte(b []byte) (byte, bool) {
	if len(b) < 2 {
		return 0, false
	}
	h, ok1 := unhex(b[0])
	l, ok2 := unhex(b[1])
	return h<<4 | l, ok1 && ok2
}

func hexRune(b []byte, n int) (rune, bool) {
	if len(b) < n {
		return 0, false
	}
	var r rune
	for _, c := range b[:n] {
		d, ok := unhex(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
