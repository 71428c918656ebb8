package hf

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/inferbench/inferbench/internal/testkit"
)

// FuzzLoad feeds arbitrary tokenizer.json and tokenizer_config.json to New:
// it must return an error or a tokenizer that encodes, decodes and renders
// without panicking.
func FuzzLoad(f *testing.F) {
	f.Add(tinyByteLevel(nil), []byte(`{"bos_token": "<|x|>", "chat_template": "{{ bos_token }}{{ messages[0].content }}"}`))
	f.Add(tinySentencePiece(), []byte(`{"chat_template": [{"name": "default", "template": "x"}]}`))
	f.Add([]byte(`{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}`), []byte(`{}`))
	f.Add([]byte(`{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}, "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Prepend", "prepend": "_"}]}}`), []byte(`null`))
	f.Add([]byte(`{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "a"]]}}`), []byte(`{"unk_token": {"content": 1}}`))
	f.Fuzz(func(t *testing.T, tokenizerJSON, configJSON []byte) {
		tok, err := New(tokenizerJSON, configJSON, WithCacheSize(0))
		if err != nil {
			return
		}
		for _, s := range []string{"", "a", "ab aé\n\n<|x|>y 12345", "\xff\xfe"} {
			tok.Decode(tok.Encode(s))
		}
		if ct, err := tok.ChatTemplate(); err == nil {
			ct.Render(nil, RenderOptions{AddGenerationPrompt: true})
		}
	})
}

// fuzzTokenizers are the tokenizers FuzzEncode checks: the two tiny ones
// always, the real byte-level Llama 3.1, Qwen3 (NFC) and Gemma 3 when
// scripts/testdata.sh has fetched them.
type fuzzTokenizer struct {
	name string
	tok  *Tokenizer
	// roundTrip reports whether Decode(Encode(s)) must give s back.
	roundTrip func(s string) bool
}

func fuzzTokenizers(t testing.TB) []fuzzTokenizer {
	bl, err := New(tinyByteLevel(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := New(tinySentencePiece(), nil)
	if err != nil {
		t.Fatal(err)
	}
	spRoundTrip := func(s string) bool { return utf8.ValidString(s) && !strings.Contains(s, "▁") }
	out := []fuzzTokenizer{
		{"tiny byte-level", bl, func(string) bool { return true }},
		{"tiny sentencepiece", sp, spRoundTrip},
	}
	for _, m := range []struct {
		name      string
		roundTrip func(string) bool
	}{
		{"llama3_1", func(string) bool { return true }},
		{"qwen3", func(s string) bool { return utf8.ValidString(s) && norm.NFC.IsNormalString(s) }},
		{"gemma3", spRoundTrip},
	} {
		if dirExists(m.name) {
			out = append(out, fuzzTokenizer{m.name, loadShared(t, m.name), m.roundTrip})
		}
	}
	return out
}

// FuzzEncode checks that encoding never panics, that Decode inverts Encode
// where the tokenizer is lossless, that the piece cache changes nothing, and
// that the heap and the linear merge loops agree.
func FuzzEncode(f *testing.F) {
	in := readInputs(f)
	for _, nt := range in.Texts {
		f.Add(nt[1])
	}
	for _, s := range in.Fuzz[:50] {
		f.Add(s)
	}
	toks := fuzzTokenizers(f)
	f.Fuzz(func(t *testing.T, s string) {
		for _, ft := range toks {
			ids := ft.tok.Encode(s)
			if ft.roundTrip(s) {
				if back := ft.tok.Decode(ids); back != s {
					t.Errorf("%s: Decode(Encode(%q)) = %q (ids %v)", ft.name, s, back, ids)
				}
			}
			if n := ft.tok.CountText(s); n != len(ids) {
				t.Errorf("%s: CountText(%q) = %d, len(Encode) = %d", ft.name, s, n, len(ids))
			}
			m := &ft.tok.model
			var sc scratch
			syms := m.initialSymbols(nil, s)
			lin := m.mergeLinear(append([]int32(nil), syms...), &sc)
			hp := m.mergeHeap(append([]int32(nil), syms...), &sc)
			if len(syms) > 0 && diffIDs(toInts(lin), toInts(hp)) != "" {
				t.Errorf("%s: %q: linear merge %v, heap merge %v", ft.name, s, lin, hp)
			}
		}
	})
}

func toInts(xs []int32) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x)
	}
	return out
}

// FuzzRender renders arbitrary templates with arbitrary messages: errors
// are fine, panics and hangs are not.
func FuzzRender(f *testing.F) {
	f.Add("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}", `[{"role":"user","content":"hi"}]`, `[{"type":"function","function":{"name":"f"}}]`)
	f.Add("{{ tools | tojson }}{{ strftime_now('%Y') }}", `[]`, `[{"b":1,"a":[1.5,null,true]}]`)
	f.Add("{{ messages[0]['content'] | trim }}{{ raise_exception('x') if messages|length > 1 }}", `[{"content":" a "}]`, `null`)
	f.Add("{%- set ns = namespace(x=0) -%}{%- for m in messages[::-1] %}{% set ns.x = ns.x + 1 %}{% endfor %}{{ ns.x }}", `[{},{}]`, ``)
	f.Fuzz(func(t *testing.T, src, messages, tools string) {
		ct, err := ParseChatTemplate(src, SpecialTokens{BOS: "<s>"})
		if err != nil {
			return
		}
		if !json.Valid([]byte(messages)) {
			return
		}
		ct.RenderJSON(json.RawMessage(messages), RenderOptions{AddGenerationPrompt: true, Tools: json.RawMessage(tools)})
	})
}

// TestConcurrentEncode encodes from several goroutines at once, with the
// cache shared, and compares with a tokenizer without a cache.
func TestConcurrentEncode(t *testing.T) {
	in := readInputs(t)
	for _, ft := range fuzzTokenizers(t) {
		plain, err := New(tinyByteLevel(nil), nil, WithCacheSize(0))
		if err != nil {
			t.Fatal(err)
		}
		if ft.name != "tiny byte-level" {
			plain = &Tokenizer{encoder: &encoder{}}
			*plain.encoder = encoder{added: ft.tok.added, hasAdded: ft.tok.hasAdded, norm: ft.tok.norm, pre: ft.tok.pre, model: ft.tok.model, dec: ft.tok.dec}
			plain.pool.New = func() any { return new(scratch) }
		}
		want := make([][]int, len(in.Fuzz))
		for i, s := range in.Fuzz {
			want[i] = plain.Encode(s)
		}
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range in.Fuzz {
					j := (i*7 + g*131) % len(in.Fuzz)
					if d := diffIDs(ft.tok.Encode(in.Fuzz[j]), want[j]); d != "" {
						t.Errorf("%s: fuzz[%d] concurrently: %s", ft.name, j, d)
						return
					}
				}
			}()
		}
		testkit.WaitWithin(t, &wg, testkit.Patience)
	}
}
