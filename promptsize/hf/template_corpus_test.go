package hf

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/internal/testkit"
)

// The chat-template corpus: real templates from public repositories and
// registry packages, conversations.json, and the output of Python's Jinja2
// under transformers' settings for every pair, written by
// scripts/chat_template_goldens.py. The templates themselves are not in
// the repository: they are read from the shared data folder beside it
// (../shared/data/chat-templates from the repository root, or
// $INFERBENCH_SHARED_DATA/chat-templates), and each is checked against the
// sha256 that testdata/templates/index.json records with its repository
// or package, path and commit. Without the folder the tests that render
// templates skip (fail under CI=true).

type corpusTemplate struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	Repo   string `json:"repo"`
	Path   string `json:"path"`
	Commit string `json:"commit"`
	SHA256 string `json:"sha256"`
	// Note says how the file's bytes were checked against the source, where
	// more than the sha256 is worth saying (a package, a stored copy).
	Note string `json:"note"`
}

type corpusConversation struct {
	Name                string          `json:"name"`
	AddGenerationPrompt bool            `json:"add_generation_prompt"`
	Messages            json.RawMessage `json:"messages"`
	Tools               json.RawMessage `json:"tools"`
	Vars                map[string]any  `json:"vars"`
}

type corpusGolden struct {
	Template     string  `json:"template"`
	Conversation string  `json:"conversation"`
	Output       *string `json:"output"`
	ErrorKind    string  `json:"error_kind"`
	Error        string  `json:"error"`
}

type corpusGoldens struct {
	Date    string            `json:"date"`
	Special map[string]string `json:"special"`
	Records []corpusGolden    `json:"records"`
}

// corpusDir holds what the project keeps of the corpus: the index, the
// conversations, the goldens and the expression probes.
const corpusDir = "testdata/templates"

// corpusTemplateDir returns the folder of the vendor templates, or skips
// the test (fails it under CI=true) when it is absent.
func corpusTemplateDir(t testing.TB) string {
	t.Helper()
	return testkit.SharedData(t, "chat-templates", corpusDir+"/index.json names the repository or package, path and commit of each file")
}

// readCorpusTemplate returns the source of tpl from dir, failing t when
// its sha256 is not the one the index records.
func readCorpusTemplate(t testing.TB, dir string, tpl corpusTemplate) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, tpl.File))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != tpl.SHA256 {
		t.Fatalf("%s: sha256 %s, the index (%s/index.json) says %s", filepath.Join(dir, tpl.File), got, corpusDir, tpl.SHA256)
	}
	return string(data)
}

func loadCorpus(t testing.TB) ([]corpusTemplate, map[string]corpusConversation, corpusGoldens) {
	t.Helper()
	read := func(name string, v any) {
		data, err := os.ReadFile(filepath.Join(corpusDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".gz") {
			zr, err := gzip.NewReader(strings.NewReader(string(data)))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.NewDecoder(zr).Decode(v); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return
		}
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var index []corpusTemplate
	var convs []corpusConversation
	var goldens corpusGoldens
	read("index.json", &index)
	read("conversations.json", &convs)
	read("goldens.json.gz", &goldens)
	byName := make(map[string]corpusConversation, len(convs))
	for _, c := range convs {
		byName[c.Name] = c
	}
	return index, byName, goldens
}

// TestTemplateCorpusSources checks that the index names the source of
// every template, that the corpus is as large as promised, and that every
// template file has the sha256 its index entry records.
func TestTemplateCorpusSources(t *testing.T) {
	index, convs, goldens := loadCorpus(t)
	if len(index) < 40 || len(convs) < 10 {
		t.Errorf("corpus: %d templates and %d conversations, want at least 40 and 10", len(index), len(convs))
	}
	for _, tpl := range index {
		if tpl.Repo == "" || tpl.Path == "" || len(tpl.Commit) != 40 || len(tpl.SHA256) != 64 {
			t.Errorf("%s: the index lacks its source (repo %q, path %q, commit %q, sha256 %q)", tpl.Name, tpl.Repo, tpl.Path, tpl.Commit, tpl.SHA256)
		}
	}
	if want := len(index) * len(convs); len(goldens.Records) != want {
		t.Errorf("goldens: %d records, want %d (templates x conversations): rerun scripts/chat_template_goldens.py", len(goldens.Records), want)
	}
	dir := corpusTemplateDir(t)
	for _, tpl := range index {
		readCorpusTemplate(t, dir, tpl)
	}
}

// corpusResult is how one corpus case went.
type corpusResult struct {
	name     string
	golden   corpusGolden
	got      string
	err      error
	identity bool // rendered by both and byte-identical, or an error in both
}

func runCorpus(t testing.TB) []corpusResult {
	index, convs, goldens := loadCorpus(t)
	date, err := time.Parse("2006-01-02T15:04:05", goldens.Date)
	if err != nil {
		t.Fatal(err)
	}
	special := SpecialTokens{BOS: goldens.Special["bos_token"], EOS: goldens.Special["eos_token"]}
	dir := corpusTemplateDir(t)
	templates := make(map[string]*ChatTemplate, len(index))
	compileErr := make(map[string]error)
	for _, tpl := range index {
		ct, err := ParseChatTemplate(readCorpusTemplate(t, dir, tpl), special)
		if err != nil {
			compileErr[tpl.Name] = err
			continue
		}
		templates[tpl.Name] = ct
	}
	var results []corpusResult
	for _, g := range goldens.Records {
		conv, ok := convs[g.Conversation]
		if !ok {
			t.Fatalf("golden for unknown conversation %q", g.Conversation)
		}
		r := corpusResult{name: g.Template + "/" + g.Conversation, golden: g}
		if ct := templates[g.Template]; ct != nil {
			r.got, r.err = ct.RenderJSON(conv.Messages, RenderOptions{
				AddGenerationPrompt: conv.AddGenerationPrompt,
				Tools:               conv.Tools,
				Date:                date,
				Vars:                conv.Vars,
			})
		} else {
			r.err = compileErr[g.Template]
		}
		switch {
		case g.Output != nil:
			r.identity = r.err == nil && r.got == *g.Output
		case g.ErrorKind == "raise_exception":
			r.identity = r.err != nil && strings.Contains(r.err.Error(), g.Error)
		default:
			// A checked operation's error must be of the kind Python's.
			var e *TemplateExprError
			r.identity = r.err != nil && (!errors.As(r.err, &e) || e.Kind == g.ErrorKind)
		}
		results = append(results, r)
	}
	return results
}

// TestTemplateCorpus renders every template of the corpus with every
// conversation and compares with Jinja2: a case Jinja2 renders must be
// byte-identical; where the template itself raises (raise_exception) Go
// must return an error carrying its message, and where Jinja2 raises a
// Python TypeError or UndefinedError Go must return an error too (a
// *TemplateExprError naming the operation and the types). -v logs the
// figures.
func TestTemplateCorpus(t *testing.T) {
	results := runCorpus(t)
	var rendered, renderedSame, raised, raisedErr int
	for _, r := range results {
		if r.golden.Output != nil {
			rendered++
		} else {
			raised++
		}
		if !r.identity {
			t.Errorf("%s: %s", r.name, describeMiss(r))
			continue
		}
		if r.golden.Output != nil {
			renderedSame++
		} else {
			raisedErr++
		}
	}
	t.Logf("%d of %d Jinja2-rendered cases byte-identical; %d of %d cases where Jinja2 raises are errors in Go", renderedSame, rendered, raisedErr, raised)
}

func describeMiss(r corpusResult) string {
	g := r.golden
	switch {
	case g.Output != nil && r.err != nil:
		return fmt.Sprintf("Jinja2 renders, Go fails: %v", r.err)
	case g.Output != nil:
		i := 0
		for i < len(r.got) && i < len(*g.Output) && r.got[i] == (*g.Output)[i] {
			i++
		}
		from := max(0, i-60)
		return fmt.Sprintf("differs at byte %d:\n  Jinja2: %q\n  Go:     %q", i, clip((*g.Output)[from:], 160), clip(r.got[from:], 160))
	case r.err != nil:
		return fmt.Sprintf("Jinja2 raises %s %q; the Go error lacks the message: %v", g.ErrorKind, g.Error, r.err)
	default:
		return fmt.Sprintf("Jinja2 raises %s %q; Go renders %q", g.ErrorKind, g.Error, clip(r.got, 160))
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
