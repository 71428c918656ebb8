package benchkit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/hf"
)

// realTokenizer loads a tokenizer that scripts/testdata.sh fetches, or
// skips the test (fails it under CI=true) when the files are missing.
func realTokenizer(t *testing.T, model string) *hf.Tokenizer {
	t.Helper()
	dir := filepath.Join("..", "testdata", "models", model)
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		msg := fmt.Sprintf("tokenizer files for %s are missing (%v): run scripts/testdata.sh (make test does)", model, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	tok, err := hf.Load(dir, hf.WithRenderOptions(hf.RenderOptions{Date: time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)}))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestRunPromptsShareNoContentToken: with Llama 3.1's tokenizer and chat
// template, the salted prompts of a run, as the server tokenizes them
// (rendered, then encoded), share exactly the chat template's tokens
// before the content and not one content token more: the longest common
// token prefix of any two is the template's prefix, so a cache that reuses
// any common token prefix (llama.cpp's per-slot cache) serves nothing of a
// request's content. With a shared prefix of n tokens they share exactly n
// content tokens more. Every prompt is exact.
func TestRunPromptsShareNoContentToken(t *testing.T) {
	tok := realTokenizer(t, "llama3_1")
	ctx := context.Background()
	const n = 150
	own := make([]int, n)
	for i := range own {
		own[i] = i
	}
	for _, shared := range []int{0, 1, 2, 7, 64, 300} {
		l := &Load{Builder: &promptsize.Builder{Counter: tok}, Nonce: "k3f9x2ab", SharedPrefix: shared}
		items, err := l.items(ctx, l.Builder, 0, Lengths{Input: 600, RangeRatio: 0.2, Output: 2, Seed: 1}, n, own)
		if err != nil {
			t.Fatalf("shared %d: %v", shared, err)
		}
		ids := make([][]int, n)
		for i, it := range items {
			s, err := tok.Render(it.Prompt.Messages, hf.RenderOptions{AddGenerationPrompt: true, Date: time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)})
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = tok.Encode(s)
			if len(ids[i]) != it.PPTarget || it.Prompt.Tokens != it.PPTarget {
				t.Fatalf("shared %d, request %d: %d tokens encoded, %d counted; want %d", shared, i, len(ids[i]), it.Prompt.Tokens, it.PPTarget)
			}
		}
		prefix, err := tok.ContentOffset(ctx, items[0].Prompt.Messages)
		if err != nil {
			t.Fatal(err)
		}
		longest, worst := 0, [2]int{}
		for i := range ids {
			for j := range i {
				k := 0
				for k < len(ids[i]) && k < len(ids[j]) && ids[i][k] == ids[j][k] {
					k++
				}
				if k > longest {
					longest, worst = k, [2]int{j, i}
				}
				if k < prefix+shared {
					t.Fatalf("shared %d: requests %d and %d share %d tokens, fewer than the template's %d and the %d shared", shared, j, i, k, prefix, shared)
				}
			}
		}
		if longest != prefix+shared {
			a, b := items[worst[0]].Prompt.Messages, items[worst[1]].Prompt.Messages
			t.Errorf("shared %d: requests %d and %d share %d tokens, the template's %d and %d content tokens; want %d content tokens\n%.80q\n%.80q",
				shared, worst[0], worst[1], longest, prefix, longest-prefix, shared, a[len(a)-1].Content, b[len(b)-1].Content)
		}
	}
}
