package sim

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"unicode"

	"github.com/inferbench/inferbench/promptsize"
)

// The built-in chat template's fixed costs, in tokens. A request of m
// messages counts
//
//	GenerationPromptTokens + Σ (MessageOverheadTokens + Tokenize(content))
//
// tokens: each message renders as <|im_start|> role \n content <|im_end|> \n
// (5 template tokens around the content) and the generation prompt as
// <|im_start|> assistant \n (3 tokens).
const (
	MessageOverheadTokens  = 5
	GenerationPromptTokens = 3
)

// MaxWordRunes is the longest run of letters and digits the built-in
// tokenizer keeps in one token; longer runs are split every MaxWordRunes
// runes.
const MaxWordRunes = 12

// Tokenize splits text into the built-in tokenizer's tokens. A token is an
// optional run of whitespace followed by either a run of up to MaxWordRunes
// letters and digits or a single other character; whitespace at the very end
// of the text is a token of its own. So "Hello, world!" is 4 tokens
// ("Hello" "," " world" "!") and "a a a " is 4 ("a" " a" " a" " ").
func Tokenize(text string) []string {
	var out []string
	rs := []rune(text)
	i := 0
	for i < len(rs) {
		start := i
		for i < len(rs) && unicode.IsSpace(rs[i]) {
			i++
		}
		if i == len(rs) {
			out = append(out, string(rs[start:i]))
			break
		}
		if isWord(rs[i]) {
			n := 0
			for i < len(rs) && isWord(rs[i]) && n < MaxWordRunes {
				i++
				n++
			}
		} else {
			i++
		}
		out = append(out, string(rs[start:i]))
	}
	return out
}

// CountText is len(Tokenize(text)), without building the tokens.
func CountText(text string) int {
	n, i := 0, 0
	rs := []rune(text)
	for i < len(rs) {
		for i < len(rs) && unicode.IsSpace(rs[i]) {
			i++
		}
		n++
		if i == len(rs) {
			break
		}
		if isWord(rs[i]) {
			k := 0
			for i < len(rs) && isWord(rs[i]) && k < MaxWordRunes {
				i++
				k++
			}
		} else {
			i++
		}
	}
	return n
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// Token ids of the built-in vocabulary. Special tokens have fixed ids; any
// other token's id is 256 + FNV-1a(token) mod 2¹⁷.
const (
	tokIMStart = 1
	tokIMEnd   = 2
)

func tokenID(piece string) int {
	h := fnv.New32a()
	h.Write([]byte(piece))
	return 256 + int(h.Sum32()%(1<<17))
}

// templateIDs renders messages through the built-in chat template and
// returns the token ids, generation prompt included.
func templateIDs(msgs []promptsize.Message) []int {
	nl := tokenID("\n")
	var ids []int
	for _, m := range msgs {
		ids = append(ids, tokIMStart, tokenID(m.Role), nl)
		for _, t := range Tokenize(m.Content) {
			ids = append(ids, tokenID(t))
		}
		ids = append(ids, tokIMEnd, nl)
	}
	return append(ids, tokIMStart, tokenID("assistant"), nl)
}

// Counter counts chat requests with the built-in tokenizer and chat
// template, exactly as a Server without Options.Counter does. Its zero value
// is ready to use and it is safe for concurrent use. WithTemplateVars
// returns one that renders the template with a request's variables.
type Counter struct {
	thinkOff bool // the template writes the empty thinking block
}

var (
	_ promptsize.Counter        = Counter{}
	_ promptsize.ContentLocator = Counter{}
)

// Count returns GenerationPromptTokens + Σ (MessageOverheadTokens +
// CountText(content)), and EmptyThinkTokens more when the Counter renders
// the template with thinking off (WithTemplateVars). It fails only for a
// message without a role.
func (c Counter) Count(ctx context.Context, msgs []promptsize.Message) (int, error) {
	n := GenerationPromptTokens
	if c.thinkOff {
		n += EmptyThinkTokens
	}
	for i, m := range msgs {
		if m.Role == "" {
			return 0, fmt.Errorf("sim: message %d has no role: expected system, user, assistant or tool", i)
		}
		n += MessageOverheadTokens + CountText(m.Content)
	}
	return n, nil
}

// ContentOffset returns the tokens of the request that precede its last
// message's content (promptsize.ContentLocator): every earlier message
// whole (MessageOverheadTokens + CountText(content)) and the last one's
// <|im_start|> role \n, 3 tokens. It fails only for a message without a
// role, or no message.
func (Counter) ContentOffset(ctx context.Context, msgs []promptsize.Message) (int, error) {
	if len(msgs) == 0 {
		return 0, fmt.Errorf("sim: ContentOffset: expected at least one message, found none")
	}
	n := 0
	for i, m := range msgs {
		if m.Role == "" {
			return 0, fmt.Errorf("sim: message %d has no role: expected system, user, assistant or tool", i)
		}
		if i < len(msgs)-1 {
			n += MessageOverheadTokens + CountText(m.Content)
		}
	}
	return n + 3, nil
}

// vocabulary is the word list of generated text; each word is one token
// under the built-in tokenizer when written with a leading space.
const vocabulary = "the of and to in a is that for it as was with be by on not he this are " +
	"or his from at which but have an had they you were their one all we can her has there " +
	"been if more when will would who so no model token cache batch step node ring prefill " +
	"decode time rate memory power queue stream"

// generatedWord returns the i-th generated token (with its leading space)
// of a request with the given seed:
//
//	vocab[splitmix64(seed · 0x9e3779b97f4a7c15 + i) mod len(vocab)]
func generatedWord(vocab []string, seed uint64, i int) string {
	return " " + vocab[mix(seed*0x9e3779b97f4a7c15+uint64(i))%uint64(len(vocab))]
}

// mix is SplitMix64's finaliser.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// The block vocabulary: pronounceable words of consonant-vowel pairs, each
// one token under the built-in tokenizer when written with a leading
// space, for exact token blocks (promptsize.TokenBlocks) against the
// embedded engine.
var blockWords = sync.OnceValues(func() ([]string, map[int]string) {
	const cons, vows = "bdfgklmnprstvz", "aeiou"
	words := make([]string, 0, 1<<15)
	byID := map[int]string{}
	for _, a := range cons {
		for _, b := range vows {
			for _, c := range cons {
				for _, d := range vows {
					for _, e := range cons {
						w := string([]rune{a, b, c, d, e})
						if id := tokenID(" " + w); byID[id] == "" {
							byID[id] = " " + w
							words = append(words, " "+w)
						}
						if id := tokenID(w); byID[id] == "" {
							byID[id] = w // the word alone, as it leads a message
						}
					}
				}
			}
		}
	}
	return words, byID
})

// OrdinaryTokens returns the ids of the block vocabulary: words that
// decode to a space and letters and encode back to themselves, one token
// each (promptsize.Vocabulary).
func (Counter) OrdinaryTokens() []int {
	words, _ := blockWords()
	ids := make([]int, len(words))
	for i, w := range words {
		ids[i] = tokenID(w)
	}
	return ids
}

// Encode returns the built-in tokenizer's ids of text.
func (Counter) Encode(text string) []int {
	ts := Tokenize(text)
	ids := make([]int, len(ts))
	for i, t := range ts {
		ids[i] = tokenID(t)
	}
	return ids
}

// Decode returns the text of ids of the block vocabulary; an id outside it
// decodes to "\uFFFD" (the built-in ids are hashes and cannot be inverted).
func (Counter) Decode(ids []int) string {
	_, byID := blockWords()
	var b strings.Builder
	for _, id := range ids {
		if w, ok := byID[id]; ok {
			b.WriteString(w)
		} else {
			b.WriteString("\uFFFD")
		}
	}
	return b.String()
}
