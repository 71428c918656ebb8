package hf

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferbench/inferbench/promptsize"
)

// hostileBound is how long a hostile template or pattern may take to fail
// here. Without a budget these cases run for hours or exhaust memory; with
// it they fail in milliseconds to about a second on an idle machine
// (TestRenderBudget -v logs each time). The bound is ten times the two
// seconds a user may expect, because the suite runs under the race
// detector on loaded 2-core machines, where printing megabytes before the
// output budget trips has taken 2.5 s.
const hostileBound = 20 * time.Second

// TestRenderBudget checks that templates that would loop, recurse or print
// without bound end with an error wrapping ErrTemplateBudget, quickly.
func TestRenderBudget(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		limits    RenderLimits
		want      string
	}{
		{"huge range", `{% for i in range(100000000) %}x{% endfor %}`, RenderLimits{}, "range of 100000000 items"},
		{"nested loops", `{% for a in range(2000) %}{% for b in range(2000) %}{% endfor %}{% endfor %}`, RenderLimits{Steps: 100000}, "loop iterations"},
		{"loop over a long string", `{% for c in 'ab' * 3000000 %}{% endfor %}`, RenderLimits{}, "a loop over 6000000 items"},
		{"unbounded recursion", `{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`, RenderLimits{}, "nested more than 500 deep"},
		{"mutual recursion", `{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}`, RenderLimits{Depth: 50}, "nested more than 50 deep"},
		{"output", `{% for i in range(100) %}{{ 'x' * 100000 }}{% endfor %}`, RenderLimits{OutputBytes: 5 << 20}, "more than 5242880 bytes printed"},
		{"output in a set block", `{% set s %}{% for i in range(100) %}{{ 'y' * 1000 }}{% endfor %}{% endset %}`, RenderLimits{OutputBytes: 50000}, "more than 50000 bytes printed"},
		{"steps limit", `{% for i in range(10) %}{% endfor %}{% for m in messages %}{% endfor %}`, RenderLimits{Steps: 15}, "loop iterations"},
	} {
		ct, err := ParseChatTemplate(tc.src, SpecialTokens{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		msgs := make([]promptsize.Message, 10)
		start := time.Now()
		out, err := ct.Render(msgs, RenderOptions{Limits: tc.limits})
		took := time.Since(start)
		if !errors.Is(err, ErrTemplateBudget) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Render = %d bytes, %v; want an error wrapping ErrTemplateBudget saying %q", tc.name, len(out), err, tc.want)
		}
		t.Logf("%s: failed after %v", tc.name, took)
		if took > hostileBound {
			t.Errorf("%s: took %v, want under %v", tc.name, took, hostileBound)
		}
	}
}

// TestRenderBudgetGenerous renders a real template with a chat of 2,000
// messages and 300 tools inside the default limits.
func TestRenderBudgetGenerous(t *testing.T) {
	ct := corpusTemplateNamed(t, "qwen3")
	var msgs strings.Builder
	msgs.WriteString("[")
	for i := range 2000 {
		if i > 0 {
			msgs.WriteString(",")
		}
		role := []string{"user", "assistant"}[i%2]
		msgs.WriteString(`{"role":"` + role + `","content":"turn"}`)
	}
	msgs.WriteString("]")
	var tools strings.Builder
	tools.WriteString("[")
	for i := range 300 {
		if i > 0 {
			tools.WriteString(",")
		}
		tools.WriteString(`{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}`)
	}
	tools.WriteString("]")
	out, err := ct.RenderJSON([]byte(msgs.String()), RenderOptions{Tools: []byte(tools.String()), AddGenerationPrompt: true})
	if err != nil || strings.Count(out, "<|im_start|>") != 2002 {
		t.Errorf("RenderJSON: %d turns, %v; want 2002 turns (system, 2000 messages, generation prompt)", strings.Count(out, "<|im_start|>"), err)
	}
}

func corpusTemplateNamed(t *testing.T, name string) *ChatTemplate {
	t.Helper()
	index, _, _ := loadCorpus(t)
	for _, tpl := range index {
		if tpl.Name == name {
			ct, err := ParseChatTemplate(readCorpusTemplate(t, corpusTemplateDir(t), tpl), SpecialTokens{})
			if err != nil {
				t.Fatal(err)
			}
			return ct
		}
	}
	t.Fatalf("no template %q in the corpus", name)
	return nil
}

// TestRenderCancel checks that a cancelled context stops a rendering: before
// it starts, and inside a loop (the budget notices at the next step).
func TestRenderCancel(t *testing.T) {
	ct, err := ParseChatTemplate(`{% for i in range(10) %}{{ i }}{% endfor %}`, SpecialTokens{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ct.RenderContext(ctx, nil, RenderOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("RenderContext with a cancelled context: %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	b := newRenderBudget(ctx, RenderLimits{})
	for range 5 {
		if err := b.step(1); err != nil {
			t.Fatalf("step before cancel: %v", err)
		}
	}
	cancel()
	if err := b.step(1); !errors.Is(err, context.Canceled) {
		t.Errorf("step after cancel: %v, want context.Canceled", err)
	}
}

// TestPatternTimeout checks that a Split pattern with catastrophic
// backtracking ends Count with ErrPatternTimeout instead of hanging.
func TestPatternTimeout(t *testing.T) {
	data := tinyByteLevel(func(f map[string]any) {
		f["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `(a|aa)+$`}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
		}}
	})
	tok, err := New(data, []byte(`{"chat_template": "{{ messages[0].content }}"}`))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = tok.Count(context.Background(), []promptsize.Message{{Role: "user", Content: strings.Repeat("a", 200) + "b"}})
	took := time.Since(start)
	if !errors.Is(err, ErrPatternTimeout) {
		t.Errorf("Count with a catastrophic pattern: %v, want ErrPatternTimeout", err)
	}
	if bound := splitMatchTimeout + hostileBound; took > bound {
		t.Errorf("Count took %v, want under %v", took, bound)
	}
	if n, err := tok.Count(context.Background(), []promptsize.Message{{Role: "user", Content: "aaa"}}); err != nil || n == 0 {
		t.Errorf("Count on a short text = %d, %v; want tokens and no error", n, err)
	}
}

// countdownCtx is a context whose Err turns to Canceled after a number of
// calls: a cancellation that lands at a known point of the work.
type countdownCtx struct {
	context.Context
	left atomic.Int64
}

func (c *countdownCtx) Err() error {
	if c.left.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestCountCancelledWhileEncoding checks that Count looks at its context
// inside the encoding of a long prompt, not only before and after: a
// context that ends once the template has rendered stops the encoding
// with its error, and an untouched one counts what CountText counts.
func TestCountCancelledWhileEncoding(t *testing.T) {
	tok, err := New(tinyByteLevel(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := ParseChatTemplate("{{ messages[0].content }}", SpecialTokens{})
	if err != nil {
		t.Fatal(err)
	}
	tok = tok.WithRendering(ct, RenderOptions{})
	text := strings.Repeat("aa ab <|x|> ba, 12 ", 1<<16) // 1.2 MB, 400k pieces
	msgs := []promptsize.Message{{Role: "user", Content: text}}

	n, err := tok.Count(context.Background(), msgs)
	if err != nil || n != tok.CountText(text) {
		t.Fatalf("Count = %d, %v; CountText = %d", n, err, tok.CountText(text))
	}

	// Rendering this template looks at the context a handful of times;
	// 200 looks leave the encoding at most ~200*64 of its 400k pieces.
	ctx := &countdownCtx{Context: context.Background()}
	ctx.left.Store(200)
	_, err = tok.Count(ctx, msgs)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "encoding stopped") {
		t.Fatalf("Count with a context ending during encoding: %v, want the context's error from the encoder", err)
	}
	if left := ctx.left.Load(); left < -1 {
		t.Errorf("the encoder looked at the ended context %d more times: it should stop at once", -left-1)
	}
}
