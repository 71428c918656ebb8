package promptsize_test

import (
	"context"
	"strings"

	"github.com/inferbench/inferbench/promptsize"
)

// wordVocab is a Vocabulary for tests without tokenizer files: ids 0-255
// are the bytes, 256 is the special token "<s>" (not ordinary), then one
// token " "+word(i) per word, then the first words again without their
// space (one-token leads), then a duplicate of the first word's text,
// which cannot round-trip. Encode splits text as GPT-style pre-tokenizers
// do: "<s>", a space with the letters after it, a run of letters, any other
// byte; a piece outside the vocabulary becomes its bytes.
type wordVocab struct {
	texts []string
	ids   map[string]int
}

// wordSpecial is the id of "<s>".
const wordSpecial = 256

func newWordVocab(words int) *wordVocab {
	v := &wordVocab{ids: make(map[string]int)}
	for b := range 256 {
		v.add(string([]byte{byte(b)}))
	}
	v.add("<s>")
	for i := range words {
		v.add(" " + word(i))
	}
	for i := range min(words, 4) {
		v.add(word(i))
	}
	v.add(" " + word(0)) // a second id with the first word's text
	return v
}

// wordID is the id of " "+word(i).
func wordID(i int) int { return 257 + i }

// word returns the i-th word: i's base-26 digits as letters, lowest first,
// padded with 'a' to four letters ("aaaa", "baaa", …).
func word(i int) string {
	var b []byte
	for {
		b = append(b, 'a'+byte(i%26))
		if i /= 26; i == 0 {
			break
		}
	}
	for len(b) < 4 {
		b = append(b, 'a')
	}
	return string(b)
}

func (v *wordVocab) add(text string) {
	if _, ok := v.ids[text]; !ok {
		v.ids[text] = len(v.texts)
	}
	v.texts = append(v.texts, text)
}

func (v *wordVocab) OrdinaryTokens() []int {
	out := make([]int, 0, len(v.texts))
	for id := range v.texts {
		if id != wordSpecial {
			out = append(out, id)
		}
	}
	return out
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func (v *wordVocab) Encode(text string) []int {
	var out []int
	for i := 0; i < len(text); {
		if strings.HasPrefix(text[i:], "<s>") {
			out = append(out, wordSpecial)
			i += 3
			continue
		}
		j := i
		if text[j] == ' ' && j+1 < len(text) && isLetter(text[j+1]) {
			j++
		}
		for j < len(text) && isLetter(text[j]) {
			j++
		}
		if j == i {
			j = i + 1
		}
		if id, ok := v.ids[text[i:j]]; ok {
			out = append(out, id)
		} else {
			for k := i; k < j; k++ {
				out = append(out, int(text[k]))
			}
		}
		i = j
	}
	return out
}

func (v *wordVocab) Decode(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		if id >= 0 && id < len(v.texts) {
			b.WriteString(v.texts[id])
		}
	}
	return b.String()
}

var _ promptsize.Vocabulary = (*wordVocab)(nil)

// vocabCounter counts a ChatML-like request over a wordVocab: 3 tokens per
// message and its role, its content's tokens, 2 for the generation prompt.
// With mergeAbove > 0, a content of more than that many tokens costs one
// token more, as a merge at the content's end would.
type vocabCounter struct {
	v          *wordVocab
	mergeAbove int
}

func (c vocabCounter) Count(_ context.Context, msgs []promptsize.Message) (int, error) {
	n := 2
	for _, m := range msgs {
		k := len(c.v.Encode(m.Content))
		if c.mergeAbove > 0 && k > c.mergeAbove {
			k++
		}
		n += 3 + k
	}
	return n, nil
}

// vocabLocator is a vocabCounter that is a ContentLocator: 3 template tokens
// before the last message's content (after the earlier messages), 2 after.
type vocabLocator struct{ vocabCounter }

func (c vocabLocator) ContentOffset(ctx context.Context, msgs []promptsize.Message) (int, error) {
	n, err := c.Count(ctx, msgs[:len(msgs)-1])
	return n - 2 + 3, err
}
