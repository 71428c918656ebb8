package hf

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"

	"github.com/inferbench/inferbench/promptsize"
)

// SpecialTokens are the special-token strings a chat template sees as
// bos_token, eos_token, pad_token and unk_token. An empty field is not
// declared and is left undefined in the template.
type SpecialTokens struct {
	BOS, EOS, PAD, UNK string
}

// RenderOptions control one rendering of a chat template. The zero value
// renders without the generation prompt, without tools, with today's date.
type RenderOptions struct {
	// AddGenerationPrompt appends the opening of the assistant's turn, as
	// a server does for a chat completion request (Count always sets it).
	AddGenerationPrompt bool
	// Tools is a JSON array of tool definitions, passed to the template as
	// tools with its key order kept (tools|tojson prints it in that order).
	// Nil or empty means no tools.
	Tools json.RawMessage
	// Date is what strftime_now formats. The zero value means the time of
	// rendering, as a server renders with the real date; set it for
	// reproducible prompts (gpt-oss and Llama 3.x print the date).
	Date time.Time
	// Vars are further template variables, e.g. "enable_thinking" or
	// "reasoning_effort". Maps given here are passed with sorted keys; use
	// json.RawMessage values to keep a key order.
	Vars map[string]any
	// Limits bound the rendering's work; the zero value takes the defaults.
	Limits RenderLimits
}

// A ChatTemplate is a compiled Hugging Face chat template (Jinja) with the
// special tokens it is rendered with. It is safe for concurrent use.
//
// It renders as transformers' apply_chat_template does with Python's Jinja2
// (what vLLM, SGLang and mlx_lm serve with): trim_blocks and lstrip_blocks,
// one trailing newline of the source dropped, loop controls, a
// {% generation %} block rendering its body, tojson as json.dumps with
// ensure_ascii=False and key order kept, raise_exception, strftime_now, and
// tools and documents passed as none when absent. The source is lexed here
// with Jinja2's rules and evaluated by github.com/ardanlabs/jinja with
// order-preserving values (jinjasrc.go says how); a rendering is bounded by
// RenderLimits and its context.
type ChatTemplate struct {
	named   map[string]*compiledTemplate // "default", "tool_use", ... for the list form
	special SpecialTokens
	source  string // of the default template
}

// ParseChatTemplate compiles a chat template source.
func ParseChatTemplate(source string, special SpecialTokens) (*ChatTemplate, error) {
	t, err := compile(source)
	if err != nil {
		return nil, err
	}
	return &ChatTemplate{named: map[string]*compiledTemplate{"default": t}, special: special, source: source}, nil
}

// A compiledTemplate is a template rewritten for and compiled by
// ardanlabs/jinja, with the sites of its checked operations.
type compiledTemplate struct {
	t     *jinja.Template
	sites []exprSite
}

func compile(source string) (ct *compiledTemplate, err error) {
	defer func() {
		if r := recover(); r != nil {
			ct, err = nil, fmt.Errorf("hf: chat template: the Jinja parser panicked: %v", r)
		}
	}()
	rewritten, sites, err := rewriteTemplateSites(source)
	if err != nil {
		return nil, fmt.Errorf("hf: chat template: %w", err)
	}
	t, err := jinja.Compile(rewritten)
	if err != nil {
		return nil, fmt.Errorf("hf: chat template: %w", err)
	}
	return &compiledTemplate{t: t, sites: sites}, nil
}

// LoadChatTemplate reads the chat template of a model directory: the file
// chat_template.jinja when present, else the chat_template of
// tokenizer_config.json (a string, or the list form of named templates),
// with the special tokens of tokenizer_config.json. It returns an error
// wrapping ErrNoChatTemplate when the directory declares none.
func LoadChatTemplate(dir string) (*ChatTemplate, error) {
	cfgData, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		return nil, fmt.Errorf("hf: %w", err)
	}
	cfg, err := parseConfig(cfgData)
	if err != nil {
		return nil, err
	}
	src, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja"))
	switch {
	case err == nil:
		return ParseChatTemplate(string(src), cfg.special)
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("hf: %w", err)
	}
	if cfg.templates == nil {
		return nil, fmt.Errorf("hf: %s: tokenizer_config.json has no chat_template and there is no chat_template.jinja: %w", dir, ErrNoChatTemplate)
	}
	return cfg.chatTemplate()
}

// LoadSpecialTokens reads the bos, eos, pad and unk tokens of a model
// directory's tokenizer_config.json, for a template given from elsewhere
// (ParseChatTemplate).
func LoadSpecialTokens(dir string) (SpecialTokens, error) {
	data, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		return SpecialTokens{}, fmt.Errorf("hf: %w", err)
	}
	cfg, err := parseConfig(data)
	if err != nil {
		return SpecialTokens{}, err
	}
	return cfg.special, nil
}

// Source returns the source of the default template.
func (c *ChatTemplate) Source() string { return c.source }

// SpecialTokens returns the special tokens the template is rendered with.
func (c *ChatTemplate) SpecialTokens() SpecialTokens { return c.special }

// Render renders messages (each as {"role", "content"}) through the template.
func (c *ChatTemplate) Render(messages []promptsize.Message, opts RenderOptions) (string, error) {
	return c.RenderContext(context.Background(), messages, opts)
}

// RenderContext is Render that stops with ctx's error when ctx ends.
func (c *ChatTemplate) RenderContext(ctx context.Context, messages []promptsize.Message, opts RenderOptions) (string, error) {
	list := make([]jinja.Value, len(messages))
	for i, m := range messages {
		d := jinja.NewDict()
		d.AsDict().Set("role", jinja.NewString(m.Role))
		d.AsDict().Set("content", jinja.NewString(m.Content))
		list[i] = d
	}
	return c.render(ctx, jinja.NewList(list), opts)
}

// RenderJSON is Render for messages given as a JSON array of objects of any
// shape (tool calls, content parts, reasoning), with their key order kept.
func (c *ChatTemplate) RenderJSON(messages json.RawMessage, opts RenderOptions) (string, error) {
	return c.RenderJSONContext(context.Background(), messages, opts)
}

// RenderJSONContext is RenderJSON that stops with ctx's error when ctx ends.
func (c *ChatTemplate) RenderJSONContext(ctx context.Context, messages json.RawMessage, opts RenderOptions) (string, error) {
	v, err := orderedJSON(messages)
	if err != nil {
		return "", fmt.Errorf("hf: messages: %w", err)
	}
	if !v.IsList() {
		return "", fmt.Errorf("hf: messages: expected a JSON array, found %s", kindName(v))
	}
	return c.render(ctx, v, opts)
}

func (c *ChatTemplate) render(ctx context.Context, messages jinja.Value, opts RenderOptions) (out string, err error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("hf: chat template: %w", err)
	}
	data := make(map[string]jinja.Value, 24+len(opts.Vars))
	for k, v := range opts.Vars {
		if raw, ok := v.(json.RawMessage); ok {
			jv, err := orderedJSON(raw)
			if err != nil {
				return "", fmt.Errorf("hf: variable %s: %w", k, err)
			}
			data[k] = jv
			continue
		}
		data[k] = jinja.FromGoValue(v)
	}
	data["messages"] = messages
	// transformers passes tools and documents always, as None when absent.
	data["tools"] = jinja.None()
	data["documents"] = jinja.None()
	data["add_generation_prompt"] = jinja.NewBool(opts.AddGenerationPrompt)
	for name, tok := range map[string]string{"bos_token": c.special.BOS, "eos_token": c.special.EOS, "pad_token": c.special.PAD, "unk_token": c.special.UNK} {
		if tok != "" {
			data[name] = jinja.NewString(tok)
		}
	}
	tmpl := c.named["default"]
	if len(bytes.TrimSpace(opts.Tools)) > 0 && !bytes.Equal(bytes.TrimSpace(opts.Tools), []byte("null")) {
		tools, err := orderedJSON(opts.Tools)
		if err != nil {
			return "", fmt.Errorf("hf: tools: %w", err)
		}
		if !tools.IsList() {
			return "", fmt.Errorf("hf: tools: expected a JSON array, found %s", kindName(tools))
		}
		data["tools"] = tools
		if t, ok := c.named["tool_use"]; ok {
			tmpl = t
		}
	}
	if tmpl == nil {
		return "", fmt.Errorf("hf: the chat template list has no template named \"default\": %w", ErrNoChatTemplate)
	}
	date := opts.Date
	if date.IsZero() {
		date = time.Now()
	}
	budget := newRenderBudget(ctx, opts.Limits)
	for name, v := range budget.callables() {
		data[name] = v
	}
	for name, v := range pyFilters() {
		data[name] = v
	}
	for name, v := range pyOps(tmpl.sites) {
		data[name] = v
	}
	data["raise_exception"] = jinja.NewCallable("raise_exception", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		msg := ""
		if len(args) > 0 {
			msg = pyStr(args[0])
		}
		return jinja.Undefined(), &TemplateError{Message: msg}
	})
	data["strftime_now"] = jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), fmt.Errorf("strftime_now: expected one format string, found %d arguments", len(args))
		}
		s, err := strftime(args[0].AsString(), date)
		if err != nil {
			return jinja.Undefined(), err
		}
		return jinja.NewString(s), nil
	})
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("hf: chat template: rendering panicked: %v", r)
		}
	}()
	out, err = tmpl.t.RenderValues(data)
	if budget.err != nil {
		// The budget's error is the cause even where the library reports
		// it through another error.
		err = budget.err
	}
	if err != nil {
		return "", fmt.Errorf("hf: chat template: %w", err)
	}
	return out, nil
}

// A TemplateError is the error a template raised itself with
// raise_exception(message), as transformers raises jinja2's TemplateError.
type TemplateError struct {
	Message string
}

func (e *TemplateError) Error() string { return "raise_exception: " + e.Message }

// strftime formats t with the C/Python directives chat templates use:
// %Y %y %m %d %e %j %b %B %a %A %H %I %M %S %p %%.
func strftime(format string, t time.Time) (string, error) {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(format) {
			return "", fmt.Errorf("strftime_now: format %q ends with a lone %%", format)
		}
		switch format[i] {
		case 'Y':
			b.WriteString(strconv.Itoa(t.Year()))
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'b':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'I':
			fmt.Fprintf(&b, "%02d", (t.Hour()+11)%12+1)
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case '%':
			b.WriteByte('%')
		default:
			return "", fmt.Errorf("strftime_now: unsupported directive %%%c in %q (supported: %%Y %%y %%m %%d %%e %%j %%b %%B %%a %%A %%H %%I %%M %%S %%p %%%%)", format[i], format)
		}
	}
	return b.String(), nil
}

// orderedJSON decodes JSON into template values, keeping object key order.
// Integers become ints and other numbers floats, as in Python's json.
func orderedJSON(data []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return jinja.Undefined(), err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jinja.Undefined(), errors.New("expected one JSON value, found data after it")
	}
	return v, nil
}

// maxJSONDepth bounds the nesting orderedJSON accepts.
const maxJSONDepth = 1000

func decodeValue(dec *json.Decoder, depth int) (jinja.Value, error) {
	if depth > maxJSONDepth {
		return jinja.Undefined(), fmt.Errorf("expected JSON nested at most %d deep", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch t := tok.(type) {
	case nil:
		return jinja.None(), nil
	case bool:
		return jinja.NewBool(t), nil
	case string:
		return jinja.NewString(t), nil
	case json.Number:
		if n, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return jinja.NewInt(n), nil
		}
		f, err := t.Float64()
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("expected a number, found %s: %w", t, err)
		}
		return jinja.NewFloat(f), nil
	case json.Delim:
		switch t {
		case '[':
			var items []jinja.Value
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, v)
			}
			if _, err := dec.Token(); err != nil {
				return jinja.Undefined(), err
			}
			return jinja.NewList(items), nil
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return jinja.Undefined(), err
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return jinja.Undefined(), err
				}
				d.AsDict().Set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return jinja.Undefined(), err
			}
			return d, nil
		}
	}
	return jinja.Undefined(), fmt.Errorf("unexpected JSON token %v", tok)
}

func kindName(v jinja.Value) string {
	switch {
	case v.IsDict():
		return "an object"
	case v.IsString():
		return "a string"
	case v.IsNumber():
		return "a number"
	case v.IsBool():
		return "a boolean"
	case v.IsNone():
		return "null"
	}
	return "another value"
}
