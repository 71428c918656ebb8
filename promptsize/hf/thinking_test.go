package hf

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/promptsize"
)

// thinkingGolden is testdata/thinking.json: Python's Jinja2 renderings
// (scripts/thinking_goldens.py) of real chat templates under the template
// variables of the thinking controls, and the Rust tokenizers library's
// ids of each (scripts/node/thinking_ids.mjs).
type thinkingGolden struct {
	Date      string `json:"date"`
	Templates map[string]struct {
		SHA256  string            `json:"sha256"`
		Special map[string]string `json:"special"`
	} `json:"templates"`
	Cases []thinkingCase `json:"cases"`
}

type thinkingCase struct {
	Template     string               `json:"template"`
	Setting      string               `json:"setting"`
	Vars         map[string]any       `json:"vars"`
	Conversation string               `json:"conversation"`
	Messages     []promptsize.Message `json:"messages"`
	Rendered     string               `json:"rendered"`
	IDs          []int                `json:"ids"`
}

func readThinkingGolden(t *testing.T) (thinkingGolden, time.Time) {
	t.Helper()
	data, err := os.ReadFile("testdata/thinking.json")
	if err != nil {
		t.Fatal(err)
	}
	var g thinkingGolden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	date, err := time.Parse("2006-01-02T15:04:05", g.Date)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) == 0 {
		t.Fatal("testdata/thinking.json holds no case")
	}
	for _, c := range g.Cases {
		if len(c.IDs) == 0 {
			t.Fatalf("%s/%s/%s has no ids: run scripts/node/thinking_ids.mjs after scripts/thinking_goldens.py", c.Template, c.Setting, c.Conversation)
		}
	}
	return g, date
}

// TestThinkingGoldens renders the real Qwen3 and gpt-oss templates with
// each thinking control's variables and counts the prompts with
// WithTemplateVars: every rendering as Python's Jinja2 gives it, every
// count the length of the Rust library's ids.
func TestThinkingGoldens(t *testing.T) {
	g, date := readThinkingGolden(t)
	// counts[template][conversation][setting] are the golden counts.
	counts := map[string]map[string]map[string][]int{}
	for _, name := range []string{"qwen3", "gptoss"} {
		t.Run(name, func(t *testing.T) {
			dir := modelDir(t, name)
			tok := loadShared(t, name)
			ct, err := chatTemplateFor(t, tok, dir, name)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte(ct.Source()))
			if got, want := hex.EncodeToString(sum[:]), g.Templates[name].SHA256; got != want {
				t.Fatalf("the %s chat template's sha256 is %s, the goldens were rendered from %s: rerun scripts/thinking_goldens.py", name, got, want)
			}
			base := tok.WithRendering(ct, RenderOptions{Date: date})
			counts[name] = map[string]map[string][]int{}
			for _, c := range g.Cases {
				if c.Template != name {
					continue
				}
				where := c.Setting + "/" + c.Conversation
				got, err := base.Render(c.Messages, RenderOptions{AddGenerationPrompt: true, Date: date, Vars: c.Vars})
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				if got != c.Rendered {
					t.Errorf("%s: rendering differs from Jinja2's (-want +got):\n%s", where, cmp.Diff(c.Rendered, got))
					continue
				}
				if d := diffIDs(tok.Encode(c.Rendered), c.IDs); d != "" {
					t.Errorf("%s: %s", where, d)
				}
				counter := base.WithTemplateVars(c.Vars)
				n, err := counter.Count(t.Context(), c.Messages)
				if err != nil || n != len(c.IDs) {
					t.Errorf("%s: WithTemplateVars(%v).Count = %d, %v; want %d", where, c.Vars, n, err, len(c.IDs))
				}
				// gpt-oss's efforts are one token each: the count alone
				// cannot tell that the variable reached the rendering.
				if s, err := counter.(*Tokenizer).renderForCount(t.Context(), c.Messages); err != nil || s != c.Rendered {
					t.Errorf("%s: WithTemplateVars(%v) counts a rendering that differs from Jinja2's (-want +got):\n%s%v", where, c.Vars, cmp.Diff(c.Rendered, s), err)
				}
				if counts[name][c.Conversation] == nil {
					counts[name][c.Conversation] = map[string][]int{}
				}
				counts[name][c.Conversation][c.Setting] = c.IDs
			}
		})
	}

	// Qwen3: thinking on renders as no switch at all; off adds an empty
	// think block to the generation prompt, 4 tokens a count without the
	// variable would miss.
	t.Run("qwen3/off", func(t *testing.T) {
		tok := loadShared(t, "qwen3")
		for conv, by := range counts["qwen3"] {
			on, off, def := by["on"], by["off"], by["default"]
			if !cmp.Equal(on, def) {
				t.Errorf("%s: thinking on gave %d tokens, no switch %d: want the same prompt", conv, len(on), len(def))
			}
			if len(off)-len(on) != 4 || !cmp.Equal(off[:len(on)], on) {
				t.Errorf("%s: thinking off gave %d tokens, on %d: want on's tokens and 4 more", conv, len(off), len(on))
				continue
			}
			if tail := tok.Decode(off[len(on):]); tail != "<think>\n\n</think>\n\n" {
				t.Errorf("%s: thinking off adds %q; want the empty think block", conv, tail)
			}
		}
		if len(counts["qwen3"]) == 0 {
			t.Error("no Qwen3 case was counted")
		}
	})
	// gpt-oss: no effort renders as medium, and each effort prints its word.
	t.Run("gptoss/effort", func(t *testing.T) {
		for conv, by := range counts["gptoss"] {
			if !cmp.Equal(by["default"], by["medium"]) {
				t.Errorf("%s: no effort gave %d tokens, medium %d: want gpt-oss's default, medium", conv, len(by["default"]), len(by["medium"]))
			}
			if cmp.Equal(by["low"], by["high"]) {
				t.Errorf("%s: efforts low and high gave the same tokens; want the effort in the prompt", conv)
			}
		}
		if len(counts["gptoss"]) == 0 {
			t.Error("no gpt-oss case was counted")
		}
	})
}

// TestWithTemplateVarsCapabilities checks that the Counter of
// WithTemplateVars keeps the Tokenizer's capabilities, counts its
// ContentOffset with the variables, and leaves the Tokenizer as it was.
func TestWithTemplateVarsCapabilities(t *testing.T) {
	g, date := readThinkingGolden(t)
	tok := loadShared(t, "qwen3")
	dir := modelDir(t, "qwen3")
	ct, err := LoadChatTemplate(dir)
	if err != nil {
		t.Fatal(err)
	}
	base := tok.WithRendering(ct, RenderOptions{Date: date})
	var off thinkingCase
	for _, c := range g.Cases {
		if c.Template == "qwen3" && c.Setting == "off" && c.Conversation == "one_user" {
			off = c
		}
	}
	if off.Rendered == "" {
		t.Fatal("no qwen3 off one_user case in testdata/thinking.json")
	}
	before, err := base.Count(t.Context(), off.Messages)
	if err != nil {
		t.Fatal(err)
	}
	c := base.WithTemplateVars(off.Vars)
	if _, ok := c.(promptsize.TokenEnder); !ok {
		t.Errorf("%T is not a promptsize.TokenEnder", c)
	}
	if _, ok := c.(promptsize.Vocabulary); !ok {
		t.Errorf("%T is not a promptsize.Vocabulary", c)
	}
	cl, ok := c.(promptsize.ContentLocator)
	if !ok {
		t.Fatalf("%T is not a promptsize.ContentLocator", c)
	}
	n, err := c.Count(t.Context(), off.Messages)
	if err != nil || n != len(off.IDs) || n != before+4 {
		t.Errorf("Count with enable_thinking false = %d, %v; want %d (Jinja2's), 4 more than %d", n, err, len(off.IDs), before)
	}
	// The content precedes the generation prompt: the switch moves no
	// token before it.
	atOff, err1 := cl.ContentOffset(t.Context(), off.Messages)
	atOn, err2 := base.ContentOffset(t.Context(), off.Messages)
	if err1 != nil || err2 != nil || atOff != atOn {
		t.Errorf("ContentOffset = %d, %v with the switch, %d, %v without; want the same", atOff, err1, atOn, err2)
	}
	if again, err := base.Count(t.Context(), off.Messages); err != nil || again != before {
		t.Errorf("the Tokenizer counts %d, %v after WithTemplateVars; want %d as before", again, err, before)
	}
	// The Builder counts its overhead, and builds exact prompts, with the
	// variables.
	b := &promptsize.Builder{Counter: c}
	ob, err := (&promptsize.Builder{Counter: base}).Overhead(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	oc, err := b.Overhead(t.Context())
	if err != nil || oc != ob+4 {
		t.Errorf("Overhead with enable_thinking false = %d, %v; want %d + 4", oc, err, ob)
	}
	p, err := b.Build(t.Context(), 200)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.Count(t.Context(), p.Messages); err != nil || n != 200 || p.Tokens != 200 {
		t.Errorf("Build(200) with enable_thinking false: prompt of %d tokens, counted %d, %v; want 200", p.Tokens, n, err)
	}
}

// TestWithTemplateVarsMerge checks the variables' precedence on the tiny
// tokenizer: WithRenderOptions' kept, a key of WithTemplateVars replacing
// the same key, nil adding nothing.
func TestWithTemplateVarsMerge(t *testing.T) {
	const src = "{{ a }}-{{ b }}{% for m in messages %}{{ m.content }}{% endfor %}"
	tok, err := New(tinyByteLevel(nil), nil, WithChatTemplate(src), WithRenderOptions(RenderOptions{Vars: map[string]any{"a": "x", "b": "y"}}))
	if err != nil {
		t.Fatal(err)
	}
	msgs := []promptsize.Message{{Role: "user", Content: "aaa"}}
	for _, tc := range []struct {
		vars map[string]any
		want string
	}{
		{nil, "x-yaaa"},
		{map[string]any{}, "x-yaaa"},
		{map[string]any{"b": "zzzz"}, "x-zzzzaaa"},
		{map[string]any{"a": "", "b": ""}, "-aaa"},
	} {
		c := tok.WithTemplateVars(tc.vars)
		n, err := c.Count(t.Context(), msgs)
		if want := tok.CountText(tc.want); err != nil || n != want {
			t.Errorf("WithTemplateVars(%v).Count = %d, %v; want %d, the tokens of %q", tc.vars, n, err, want, tc.want)
		}
	}
	if n, err := tok.Count(t.Context(), msgs); err != nil || n != tok.CountText("x-yaaa") {
		t.Errorf("the Tokenizer counts %d, %v after WithTemplateVars; want %d", n, err, tok.CountText("x-yaaa"))
	}
}
