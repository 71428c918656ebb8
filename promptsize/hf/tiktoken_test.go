package hf

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
)

// The golden files under testdata/tiktoken/ come from
// scripts/node/tiktoken_goldens.mjs: ids from tiktoken@1.0.22, the
// WebAssembly build of OpenAI's tiktoken, on the inputs of the
// tokenizer.json goldens. The rank files come from scripts/testdata.sh.

type tiktokenGolden struct {
	Encoding string `json:"encoding"`
	goldenIDs
	Extra []struct {
		Name string `json:"name"`
		Text string `json:"text"`
		IDs  []int  `json:"ids"`
	} `json:"extra"`
}

// tiktokenRanks returns the path of a fetched rank file, or skips the test
// (fails it under CI=true) when scripts/testdata.sh has not been run.
func tiktokenRanks(t testing.TB, name string) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", "testdata", "models", "tiktoken", name+".tiktoken"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		testkit.MissingData(t, fmt.Sprintf("tiktoken ranks %s are missing (%v): run scripts/testdata.sh (make test does)", name, err))
	}
	return path
}

// kimiDir returns a Kimi K2 style directory: o200k_base's ranks as
// tiktoken.model and testdata/tiktoken/kimi_o200k/tokenizer_config.json.
func kimiDir(t testing.TB) string {
	t.Helper()
	ranks := tiktokenRanks(t, "o200k_base")
	dir := t.TempDir()
	if err := os.Symlink(ranks, filepath.Join(dir, TiktokenModelFile)); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join("testdata", "tiktoken", "kimi_o200k", "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

var sharedTiktoken sync.Map // encoding name -> func() (*Tokenizer, error)

// loadTiktoken loads a golden encoding once per test binary: cl100k_base,
// o200k_base, or kimi_o200k (o200k's ranks in a Kimi K2 style directory).
func loadTiktoken(t testing.TB, name string) *Tokenizer {
	t.Helper()
	var load func() (*Tokenizer, error)
	switch name {
	case "kimi_o200k":
		dir := kimiDir(t)
		load = func() (*Tokenizer, error) { return LoadTiktoken(dir, KimiK2Pattern) }
	default:
		path := tiktokenRanks(t, name)
		enc := map[string]TiktokenEncoding{"cl100k_base": CL100KBase(), "o200k_base": O200KBase()}[name]
		load = func() (*Tokenizer, error) {
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			return NewTiktoken(data, enc)
		}
	}
	f, _ := sharedTiktoken.LoadOrStore(name, sync.OnceValues(load))
	tok, err := f.(func() (*Tokenizer, error))()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func readTiktokenGolden(t testing.TB, name string) tiktokenGolden {
	t.Helper()
	var g tiktokenGolden
	if err := json.Unmarshal(readGz(t, filepath.Join("testdata", "tiktoken", name+".json.gz")), &g); err != nil {
		t.Fatal(err)
	}
	return g
}

var tiktokenGoldenNames = []string{"cl100k_base", "o200k_base", "kimi_o200k"}

// TestTiktokenGoldens compares the ids of every golden input with
// tiktoken's: the 36 texts and a text of special tokens, the 500 random
// strings, the 200 KB corpus and, for the Kimi K2 layout, texts long enough
// for its cutting of long runs and of 400,000 characters to matter.
func TestTiktokenGoldens(t *testing.T) {
	in := readInputs(t)
	corpus := readCorpus(t)
	for _, name := range tiktokenGoldenNames {
		t.Run(name, func(t *testing.T) {
			g := readTiktokenGolden(t, name)
			tok := loadTiktoken(t, name)
			testGoldenIDs(t, tok, in, corpus, g.goldenIDs, true)
			t.Run("extra", func(t *testing.T) {
				for _, x := range g.Extra {
					if d := diffIDs(tok.Encode(x.Text), x.IDs); d != "" {
						t.Errorf("%s: %s", x.Name, d)
					}
				}
			})
		})
	}
}

// TestTiktokenFastMatchers checks that the golden encodings split on the
// hand-written matchers, so TestTiktokenGoldens exercises them.
func TestTiktokenFastMatchers(t *testing.T) {
	for _, p := range []string{CL100KPattern, O200KPattern, KimiK2Pattern} {
		st, err := tiktokenSplit(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.fast == nil {
			t.Errorf("pattern %.40q… runs on regexp2", p)
		}
	}
}

// TestTiktokenKimiCount counts a chat through the Kimi K2 style directory's
// template, special tokens included.
func TestTiktokenKimiCount(t *testing.T) {
	tok := loadTiktoken(t, "kimi_o200k")
	msgs := []promptsize.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "你好, world"}}
	s, err := tok.Render(msgs, RenderOptions{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	want := "<|im_system|>system<|im_middle|>Be brief.<|im_end|><|im_user|>user<|im_middle|>你好, world<|im_end|><|im_assistant|>assistant<|im_middle|>"
	if s != want {
		t.Fatalf("Render = %q, want %q", s, want)
	}
	n, err := tok.Count(t.Context(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode(s)
	if n != len(ids) {
		t.Errorf("Count = %d, len(Encode(rendered)) = %d", n, len(ids))
	}
	for _, sp := range []struct {
		text string
		id   int
	}{{"<|im_system|>", 200008}, {"<|im_middle|>", 200013}, {"<|im_assistant|>", 200002}} {
		if got := tok.Encode(sp.text); !cmp.Equal(got, []int{sp.id}) {
			t.Errorf("Encode(%q) = %v, want [%d]", sp.text, got, sp.id)
		}
	}
	if got := tok.SpecialTokens(); got.BOS != "[BOS]" || got.EOS != "[EOS]" {
		t.Errorf("SpecialTokens = %+v, want [BOS] and [EOS]", got)
	}
}

// tinyRanks returns a rank file of the 256 bytes (rank = byte) followed by
// the given tokens.
func tinyRanks(tokens ...string) []byte {
	var b strings.Builder
	for i := 0; i < 256; i++ {
		fmt.Fprintf(&b, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(i)}), i)
	}
	for i, tok := range tokens {
		fmt.Fprintf(&b, "%s %d\n", base64.StdEncoding.EncodeToString([]byte(tok)), 256+i)
	}
	return []byte(b.String())
}

// TestTiktokenMerge checks the merge order on a tiny vocabulary: the pair
// whose concatenation has the lowest rank first, the leftmost among equal
// ranks, and a piece that is a token taken whole.
func TestTiktokenMerge(t *testing.T) {
	// ranks: a b ... then "ab"=256, "bc"=257, "abc"=258, "aa"=259, "aaaa"=260
	tok, err := NewTiktoken(tinyRanks("ab", "bc", "abc", "aa", "aaaa", "xyz"), TiktokenEncoding{Pattern: `\S+|\s+`, SpecialTokens: map[string]int{"<s>": 300, "<s>x": 301}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		want []int
	}{
		{"abc", []int{258}},                                  // whole piece
		{"abcb", []int{258, 'b'}},                            // ab (256) before bc (257), then abc
		{"bca", []int{257, 'a'}},                             // bc, no bca
		{"aaaaa", []int{260, 'a'}},                           // aa aa a → aaaa a: leftmost first
		{"aaa", []int{259, 'a'}},                             // aa a
		{"xy", []int{'x', 'y'}},                              // xy is no token, xyz cannot form
		{"a <s>x<s> b", []int{'a', ' ', 301, 300, ' ', 'b'}}, // specials leftmost-longest
	} {
		if got := tok.Encode(c.text); !cmp.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
		if got := tok.Decode(tok.Encode(c.text)); got != c.text {
			t.Errorf("Decode(Encode(%q)) = %q", c.text, got)
		}
	}
	if _, err := tok.Count(t.Context(), []promptsize.Message{{Role: "user", Content: "x"}}); !errors.Is(err, ErrNoChatTemplate) {
		t.Errorf("Count without a template: err = %v, want ErrNoChatTemplate", err)
	}
	withTmpl, err := NewTiktoken(tinyRanks(), TiktokenEncoding{Pattern: `\S+|\s+`}, WithChatTemplate("{{ messages[0].content }}!"))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := withTmpl.Count(t.Context(), []promptsize.Message{{Role: "user", Content: "hi"}}); err != nil || n != 3 {
		t.Errorf("Count with a template = %d, %v; want 3 byte tokens", n, err)
	}
}

// TestLoadTiktokenLayout loads a tiny Kimi K2 style directory: reserved
// special tokens after the ranks, named by added_tokens_decoder or
// <|reserved_token_ID|>, an added token beyond the reserved block, and the
// chat template of chat_template.jinja.
func TestLoadTiktokenLayout(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(TiktokenModelFile, string(tinyRanks("中文", "ab")))
	write("tokenizer_config.json", `{"added_tokens_decoder": {
		"258": {"content": "[BOS]", "lstrip": false, "rstrip": false, "single_word": false, "special": true},
		"260": {"content": "<|im_end|>", "special": true},
		"600": {"content": "<|late|>", "special": true}},
		"bos_token": "[BOS]", "chat_template": "ignored: chat_template.jinja wins"}`)
	write("chat_template.jinja", "{{ bos_token }}{% for m in messages %}{{ m.content }}<|im_end|>{% endfor %}")
	tok, err := LoadTiktoken(dir, KimiK2Pattern)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		want []int
	}{
		{"[BOS]中文ab<|im_end|>", []int{258, 256, 257, 260}},
		{"<|reserved_token_259|><|reserved_token_513|>", []int{259, 513}},
		{"<|reserved_token_514|>", nil}, // past the 256 reserved ids: plain text
		{"<|late|>", []int{600}},
	} {
		got := tok.Encode(c.text)
		if c.want == nil {
			if len(got) < 5 {
				t.Errorf("Encode(%q) = %v, want byte tokens", c.text, got)
			}
			continue
		}
		if !cmp.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	s, err := tok.Render([]promptsize.Message{{Role: "user", Content: "ab"}}, RenderOptions{})
	if err != nil || s != "[BOS]ab<|im_end|>" {
		t.Errorf("Render = %q, %v; want the template of chat_template.jinja", s, err)
	}

	write("tokenizer_config.json", `{"added_tokens_decoder": {"258": {"content": "[BOS]", "lstrip": true}}}`)
	if _, err := LoadTiktoken(dir, KimiK2Pattern); !errors.Is(err, ErrUnsupported) {
		t.Errorf("an added token with lstrip: err = %v, want ErrUnsupported", err)
	}
	write("tokenizer_config.json", `{"added_tokens_decoder": {"x": {"content": "[BOS]"}}}`)
	if _, err := LoadTiktoken(dir, KimiK2Pattern); err == nil {
		t.Error("a non-numeric added token id loaded")
	}
	if _, err := LoadTiktoken(t.TempDir(), KimiK2Pattern); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an empty directory: err = %v, want one wrapping os.ErrNotExist", err)
	}
}

func TestParseTiktokenRanks(t *testing.T) {
	ok := map[string]map[string]int32{
		"YQ== 0\nYg== 1\n":        {"a": 0, "b": 1},
		"YQ== 0\r\n\r\nYg==\t7":   {"a": 0, "b": 7},
		"\n\nYWI= 2147483646\n\n": {"ab": 2147483646},
		"  YQ==   5   \rYg== 6\r": {"a": 5, "b": 6},
	}
	for in, want := range ok {
		got, err := parseTiktokenRanks([]byte(in))
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if !cmp.Equal(got, want) {
			t.Errorf("%q: got %v, want %v", in, got, want)
		}
	}
	for _, in := range []string{
		"", "\n\n", "YQ==", "YQ== 0 1", "YQ 0", "YQ==== 0", "!!! 0", "YQ== -1", "YQ== +1", "YQ== 1.0",
		"YQ== 2147483647", "YQ== 99999999999", "YQ== 0\nYQ== 1", "YQ== 0\nYg== 0", "=== 0",
	} {
		if got, err := parseTiktokenRanks([]byte(in)); err == nil {
			t.Errorf("%q: accepted as %v", in, got)
		}
	}
}

func TestNewTiktokenErrors(t *testing.T) {
	pat := TiktokenEncoding{Pattern: `\S+|\s+`}
	for name, c := range map[string]struct {
		ranks []byte
		enc   TiktokenEncoding
	}{
		"missing byte":         {[]byte("YQ== 0\n"), pat},
		"sparse rank":          {append(tinyRanks(), "YWI= 100000\n"...), pat},
		"empty pattern":        {tinyRanks(), TiktokenEncoding{}},
		"bad pattern":          {tinyRanks(), TiktokenEncoding{Pattern: `(`}},
		"other intersection":   {tinyRanks(), TiktokenEncoding{Pattern: `[a-z&&b]`}},
		"nested class":         {tinyRanks(), TiktokenEncoding{Pattern: `[a[b]]`}},
		"special on a rank":    {tinyRanks(), TiktokenEncoding{Pattern: `\S+`, SpecialTokens: map[string]int{"<s>": 5}}},
		"empty special":        {tinyRanks(), TiktokenEncoding{Pattern: `\S+`, SpecialTokens: map[string]int{"": 300}}},
		"special out of range": {tinyRanks(), TiktokenEncoding{Pattern: `\S+`, SpecialTokens: map[string]int{"<s>": 1 << 30}}},
	} {
		if _, err := NewTiktoken(c.ranks, c.enc); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
}

func TestTranslateTiktokenPattern(t *testing.T) {
	for in, want := range map[string]string{
		`[\p{L}&&[^\p{Han}]]+`:    `[\p{L}-[\p{Han}]]+`,
		`[^\]&&[^a]]`:             `[^\]-[a]]`,
		`[]a]|\[&&`:               `[]a]|\[&&`,
		`[a\]]&&[^b]`:             `[a\]]&&[^b]`,
		`x[\p{Lu}&&[^\]x]]*y`:     `x[\p{Lu}-[\]x]]*y`,
		`(?i:'s)|\s+(?!\S)|[^\s]`: `(?i:'s)|\s+(?!\S)|[^\s]`,
	} {
		got, err := translateTiktokenPattern(in)
		if err != nil || got != want {
			t.Errorf("translate(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{`[a&&b]`, `[a&&[^b]c]`, `[a[b]]`, `[a--b]`, `[a~~b]`, `[a&&[^b`} {
		if got, err := translateTiktokenPattern(in); err == nil {
			t.Errorf("translate(%q) = %q, want an error", in, got)
		}
	}
}

// TestKimiChunkEnd checks the cutting of Kimi K2's encode: before the
// 25,001st character of a run (whitespace as Python's str.isspace, which
// counts U+001C to U+001F) and at every 400,000 characters.
func TestKimiChunkEnd(t *testing.T) {
	chunks := func(s string) []int {
		var lens []int
		for i := 0; i < len(s); {
			e := kimiChunkEnd(s, i)
			if e <= i {
				t.Fatalf("kimiChunkEnd(%d) = %d", i, e)
			}
			lens = append(lens, utf8.RuneCountInString(s[i:e]))
			i = e
		}
		return lens
	}
	for name, c := range map[string]struct {
		s    string
		want []int
	}{
		"short":              {"ab  cd", []int{6}},
		"run of 25000":       {strings.Repeat("x", 25000) + " ", []int{25001}},
		"run of 25001":       {strings.Repeat("x", 25001), []int{25000, 1}},
		"space run":          {"a" + strings.Repeat(" ", 50001) + "b", []int{25001, 25000, 2}},
		"x1c is whitespace":  {strings.Repeat("1", 12500) + strings.Repeat("\x1c", 12501) + "2", []int{25002}},
		"multibyte runs":     {strings.Repeat("é", 25001), []int{25000, 1}},
		"400,000 characters": {strings.Repeat("ab ", 133334), []int{400000, 2}},
		"400,000 multibyte":  {strings.Repeat("é ", 200001), []int{400000, 2}},
	} {
		if got := chunks(c.s); !cmp.Equal(got, c.want) {
			t.Errorf("%s: chunk lengths %v, want %v", name, got, c.want)
		}
	}
}

// kimiRegexp returns KimiK2Pattern translated and compiled for regexp2.
func kimiRegexp(t testing.TB) *regexp2.Regexp {
	p, err := translateTiktokenPattern(KimiK2Pattern)
	if err != nil {
		t.Fatal(err)
	}
	return regexp2.MustCompile(p, regexp2.None)
}

// FuzzKimiSplit checks matchKimi against regexp2 running KimiK2Pattern (as
// translated). The seeds are the golden texts and random strings.
func FuzzKimiSplit(f *testing.F) {
	in := readInputs(f)
	for _, nt := range in.Texts {
		f.Add(nt[1])
	}
	for _, s := range in.Fuzz {
		f.Add(s)
	}
	for _, s := range []string{
		"中文English混合", "汉字abc", "北京市 Pascal", "A中b", "中'S", "x中\u0301", "ǅ中ǅ", "'中", "ABC中DEF", "a/b//\n/",
		"\u3005\u3006\u3007〆々", "ᄀ한국어", "カタカナ漢字", "𠀀𠀁", "\u2e80\u2f00", " 中", "\n中\n",
	} {
		f.Add(s)
	}
	re := kimiRegexp(f)
	f.Fuzz(func(t *testing.T, s string) {
		var sc scratch
		slow := (&splitStep{re: re}).find(nil, s, &sc)
		fast := (&splitStep{re: re, fast: matchKimi}).find(nil, s, &sc)
		if d := cmp.Diff(slow, fast, cmp.AllowUnexported(span{})); d != "" {
			t.Errorf("%q: regexp2 (-) and matchKimi (+) differ:\n%s", s, d)
		}
	})
}

// FuzzTiktokenRanks feeds arbitrary rank files to the parser: it must
// refuse them or return ranks that, written back one line per token,
// parse to the same map; NewTiktoken must not panic on them.
func FuzzTiktokenRanks(f *testing.F) {
	f.Add([]byte("YQ== 0\nYg== 1\n"))
	f.Add([]byte("YQ== 0\r\n\r\nYg==\t7"))
	f.Add([]byte("YQ== 0 1"))
	f.Add([]byte("YQ== 99999999999"))
	f.Add([]byte("YQ== 0\nYQ== 1"))
	f.Add(tinyRanks("ab", "abc"))
	f.Add([]byte("\xff\xfe 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		vocab, err := parseTiktokenRanks(data)
		if err != nil {
			return
		}
		toks := make([]string, 0, len(vocab))
		for tok := range vocab {
			toks = append(toks, tok)
		}
		sort.Slice(toks, func(i, j int) bool { return vocab[toks[i]] < vocab[toks[j]] })
		var b strings.Builder
		for _, tok := range toks {
			fmt.Fprintf(&b, "%s %d\n", base64.StdEncoding.EncodeToString([]byte(tok)), vocab[tok])
		}
		again, err := parseTiktokenRanks([]byte(b.String()))
		if err != nil {
			t.Fatalf("written back, the ranks do not parse: %v", err)
		}
		if !cmp.Equal(vocab, again) {
			t.Fatalf("written back, the ranks parse to %v, not %v", again, vocab)
		}
		if len(vocab) > 1<<12 {
			return
		}
		tok, err := NewTiktoken(append(tinyRanks(), data...), TiktokenEncoding{Pattern: O200KPattern}, WithCacheSize(0))
		if err != nil {
			return
		}
		for _, s := range []string{"", "ab abc", "\xff\xfe x"} {
			tok.Decode(tok.Encode(s))
		}
	})
}

// BenchmarkTiktokenEncodeCorpus encodes the 200 KB golden corpus with each
// golden tiktoken encoding, the piece cache emptied before every run (a
// first call). Run with -cpu 1 for the single-core figure.
func BenchmarkTiktokenEncodeCorpus(b *testing.B) {
	corpus := readCorpus(b)
	for _, name := range tiktokenGoldenNames {
		tok := loadTiktoken(b, name)
		n := tok.CountText(corpus)
		b.Run("encoding="+name, func(b *testing.B) {
			b.SetBytes(int64(len(corpus)))
			saved := tok.cache
			defer func() { tok.cache = saved }()
			for b.Loop() {
				b.StopTimer()
				tok.cache = newPieceCache(DefaultCacheSize)
				b.StartTimer()
				tok.CountText(corpus)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
