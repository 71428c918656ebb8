package promptsize_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/inferbench/inferbench/promptsize"
)

// wordCounter is a toy Counter for the example: a 10-token chat template
// plus one token per word or punctuation mark. Real programs use
// promptsize/hf (a model's tokenizer) or promptsize/remote (the engine).
var wordCounter = promptsize.CounterFunc(func(_ context.Context, msgs []promptsize.Message) (int, error) {
	n := 10
	for _, m := range msgs {
		n += len(strings.Fields(strings.NewReplacer(".", " .", ",", " ,").Replace(m.Content)))
	}
	return n, nil
})

func ExampleBuilder() {
	b := &promptsize.Builder{Counter: wordCounter}
	p, err := b.Build(context.Background(), 64)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Tokens, p.Units, p.Fill)
	fmt.Printf("%.11q\n", p.Content)

	// Each request of a burst gets its own salt, and is still exact.
	s, _ := b.BuildSalted(context.Background(), 64, promptsize.Salt(3))
	fmt.Println(s.Tokens)
	fmt.Printf("%.11q\n", s.Content)

	_, err = b.Build(context.Background(), 8)
	fmt.Println(err, errors.Is(err, promptsize.ErrBelowOverhead))
	// Output:
	// 64 54 atom "a "
	// "a a a a a a"
	// 64
	// "3#\na a a a "
	// pp=8 is below the chat template's overhead of 10 tokens true
}

func ExampleBuilder_corpus() {
	b := &promptsize.Builder{Counter: wordCounter, Fill: promptsize.FillCorpus}
	p, err := b.Build(context.Background(), 30)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Tokens)
	fmt.Println(p.Content)
	// Output:
	// 30
	// When asked about Dunmore Hill, the schoolteacher only said that the geese were stubborn there. Rain fell on
}

func ExampleBlockBuilder() {
	// A program passes a tokenizer: tok, err := hf.Load(dir), then
	// promptsize.NewTokenBlocks(tok, …). This one has 1,000 words.
	vocab := newWordVocab(1000)
	blocks, err := promptsize.NewTokenBlocks(vocab, promptsize.BlockOptions{Seed: 42})
	if err != nil {
		panic(err)
	}
	b := &promptsize.BlockBuilder{Blocks: blocks, BlockSize: 16}
	// Two rows of a Bailian trace that share their first two blocks.
	p1, _ := b.Build(context.Background(), []int64{0, 1, 2}, 40)
	p2, _ := b.Build(context.Background(), []int64{0, 1, 3, 4}, 60)
	shared := 0
	for shared < len(p1.TokenIDs) && p1.TokenIDs[shared] == p2.TokenIDs[shared] {
		shared++
	}
	fmt.Println(p1.Tokens, p2.Tokens, shared)

	// The same rows as chat messages, counted after the chat template.
	chat := &promptsize.BlockBuilder{Blocks: blocks, BlockSize: 16, Mode: promptsize.BlockChat,
		Counter: vocabLocator{vocabCounter{v: vocab}}}
	c, _ := chat.Build(context.Background(), []int64{0, 1, 2}, 40)
	fmt.Println(c.Tokens, c.Overhead)
	fmt.Printf("%.30q\n", c.Content)
	// Output:
	// 40 60 32
	// 40 5
	// "aaaa eiba weaa ytaa cdaa qiaa "
}
