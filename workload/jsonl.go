package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// jsonlSource reads custom JSONL, one request a line, as vLLM's custom
// dataset does: {"prompt": text} or {"messages": [{"role", "content"}]}
// in OpenAI's chat form, with an optional "output_tokens".
type jsonlSource struct {
	lines
}

// jlRow is one line; keys it does not name are ignored.
type jlRow struct {
	Prompt       *string      `json:"prompt"`
	Messages     *[]jlMessage `json:"messages"`
	OutputTokens *json.Number `json:"output_tokens"`
}

type jlMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// jlPart is one part of an OpenAI content array.
type jlPart struct {
	Type string  `json:"type"`
	Text *string `json:"text"`
}

var jlRoles = map[string]bool{"system": true, "user": true, "assistant": true}

func (p *jsonlSource) next() (Row, dropReason, error) {
	ln, err := p.lines.record()
	if err != nil {
		return Row{}, keep, err
	}
	row, f := parseJSONL(ln.b)
	if f != nil {
		return Row{}, keep, p.bad(ln, f)
	}
	row.Line = ln.n
	return row, keep, nil
}

func parseJSONL(b []byte) (Row, *fault) {
	if b = bytes.TrimSpace(b); len(b) == 0 || b[0] != '{' {
		return Row{}, faultf(RuleSyntax, "not a JSON object")
	}
	var j jlRow
	if err := json.Unmarshal(b, &j); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Row{}, &fault{rule: RuleField, msg: typeMismatch(te, "the line")}
		}
		return Row{}, faultf(RuleSyntax, "not valid JSON: %v", err)
	}
	row := Row{At: Untimed}
	switch {
	case j.Prompt != nil && j.Messages != nil:
		return Row{}, faultf(RuleField, "has both prompt and messages; want one")
	case j.Prompt != nil:
		row.Messages = []Message{{Role: "user", Content: *j.Prompt}}
	case j.Messages != nil:
		if len(*j.Messages) == 0 {
			return Row{}, faultf(RuleField, "messages is empty")
		}
		row.Messages = make([]Message, len(*j.Messages))
		for i, m := range *j.Messages {
			if !jlRoles[m.Role] {
				return Row{}, faultf(RuleRole, "messages[%d].role is %q; want system, user or assistant", i, m.Role)
			}
			text, f := content(m.Content, i)
			if f != nil {
				return Row{}, f
			}
			row.Messages[i] = Message{Role: m.Role, Content: text}
		}
	default:
		return Row{}, faultf(RuleField, "missing prompt or messages")
	}
	if j.OutputTokens != nil {
		v, ok := integer([]byte(j.OutputTokens.String()), false)
		switch {
		case !ok:
			return Row{}, faultf(RuleOutput, "output_tokens %s is not an integer", j.OutputTokens)
		case v < 1:
			return Row{}, faultf(RuleOutput, "output_tokens %d is below 1", v)
		case v > MaxTokens:
			return Row{}, faultf(RuleOutput, "output_tokens %d exceeds the bound of %d tokens", v, MaxTokens)
		}
		row.Output = int(v)
	}
	return row, nil
}

// content reads a message's content: a string, or an array of text parts
// (joined).
func content(raw json.RawMessage, i int) (string, *fault) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return "", faultf(RuleField, "messages[%d] has no content", i)
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", faultf(RuleField, "messages[%d].content: %v", i, err)
		}
		return s, nil
	case raw[0] == '[':
		var parts []jlPart
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", faultf(RuleField, "messages[%d].content is not an array of text parts: %v", i, err)
		}
		var b strings.Builder
		for k, part := range parts {
			if part.Type != "text" || part.Text == nil {
				return "", faultf(RuleField, "messages[%d].content[%d] is of type %q; only text parts are read", i, k, part.Type)
			}
			b.WriteString(*part.Text)
		}
		return b.String(), nil
	}
	return "", faultf(RuleField, "messages[%d].content is %s; want a string or an array of text parts", i, firstWord(raw))
}

func firstWord(raw []byte) string {
	switch raw[0] {
	case '{':
		return "an object"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}
