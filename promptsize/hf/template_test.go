package hf

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/promptsize"
)

func TestRender(t *testing.T) {
	date := time.Date(2024, 7, 26, 15, 4, 5, 0, time.UTC)
	msgs := []promptsize.Message{{Role: "system", Content: "S"}, {Role: "user", Content: "hi"}}
	for _, tc := range []struct {
		name, src string
		opts      RenderOptions
		want      string
	}{
		{"one trailing newline trimmed", "{{ messages[1].content }}\n", RenderOptions{}, "hi"},
		{"only one trailing newline trimmed", "x\n\n", RenderOptions{}, "x\n"},
		{"message key order", "{% for k in messages[0] %}{{ k }};{% endfor %}", RenderOptions{}, "role;content;"},
		{"tools keep key order", "{% for k in tools[0] %}{{ k }},{% endfor %}{{ tools[0].b.y }}",
			RenderOptions{Tools: json.RawMessage(`[{"z":1,"a":2,"b":{"y":3.5,"x":null}}]`)}, "z,a,b,3.5"},
		{"generation prompt", "{% if add_generation_prompt %}<gen>{% endif %}", RenderOptions{AddGenerationPrompt: true}, "<gen>"},
		{"no generation prompt by default", "{% if add_generation_prompt %}<gen>{% endif %}", RenderOptions{}, ""},
		{"special tokens", "{{ bos_token }}|{{ eos_token }}|{{ pad_token is defined }}", RenderOptions{}, "<s>|</s>|False"},
		{"pinned date", `{{ strftime_now("%d %b %Y") }} {{ strftime_now("%A %j %H:%M:%S %p %%") }}`, RenderOptions{Date: date}, "26 Jul 2024 Friday 208 15:04:05 PM %"},
		{"variables", "{{ reasoning_effort }}{{ extra.k }}", RenderOptions{Vars: map[string]any{"reasoning_effort": "high", "extra": json.RawMessage(`{"k":"v"}`)}}, "highv"},
	} {
		ct, err := ParseChatTemplate(tc.src, SpecialTokens{BOS: "<s>", EOS: "</s>"})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := ct.Render(msgs, tc.opts)
		if err != nil || got != tc.want {
			t.Errorf("%s: Render = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestRenderToday(t *testing.T) {
	ct, err := ParseChatTemplate(`{{ strftime_now("%Y-%m-%d") }}`, SpecialTokens{})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Format("2006-01-02")
	got, err := ct.Render(nil, RenderOptions{})
	after := time.Now().Format("2006-01-02")
	if err != nil || (got != before && got != after) {
		t.Errorf("strftime_now without a date = %q, %v; want today (%s)", got, err, before)
	}
}

func TestRenderErrors(t *testing.T) {
	ct, err := ParseChatTemplate(`{{ raise_exception("no tools here") }}`, SpecialTokens{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ct.Render(nil, RenderOptions{}); err == nil {
		t.Error("raise_exception rendered without an error")
	}
	if _, err := ParseChatTemplate("{% if %}", SpecialTokens{}); err == nil {
		t.Error("a broken template compiled")
	}
	ok, _ := ParseChatTemplate("x", SpecialTokens{})
	if _, err := ok.Render(nil, RenderOptions{Tools: json.RawMessage(`{"not":"a list"}`)}); err == nil {
		t.Error("tools that are not a list were accepted")
	}
	if _, err := ok.RenderJSON(json.RawMessage(`[{"role":"user"}] trailing`), RenderOptions{}); err == nil {
		t.Error("messages with trailing data were accepted")
	}
	if _, err := ok.Render(nil, RenderOptions{Date: time.Now(), Vars: map[string]any{"v": json.RawMessage(`{`)}}); err == nil {
		t.Error("a broken JSON variable was accepted")
	}
}

// writeModel writes a model directory with the tiny byte-level tokenizer
// and the given tokenizer_config.json and chat_template.jinja (if not "").
func writeModel(t *testing.T, config, jinja string) string {
	t.Helper()
	dir := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "tokenizer.json"), tinyByteLevel(nil), 0o644))
	must(os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(config), 0o644))
	if jinja != "" {
		must(os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte(jinja), 0o644))
	}
	return dir
}

func TestLoadConfigForms(t *testing.T) {
	user := []promptsize.Message{{Role: "user", Content: "a"}}
	for _, tc := range []struct {
		name, config, jinja string
		opts                RenderOptions
		want                string
	}{
		{"string template, AddedToken bos",
			`{"bos_token": {"__type": "AddedToken", "content": "<|x|>", "lstrip": false}, "eos_token": "E", "unk_token": null, "chat_template": "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"}`,
			"", RenderOptions{}, "<|x|>aE"},
		{"chat_template.jinja wins over the config",
			`{"chat_template": "config"}`, "file{{ messages[0].content }}\n", RenderOptions{}, "filea"},
		{"list form: default",
			`{"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T{{ tools|length }}"}]}`,
			"", RenderOptions{}, "D"},
		{"list form: tool_use with tools",
			`{"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T{{ tools|length }}"}]}`,
			"", RenderOptions{Tools: json.RawMessage(`[{"type":"function"}]`)}, "T1"},
	} {
		tok, err := Load(writeModel(t, tc.config, tc.jinja))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := tok.Render(user, tc.opts)
		if err != nil || got != tc.want {
			t.Errorf("%s: Render = %q, %v; want %q", tc.name, got, err, tc.want)
		}
		ct, err := LoadChatTemplate(writeModel(t, tc.config, tc.jinja))
		if err != nil {
			t.Fatalf("%s: LoadChatTemplate: %v", tc.name, err)
		}
		if got2, err := ct.Render(user, tc.opts); err != nil || got2 != tc.want {
			t.Errorf("%s: LoadChatTemplate(...).Render = %q, %v; want %q", tc.name, got2, err, tc.want)
		}
	}
}

func TestCount(t *testing.T) {
	// The template renders "<|x|>" + content + a generation prompt "aaa";
	// "<|x|>" is one added token.
	dir := writeModel(t, `{"chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}{% if add_generation_prompt %} aaa{% endif %}", "bos_token": "<|x|>"}`, "")
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	// "<|x|>" | "aa" -> [259] [256], " aaa" -> Ġ a a a: Ġa (rank 2) vs a a (rank 0):
	// a a first -> Ġ aa a -> aa a (rank 1) -> Ġ aaa: [32, 257].
	n, err := tok.Count(context.Background(), []promptsize.Message{{Role: "user", Content: "aa"}})
	if err != nil || n != 4 {
		t.Errorf("Count = %d, %v; want 4 ([259 256 32 257])", n, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tok.Count(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Count with a cancelled context: %v, want context.Canceled", err)
	}
	none, err := New(tinyByteLevel(nil), []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := none.Count(context.Background(), nil); !errors.Is(err, ErrNoChatTemplate) {
		t.Errorf("Count without a template: %v, want ErrNoChatTemplate", err)
	}
}

// TestJinja2Whitespace checks whitespace control and literals where
// github.com/ardanlabs/jinja alone differs from Jinja2; the expected strings
// are what Jinja2 3.1.6 renders with trim_blocks and lstrip_blocks.
func TestJinja2Whitespace(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"{{ '<s>' }}{% for m in messages %} {{ m.content }}{% endfor %}", "<s> hi"},
		{"{% for m in messages %}{{ m.content }}\n{% endfor %}", "hi\n"},
		{"{% for m in [1,2] %}{{ m }} {% endfor %}", "1 2 "},
		{"{% for m in [1] %}\n    {{- m }}\n    {% endfor %}", "1\n"},
		{"a\n  {% if true %}\n  b\n  {% endif %}\nc", "a\n  b\nc"},
		{"a  {%- if true -%}  b  {%+ endif %}", "ab  "},
		{"{# c #}\nx{#- c -#}  y", "xy"},
		{"{% raw %}{{ x }}{% endraw %}", "{{ x }}"},
		{`{{ "a\` + "\n" + `b\x41\u00e9\101" }}`, "abAéA"},
		{`{{ "%s=%d" | format("k", 3) }}`, "k=3"},
		{`{{ {"b": 1, "a": [1.0, "é<"]} | tojson }}`, `{"b": 1, "a": [1.0, "é<"]}`},
		{`{{ [1] | tojson(indent=0) }}`, "[\n1\n]"},
		{`{{ tools is none }}`, "True"},
	} {
		ct, err := ParseChatTemplate(tc.src, SpecialTokens{})
		if err != nil {
			t.Errorf("ParseChatTemplate(%q): %v", tc.src, err)
			continue
		}
		got, err := ct.Render([]promptsize.Message{{Role: "user", Content: "hi"}}, RenderOptions{})
		if err != nil || got != tc.want {
			t.Errorf("Render(%q) = %q, %v; Jinja2 renders %q", tc.src, got, err, tc.want)
		}
	}
}

// FuzzRewriteTemplate checks the Jinja2 lexer of the template rewriter on
// any source: it returns a template or an error, never panics, and a source
// without tags renders as itself (newlines normalised, one trailing newline
// dropped), whatever quotes, backslashes and braces it holds.
func FuzzRewriteTemplate(f *testing.F) {
	f.Add("a {%- if x -%} b {%+ endif +%}\n c {# d -#}  e {% raw %}{{ f }}{% endraw %}")
	f.Add(`{{ "a\` + "\n" + `b\x41" ~ '\u00e9' }}{{ {'a': {'b': 1}} }}`)
	f.Add("plain \"text\" \\ with } and % and #\r\n")
	f.Add("{% for a, b in x.items() if a > 1 recursive %}{{ a + b * -2 }}{% endfor %}{% set ns.x = y not in z %}{{ q|safe + 'r' if s }}")
	f.Fuzz(func(t *testing.T, src string) {
		out, err := rewriteTemplate(src)
		if err != nil || strings.Contains(src, "{") {
			return
		}
		ct, err := ParseChatTemplate(src, SpecialTokens{})
		if err != nil {
			t.Fatalf("tag-free source %q: rewritten as %q: %v", src, out, err)
		}
		got, err := ct.Render(nil, RenderOptions{})
		want := strings.TrimSuffix(strings.ReplaceAll(strings.ReplaceAll(src, "\r\n", "\n"), "\r", "\n"), "\n")
		if err != nil || got != want {
			t.Fatalf("tag-free source %q renders %q, %v; want it unchanged", src, got, err)
		}
	})
}
