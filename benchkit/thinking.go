package benchkit

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
)

// thinkingLabel is th as a request's label (Labels.Thinking): "on" or
// "off", "effort=high", "budget=N", joined by commas in that order; "" for
// none.
func thinkingLabel(th *engine.Thinking) string {
	if th == nil {
		return ""
	}
	var parts []string
	if th.Enabled != nil {
		parts = append(parts, map[bool]string{true: "on", false: "off"}[*th.Enabled])
	}
	if th.Effort != "" {
		parts = append(parts, "effort="+th.Effort)
	}
	if th.Budget != 0 {
		parts = append(parts, "budget="+strconv.Itoa(th.Budget))
	}
	return strings.Join(parts, ",")
}

// templateVarser is a Counter that renders the chat template with further
// variables (promptsize/hf's and promptsize/remote's).
type templateVarser interface {
	WithTemplateVars(map[string]any) promptsize.Counter
}

// thinkingBuilder returns the Builder that counts prompts as the server
// renders them for requests carrying th: b itself when th sets no template
// variable, else a Builder with b's settings whose Counter renders with
// th's variables. A Counter that cannot render with variables leaves b,
// with a warning saying the counts may miss the template's thinking
// tokens.
func thinkingBuilder(b *promptsize.Builder, th *engine.Thinking) (*promptsize.Builder, string) {
	vars := th.TemplateVars()
	if len(vars) == 0 || b == nil || b.Counter == nil {
		return b, ""
	}
	wv, ok := b.Counter.(templateVarser)
	if !ok {
		keys := slices.Sorted(maps.Keys(vars))
		return b, fmt.Sprintf("thinking %s: the prompt counter (%T) cannot render the chat template with the variables the requests send (%s), so prompt counts may miss the tokens the template writes for them (Qwen3's empty think block with thinking off: 4); count with the model's tokenizer (--tokenizer) or the server's /tokenize",
			thinkingLabel(th), b.Counter, strings.Join(keys, ", "))
	}
	return &promptsize.Builder{Counter: wv.WithTemplateVars(vars), System: b.System, Fill: b.Fill, Atoms: b.Atoms,
		Corpus: b.Corpus, CacheSize: b.CacheSize, Logger: b.Logger}, ""
}

// thinkingSettings are the settings a plan measures: each of list in
// turn, or dflt alone when list is empty.
func thinkingSettings(list []engine.Thinking, dflt *engine.Thinking) []*engine.Thinking {
	if len(list) == 0 {
		return []*engine.Thinking{dflt}
	}
	out := make([]*engine.Thinking, len(list))
	for i := range list {
		th := list[i]
		out[i] = &th
	}
	return out
}
