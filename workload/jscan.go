package workload

import (
	"encoding/json"
	"fmt"
)

// jscan reads the JSON object of one trace line in place: keys and the
// values the formats need are read without reflection, and every other
// value is checked and skipped. It accepts exactly what encoding/json
// accepts (a fuzz target compares them), with one difference: a string's
// invalid UTF-8 is kept as it is rather than replaced.
type jscan struct {
	b []byte
	i int
}

// A syntaxError is a place where a line stops being JSON.
type syntaxError struct {
	msg string
	col int // 1-based byte column
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at column %d", e.msg, e.col) }

func (s *jscan) fail(format string, args ...any) error {
	return &syntaxError{msg: fmt.Sprintf(format, args...), col: s.i + 1}
}

func (s *jscan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte, 0 at the end.
func (s *jscan) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// eat consumes c if it comes next.
func (s *jscan) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string and returns its raw content and whether it holds
// escapes.
func (s *jscan) str() (raw []byte, escaped bool, err error) {
	if !s.eat('"') {
		return nil, false, s.fail("want a string")
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw = s.b[start:s.i]
			s.i++
			return raw, escaped, nil
		case c == '\\':
			escaped = true
			s.i++
			if s.i >= len(s.b) {
				return nil, false, s.fail("unterminated string")
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				s.i++
				for range 4 {
					if s.i >= len(s.b) || !isHex(s.b[s.i]) {
						return nil, false, s.fail("bad \\u escape")
					}
					s.i++
				}
			default:
				return nil, false, s.fail("bad escape \\%c", s.b[s.i])
			}
		case c < 0x20:
			return nil, false, s.fail("control character in a string")
		default:
			s.i++
		}
	}
	return nil, false, s.fail("unterminated string")
}

func isHex(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// text reads a string value and returns it decoded.
func (s *jscan) text() (string, error) {
	start := s.i
	raw, escaped, err := s.str()
	if err != nil {
		return "", err
	}
	if !escaped {
		return string(raw), nil
	}
	var v string
	if err := json.Unmarshal(s.b[start:s.i], &v); err != nil {
		return "", s.fail("bad string: %v", err)
	}
	return v, nil
}

// key reads an object key and the colon after it.
func (s *jscan) key() ([]byte, error) {
	start := s.i
	raw, escaped, err := s.str()
	if err != nil {
		return nil, err
	}
	if escaped {
		var v string
		if err := json.Unmarshal(s.b[start:s.i], &v); err != nil {
			return nil, s.fail("bad key: %v", err)
		}
		raw = []byte(v)
	}
	s.ws()
	if !s.eat(':') {
		return nil, s.fail("want ':' after key %q", raw)
	}
	s.ws()
	return raw, nil
}

// number reads a number and returns its literal.
func (s *jscan) number() ([]byte, error) {
	start := s.i
	s.eat('-')
	d := s.i
	for s.i < len(s.b) && isDigit(s.b[s.i]) {
		s.i++
	}
	switch n := s.i - d; {
	case n == 0:
		return nil, s.fail("want a number")
	case n > 1 && s.b[d] == '0':
		return nil, s.fail("number with a leading zero")
	}
	if s.eat('.') {
		d = s.i
		for s.i < len(s.b) && isDigit(s.b[s.i]) {
			s.i++
		}
		if s.i == d {
			return nil, s.fail("want digits after '.'")
		}
	}
	if s.eat('e') || s.eat('E') {
		if !s.eat('+') {
			s.eat('-')
		}
		d = s.i
		for s.i < len(s.b) && isDigit(s.b[s.i]) {
			s.i++
		}
		if s.i == d {
			return nil, s.fail("want digits in the exponent")
		}
	}
	return s.b[start:s.i], nil
}

// literal reads true, false or null.
func (s *jscan) literal() ([]byte, error) {
	for _, w := range []string{"true", "false", "null"} {
		if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
			s.i += len(w)
			return s.b[s.i-len(w) : s.i], nil
		}
	}
	return nil, s.fail("want a value")
}

// null consumes a null if it comes next.
func (s *jscan) null() bool {
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// skip reads and discards any value, nested at most maxDepth deep.
func (s *jscan) skip(depth int) error {
	switch c := s.peek(); {
	case c == '"':
		_, _, err := s.str()
		return err
	case c == '-' || isDigit(c):
		_, err := s.number()
		return err
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return s.fail("values nested deeper than %d", maxDepth)
		}
		s.i++
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		s.ws()
		if s.eat(end) {
			return nil
		}
		for {
			s.ws()
			if c == '{' {
				if _, err := s.key(); err != nil {
					return err
				}
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			s.ws()
			if s.eat(',') {
				continue
			}
			if s.eat(end) {
				return nil
			}
			return s.fail("want ',' or '%c'", end)
		}
	default:
		_, err := s.literal()
		return err
	}
}

// kind names the JSON type of the value that comes next, for messages.
func (s *jscan) kind() string {
	switch c := s.peek(); {
	case c == '"':
		return "a string"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || isDigit(c):
		return "a number"
	}
	return "not a value"
}
