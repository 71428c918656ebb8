package cli

import (
	"context"
	"errors"
	"flag"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
)

func parseThinking(t *testing.T, sweep bool, args ...string) (*ThinkingFlags, error) {
	t.Helper()
	var f ThinkingFlags
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.AddFlags(fs, sweep)
	if err := fs.Parse(args); err != nil {
		return &f, err
	}
	return &f, f.Check()
}

func TestThinkingFlags(t *testing.T) {
	on, off := true, false
	for _, tc := range []struct {
		name  string
		sweep bool
		args  []string
		want  []engine.Thinking
	}{
		{"unset", true, nil, nil},
		{"off", false, []string{"--thinking", "off"}, []engine.Thinking{{Enabled: &off}}},
		{"effort and budget", false, []string{"--reasoning-effort", "HIGH", "--thinking-budget", "512"}, []engine.Thinking{{Effort: "high", Budget: 512}}},
		{"budget alone", false, []string{"--thinking-budget", "64"}, []engine.Thinking{{Budget: 64}}},
		{"sweep", true, []string{"--thinking", "off, on", "--reasoning-effort", "low,high"},
			[]engine.Thinking{{Enabled: &off, Effort: "low"}, {Enabled: &off, Effort: "high"}, {Enabled: &on, Effort: "low"}, {Enabled: &on, Effort: "high"}}},
		{"repeated flag adds", true, []string{"--thinking", "off", "--thinking", "true"}, []engine.Thinking{{Enabled: &off}, {Enabled: &on}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseThinking(t, tc.sweep, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, f.Settings()); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
			if s := f.Setting(); (s == nil) != (len(tc.want) == 0) || s != nil && !cmp.Equal(*s, tc.want[0]) {
				t.Errorf("Setting() = %+v; want the first of %+v", s, tc.want)
			}
		})
	}
	// Check's errors are usage errors; the flags' own go through the
	// program's parse, which makes them so.
	for _, tc := range []struct {
		name  string
		sweep bool
		args  []string
		want  string
		check bool
	}{
		{"bad switch", true, []string{"--thinking", "maybe"}, `want on or off, got "maybe"`, false},
		{"twice", true, []string{"--thinking", "on,on"}, "given twice", false},
		{"bad effort", true, []string{"--reasoning-effort", "extreme"}, `want low, medium, high, got "extreme"`, false},
		{"negative budget", false, []string{"--thinking-budget", "-1"}, "must not be negative", true},
		{"list without a sweep", false, []string{"--thinking", "off,on"}, "take one value here", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseThinking(t, tc.sweep, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want one saying %q", err, tc.want)
			}
			var ue *UsageError
			if tc.check && !errors.As(err, &ue) {
				t.Errorf("error %v is not a *UsageError", err)
			}
		})
	}
}

// offCounter counts one token per word plus 3 of template, and 4 more
// with enable_thinking false: a Counter with template variables.
type offCounter struct{ vars map[string]any }

func (c offCounter) Count(_ context.Context, ms []promptsize.Message) (int, error) {
	n := 3
	for _, m := range ms {
		n += len(strings.Fields(m.Content))
	}
	if v, ok := c.vars["enable_thinking"].(bool); ok && !v {
		n += 4
	}
	return n, nil
}

func (c offCounter) WithTemplateVars(vars map[string]any) promptsize.Counter {
	m := maps.Clone(c.vars)
	if m == nil {
		m = map[string]any{}
	}
	maps.Copy(m, vars)
	return offCounter{m}
}

func TestThinkingCounters(t *testing.T) {
	ctx := t.Context()
	sweep, err := parseThinking(t, true, "--thinking", "on,off")
	if err != nil {
		t.Fatal(err)
	}
	// The widest setting is thinking off: 4 tokens of template more.
	c, err := sweep.WidestCounter(ctx, offCounter{})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Count(ctx, nil); n != 7 {
		t.Errorf("the widest counter counts an empty chat as %d; want 7 (thinking off)", n)
	}
	if n, _ := (offCounter{}).Count(ctx, nil); n != 3 {
		t.Errorf("the counter itself changed: %d; want 3", n)
	}
	plain := promptsize.CounterFunc(func(context.Context, []promptsize.Message) (int, error) { return 1, nil })
	if c, err := sweep.WidestCounter(ctx, plain); err != nil || c == nil {
		t.Errorf("WidestCounter of a counter without variables: %v, %v; want it back", c, err)
	}
	if note := sweep.CounterNote(offCounter{}, "the tokenizer"); note != "" {
		t.Errorf("note %q for a counter with variables; want none", note)
	}
	if note := sweep.CounterNote(plain, "the server's /tokenize"); !strings.Contains(note, "the server's /tokenize cannot render") || !strings.Contains(note, "--tokenizer") {
		t.Errorf("note %q; want one naming the counter and --tokenizer", note)
	}
	budget, _ := parseThinking(t, false, "--thinking-budget", "8")
	if note := budget.CounterNote(plain, "x"); note != "" {
		t.Errorf("note %q for a budget alone, which sends no template variable; want none", note)
	}
}

// FuzzThinkingFlags: whatever --thinking and --reasoning-effort are
// given, parsing never panics, and what it accepts is the settings'
// product with each value once and every effort a known one.
func FuzzThinkingFlags(f *testing.F) {
	for _, s := range [][2]string{{"off,on", "low,medium,high"}, {"on", ""}, {" OFF ", "High"}, {"on,,off", "low, low"}, {"maybe", "x"}, {",", ","}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, thinking, effort string) {
		var tf ThinkingFlags
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		tf.AddFlags(fs, true)
		if fs.Parse([]string{"--thinking=" + thinking, "--reasoning-effort=" + effort}) != nil {
			return
		}
		settings := tf.Settings()
		want := max(len(tf.Enabled), 1) * max(len(tf.Efforts), 1)
		if len(tf.Enabled)+len(tf.Efforts) == 0 {
			want = 0
		}
		if len(settings) != want || len(tf.Enabled) > 2 || len(tf.Efforts) > len(efforts) {
			t.Fatalf("%q, %q: %d settings of %d switches and %d efforts", thinking, effort, len(settings), len(tf.Enabled), len(tf.Efforts))
		}
		for _, s := range settings {
			if s.Effort != "" && !slices.Contains(efforts, s.Effort) {
				t.Fatalf("%q: effort %q accepted", effort, s.Effort)
			}
		}
	})
}
