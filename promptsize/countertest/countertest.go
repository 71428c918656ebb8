// Package countertest checks a promptsize.Counter against the contract the
// Builder relies on, the way testing/slogtest checks a slog.Handler: an
// implementation passes the kit with one call in its own tests.
//
//	func TestCounter(t *testing.T) {
//		countertest.Run(t, myCounter, nil)
//	}
//
// The checks: a count is deterministic; the Counter is safe for concurrent
// use; content made longer by whole words never counts fewer tokens (longer
// runs of one character, such as newlines, may: BPE merges them); a salt put before the content never lowers the count; the Counter
// does not modify the messages it is given; an empty message list gives an
// error or a count no larger than that of one empty user message; and, for a
// Counter that waits (one that asks a server), a cancelled context ends Count
// with an error wrapping the context's.
package countertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/promptsize"
)

// Options adjust the checks. The zero value (or nil) checks a local Counter
// with the default texts.
type Options struct {
	// Texts are user message contents to check with; nil means
	// DefaultTexts.
	Texts []string
	// Salt is put, with a newline, before each text to check that salting
	// never lowers a count; "" means "#1".
	Salt string
	// Waits says the Counter waits on something (a server): a cancelled
	// context must then end Count with an error wrapping context.Canceled
	// within CancelWithin.
	Waits bool
	// CancelWithin bounds how long Count may take to return after its
	// context is cancelled; 0 means 5 seconds.
	CancelWithin time.Duration
	// Goroutines is the number of concurrent callers in the concurrency
	// check; 0 means 8.
	Goroutines int
}

// DefaultTexts returns the contents the checks use when Options.Texts is
// nil: empty, short, repeated atoms, numbers, punctuation, white space,
// non-Latin scripts, emoji and a paragraph of prose.
func DefaultTexts() []string {
	return []string{
		"",
		"a",
		strings.Repeat("a ", 50),
		"Hello, world! How are you today?",
		"12345 678 9 1000000 3.14159",
		"  leading and trailing spaces  ",
		"line one\nline two\n\n\nline five\r\n",
		"naïve café, 数字と言葉, 한국어, مرحبا, 👩‍👩‍👧 ✓",
		"func main() { fmt.Println(\"hi\") } // code",
		promptsize.Prose(600),
	}
}

func (o *Options) texts() []string {
	if o == nil || o.Texts == nil {
		return DefaultTexts()
	}
	return o.Texts
}

func (o *Options) salt() string {
	if o == nil || o.Salt == "" {
		return "#1"
	}
	return o.Salt
}

func (o *Options) goroutines() int {
	if o == nil || o.Goroutines <= 0 {
		return 8
	}
	return o.Goroutines
}

func (o *Options) cancelWithin() time.Duration {
	if o == nil || o.CancelWithin <= 0 {
		return 5 * time.Second
	}
	return o.CancelWithin
}

func user(content string) []promptsize.Message {
	return []promptsize.Message{{Role: "user", Content: content}}
}

type check struct {
	name string
	fn   func(context.Context, promptsize.Counter, *Options) []error
}

var checks = []check{
	{"Deterministic", checkDeterministic},
	{"Concurrent", checkConcurrent},
	{"LongerNeverFewer", checkMonotonic},
	{"SaltNeverLowers", checkSalt},
	{"MessagesUnchanged", checkUnchanged},
	{"EmptyMessageList", checkEmpty},
	{"Cancellation", checkCancel},
}

// Run runs every check as a subtest of t.
func Run(t *testing.T, c promptsize.Counter, opts *Options) {
	t.Helper()
	for _, ch := range checks {
		t.Run(ch.name, func(t *testing.T) {
			for _, err := range ch.fn(t.Context(), c, opts) {
				t.Error(err)
			}
		})
	}
}

// Check runs every check and returns what failed, joined, or nil.
func Check(ctx context.Context, c promptsize.Counter, opts *Options) error {
	var errs []error
	for _, ch := range checks {
		for _, err := range ch.fn(ctx, c, opts) {
			errs = append(errs, fmt.Errorf("%s: %w", ch.name, err))
		}
	}
	return errors.Join(errs...)
}

func checkDeterministic(ctx context.Context, c promptsize.Counter, opts *Options) []error {
	var errs []error
	for _, text := range opts.texts() {
		a, err := c.Count(ctx, user(text))
		if err != nil {
			errs = append(errs, fmt.Errorf("counting %.40q: %w", text, err))
			continue
		}
		b, err := c.Count(ctx, user(text))
		if err != nil {
			errs = append(errs, fmt.Errorf("counting %.40q again: %w", text, err))
			continue
		}
		if a != b {
			errs = append(errs, fmt.Errorf("%.40q counted %d, then %d; expected the same count", text, a, b))
		}
		if a < 0 {
			errs = append(errs, fmt.Errorf("%.40q counted %d; expected a count >= 0", text, a))
		}
	}
	return errs
}

func checkConcurrent(ctx context.Context, c promptsize.Counter, opts *Options) []error {
	texts := opts.texts()
	want := make([]int, len(texts))
	for i, text := range texts {
		n, err := c.Count(ctx, user(text))
		if err != nil {
			return []error{fmt.Errorf("counting %.40q: %w", text, err)}
		}
		want[i] = n
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for g := range opts.goroutines() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range texts {
				i := (j + g) % len(texts) // each goroutine in its own order
				n, err := c.Count(ctx, user(texts[i]))
				mu.Lock()
				switch {
				case err != nil:
					errs = append(errs, fmt.Errorf("concurrent count of %.40q: %w", texts[i], err))
				case n != want[i]:
					errs = append(errs, fmt.Errorf("concurrent count of %.40q = %d; counted alone it is %d", texts[i], n, want[i]))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errs
}

// growths returns sequences of contents, each extending the one before by
// a whole word or atom. Only growth by whole words is checked: a run of one
// character class ("\n\n\n…") is one pre-token that BPE may encode in fewer
// tokens as it gets longer (real tokenizers do, for newline runs).
func growths(texts []string) [][]string {
	var out [][]string
	for _, atom := range []string{"a ", " a", "0 ", "word "} {
		var seq []string
		for n := 0; n <= 24; n++ {
			seq = append(seq, strings.Repeat(atom, n))
		}
		out = append(out, seq)
	}
	for _, text := range texts {
		words := strings.Fields(text)
		if len(words) < 2 {
			continue
		}
		words = words[:min(len(words), 40)]
		var seq []string
		for n := 0; n <= len(words); n++ {
			seq = append(seq, strings.Join(words[:n], " "))
		}
		out = append(out, seq)
	}
	return out
}

func checkMonotonic(ctx context.Context, c promptsize.Counter, opts *Options) []error {
	var errs []error
	for _, seq := range growths(opts.texts()) {
		prev, prevText := -1, ""
		for _, text := range seq {
			n, err := c.Count(ctx, user(text))
			if err != nil {
				errs = append(errs, fmt.Errorf("counting %.40q: %w", text, err))
				break
			}
			if n < prev {
				errs = append(errs, fmt.Errorf("%.60q counts %d but the shorter %.60q counts %d; expected longer content never to count fewer tokens",
					text, n, prevText, prev))
				break
			}
			prev, prevText = n, text
		}
	}
	return errs
}

func checkSalt(ctx context.Context, c promptsize.Counter, opts *Options) []error {
	var errs []error
	salt := opts.salt() + "\n"
	for _, text := range opts.texts() {
		plain, err := c.Count(ctx, user(text))
		if err != nil {
			errs = append(errs, fmt.Errorf("counting %.40q: %w", text, err))
			continue
		}
		salted, err := c.Count(ctx, user(salt+text))
		if err != nil {
			errs = append(errs, fmt.Errorf("counting salted %.40q: %w", text, err))
			continue
		}
		if salted < plain {
			errs = append(errs, fmt.Errorf("%.40q counts %d, with salt %q only %d; expected a salt never to lower the count",
				text, plain, salt, salted))
		}
	}
	return errs
}

func checkUnchanged(ctx context.Context, c promptsize.Counter, opts *Options) []error {
	msgs := []promptsize.Message{
		{Role: "system", Content: "You are terse."},
		{Role: "user", Content: "Hello there, counter."},
	}
	orig := slices.Clone(msgs)
	if _, err := c.Count(ctx, msgs); err != nil {
		return []error{fmt.Errorf("counting a system and a user message: %w", err)}
	}
	if !slices.Equal(msgs, orig) {
		return []error{fmt.Errorf("a Count call changed its messages from %q to %q; expected them untouched", orig, msgs)}
	}
	return nil
}

func checkEmpty(ctx context.Context, c promptsize.Counter, _ *Options) []error {
	one, err := c.Count(ctx, user(""))
	if err != nil {
		return []error{fmt.Errorf("counting one empty user message: %w", err)}
	}
	var errs []error
	for _, msgs := range [][]promptsize.Message{nil, {}} {
		n, err := func() (n int, err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
					errs = append(errs, fmt.Errorf("Count(%#v) panicked: %v; expected an error or a count", msgs, r))
				}
			}()
			return c.Count(ctx, msgs)
		}()
		if err != nil {
			continue // an error is a sensible answer
		}
		if n < 0 || n > one {
			errs = append(errs, fmt.Errorf("Count(%#v) = %d; expected an error or a count in [0, %d] (one empty user message)", msgs, n, one))
		}
	}
	return errs
}

func checkCancel(ctx context.Context, c promptsize.Counter, opts *Options) []error {
	if opts == nil || !opts.Waits {
		return nil
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Count(cctx, user("a cancelled count"))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			return []error{fmt.Errorf("a Count call with a cancelled context returned %v; expected an error wrapping context.Canceled", err)}
		}
	case <-time.After(opts.cancelWithin()):
		return []error{fmt.Errorf("a Count call with a cancelled context had not returned after %v", opts.cancelWithin())}
	}
	return nil
}
