package hf

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/promptsize"
)

func TestOrdinaryTokens(t *testing.T) {
	bl, err := New(tinyByteLevel(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for id := 0; id <= 258; id++ { // the bytes and the merges, not the added 259-261
		want = append(want, id)
	}
	if got := bl.OrdinaryTokens(); !slices.Equal(got, want) {
		t.Errorf("byte-level: OrdinaryTokens = %v…, want 0-258", got[:min(len(got), 8)])
	}

	sp, err := New(tinySentencePiece(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// <unk> (0) and the 256 byte-fallback pieces (1-256) are not ordinary.
	if got, want := sp.OrdinaryTokens(), []int{257, 258, 259, 260, 261, 262}; !slices.Equal(got, want) {
		t.Errorf("SentencePiece: OrdinaryTokens = %v, want %v", got, want)
	}
}

func TestContentOffset(t *testing.T) {
	cfg := []byte(`{"chat_template": "{% for m in messages %}<|x|>{{ m.role }}\n{{ m.content | trim }}<|x|>\n{% endfor %}{% if add_generation_prompt %}<|x|>assistant\n{% endif %}"}`)
	tok, err := New(tinyByteLevel(nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, msgs := range [][]promptsize.Message{
		{{Role: "user", Content: ""}},
		{{Role: "user", Content: "  aaa a "}},
		{{Role: "system", Content: "sys"}, {Role: "user", Content: "a"}},
	} {
		got, err := tok.ContentOffset(ctx, msgs)
		if err != nil {
			t.Fatal(err)
		}
		// Everything before the last message's content: earlier turns,
		// then "<|x|>" "user" "\n".
		prefix := ""
		for _, m := range msgs[:len(msgs)-1] {
			prefix += "<|x|>" + m.Role + "\n" + strings.TrimSpace(m.Content) + "<|x|>\n"
		}
		prefix += "<|x|>user\n"
		if want := len(tok.Encode(prefix)); got != want {
			t.Errorf("%v: ContentOffset = %d, want %d (%q)", msgs, got, want, prefix)
		}
	}

	twice, err := New(tinyByteLevel(nil), []byte(`{"chat_template": "{% for m in messages %}{{ m.content }}{{ m.content }}{% endfor %}"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := twice.ContentOffset(ctx, []promptsize.Message{{Role: "user", Content: "a"}}); err == nil || !strings.Contains(err.Error(), "more than once") {
		t.Errorf("a template printing the content twice: err = %v, want one saying so", err)
	}
	none, err := New(tinyByteLevel(nil), []byte(`{"chat_template": "hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := none.ContentOffset(ctx, []promptsize.Message{{Role: "user", Content: "a"}}); err == nil || !strings.Contains(err.Error(), "does not print") {
		t.Errorf("a template dropping the content: err = %v, want one saying so", err)
	}
	if _, err := tok.ContentOffset(ctx, nil); err == nil {
		t.Error("no messages: want an error")
	}
}
