package hf

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/inferbench/inferbench/promptsize"
)

var (
	_ promptsize.Vocabulary     = (*Tokenizer)(nil)
	_ promptsize.ContentLocator = (*Tokenizer)(nil)
)

// OrdinaryTokens returns, in increasing order, the ids of the model's own
// vocabulary (tokenizer.json's model.vocab, or a tiktoken file's ranks)
// that are none of: an added token, special or not; a byte-fallback piece
// (<0x41>); the unknown token. They are the ids ordinary text encodes to;
// promptsize.TokenBlocks draws its blocks from those of them that
// round-trip (it takes a Tokenizer as its promptsize.Vocabulary).
func (t *Tokenizer) OrdinaryTokens() []int {
	m := &t.model
	skip := make(map[int32]bool)
	for _, n := range t.added.nodes {
		if n.id >= 0 {
			skip[n.id] = true
		}
	}
	if !m.byteLevel {
		for _, id := range m.byteIDs {
			if id >= 0 {
				skip[id] = true
			}
		}
	}
	if m.unk >= 0 {
		skip[m.unk] = true
	}
	out := make([]int, 0, len(m.vocab))
	for _, id := range m.vocab {
		if !skip[id] {
			out = append(out, int(id))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// contentMarker stands in for the last message's content when
// ContentOffset looks for where the template puts it: private-use
// characters that no template trims, escapes or matches.
const contentMarker = "\uE000\uE001\uE002"

// ContentOffset implements promptsize.ContentLocator: it renders messages
// as Count does (generation prompt, the options of WithRenderOptions) with
// the last message's content replaced by a marker, and returns the token
// count of the rendered text before the marker: the template's tokens (and
// earlier messages) that precede that content. A template that drops the
// content or prints it more than once gives an error.
func (t *Tokenizer) ContentOffset(ctx context.Context, messages []promptsize.Message) (int, error) {
	if len(messages) == 0 {
		return 0, errors.New("hf: ContentOffset: expected at least one message, found none")
	}
	msgs := slices.Clone(messages)
	msgs[len(msgs)-1].Content = contentMarker
	s, err := t.renderForCount(ctx, msgs)
	if err != nil {
		return 0, err
	}
	i := strings.Index(s, contentMarker)
	switch {
	case i < 0:
		return 0, fmt.Errorf("hf: ContentOffset: the chat template does not print the last message's content; expected it once")
	case strings.Contains(s[i+len(contentMarker):], contentMarker):
		return 0, fmt.Errorf("hf: ContentOffset: the chat template prints the last message's content more than once; expected it once")
	}
	return t.countText(ctx, s[:i])
}
