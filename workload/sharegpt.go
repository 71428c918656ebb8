package workload

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
)

// sharegptSource reads a ShareGPT JSON array one conversation at a time
// (json.Decoder.Token, then Decode per element), never the whole array.
type sharegptSource struct {
	name     string
	dec      *json.Decoder
	cap      *capReader
	rec      int
	allTurns bool
	started  bool
	queue    []Row
}

// A capReader lets its reader read at most up to limit bytes of the
// file, so that the decoder cannot buffer a record over MaxLineBytes.
type capReader struct {
	r     io.Reader
	read  int64
	limit int64
}

var errRecordTooLong = errors.New("record too long")

func (c *capReader) Read(p []byte) (int, error) {
	if c.read >= c.limit {
		return 0, errRecordTooLong
	}
	if room := c.limit - c.read; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

func newShareGPTSource(r io.Reader, name string, allTurns bool) *sharegptSource {
	c := &capReader{r: r, limit: MaxLineBytes}
	return &sharegptSource{name: name, dec: json.NewDecoder(c), cap: c, allTurns: allTurns}
}

// sgTurn is one message of a conversation.
type sgTurn struct {
	From  string `json:"from"`
	Value string `json:"value"`
}

// sgConv is one element of the array.
type sgConv struct {
	ID            json.RawMessage `json:"id"`
	Conversations []sgTurn        `json:"conversations"`
	Conversation  []sgTurn        `json:"conversation"` // SGLang accepts this key too
}

// sgRoles maps ShareGPT's "from" values to chat roles.
var sgRoles = map[string]string{
	"human": "user", "user": "user",
	"gpt": "assistant", "chatgpt": "assistant", "assistant": "assistant", "bing": "assistant", "bard": "assistant",
	"system": "system",
}

func (p *sharegptSource) fail(rule Rule, fatal bool, format string, args ...any) *RowError {
	return &RowError{File: p.name, Line: max(p.rec, 1), Record: true, Rule: rule, Msg: fmt.Sprintf(format, args...), fatal: fatal}
}

// decodeErr turns a decoder error into a row error: syntax and length
// faults end the read (the decoder cannot resume), a wrong type skips
// the record.
func (p *sharegptSource) decodeErr(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, errRecordTooLong):
		return p.fail(RuleLineLength, true, "record is longer than %d MiB", MaxLineBytes>>20)
	case errors.As(err, &se) && se.Error() != "unexpected end of JSON input":
		return p.fail(RuleSyntax, true, "not valid JSON at byte %d of the file: %v", se.Offset, err)
	case se != nil || err == io.ErrUnexpectedEOF || err == io.EOF:
		return p.fail(RuleTruncated, true, "the file ends inside the array: is it truncated?")
	case errors.As(err, &te):
		return p.fail(RuleField, false, "%s", typeMismatch(te, "the record"))
	}
	return fmt.Errorf("%s record %d: read: %w", p.name, p.rec, err)
}

func (p *sharegptSource) next() (Row, dropReason, error) {
	if len(p.queue) > 0 {
		r := p.queue[0]
		p.queue = p.queue[1:]
		return r, keep, nil
	}
	if !p.started {
		p.started = true
		tok, err := p.dec.Token()
		if err != nil {
			if err == io.EOF {
				return Row{}, keep, p.fail(RuleSyntax, true, "the file is empty; want a JSON array of conversations")
			}
			return Row{}, keep, p.decodeErr(err)
		}
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return Row{}, keep, p.fail(RuleSyntax, true, "the file starts with %v; want a JSON array of conversations", tok)
		}
	}
	p.cap.limit = p.dec.InputOffset() + MaxLineBytes
	if !p.dec.More() {
		tok, err := p.dec.Token()
		if err != nil {
			return Row{}, keep, p.decodeErr(err)
		}
		if d, ok := tok.(json.Delim); !ok || d != ']' {
			return Row{}, keep, p.fail(RuleSyntax, true, "want ']' after record %d, found %v", p.rec, tok)
		}
		p.cap.limit = p.dec.InputOffset() + MaxLineBytes
		if tok, err := p.dec.Token(); err != io.EOF {
			if err != nil {
				return Row{}, keep, p.decodeErr(err)
			}
			return Row{}, keep, p.fail(RuleSyntax, true, "data after the array: %v", tok)
		}
		return Row{}, keep, io.EOF
	}
	p.rec++
	var c sgConv
	if err := p.dec.Decode(&c); err != nil {
		return Row{}, keep, p.decodeErr(err)
	}
	turns := c.Conversations
	if turns == nil {
		turns = c.Conversation
	}
	id, err := conversationID(c.ID)
	if err != nil {
		return Row{}, keep, p.fail(RuleField, false, "id is %s; want a string or a number", err)
	}
	msgs := make([]Message, len(turns))
	firstUser := -1
	for i, t := range turns {
		role, ok := sgRoles[t.From]
		if !ok {
			return Row{}, keep, p.fail(RuleRole, false, "conversations[%d].from is %q; want human, user, gpt, chatgpt, assistant, bing, bard or system", i, t.From)
		}
		if role == "user" && firstUser < 0 {
			firstUser = i
		}
		msgs[i] = Message{Role: role, Content: t.Value}
	}
	if firstUser < 0 {
		return Row{Line: p.rec, At: Untimed, ID: id}, dropNoUser, nil
	}
	if !p.allTurns {
		return Row{Line: p.rec, At: Untimed, ID: id, Messages: msgs[: firstUser+1 : firstUser+1]}, keep, nil
	}
	session := id
	if session == "" {
		session = "#" + strconv.Itoa(p.rec)
	}
	from, turn := 0, 0
	for i, m := range msgs {
		if m.Role != "user" {
			continue
		}
		turn++
		p.queue = append(p.queue, Row{Line: p.rec, At: Untimed, Messages: msgs[from : i+1 : i+1], Session: session, Turn: turn})
		from = i + 1
	}
	r := p.queue[0]
	p.queue = p.queue[1:]
	return r, keep, nil
}

// conversationID reads an element's id: a string, a number (kept as
// written) or absent.
func conversationID(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return string(raw), nil
	}
	return "", errors.New("a JSON " + map[byte]string{'{': "object", '[': "array", 't': "boolean", 'f': "boolean"}[raw[0]])
}

// typeMismatch describes a JSON value of the wrong type; whole names the
// decoded value when the mismatch is not in one of its fields.
func typeMismatch(te *json.UnmarshalTypeError, whole string) string {
	field := te.Field
	if field == "" {
		field = whole
	}
	return fmt.Sprintf("%s is a JSON %s; want %s", field, te.Value, jsonType(te.Type))
}

// jsonType names the JSON type that decodes into t.
func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return jsonType(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Bool:
		return "a boolean"
	}
	return "a number" // numeric kinds and json.Number
}
