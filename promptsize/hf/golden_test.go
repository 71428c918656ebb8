package hf

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
)

// The golden files under testdata/ come from scripts/node/goldens.mjs: ids
// from @lenml/tokenizers@3.7.2 (encode with add_special_tokens:false) and
// renderings from @huggingface/jinja@0.5.11. The tokenizer files come from
// scripts/testdata.sh.

var goldenModels = []string{"qwen3", "llama3_1", "gptoss", "gemma3", "deepseek_v3"}

type goldenInputs struct {
	Date  string              `json:"date"`
	Texts [][2]string         `json:"texts"`
	Fuzz  []string            `json:"fuzz"`
	Chats [][]json.RawMessage `json:"chats"` // [name, messages, tools or null]
}

type goldenChat struct {
	Name     string `json:"name"`
	Rendered string `json:"rendered"`
	IDs      []int  `json:"ids"`
}

// goldenIDs are the reference ids of the inputs every golden file has.
type goldenIDs struct {
	SpecialText string           `json:"special_text"`
	SpecialIDs  []int            `json:"special_ids"`
	Texts       map[string][]int `json:"texts"`
	Fuzz        [][]int          `json:"fuzz"`
	CorpusIDs   []int            `json:"corpus_ids"`
}

type goldenModel struct {
	Model string `json:"model"`
	goldenIDs
	Chats map[string][]goldenChat `json:"chats"`
}

func readGz(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readInputs(t testing.TB) goldenInputs {
	t.Helper()
	data, err := os.ReadFile("testdata/inputs.json")
	if err != nil {
		t.Fatal(err)
	}
	var in goldenInputs
	if err := json.Unmarshal(data, &in); err != nil {
		t.Fatal(err)
	}
	return in
}

func readGolden(t testing.TB, model string) goldenModel {
	t.Helper()
	var g goldenModel
	if err := json.Unmarshal(readGz(t, filepath.Join("testdata", model+".json.gz")), &g); err != nil {
		t.Fatal(err)
	}
	return g
}

func readCorpus(t testing.TB) string {
	t.Helper()
	return string(readGz(t, "testdata/corpus.txt.gz"))
}

// modelDir returns the directory of a fetched model, or skips the test (fails
// it under CI=true) when scripts/testdata.sh has not been run.
func modelDir(t testing.TB, model string) string {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "models", model)
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		testkit.MissingData(t, fmt.Sprintf("tokenizer files for %s are missing (%v): run scripts/testdata.sh (make test does)", model, err))
	}
	return dir
}

// jinjaTemplate returns the path of a template in the ardanlabs/jinja
// module's testdata, read from the module cache.
func jinjaTemplate(t testing.TB, name string) string {
	t.Helper()
	out, err := testkit.Command(t, testkit.Patience, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/ardanlabs/jinja").Output()
	if err != nil {
		t.Fatalf("locating github.com/ardanlabs/jinja in the module cache: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "testdata", "templates", name)
}

// chatTemplateFor returns the chat template of a golden template name:
// the model directory's, or one from the ardanlabs/jinja module.
func chatTemplateFor(t testing.TB, tok *Tokenizer, dir, name string) (*ChatTemplate, error) {
	file := map[string]string{"gptoss": "gpt-oss-20b-Q8_0.jinja", "llama3_x": "Llama-3.2-1B-Instruct-GGUF.jinja"}[name]
	if file == "" {
		return LoadChatTemplate(dir)
	}
	src, err := os.ReadFile(jinjaTemplate(t, file))
	if err != nil {
		return nil, err
	}
	return ParseChatTemplate(string(src), tok.SpecialTokens())
}

// diffIDs describes how got differs from want: the first differing
// position with some context, or "" when they are equal.
func diffIDs(got, want []int) string {
	if cmp.Equal(got, want) {
		return ""
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(0, i-3)
	return fmt.Sprintf("ids differ at position %d (got %d ids, want %d): got[%d:]=%v, want[%d:]=%v",
		i, len(got), len(want), lo, got[lo:min(len(got), i+5)], lo, want[lo:min(len(want), i+5)])
}

// shared holds the tokenizers the tests load, once per test binary: loading
// a 33 MB tokenizer.json takes a while, and the race detector multiplies it.
var shared sync.Map // model name -> func() (*Tokenizer, error)

func loadShared(t testing.TB, model string) *Tokenizer {
	t.Helper()
	dir := modelDir(t, model)
	f, _ := shared.LoadOrStore(model, sync.OnceValues(func() (*Tokenizer, error) { return Load(dir) }))
	tok, err := f.(func() (*Tokenizer, error))()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// testGoldenIDs runs the subtests texts, fuzz and corpus: tok's ids for the
// golden inputs against want. With roundTrip, each text must also decode
// back to itself.
func testGoldenIDs(t *testing.T, tok *Tokenizer, in goldenInputs, corpus string, want goldenIDs, roundTrip bool) {
	t.Run("texts", func(t *testing.T) {
		for _, nt := range in.Texts {
			ids, ok := want.Texts[nt[0]]
			if !ok {
				t.Fatalf("golden has no ids for text %q", nt[0])
			}
			got := tok.Encode(nt[1])
			if d := diffIDs(got, ids); d != "" {
				t.Errorf("%s %q: %s", nt[0], truncate(nt[1], 60), d)
			}
			if !roundTrip {
				continue
			}
			if dec := tok.Decode(got); dec != nt[1] {
				t.Errorf("%s: Decode(Encode(s)) = %q, want %q", nt[0], truncate(dec, 60), truncate(nt[1], 60))
			}
		}
		if d := diffIDs(tok.Encode(want.SpecialText), want.SpecialIDs); d != "" {
			t.Errorf("special-token text %q: %s", want.SpecialText, d)
		}
	})
	t.Run("fuzz", func(t *testing.T) {
		if len(want.Fuzz) != len(in.Fuzz) || len(in.Fuzz) != 500 {
			t.Fatalf("expected 500 fuzz strings and as many id lists, found %d and %d", len(in.Fuzz), len(want.Fuzz))
		}
		bad := 0
		for i, s := range in.Fuzz {
			if d := diffIDs(tok.Encode(s), want.Fuzz[i]); d != "" {
				bad++
				if bad <= 5 {
					t.Errorf("fuzz[%d] %q: %s", i, truncate(s, 60), d)
				}
			}
		}
		if bad > 0 {
			t.Errorf("%d of %d fuzz strings differ", bad, len(in.Fuzz))
		}
	})
	t.Run("corpus", func(t *testing.T) {
		if d := diffIDs(tok.Encode(corpus), want.CorpusIDs); d != "" {
			t.Errorf("200 KB corpus: %s", d)
		}
	})
}

func TestGoldens(t *testing.T) {
	in := readInputs(t)
	corpus := readCorpus(t)
	date, err := time.Parse("2006-01-02", in.Date)
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range goldenModels {
		t.Run(model, func(t *testing.T) {
			dir := modelDir(t, model)
			g := readGolden(t, model)
			tok := loadShared(t, model)
			testGoldenIDs(t, tok, in, corpus, g.goldenIDs, false)
			for tname, cases := range g.Chats {
				t.Run("chat/"+tname, func(t *testing.T) {
					ct, err := chatTemplateFor(t, tok, dir, tname)
					if err != nil {
						t.Fatal(err)
					}
					tt := tok.WithRendering(ct, RenderOptions{Date: date})
					if len(cases) != len(in.Chats) {
						t.Fatalf("expected %d chat cases, found %d", len(in.Chats), len(cases))
					}
					for i, c := range cases {
						var msgs []promptsize.Message
						if err := json.Unmarshal(in.Chats[i][1], &msgs); err != nil {
							t.Fatal(err)
						}
						opts := RenderOptions{AddGenerationPrompt: true, Date: date}
						tools := in.Chats[i][2]
						if string(tools) != "null" {
							opts.Tools = tools
						}
						got, err := tt.Render(msgs, opts)
						if err != nil {
							t.Errorf("%s: %v", c.Name, err)
							continue
						}
						if got != c.Rendered {
							t.Errorf("%s: rendering differs:\n%s", c.Name, cmp.Diff(c.Rendered, got))
							continue
						}
						if d := diffIDs(tok.Encode(c.Rendered), c.IDs); d != "" {
							t.Errorf("%s: %s", c.Name, d)
						}
						if opts.Tools == nil {
							n, err := tt.Count(t.Context(), msgs)
							if err != nil || n != len(c.IDs) {
								t.Errorf("%s: Count = %d, %v; want %d", c.Name, n, err, len(c.IDs))
							}
						}
					}
				})
			}
		})
	}
}

// dirExists reports whether scripts/testdata.sh has fetched a model.
func dirExists(model string) bool {
	_, err := os.Stat(filepath.Join("..", "..", "testdata", "models", model, "tokenizer.json"))
	return err == nil
}
