package sim

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/inferbench/inferbench/promptsize"
)

func TestTokenize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a a a ", []string{"a", " a", " a", " "}},
		{"Hello, world!", []string{"Hello", ",", " world", "!"}},
		{"  x\n\ny", []string{"  x", "\n\ny"}},
		{"abcdefghijklmnop", []string{"abcdefghijkl", "mnop"}},
		{"héllo wörld", []string{"héllo", " wörld"}},
		{"a+b", []string{"a", "+", "b"}},
	} {
		if diff := cmp.Diff(tc.want, Tokenize(tc.in)); diff != "" {
			t.Errorf("Tokenize(%q) (-want +got):\n%s", tc.in, diff)
		}
		if n := CountText(tc.in); n != len(tc.want) {
			t.Errorf("CountText(%q) = %d, want %d", tc.in, n, len(tc.want))
		}
	}
}

func TestCounterTemplate(t *testing.T) {
	msgs := []promptsize.Message{{Role: "system", Content: "x"}, {Role: "user", Content: "a b"}}
	n, err := Counter{}.Count(context.Background(), msgs)
	if err != nil || n != 3+(5+1)+(5+2) {
		t.Errorf("Count = %d, %v; want 16", n, err)
	}
	if got := len(templateIDs(msgs)); got != n {
		t.Errorf("template renders %d ids, Count says %d", got, n)
	}
	if _, err := (Counter{}).Count(context.Background(), []promptsize.Message{{Content: "x"}}); err == nil {
		t.Error("a message without a role counted without error")
	}
}

// TestCounterContentOffset: the offset is where the last message's
// content begins among the rendered ids: templateIDs of the request with
// a marker content has the marker's id there.
func TestCounterContentOffset(t *testing.T) {
	for _, msgs := range [][]promptsize.Message{
		{{Role: "user", Content: "a b"}},
		{{Role: "system", Content: "Be brief, please."}, {Role: "user", Content: "a b"}},
		{{Role: "system", Content: "x"}, {Role: "user", Content: "q"}, {Role: "assistant", Content: "r s"}, {Role: "user", Content: ""}},
	} {
		p, err := Counter{}.ContentOffset(context.Background(), msgs)
		if err != nil {
			t.Fatal(err)
		}
		marked := slices.Clone(msgs)
		marked[len(marked)-1].Content = "zmarkerz"
		if ids := templateIDs(marked); p >= len(ids) || ids[p] != tokenID("zmarkerz") {
			t.Errorf("%v: offset %d does not point at the last content among %d ids", msgs, p, len(ids))
		}
	}
	if _, err := (Counter{}).ContentOffset(context.Background(), nil); err == nil {
		t.Error("no messages: no error")
	}
}

func TestGeneratedWordsAreOneTokenEach(t *testing.T) {
	vocab := strings.Fields(vocabulary)
	for i := range 200 {
		if w := generatedWord(vocab, 42, i); CountText(w) != 1 {
			t.Fatalf("generated word %q is %d tokens", w, CountText(w))
		}
	}
}

func FuzzTokenize(f *testing.F) {
	for _, s := range []string{"", "a a a ", "Hello, world!", "  \n", "abcdefghijklmnopqrstuvwxyz", "日本語 テキスト", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		toks := Tokenize(s)
		if CountText(s) != len(toks) {
			t.Fatalf("CountText(%q) = %d, len(Tokenize) = %d", s, CountText(s), len(toks))
		}
		// Tokens cover the text (as runes) without loss.
		if got := strings.Join(toks, ""); got != string([]rune(s)) {
			t.Fatalf("tokens of %q join to %q", s, got)
		}
		for _, tk := range toks {
			if tk == "" {
				t.Fatalf("empty token in %q", toks)
			}
		}
	})
}

// FuzzChatContent feeds arbitrary JSON to the chat request parser: it must
// never panic, and a plain string content comes back unchanged.
func FuzzChatContent(f *testing.F) {
	for _, s := range []string{`"hi"`, `null`, `{"type":"text","text":"x"}`, `[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}}]`, `[1,2]`, `{`, `""`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		body := `{"model":"m","messages":[{"role":"user","content":` + raw + `}]}`
		var req chatRequest
		if json.Unmarshal([]byte(body), &req) != nil {
			return
		}
		text, err := req.Messages[0].text()
		var s string
		if json.Unmarshal([]byte(raw), &s) == nil && (err != nil || text != s) {
			t.Fatalf("string content %s gave %q, %v", raw, text, err)
		}
	})
}

// FuzzStop checks the stop field's parser and the stop search: the text of
// the returned token count holds a stop string at the returned offset, and
// one token fewer holds none.
func FuzzStop(f *testing.F) {
	for _, s := range []string{`" the"`, `["a","b"]`, `null`, `""`, `[1]`, `" model token"`} {
		f.Add(s, uint64(42))
	}
	vocab := strings.Fields(vocabulary)
	f.Fuzz(func(t *testing.T, raw string, seed uint64) {
		stops, err := parseStop(json.RawMessage(raw))
		if err != nil {
			return
		}
		k, at := stopAt(thinkPlan{}.wordFunc(vocab, seed), 64, stops)
		if k == 0 {
			return
		}
		text := func(n int) string {
			var b strings.Builder
			for i := range n {
				b.WriteString(generatedWord(vocab, seed, i))
			}
			return b.String()
		}
		full, before := text(k), text(k-1)
		hit := false
		for _, x := range stops {
			hit = hit || strings.HasPrefix(full[at:], x)
			if strings.Contains(before, x) {
				t.Fatalf("stop %q already in the first %d tokens %q", x, k-1, before)
			}
		}
		if !hit {
			t.Fatalf("no stop of %q at offset %d of %q", stops, at, full)
		}
	})
}

// TestCounterVocabulary: the built-in counter is a promptsize.Vocabulary
// whose words make exact token blocks.
func TestCounterVocabulary(t *testing.T) {
	var v promptsize.Vocabulary = Counter{}
	tb, err := promptsize.NewTokenBlocks(v, promptsize.BlockOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tb.StableTokens()); n < 20000 {
		t.Errorf("%d stable tokens, want the block vocabulary's tens of thousands", n)
	}
	a, err := tb.AppendRow(nil, []int64{0, 1, 2}, 40, 16)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := tb.AppendRow(nil, []int64{0, 1, 3}, 40, 16)
	if len(a) != 40 || !slices.Equal(a[:32], b[:32]) || a[32] == b[32] {
		t.Errorf("rows sharing two blocks of 16: %v / %v", a, b)
	}
	if got := v.Encode(v.Decode(a)); !slices.Equal(got, a) {
		t.Errorf("a block's text does not encode back to its ids")
	}
}
