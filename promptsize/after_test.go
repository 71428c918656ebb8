package promptsize_test

import (
	"context"
	"testing"

	"github.com/inferbench/inferbench/promptsize"
)

// TestBuildAfter: the next turn of a chat counts exactly its target with
// the history in the count, and the history goes out unchanged before it.
func TestBuildAfter(t *testing.T) {
	ctx := context.Background()
	for _, tok := range []*fakeTokenizer{newBPE(), newMerging()} {
		b := &promptsize.Builder{Counter: tok}
		history := []promptsize.Message{
			{Role: "system", Content: "You are terse."},
			{Role: "user", Content: "#s1\nfirst question a a a a"},
			{Role: "assistant", Content: "an answer of some words, 12 of them."},
		}
		h, err := tok.Count(ctx, history)
		if err != nil {
			t.Fatal(err)
		}
		for _, extra := range []int{8, 40, 333} {
			p, err := b.BuildAfter(ctx, history, h+extra, "")
			if err != nil {
				t.Fatalf("target %d: %v", h+extra, err)
			}
			n, _ := tok.Count(ctx, p.Messages)
			if n != h+extra || p.Tokens != n {
				t.Errorf("target %d: counted %d, Tokens %d", h+extra, n, p.Tokens)
			}
			if len(p.Messages) != 4 || p.Messages[2] != history[2] || p.Messages[3].Role != "user" || p.Messages[3].Content != p.Content {
				t.Errorf("messages %+v", p.Messages)
			}
		}
	}
	if _, err := (&promptsize.Builder{Counter: newBPE()}).BuildAfter(ctx, nil, 1, ""); err == nil {
		t.Error("a target below the overhead built")
	}
}
