package hf

import (
	"fmt"
	"testing"

	"github.com/dlclark/regexp2"
	"github.com/google/go-cmp/cmp"
)

var fastPatterns = []string{llama3Pattern, qwen2Pattern, o200kPattern, deepseekDigits, deepseekCJK, deepseekMain}

// splitBoth returns the spans of s under pattern from regexp2 and from the
// hand-written matcher.
func splitBoth(t testing.TB, pattern, s string) (slow, fast []span) {
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		t.Fatal(err)
	}
	fm := fastMatcherFor(pattern)
	if fm == nil {
		t.Fatalf("no fast matcher for %q", pattern)
	}
	var sc scratch
	slow = (&splitStep{re: re}).find(nil, s, &sc)
	fast = (&splitStep{re: re, fast: fm}).find(nil, s, &sc)
	return slow, fast
}

// FuzzFastSplit checks the hand-written matchers against regexp2 running the
// pattern they stand for. The seeds are the golden texts, the 500 golden
// random strings and the corpus, so a plain go test covers them all.
func FuzzFastSplit(f *testing.F) {
	in := readInputs(f)
	for _, nt := range in.Texts {
		f.Add(nt[1])
	}
	for _, s := range in.Fuzz {
		f.Add(s)
	}
	f.Add(readCorpus(f))
	for _, s := range []string{
		"ǅungla ǅ", "ABCdef", "ABC", "ÀÉÎõ'S", "a\u0301\u0302b", "\u0301abc", " \u0301", "ʰʰʰa", "ǈǈǈ",
		"x'LL y'Re 'VE", "'ſ", "\u212a'D", "\r\n \t\n  x", "  \u00a0\u3000", "12345", "١٢٣٤", "a/b//\n/",
		"\xff\xfe abc\x80", "我们abcカタカナ123", "_foo-bar.baz", "'héllo", "\u200d\u200d", "~~~\r\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range fastPatterns {
			slow, fast := splitBoth(t, p, s)
			if d := cmp.Diff(slow, fast, cmp.AllowUnexported(span{})); d != "" {
				t.Errorf("pattern %.40q… on %q: regexp2 (-) and the fast matcher (+) differ:\n%s", p, s, d)
			}
		}
	})
}

// TestFastMatchersInUse checks that the five models' Split regexes are the
// ones with hand-written matchers, so the golden tests exercise them.
func TestFastMatchersInUse(t *testing.T) {
	for _, model := range []string{"qwen3", "llama3_1", "gptoss", "deepseek_v3"} {
		tok := loadShared(t, model)
		for i, st := range tok.pre.steps {
			if st.re != nil && st.fast == nil {
				t.Errorf("%s: Split step %d runs on regexp2: %s", model, i, fmt.Sprint(st.re))
			}
		}
	}
}
