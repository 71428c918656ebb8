package cli

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
)

// ThinkingFlags are a reasoning model's thinking controls as every program
// takes them (engine.Thinking on each request):
//
//	--thinking on|off            the template's switch (chat_template_kwargs
//	                             enable_thinking and thinking; Ollama's think)
//	--reasoning-effort low|medium|high
//	                             gpt-oss's reasoning_effort (Ollama's think level)
//	--thinking-budget N          a bound on the reasoning tokens where the
//	                             server takes one
//
// Unset, the requests carry no control and the server's and the chat
// template's defaults hold. Where the program sweeps (AddFlags with sweep),
// --thinking and --reasoning-effort take comma lists ("off,on",
// "low,medium,high") and every combination is a setting of its own,
// measured in turn and labelled in the results.
type ThinkingFlags struct {
	// Enabled are --thinking's values, Efforts --reasoning-effort's,
	// Budget --thinking-budget's (0: none).
	Enabled []bool
	Efforts []string
	Budget  int

	sweep bool
}

// The reasoning efforts --reasoning-effort takes.
var efforts = []string{"low", "medium", "high"}

// AddFlags registers the thinking flags on fs; with sweep, --thinking and
// --reasoning-effort take lists.
func (f *ThinkingFlags) AddFlags(fs *flag.FlagSet, sweep bool) {
	f.sweep = sweep
	list := ""
	if sweep {
		list = "; a comma list (off,on) measures each in turn"
	}
	fs.Func("thinking", "a reasoning model's thinking: on or off (chat_template_kwargs enable_thinking; Ollama's think); prompts are counted with the template rendered as the server renders it (default: the server's and the template's own)"+list, func(v string) error {
		for _, item := range splitList(v) {
			var on bool
			switch strings.ToLower(item) {
			case "on", "true":
				on = true
			case "off", "false":
			default:
				return fmt.Errorf("want on or off, got %q", item)
			}
			if slices.Contains(f.Enabled, on) {
				return fmt.Errorf("%q is given twice", item)
			}
			f.Enabled = append(f.Enabled, on)
		}
		return nil
	})
	if sweep {
		list = "; a comma list (low,medium,high) measures each in turn"
	}
	fs.Func("reasoning-effort", "reasoning effort: low, medium or high (gpt-oss's reasoning_effort, also passed to the chat template; Ollama's think level) (default: the server's)"+list, func(v string) error {
		for _, item := range splitList(v) {
			e := strings.ToLower(item)
			if !slices.Contains(efforts, e) {
				return fmt.Errorf("want %s, got %q", strings.Join(efforts, ", "), item)
			}
			if slices.Contains(f.Efforts, e) {
				return fmt.Errorf("%q is given twice", item)
			}
			f.Efforts = append(f.Efforts, e)
		}
		return nil
	})
	fs.IntVar(&f.Budget, "thinking-budget", 0, "bound on the reasoning tokens of each request, where the server takes one (0: none)")
}

// splitList splits a flag's comma list, dropping blank items.
func splitList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// Check returns a *UsageError for a negative budget, and for a list where
// the program measures one setting.
func (f *ThinkingFlags) Check() error {
	if f.Budget < 0 {
		return Usagef("--thinking-budget must not be negative, got %d", f.Budget)
	}
	if !f.sweep && (len(f.Enabled) > 1 || len(f.Efforts) > 1) {
		return Usagef("--thinking and --reasoning-effort take one value here, got %d and %d", len(f.Enabled), len(f.Efforts))
	}
	return nil
}

// Settings are the settings to measure, in order: each --thinking value
// with each --reasoning-effort value, with the budget; nil when no flag is
// set (no control).
func (f *ThinkingFlags) Settings() []engine.Thinking {
	if len(f.Enabled) == 0 && len(f.Efforts) == 0 && f.Budget == 0 {
		return nil
	}
	enabled := []*bool{nil}
	if len(f.Enabled) > 0 {
		enabled = enabled[:0]
		for _, on := range f.Enabled {
			enabled = append(enabled, &on)
		}
	}
	effs := f.Efforts
	if len(effs) == 0 {
		effs = []string{""}
	}
	var out []engine.Thinking
	for _, on := range enabled {
		for _, e := range effs {
			out = append(out, engine.Thinking{Enabled: on, Effort: e, Budget: f.Budget})
		}
	}
	return out
}

// Setting is the one setting of a program that measures one: nil without
// a flag.
func (f *ThinkingFlags) Setting() *engine.Thinking {
	s := f.Settings()
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// withVars is a Counter that renders the chat template with further
// variables (promptsize/hf's, promptsize/remote's).
type withVars interface {
	WithTemplateVars(map[string]any) promptsize.Counter
}

// CounterNote says, for a program's stderr, when c cannot count as the
// server renders the template under the settings: a setting sends template
// variables and c has no WithTemplateVars (a counter of another kind). ""
// when c can, or when no setting sends a variable. The drivers count
// without the variables then, and each run's warnings say so too.
func (f *ThinkingFlags) CounterNote(c promptsize.Counter, counterName string) string {
	if _, ok := c.(withVars); ok || c == nil {
		return ""
	}
	for _, th := range f.Settings() {
		if len(th.TemplateVars()) > 0 {
			return fmt.Sprintf("warning: %s cannot render the chat template with the variables --thinking and --reasoning-effort send (chat_template_kwargs), so prompt counts may miss the tokens a template writes for them (Qwen3's empty think block with thinking off: 4 per request); pass --tokenizer DIR to count with the model's tokenizer", counterName)
		}
	}
	return ""
}

// WidestCounter is c rendering with the template variables of the setting
// whose chat template overhead is the largest, for what must hold under
// every setting (a trace's shortest row); c itself without settings, or
// when c cannot render with variables.
func (f *ThinkingFlags) WidestCounter(ctx context.Context, c promptsize.Counter) (promptsize.Counter, error) {
	wv, ok := c.(withVars)
	if !ok {
		return c, nil
	}
	best, bestOver := c, -1
	for _, th := range f.Settings() {
		vars := th.TemplateVars()
		if len(vars) == 0 {
			continue
		}
		vc := wv.WithTemplateVars(vars)
		over, err := (&promptsize.Builder{Counter: vc}).Overhead(ctx)
		if err != nil {
			return nil, err
		}
		if over > bestOver {
			best, bestOver = vc, over
		}
	}
	if bestOver >= 0 {
		if base, err := (&promptsize.Builder{Counter: c}).Overhead(ctx); err != nil {
			return nil, err
		} else if base > bestOver {
			return c, nil
		}
	}
	return best, nil
}
