package hf

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exprProbe is one line of testdata/templates/expressions.txt with what
// Jinja2 3.1.6 does with it (scripts/chat_template_goldens.py).
type exprProbe struct {
	Template  string  `json:"template"`
	Output    *string `json:"output"`
	ErrorKind string  `json:"error_kind"`
	Error     string  `json:"error"`
}

// knownExprDivergences are probes Go renders differently from Jinja2, with
// the reason; one that starts to match fails the test.
var knownExprDivergences = map[string]string{
	// ardanlabs/jinja builds no tuple outside a literal: tuple + tuple
	// prints as a list.
	"{{ (1, 2) + (3,) }}": "tuple concatenation",
}

// TestTemplateExpressions renders one-line templates that probe Python's
// operators (+ - * / // % **, ordering, in), Jinja2's Undefined, Markup
// concatenation and generator filters, and compares with Jinja2: the same
// output, or an error; where Jinja2 raises a TypeError, UndefinedError or
// ZeroDivisionError, a *TemplateExprError of that kind whose message holds
// Python's (for an undefined value, its name).
func TestTemplateExpressions(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(corpusDir, "expressions.json"))
	if err != nil {
		t.Fatal(err)
	}
	var probes []exprProbe
	if err := json.Unmarshal(data, &probes); err != nil {
		t.Fatal(err)
	}
	if len(probes) < 50 {
		t.Fatalf("%d probes, want the whole of expressions.txt", len(probes))
	}
	for _, p := range probes {
		ct, err := ParseChatTemplate(p.Template, SpecialTokens{})
		if err != nil {
			t.Errorf("%s: %v", p.Template, err)
			continue
		}
		got, err := ct.Render(nil, RenderOptions{})
		if _, known := knownExprDivergences[p.Template]; known {
			if p.Output != nil && err == nil && got == *p.Output {
				t.Errorf("%s: listed in knownExprDivergences but now identical to Jinja2: remove it", p.Template)
			}
			continue
		}
		if p.Output != nil {
			if err != nil || got != *p.Output {
				t.Errorf("%s: Go renders %q, %v; Jinja2 %q", p.Template, got, err, *p.Output)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: Go renders %q; Jinja2 raises %s: %s", p.Template, got, p.ErrorKind, p.Error)
			continue
		}
		var e *TemplateExprError
		if !errors.As(err, &e) {
			t.Errorf("%s: Go error %v is not a *TemplateExprError (Jinja2: %s: %s)", p.Template, err, p.ErrorKind, p.Error)
			continue
		}
		want := p.Error
		if p.ErrorKind == "UndefinedError" {
			// Jinja2 names the undefined value ('x' is undefined, 'dict
			// object' has no attribute 'b'); Go names the expression.
			want = "is undefined"
		}
		if e.Kind != p.ErrorKind || !strings.Contains(e.Message, want) || e.Line != 1 || e.Expr == "" {
			t.Errorf("%s: Go error %+v; Jinja2 raises %s: %s", p.Template, *e, p.ErrorKind, p.Error)
		}
	}
}

// TestTemplateExprErrorNamesTheOperation checks that an error points at
// the line and the source of the failing operation.
func TestTemplateExprErrorNamesTheOperation(t *testing.T) {
	src := "line one\n{%- for m in messages %}\n{{ '<s>' + m.content }}\n{%- endfor %}"
	ct, err := ParseChatTemplate(src, SpecialTokens{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ct.RenderJSON(json.RawMessage(`[{"role": "user", "content": [{"type": "text", "text": "hi"}]}]`), RenderOptions{})
	var e *TemplateExprError
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want a *TemplateExprError", err)
	}
	if e.Kind != "TypeError" || e.Line != 3 || e.Expr != "'<s>' + m.content" || e.Message != `can only concatenate str (not "list") to str` {
		t.Errorf("got %+v", *e)
	}
	for _, want := range []string{"line 3", "TypeError", "'<s>' + m.content", "list"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err.Error(), want)
		}
	}
}

// FuzzTemplateExpression parses any expression with the Jinja2 grammar of
// jinjaexpr.go: it never panics, and an expression it accepts is written
// back as one that ardanlabs/jinja compiles and that renders without
// panicking (an error is fine: the operands are arbitrary).
func FuzzTemplateExpression(f *testing.F) {
	for _, s := range []string{
		`"a" + b.c[0]['d'] ~ e|f(1, x=2) is not g 3`,
		`a if b else c if d`, `-x|abs ** 2 // 3 % 4`, `(1, 2) + (3,)`,
		`{"k": [1, 2.5e3, none]}.k[1:2:-1]`, `not a in b and c not in d or e < f <= g`,
		`x|map(attribute='y')|tojson`, `"s"|safe + "<"`, `f(*a)`, `a.0.b`, `1_000 + 0.5`,
		`x.type is iterable and y|items is not sequence`, `a is divisibleby 3 or b is not lt(2)`,
		`"s"|safe is escaped`, `n is odd(1)`, `k is in {"k": 1}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		var sites []exprSite
		out, err := rewriteExprTag(src, 1, &sites)
		if err != nil {
			return
		}
		ct, err := ParseChatTemplate("{{ "+src+" }}", SpecialTokens{})
		if err != nil {
			if !strings.Contains(src, "}}") && !strings.Contains(src, "{%") && !strings.Contains(src, "{#") && !strings.Contains(src, "{{") {
				t.Fatalf("%q rewritten as %q does not compile: %v", src, out, err)
			}
			return
		}
		_, _ = ct.Render(nil, RenderOptions{Limits: RenderLimits{Steps: 1000, OutputBytes: 1 << 16}})
	})
}
