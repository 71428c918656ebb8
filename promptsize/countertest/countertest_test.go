package countertest_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/countertest"
)

// words is a well-behaved Counter: a 7-token template, 3 per message, one
// token per field of the content.
func words(ctx context.Context, msgs []promptsize.Message) (int, error) {
	n := 7
	for _, m := range msgs {
		n += 3 + len(strings.Fields(m.Content))
	}
	return n, nil
}

// waiting is words behind a context check, as a network Counter would be.
func waiting(ctx context.Context, msgs []promptsize.Message) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return words(ctx, msgs)
}

func TestRunPasses(t *testing.T) {
	countertest.Run(t, promptsize.CounterFunc(words), nil)
}

func TestRunPassesWaiting(t *testing.T) {
	countertest.Run(t, promptsize.CounterFunc(waiting), &countertest.Options{Waits: true})
}

func TestCheckCatches(t *testing.T) {
	var calls atomic.Int64
	cases := []struct {
		name    string
		counter promptsize.CounterFunc
		opts    *countertest.Options
		want    string // in the error
	}{
		{
			name: "nondeterministic",
			counter: func(ctx context.Context, msgs []promptsize.Message) (int, error) {
				n, _ := words(ctx, msgs)
				return n + int(calls.Add(1)%2), nil
			},
			want: "Deterministic: ",
		},
		{
			name: "shorter counts more",
			counter: func(ctx context.Context, msgs []promptsize.Message) (int, error) {
				n := 1000
				for _, m := range msgs {
					n -= len(m.Content)
				}
				return n, nil
			},
			want: "expected longer content never to count fewer tokens",
		},
		{
			name: "salt lowers",
			counter: func(ctx context.Context, msgs []promptsize.Message) (int, error) {
				n, _ := words(ctx, msgs)
				for _, m := range msgs {
					if strings.HasPrefix(m.Content, "#") {
						n -= 5
					}
				}
				return n, nil
			},
			want: "expected a salt never to lower the count",
		},
		{
			name: "mutates",
			counter: func(ctx context.Context, msgs []promptsize.Message) (int, error) {
				for i := range msgs {
					msgs[i].Content = strings.ToUpper(msgs[i].Content)
				}
				return words(ctx, msgs)
			},
			want: "expected them untouched",
		},
		{
			name: "panics on empty",
			counter: func(ctx context.Context, msgs []promptsize.Message) (int, error) {
				_ = msgs[0].Role
				return words(ctx, msgs)
			},
			want: "panicked",
		},
		{
			name:    "ignores cancellation",
			counter: words,
			opts:    &countertest.Options{Waits: true},
			want:    "expected an error wrapping context.Canceled",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := countertest.Check(context.Background(), tc.counter, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check error = %v; want one containing %q", err, tc.want)
			}
		})
	}
	if err := countertest.Check(context.Background(), promptsize.CounterFunc(words), nil); err != nil {
		t.Errorf("Check of a good counter: %v", err)
	}
}

func ExampleRun() {
	// In a Counter implementation's own tests:
	//
	//	func TestCounter(t *testing.T) {
	//		countertest.Run(t, myCounter, &countertest.Options{Waits: true})
	//	}
	err := countertest.Check(context.Background(), promptsize.CounterFunc(words), nil)
	fmt.Println(err == nil)
	// Output: true
}
