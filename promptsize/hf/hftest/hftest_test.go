package hftest_test

import (
	"context"
	"testing"

	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/hf"
	"github.com/inferbench/inferbench/promptsize/hf/hftest"
)

func TestTokenizers(t *testing.T) {
	tok, err := hf.Load(hftest.WriteTokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	// The overhead is the template's tokens with empty content; each byte
	// of content is one more token.
	for _, content := range []string{"", "hello, world"} {
		n, err := tok.Count(context.Background(), []promptsize.Message{{Role: "user", Content: content}})
		if err != nil {
			t.Fatal(err)
		}
		if want := hftest.TinyOverhead + len(content); n != want {
			t.Errorf("Count(%q) = %d, want %d", content, n, want)
		}
	}
	if _, err := hf.Load(hftest.WriteCorruptTokenizer(t)); err == nil {
		t.Error("the corrupt tokenizer loaded")
	}
}
