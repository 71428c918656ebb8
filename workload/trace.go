package workload

import (
	"fmt"
	"strconv"
	"time"
)

// A dropReason says why a row that passed the rules is not returned.
type dropReason uint8

const (
	keep       dropReason = iota
	dropFailed            // BurstGPT: Response tokens 0
	dropModel             // BurstGPT: not Options.Model
	dropNoUser            // ShareGPT: no user message
)

// A source yields a file's rows in file order: each with At the raw
// timestamp (the duration since the format's timestamp 0) or Untimed, a
// drop reason, and a *RowError for a bad row. It returns io.EOF after
// the last row.
type source interface {
	next() (Row, dropReason, error)
}

// A fault is what makes a row bad: the rule and what was found.
type fault struct {
	rule Rule
	msg  string
}

func faultf(rule Rule, format string, args ...any) *fault {
	return &fault{rule: rule, msg: fmt.Sprintf(format, args...)}
}

func syntaxFault(err error) *fault {
	return &fault{rule: RuleSyntax, msg: "not valid JSON: " + err.Error()}
}

// bad builds the error of a bad line. A last line without a line end that
// does not parse is reported as truncated.
func (l *lines) bad(ln line, f *fault) *RowError {
	if ln.noEnd && (f.rule == RuleSyntax || f.rule == RuleField) {
		return &RowError{File: l.name, Line: ln.n, Rule: RuleTruncated,
			Msg: f.msg + " (the last line has no line end: is the file truncated?)"}
	}
	return &RowError{File: l.name, Line: ln.n, Rule: f.rule, Msg: f.msg}
}

// traceSource reads Mooncake and Bailian JSONL: one JSON object a line.
type traceSource struct {
	lines
	format   Format
	unit     time.Duration
	block    int
	lastType string
}

func (p *traceSource) next() (Row, dropReason, error) {
	ln, err := p.lines.record()
	if err != nil {
		return Row{}, keep, err
	}
	row, f := p.parse(ln.b)
	if f != nil {
		return Row{}, keep, p.bad(ln, f)
	}
	row.Line = ln.n
	return row, keep, nil
}

// traceRow is a trace object as it is read.
type traceRow struct {
	Row
	haveTS, haveIn, haveIDs, haveChat bool
}

// parse reads one trace object.
func (p *traceSource) parse(b []byte) (Row, *fault) {
	s := jscan{b: b}
	var t traceRow
	s.ws()
	if !s.eat('{') {
		return Row{}, syntaxFault(s.fail("want '{'"))
	}
	s.ws()
	if !s.eat('}') {
		for {
			s.ws()
			k, err := s.key()
			if err != nil {
				return Row{}, syntaxFault(err)
			}
			if f := p.field(&s, k, &t); f != nil {
				return Row{}, f
			}
			s.ws()
			if s.eat(',') {
				continue
			}
			if s.eat('}') {
				break
			}
			return Row{}, syntaxFault(s.fail("want ',' or '}'"))
		}
	}
	s.ws()
	if s.i != len(b) {
		return Row{}, syntaxFault(s.fail("data after the object"))
	}
	switch {
	case !t.haveTS:
		return Row{}, faultf(RuleField, "missing timestamp")
	case !t.haveIn:
		return Row{}, faultf(RuleField, "missing input_length")
	case !t.haveIDs:
		return Row{}, faultf(RuleField, "missing hash_ids")
	case p.format == Bailian && !t.haveChat:
		return Row{}, faultf(RuleField, "missing chat_id")
	}
	// The block rule: 0 < input − (n−1)·B ≤ B, that is n = ⌈input/B⌉.
	if want := ceilDiv(t.Input, p.block); len(t.HashIDs) != want {
		return Row{}, faultf(RuleHashIDs, "hash_ids has %d ids for input_length %d at block %d; want %d",
			len(t.HashIDs), t.Input, p.block, want)
	}
	if p.format == Bailian && t.Turn == 0 {
		t.Turn = 1 // the format's default, as AIPerf reads it
	}
	return t.Row, nil
}

// field reads the value of key k into t.
func (p *traceSource) field(s *jscan, key []byte, t *traceRow) *fault {
	bailian := p.format == Bailian
	switch k := string(key); {
	case k == "timestamp":
		if s.kind() != "a number" {
			return wrongType(s, k, "a number")
		}
		lit, err := s.number()
		if err != nil {
			return syntaxFault(err)
		}
		if t.At, err = timestamp(lit, p.unit, false); err != nil {
			return &fault{rule: RuleTimestamp, msg: err.Error()}
		}
		t.haveTS = true
	case k == "input_length":
		v, f := length(s, k, RuleInput)
		if f != nil {
			return f
		}
		t.Input, t.haveIn = v, true
	case k == "output_length":
		if s.null() {
			t.Output = 0
			return nil
		}
		v, f := length(s, k, RuleOutput)
		if f != nil {
			return f
		}
		t.Output = v
	case k == "hash_ids":
		limit := MaxHashIDs
		if t.haveIn {
			limit = min(limit, ceilDiv(t.Input, p.block))
		}
		ids, f := p.hashIDs(s, limit, t)
		if f != nil {
			return f
		}
		t.HashIDs, t.haveIDs = ids, true
	case k == "session_id":
		v, f := idField(s, k)
		if f != nil {
			return f
		}
		t.Session = v
	case bailian && k == "chat_id":
		v, f := idField(s, k)
		if f != nil {
			return f
		}
		t.ID, t.haveChat = v, v != ""
	case bailian && k == "parent_chat_id":
		v, f := idField(s, k)
		if f != nil {
			return f
		}
		switch {
		case v == "-1":
			v = ""
		case len(v) > 0 && v[0] == '-':
			return faultf(RuleField, "parent_chat_id %s is negative; want -1 for a root, or a chat_id", v)
		}
		t.Parent = v
	case bailian && k == "turn":
		if s.null() {
			return nil
		}
		if s.kind() != "a number" {
			return wrongType(s, k, "an integer")
		}
		lit, err := s.number()
		if err != nil {
			return syntaxFault(err)
		}
		v, ok := integer(lit, false)
		if !ok || v < 1 || v > 1<<31-1 {
			return faultf(RuleField, "turn %s is not an integer in [1, 2³¹); Bailian turns count from 1", short(lit))
		}
		t.Turn = int(v)
	case bailian && k == "type":
		if s.null() {
			return nil
		}
		if s.peek() != '"' {
			return wrongType(s, k, "a string")
		}
		start := s.i
		raw, escaped, err := s.str()
		if err != nil {
			return syntaxFault(err)
		}
		if escaped {
			s.i = start
			if t.Type, err = s.text(); err != nil {
				return syntaxFault(err)
			}
		} else {
			t.Type = intern(&p.lastType, raw)
		}
	default:
		if err := s.skip(0); err != nil {
			return syntaxFault(err)
		}
	}
	return nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// wrongType reports a value of the wrong type (a field fault) when it is
// valid JSON, else the syntax fault.
func wrongType(s *jscan, name, want string) *fault {
	kind := s.kind()
	if err := s.skip(0); err != nil {
		return syntaxFault(err)
	}
	return faultf(RuleField, "%s is %s; want %s", name, kind, want)
}

// length reads a token length in [1, MaxTokens].
func length(s *jscan, name string, rule Rule) (int, *fault) {
	if s.kind() != "a number" {
		return 0, wrongType(s, name, "an integer")
	}
	lit, err := s.number()
	if err != nil {
		return 0, syntaxFault(err)
	}
	v, ok := integer(lit, false)
	switch {
	case !ok:
		return 0, faultf(rule, "%s %s is not an integer", name, short(lit))
	case v < 1:
		return 0, faultf(rule, "%s %d is below 1", name, v)
	case v > MaxTokens:
		return 0, faultf(rule, "%s %d exceeds the bound of %d tokens", name, v, MaxTokens)
	}
	return int(v), nil
}

// hashIDs reads the hash id array: at most limit ids, each an integer in
// [0, 2⁶³). Its storage grows with the ids read, never ahead of the line.
func (p *traceSource) hashIDs(s *jscan, limit int, t *traceRow) ([]int64, *fault) {
	if s.peek() != '[' {
		return nil, wrongType(s, "hash_ids", "an array of integers")
	}
	s.i++
	// Each id takes two bytes or more ("0,"), so a short line cannot make
	// this allocate much, whatever input_length it claims.
	ids := make([]int64, 0, min(limit, (len(s.b)-s.i)/2+1))
	s.ws()
	if s.eat(']') {
		return ids, nil
	}
	b := s.b
	for {
		i := s.i
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
		start := i
		var v uint64
		for i < len(b) && b[i]-'0' <= 9 {
			v = v*10 + uint64(b[i]-'0')
			i++
		}
		s.i = i
		n := i - start
		over := false
		if n > 18 { // 19 digits or more may not fit: read them again, with care
			v = 0
			for _, c := range b[start:i] {
				d := uint64(c - '0')
				if v > (1<<63-1-d)/10 {
					over = true
					break
				}
				v = v*10 + d
			}
		}
		more := i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E')
		if n == 0 || more || over {
			s.i = start
			name := fmt.Sprintf("hash_ids[%d]", len(ids))
			if s.kind() != "a number" {
				return nil, wrongType(s, name, "an integer")
			}
			lit, err := s.number()
			if err != nil {
				return nil, syntaxFault(err)
			}
			return nil, faultf(RuleHashIDs, "%s is %s; want an integer in [0, 2⁶³)", name, short(lit))
		}
		if n > 1 && b[start] == '0' {
			s.i = start
			return nil, syntaxFault(s.fail("number with a leading zero"))
		}
		if len(ids) == limit {
			if !t.haveIn {
				return nil, faultf(RuleHashIDs, "hash_ids has more than %d ids", MaxHashIDs)
			}
			return nil, faultf(RuleHashIDs, "hash_ids has more than %d ids for input_length %d at block %d; want %d",
				limit, t.Input, p.block, ceilDiv(t.Input, p.block))
		}
		ids = append(ids, int64(v))
		s.ws()
		if s.eat(',') {
			continue
		}
		if s.eat(']') {
			return ids, nil
		}
		return nil, syntaxFault(s.fail("want ',' or ']'"))
	}
}

// idField reads an identifier given as a string or an integer; null
// reads as "".
func idField(s *jscan, name string) (string, *fault) {
	switch s.kind() {
	case "a string":
		v, err := s.text()
		if err != nil {
			return "", syntaxFault(err)
		}
		return v, nil
	case "a number":
		lit, err := s.number()
		if err != nil {
			return "", syntaxFault(err)
		}
		v, ok := integer(lit, false)
		if !ok {
			return "", faultf(RuleField, "%s %s is not an integer", name, short(lit))
		}
		return strconv.FormatInt(v, 10), nil
	}
	if s.null() {
		return "", nil
	}
	return "", wrongType(s, name, "a string or an integer")
}
