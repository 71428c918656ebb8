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
	// "#3\na a a a "
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
