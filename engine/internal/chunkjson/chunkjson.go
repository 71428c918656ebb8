// Package chunkjson decodes the hot fields of a streamed chat completion
// chunk without allocating, for the adapters' stream readers: one chunk
// arrives per generated token, and encoding/json spends 2–3 µs and about
// 15 allocations on each (reflection, a string per field, a pointer per
// optional member).
//
// Parse accepts only the common shape and says false for anything else,
// so that the caller decodes that chunk with encoding/json as before. Where
// Parse says true, its fields are what encoding/json would have decoded
// into the adapters' wire structs; FuzzParse checks that on arbitrary
// input.
package chunkjson

import (
	"strconv"
	"unicode/utf8"
)

// A Str is a string member: Set when it was present with a string value
// (not null), Val its unescaped bytes.
type Str struct {
	Set bool
	Val []byte
}

// A Delta is a choice's delta. A tool_calls member that is null or an
// empty array is accepted and says nothing; any other tool_calls sends the
// chunk to encoding/json (Parse reports false), which decodes the calls.
type Delta struct {
	Content, ReasoningContent, Reasoning Str
}

// Usage is the OpenAI usage block.
type Usage struct {
	PromptTokens, CompletionTokens, TotalTokens int
	// DetailsSet reports a non-null prompt_tokens_details, CachedSet a
	// non-null cached_tokens in it.
	DetailsSet, CachedSet bool
	CachedTokens          int
	// CompletionDetailsSet reports a non-null completion_tokens_details,
	// ReasoningSet a non-null reasoning_tokens in it.
	CompletionDetailsSet, ReasoningSet bool
	ReasoningTokens                    int
}

// A Chunk is one chat.completion.chunk, or one text_completion chunk
// (whose choice carries text instead of a delta). Its byte slices point into the
// data given to Parse or into the Chunk's own buffer, and are valid until
// the next Parse.
type Chunk struct {
	ID, Model Str
	// Choices is the number of elements of "choices": 0 or 1 (0 when
	// null or absent).
	Choices int
	// Index, Delta, DeltaSet, Text and FinishReason describe the only
	// choice. DeltaSet reports a non-null delta; Text is a completion
	// choice's text.
	Index        int
	Delta        Delta
	DeltaSet     bool
	Text         Str
	FinishReason Str
	// UsageSet reports a non-null usage member.
	UsageSet bool
	Usage    Usage

	scratch []byte // unescaped strings
}

// The objects Parse descends into.
const (
	levelTop = iota
	levelChoice
	levelDelta
	levelUsage
	levelDetails
	levelCompletionDetails
)

// known lists, per level, the members Parse decodes; refused are members
// whose presence sends the chunk to encoding/json (error objects, exo's
// generation_stats and power_usage, a complete message). A key that
// matches one of these only without regard to case is refused too:
// encoding/json would match it.
var known = [...][]string{
	levelTop:               {"id", "model", "choices", "usage"},
	levelChoice:            {"index", "delta", "finish_reason", "text"},
	levelDelta:             {"content", "reasoning_content", "reasoning", "tool_calls"},
	levelUsage:             {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "completion_tokens_details"},
	levelDetails:           {"cached_tokens"},
	levelCompletionDetails: {"reasoning_tokens"},
}

var refused = []string{"error", "generation_stats", "power_usage", "message"}

type parser struct {
	d []byte
	i int
	c *Chunk
}

// Parse decodes data into c and reports whether it could. It reports
// false, leaving c in an unspecified state, for invalid JSON and for
// anything beyond the common shape: a value other than an object, more
// than one choice, a refused member, a duplicated member, a known member
// of an unexpected type, a delta with tool calls, a number that is not a
// plain integer of at most 18 digits (9 where int has 32 bits), a \u
// escape of a surrogate, invalid UTF-8 or nesting deeper than 64 in a
// skipped value.
func (c *Chunk) Parse(data []byte) bool {
	scratch := c.scratch
	if cap(scratch) < len(data) {
		// Unescaping never lengthens a string, so the buffer never grows
		// during a parse and earlier slices into it stay valid.
		scratch = make([]byte, 0, len(data))
	}
	*c = Chunk{scratch: scratch[:0]}
	p := parser{d: data, c: c}
	p.ws()
	if !p.object(levelTop) {
		return false
	}
	p.ws()
	return p.i == len(p.d)
}

func (p *parser) ws() {
	for p.i < len(p.d) {
		switch p.d[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) eat(b byte) bool {
	if p.i < len(p.d) && p.d[p.i] == b {
		p.i++
		return true
	}
	return false
}

func (p *parser) peek() byte {
	if p.i < len(p.d) {
		return p.d[p.i]
	}
	return 0
}

// object parses an object at level, decoding its known members.
func (p *parser) object(level int) bool {
	if !p.eat('{') {
		return false
	}
	p.ws()
	if p.eat('}') {
		return true
	}
	var seen uint8
	for {
		p.ws()
		key, escaped, ok := p.rawString()
		if !ok || escaped {
			return false
		}
		p.ws()
		if !p.eat(':') {
			return false
		}
		p.ws()
		k := -1
		for j, name := range known[level] {
			if string(key) == name {
				k = j
				break
			}
		}
		if k < 0 {
			if foldsToKnown(key) {
				return false
			}
			if !p.skip(0) {
				return false
			}
		} else {
			if seen&(1<<k) != 0 {
				return false
			}
			seen |= 1 << k
			if !p.member(level, k) {
				return false
			}
		}
		p.ws()
		if p.eat(',') {
			continue
		}
		return p.eat('}')
	}
}

// foldsToKnown reports whether key matches a known or refused name when
// case is ignored, or holds non-ASCII bytes (which encoding/json may fold
// too, as with the Kelvin sign).
func foldsToKnown(key []byte) bool {
	for _, b := range key {
		if b >= utf8.RuneSelf {
			return true
		}
	}
	for _, names := range known {
		for _, name := range names {
			if equalFoldASCII(key, name) {
				return true
			}
		}
	}
	for _, name := range refused {
		if equalFoldASCII(key, name) {
			return true
		}
	}
	return false
}

func equalFoldASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// member decodes known member k of an object at level.
func (p *parser) member(level, k int) bool {
	c := p.c
	switch level {
	case levelTop:
		switch k {
		case 0:
			return p.str(&c.ID)
		case 1:
			return p.str(&c.Model)
		case 2:
			return p.choices()
		case 3:
			if p.null() {
				return true
			}
			c.UsageSet = true
			return p.object(levelUsage)
		}
	case levelChoice:
		switch k {
		case 0:
			return p.null() || p.int(&c.Index)
		case 1:
			if p.null() {
				return true
			}
			c.DeltaSet = true
			return p.object(levelDelta)
		case 2:
			return p.str(&c.FinishReason)
		case 3:
			return p.str(&c.Text)
		}
	case levelDelta:
		switch k {
		case 0:
			return p.str(&c.Delta.Content)
		case 1:
			return p.str(&c.Delta.ReasoningContent)
		case 2:
			return p.str(&c.Delta.Reasoning)
		case 3:
			return p.emptyArray()
		}
	case levelUsage:
		switch k {
		case 0:
			return p.null() || p.int(&c.Usage.PromptTokens)
		case 1:
			return p.null() || p.int(&c.Usage.CompletionTokens)
		case 2:
			return p.null() || p.int(&c.Usage.TotalTokens)
		case 3:
			if p.null() {
				return true
			}
			c.Usage.DetailsSet = true
			return p.object(levelDetails)
		case 4:
			if p.null() {
				return true
			}
			c.Usage.CompletionDetailsSet = true
			return p.object(levelCompletionDetails)
		}
	case levelDetails:
		if p.null() {
			return true
		}
		c.Usage.CachedSet = true
		return p.int(&c.Usage.CachedTokens)
	case levelCompletionDetails:
		if p.null() {
			return true
		}
		c.Usage.ReasoningSet = true
		return p.int(&c.Usage.ReasoningTokens)
	}
	return false
}

// emptyArray consumes null or an empty array and reports whether there
// was one: a delta's tool_calls that carries no call (SGLang writes null
// on every chunk). A call goes to encoding/json.
func (p *parser) emptyArray() bool {
	if p.null() {
		return true
	}
	if !p.eat('[') {
		return false
	}
	p.ws()
	return p.eat(']')
}

// choices parses the choices array: null, empty, or one object.
func (p *parser) choices() bool {
	if p.null() {
		return true
	}
	if !p.eat('[') {
		return false
	}
	p.ws()
	if p.eat(']') {
		return true
	}
	p.c.Choices = 1
	if p.peek() != '{' || !p.object(levelChoice) {
		return false
	}
	p.ws()
	return p.eat(']') // a second choice goes to encoding/json
}

// null consumes a null literal and reports whether there was one.
func (p *parser) null() bool {
	if len(p.d)-p.i >= 4 && string(p.d[p.i:p.i+4]) == "null" {
		p.i += 4
		return true
	}
	return false
}

// str decodes a string or null into s.
func (p *parser) str(s *Str) bool {
	if p.null() {
		return true
	}
	raw, escaped, ok := p.rawString()
	if !ok {
		return false
	}
	s.Set = true
	if !escaped {
		s.Val = raw
		return true
	}
	start := len(p.c.scratch)
	out, ok := unescape(p.c.scratch, raw)
	if !ok {
		return false
	}
	p.c.scratch = out
	s.Val = out[start:len(out):len(out)]
	return true
}

// rawString consumes a string and returns its bytes between the quotes,
// whether they hold escapes, and whether it was a valid string with valid
// UTF-8.
func (p *parser) rawString() (raw []byte, escaped, ok bool) {
	if !p.eat('"') {
		return nil, false, false
	}
	start := p.i
	ascii := true
	for p.i < len(p.d) {
		b := p.d[p.i]
		switch {
		case b == '"':
			raw = p.d[start:p.i]
			p.i++
			if !ascii && !utf8.Valid(raw) {
				return nil, false, false
			}
			return raw, escaped, true
		case b == '\\':
			escaped = true
			p.i++
			if p.i >= len(p.d) {
				return nil, false, false
			}
			switch p.d[p.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i++
			case 'u':
				if len(p.d)-p.i < 5 {
					return nil, false, false
				}
				for _, h := range p.d[p.i+1 : p.i+5] {
					if hexVal(h) < 0 {
						return nil, false, false
					}
				}
				p.i += 5
			default:
				return nil, false, false
			}
		case b < 0x20:
			return nil, false, false
		default:
			if b >= utf8.RuneSelf {
				ascii = false
			}
			p.i++
		}
	}
	return nil, false, false
}

func hexVal(b byte) int {
	switch {
	case '0' <= b && b <= '9':
		return int(b - '0')
	case 'a' <= b && b <= 'f':
		return int(b-'a') + 10
	case 'A' <= b && b <= 'F':
		return int(b-'A') + 10
	}
	return -1
}

// unescape appends the unescaped form of raw, whose escapes rawString
// has validated, to dst. A \u escape of a surrogate is refused (encoding/
// json pairs or replaces those; the caller falls back to it).
func unescape(dst, raw []byte) ([]byte, bool) {
	for i := 0; i < len(raw); i++ {
		b := raw[i]
		if b != '\\' {
			dst = append(dst, b)
			continue
		}
		i++
		switch raw[i] {
		case '"', '\\', '/':
			dst = append(dst, raw[i])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := rune(0)
			for _, h := range raw[i+1 : i+5] {
				r = r<<4 | rune(hexVal(h))
			}
			if 0xD800 <= r && r < 0xE000 {
				return dst, false
			}
			dst = utf8.AppendRune(dst, r)
			i += 4
		}
	}
	return dst, true
}

// maxDigits is the most digits an int holds whatever they are.
const maxDigits = 18*(strconv.IntSize/64) + 9*(1-strconv.IntSize/64)

// int decodes a plain integer: an optional minus, no leading zeros, at
// most maxDigits digits, no fraction or exponent.
func (p *parser) int(v *int) bool {
	neg := p.eat('-')
	start := p.i
	n := 0
	for p.i < len(p.d) && '0' <= p.d[p.i] && p.d[p.i] <= '9' {
		n = n*10 + int(p.d[p.i]-'0')
		p.i++
	}
	digits := p.i - start
	if digits == 0 || digits > maxDigits || (digits > 1 && p.d[start] == '0') {
		return false
	}
	if c := p.peek(); c == '.' || c == 'e' || c == 'E' {
		return false
	}
	if neg {
		n = -n
	}
	*v = n
	return true
}

// skip consumes any JSON value, validating it.
func (p *parser) skip(depth int) bool {
	if depth > 64 {
		return false
	}
	switch c := p.peek(); {
	case c == '"':
		_, _, ok := p.rawString()
		return ok
	case c == '{':
		p.i++
		p.ws()
		if p.eat('}') {
			return true
		}
		for {
			p.ws()
			if _, _, ok := p.rawString(); !ok {
				return false
			}
			p.ws()
			if !p.eat(':') {
				return false
			}
			p.ws()
			if !p.skip(depth + 1) {
				return false
			}
			p.ws()
			if p.eat(',') {
				continue
			}
			return p.eat('}')
		}
	case c == '[':
		p.i++
		p.ws()
		if p.eat(']') {
			return true
		}
		for {
			p.ws()
			if !p.skip(depth + 1) {
				return false
			}
			p.ws()
			if p.eat(',') {
				continue
			}
			return p.eat(']')
		}
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		return p.number()
	}
	return false
}

func (p *parser) literal(s string) bool {
	if len(p.d)-p.i >= len(s) && string(p.d[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// number consumes a JSON number: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
func (p *parser) number() bool {
	p.eat('-')
	switch c := p.peek(); {
	case c == '0':
		p.i++
	case '1' <= c && c <= '9':
		p.digits()
	default:
		return false
	}
	if p.eat('.') && !p.digits() {
		return false
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.i++
		if c := p.peek(); c == '+' || c == '-' {
			p.i++
		}
		if !p.digits() {
			return false
		}
	}
	return true
}

func (p *parser) digits() bool {
	start := p.i
	for p.i < len(p.d) && '0' <= p.d[p.i] && p.d[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}
