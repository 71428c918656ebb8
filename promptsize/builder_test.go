package promptsize_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/countertest"
)

var targets = []int{32, 100, 1000, 4096, 32768}

// recount counts p.Messages again, independently of the Builder's memo.
func recount(t *testing.T, c promptsize.Counter, p promptsize.Prompt) int {
	t.Helper()
	n, err := c.Count(context.Background(), p.Messages)
	if err != nil {
		t.Fatalf("recount: %v", err)
	}
	return n
}

// checkPrompt verifies the invariants of a built prompt.
func checkPrompt(t *testing.T, c promptsize.Counter, b *promptsize.Builder, p promptsize.Prompt, target int, salt string) {
	t.Helper()
	if p.Tokens != target || p.Target != target {
		t.Errorf("pp=%d: Prompt.Tokens = %d, Target = %d", target, p.Tokens, p.Target)
	}
	if got := recount(t, c, p); got != target {
		t.Errorf("pp=%d salt=%q: the counter counts the prompt's messages as %d", target, salt, got)
	}
	want := []promptsize.Message{{Role: "user", Content: p.Content}}
	if b.System != "" {
		want = append([]promptsize.Message{{Role: "system", Content: b.System}}, want...)
	}
	if diff := cmp.Diff(want, p.Messages); diff != "" {
		t.Errorf("pp=%d: Messages mismatch (-want +got):\n%s", target, diff)
	}
	if salt != "" && !strings.HasPrefix(p.Content, salt+"\n") {
		t.Errorf("pp=%d: salted content %.20q does not start with the salt %q", target, p.Content, salt)
	}
	if p.Salt != salt {
		t.Errorf("pp=%d: Prompt.Salt = %q, want %q", target, p.Salt, salt)
	}
}

func TestBuilderHitsEveryTarget(t *testing.T) {
	fakes := map[string]func() *fakeTokenizer{"bpe": newBPE, "merging": newMerging}
	for fakeName, newFake := range fakes {
		for _, fill := range []promptsize.Fill{promptsize.FillAtoms, promptsize.FillCorpus} {
			for _, system := range []string{"", "You are a terse assistant."} {
				name := fmt.Sprintf("%s/%s/system=%t", fakeName, fill, system != "")
				t.Run(name, func(t *testing.T) {
					c := newFake()
					b := &promptsize.Builder{Counter: c, Fill: fill, System: system}
					for _, target := range targets {
						for _, salt := range []string{"", promptsize.Salt(7), promptsize.Salt(123456)} {
							p, err := b.BuildSalted(context.Background(), target, salt)
							var oe *promptsize.OverheadError
							if errors.As(err, &oe) && system != "" && target < 48 {
								continue // the system message alone costs more than 32
							}
							if err != nil {
								t.Fatalf("pp=%d salt=%q: %v", target, salt, err)
							}
							checkPrompt(t, c, b, p, target, salt)
						}
					}
				})
			}
		}
	}
}

// wholeAtomCounts returns the counts of the requests with n = 0..max atoms,
// computed directly with the counter, not through the Builder.
func wholeAtomCounts(t *testing.T, c promptsize.Counter, atom string, max int) map[int]bool {
	t.Helper()
	hit := make(map[int]bool)
	for n := 0; n <= max; n++ {
		// n whole atoms as the Builder writes them: without the white
		// space around them.
		content := strings.Repeat(atom, n)
		if trimmed := strings.TrimSpace(content); trimmed != "" {
			content = trimmed
		}
		got, err := c.Count(context.Background(), []promptsize.Message{{Role: "user", Content: content}})
		if err != nil {
			t.Fatal(err)
		}
		hit[got] = true
	}
	return hit
}

func TestBuilderRepairsOvershoot(t *testing.T) {
	// Targets that no whole number of "a " atoms reaches on the merging
	// fake, found by counting every atom count up to 120.
	c := newMerging()
	hit := wholeAtomCounts(t, c, "a ", 120)
	var missed []int
	for target := fakeOverhead; target < 130; target++ {
		if !hit[target] {
			missed = append(missed, target)
		}
	}
	if len(missed) < 5 {
		t.Fatalf("expected the merging fake to skip counts with whole atoms; it skips only %v", missed)
	}
	b := &promptsize.Builder{Counter: c, Atoms: []string{"a "}}
	for _, target := range missed {
		p, err := b.Build(context.Background(), target)
		if err != nil {
			t.Fatalf("pp=%d: %v", target, err)
		}
		checkPrompt(t, c, b, p, target, "")
		if p.Repair == "" {
			t.Errorf("pp=%d: whole atoms cannot reach it, yet Prompt.Repair is empty (content %q)", target, p.Content)
		}
	}
}

func TestBuilderOneAboveOverhead(t *testing.T) {
	// One atom, written without its trailing space, is one token on the
	// BPE fake: overhead+1 is one whole atom, with no repair.
	c := newBPE()
	b := &promptsize.Builder{Counter: c}
	p, err := b.Build(context.Background(), fakeOverhead+1)
	if err != nil {
		t.Fatal(err)
	}
	checkPrompt(t, c, b, p, fakeOverhead+1, "")
	if p.Repair != "" || p.Content != "a" || p.Units != 1 {
		t.Errorf("pp=overhead+1: content %q, %d units, repair %q; expected the one atom \"a\"", p.Content, p.Units, p.Repair)
	}
	p, err = b.Build(context.Background(), fakeOverhead)
	if err != nil {
		t.Fatal(err)
	}
	if p.Content != "" || p.Tokens != fakeOverhead {
		t.Errorf("pp=overhead: content %q, tokens %d; expected empty content", p.Content, p.Tokens)
	}
}

func TestBuilderNextAtom(t *testing.T) {
	// With no tails to help ("a " alone cannot be cut into a token here
	// because the list forbids tails), the Builder moves on to " a".
	c := newMerging()
	hit := wholeAtomCounts(t, c, "0 ", 60)
	var target int
	for target = fakeOverhead + 2; hit[target]; target++ {
	}
	b := &promptsize.Builder{Counter: c, Atoms: []string{"0 ", "a "}}
	p, err := b.Build(context.Background(), target)
	if err != nil {
		t.Fatalf("pp=%d: %v", target, err)
	}
	checkPrompt(t, c, b, p, target, "")
}

func TestBuilderBelowOverhead(t *testing.T) {
	b := &promptsize.Builder{Counter: newBPE()}
	_, err := b.Build(context.Background(), 16)
	if !errors.Is(err, promptsize.ErrBelowOverhead) {
		t.Fatalf("Build(16) error = %v; want one wrapping ErrBelowOverhead", err)
	}
	want := "pp=16 is below the chat template's overhead of 24 tokens"
	if err.Error() != want {
		t.Errorf("Build(16) error = %q, want %q", err, want)
	}
	var oe *promptsize.OverheadError
	if !errors.As(err, &oe) || oe.Target != 16 || oe.Overhead != fakeOverhead {
		t.Errorf("errors.As gave %+v; want Target 16, Overhead %d", oe, fakeOverhead)
	}

	// A salt costs tokens too: "#ABC" and a newline are 1+1+1 on the fake.
	_, err = b.BuildSalted(context.Background(), fakeOverhead+1, "#ABC")
	if !errors.Is(err, promptsize.ErrBelowOverhead) {
		t.Fatalf("salted below overhead: error = %v", err)
	}
	want = `pp=25 is below the overhead of 27 tokens (chat template 24, salt "#ABC" 3)`
	if err.Error() != want {
		t.Errorf("salted error = %q, want %q", err, want)
	}
}

func TestBuilderUnreachable(t *testing.T) {
	c := newDouble()
	b := &promptsize.Builder{Counter: c}
	// Every piece costs 2 tokens, "user" included: the overhead is
	// 15 + 3 + 5 + 2 = 25 and an odd distance from it cannot be reached.
	_, err := b.Build(context.Background(), 102)
	if !errors.Is(err, promptsize.ErrUnreachable) {
		t.Fatalf("Build(102) error = %v; want ErrUnreachable", err)
	}
	var ue *promptsize.UnreachableError
	if !errors.As(err, &ue) || ue.Target != 102 {
		t.Fatalf("errors.As gave %+v", ue)
	}
	if len(ue.Tried) != len(promptsize.DefaultAtoms) {
		t.Errorf("tried %d fills, want one per default atom: %q", len(ue.Tried), ue.Tried)
	}
	for _, atom := range promptsize.DefaultAtoms {
		if !strings.Contains(err.Error(), fmt.Sprintf("atom %q", atom)) {
			t.Errorf("error does not say atom %q was tried: %v", atom, err)
		}
	}
	if !strings.Contains(err.Error(), "no closer than 101 and 103") {
		t.Errorf("error does not name the nearest counts 101 and 103: %v", err)
	}
	// Even distances still work.
	p, err := b.Build(context.Background(), 101)
	if err != nil {
		t.Fatal(err)
	}
	checkPrompt(t, c, b, p, 101, "")
}

func TestBuilderFewerCallsThanExo(t *testing.T) {
	for _, target := range targets {
		c := newBPE()
		b := &promptsize.Builder{Counter: c}
		p, err := b.Build(context.Background(), target)
		if err != nil {
			t.Fatal(err)
		}
		ex, err := promptsize.ExoSearch(context.Background(), newBPE(), target, "a ")
		if err != nil {
			// exo fails where "a " overshoots; it must not fail otherwise.
			if !errors.Is(err, promptsize.ErrUnreachable) {
				t.Fatalf("ExoSearch(%d): %v", target, err)
			}
		}
		if p.Calls >= ex.Calls && ex.Calls > 0 {
			t.Errorf("pp=%d: Builder took %d counter calls, exo's search %d", target, p.Calls, ex.Calls)
		}
		if int64(p.Calls) != c.calls.Load() {
			t.Errorf("pp=%d: Prompt.Calls = %d, counter saw %d", target, p.Calls, c.calls.Load())
		}
	}
}

func TestExoSearch(t *testing.T) {
	c := newBPE()
	p, err := promptsize.ExoSearch(context.Background(), c, 1000, "a ")
	if err != nil {
		t.Fatal(err)
	}
	if got := recount(t, c, p); got != 1000 || p.Tokens != 1000 {
		t.Errorf("ExoSearch: counted %d, Tokens %d; want 1000", got, p.Tokens)
	}
	// "a "×n costs n+1 tokens: 1000 = 24 + n + 1.
	if p.Units != 975 || p.Content != strings.Repeat("a ", 975) {
		t.Errorf("ExoSearch: %d atoms; want 975", p.Units)
	}
	// exo's search cannot hit overhead+1 with "a " and says so.
	_, err = promptsize.ExoSearch(context.Background(), c, fakeOverhead+1, "a ")
	if !errors.Is(err, promptsize.ErrUnreachable) || !strings.Contains(err.Error(), "overshot") {
		t.Errorf("ExoSearch(overhead+1) error = %v; want an overshoot", err)
	}
	_, err = promptsize.ExoSearch(context.Background(), c, 3, "a ")
	if !errors.Is(err, promptsize.ErrBelowOverhead) {
		t.Errorf("ExoSearch(3) error = %v; want ErrBelowOverhead", err)
	}
}

func TestBuilderCacheAndWarmCalls(t *testing.T) {
	c := newBPE()
	b := &promptsize.Builder{Counter: c}
	ctx := context.Background()
	first, err := b.Build(ctx, 4096)
	if err != nil {
		t.Fatal(err)
	}
	before := c.calls.Load()
	again, err := b.Build(ctx, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if c.calls.Load() != before || !again.Cached {
		t.Errorf("second Build(4096): %d more counter calls, Cached=%t; want 0 and true", c.calls.Load()-before, again.Cached)
	}
	if diff := cmp.Diff(first.Content, again.Content); diff != "" {
		t.Errorf("cached content differs:\n%s", diff)
	}
	// Mutating a returned prompt does not touch the cache.
	again.Messages[0].Content = "changed"
	third, _ := b.Build(ctx, 4096)
	if third.Messages[0].Content != first.Content {
		t.Error("a caller's change to Messages reached the cache")
	}
	// A new target next to a known rate costs few calls: no overhead
	// measurement, and a first probe from the remembered rate.
	p, err := b.Build(ctx, 4000)
	if err != nil {
		t.Fatal(err)
	}
	if p.Calls > 2 {
		t.Errorf("warm Build(4000) took %d counter calls; want at most 2", p.Calls)
	}
	if b.CounterCalls() != c.calls.Load() {
		t.Errorf("CounterCalls() = %d, counter saw %d", b.CounterCalls(), c.calls.Load())
	}
}

func TestBuilderCacheSize(t *testing.T) {
	c := newBPE()
	b := &promptsize.Builder{Counter: c, CacheSize: 2}
	ctx := context.Background()
	for _, target := range []int{100, 200, 300} {
		if _, err := b.Build(ctx, target); err != nil {
			t.Fatal(err)
		}
	}
	p, _ := b.Build(ctx, 300)
	if !p.Cached {
		t.Error("the newest prompt was evicted")
	}
	p, _ = b.Build(ctx, 100)
	if p.Cached {
		t.Error("the oldest prompt is still cached with CacheSize 2")
	}
	none := &promptsize.Builder{Counter: c, CacheSize: -1}
	none.Build(ctx, 100)
	if p, _ := none.Build(ctx, 100); p.Cached {
		t.Error("CacheSize -1 cached a prompt")
	}
}

func TestBuilderConcurrent(t *testing.T) {
	c := newMerging()
	b := &promptsize.Builder{Counter: c}
	ctx := context.Background()
	type result struct {
		target int
		salt   string
		p      promptsize.Prompt
		err    error
	}
	const workers = 48
	results := make(chan result, workers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			target := []int{100, 1000, 4096}[i%3]
			salt := ""
			if i%2 == 1 {
				salt = promptsize.Salt(i % 5)
			}
			p, err := b.BuildSalted(ctx, target, salt)
			results <- result{target, salt, p, err}
		}()
	}
	close(start)
	testkit.WaitWithin(t, &wg, testkit.Patience)
	close(results)
	byKey := make(map[string]string)
	built := make(map[string]int)
	for r := range results {
		if r.err != nil {
			t.Fatalf("pp=%d salt=%q: %v", r.target, r.salt, r.err)
		}
		checkPrompt(t, c, b, r.p, r.target, r.salt)
		key := fmt.Sprintf("%d/%s", r.target, r.salt)
		if prev, ok := byKey[key]; ok && prev != r.p.Content {
			t.Errorf("%s: two different prompts for one key", key)
		}
		byKey[key] = r.p.Content
		if !r.p.Cached {
			built[key]++
		}
	}
	for key, n := range built {
		if n != 1 {
			t.Errorf("%s was built %d times; want once", key, n)
		}
	}
	if len(built) != len(byKey) {
		t.Errorf("%d keys were built and %d asked for; every key must be built once", len(built), len(byKey))
	}
}

func TestBuilderSingleFlight(t *testing.T) {
	// All goroutines ask for one key; the work is done once, so the
	// counter sees exactly the calls of one build.
	c := newBPE()
	b := &promptsize.Builder{Counter: c}
	var wg sync.WaitGroup
	prompts := make([]promptsize.Prompt, 16)
	for i := range prompts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := b.Build(context.Background(), 32768)
			if err != nil {
				t.Error(err)
			}
			prompts[i] = p
		}()
	}
	testkit.WaitWithin(t, &wg, testkit.Patience)
	leaders := 0
	for _, p := range prompts {
		if !p.Cached {
			leaders++
		}
		if int64(p.Calls) != c.calls.Load() {
			t.Errorf("Prompt.Calls = %d but the counter saw %d calls in all", p.Calls, c.calls.Load())
		}
	}
	if leaders != 1 {
		t.Errorf("%d builds were not shared; want 1", leaders)
	}
}

// gate is a Counter that blocks every call until its context ends.
type gate struct{ entered chan struct{} }

func (g gate) Count(ctx context.Context, _ []promptsize.Message) (int, error) {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return 0, ctx.Err()
}

func TestBuilderContext(t *testing.T) {
	g := gate{entered: make(chan struct{}, 1)}
	b := &promptsize.Builder{Counter: g}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := b.Build(ctx, 100)
		done <- err
	}()
	testkit.RecvWithin(t, g.entered, testkit.Patience)
	cancel()
	if err := testkit.RecvWithin(t, done, testkit.Patience); !errors.Is(err, context.Canceled) {
		t.Errorf("Build after cancel: %v; want context.Canceled", err)
	}

	// A waiter whose own context ends stops waiting for the leader.
	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	go b.Build(ctx1, 200)
	testkit.RecvWithin(t, g.entered, testkit.Patience)
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { done <- func() error { _, err := b.Build(ctx2, 200); return err }() }()
	cancel2()
	if err := testkit.RecvWithin(t, done, testkit.Patience); !errors.Is(err, context.Canceled) {
		t.Errorf("waiting Build after cancel: %v; want context.Canceled", err)
	}
}

func TestBuilderCorpus(t *testing.T) {
	c := newBPE()
	corpus := "The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs! How vexingly quick daft zebras jump?"
	b := &promptsize.Builder{Counter: c, Fill: promptsize.FillCorpus, Corpus: corpus}
	p, err := b.Build(context.Background(), 40)
	if err != nil {
		t.Fatal(err)
	}
	checkPrompt(t, c, b, p, 40, "")
	if !strings.HasPrefix(corpus, p.Content) && p.Repair == "" {
		t.Errorf("content %q is not a prefix of the corpus", p.Content)
	}
	if len(p.Warnings) != 0 {
		t.Errorf("warnings for a prompt shorter than the corpus: %v", p.Warnings)
	}
	long, err := b.Build(context.Background(), 500)
	if err != nil {
		t.Fatal(err)
	}
	checkPrompt(t, c, b, long, 500, "")
	if len(long.Warnings) != 1 || !errors.Is(long.Warnings[0], promptsize.ErrCorpusRepeated) {
		t.Errorf("warnings = %v; want ErrCorpusRepeated", long.Warnings)
	}

	// The default corpus: prose, not an atom repeated.
	d := &promptsize.Builder{Counter: c, Fill: promptsize.FillCorpus}
	p, err = d.Build(context.Background(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	checkPrompt(t, c, d, p, 4096, "")
	if !strings.HasPrefix(promptsize.Prose(len(p.Content)), p.Content) && p.Repair == "" {
		t.Error("default corpus prompt is not a prefix of Prose")
	}

	blank := &promptsize.Builder{Counter: c, Fill: promptsize.FillCorpus, Corpus: " \n\t"}
	if _, err := blank.Build(context.Background(), 100); err == nil || !strings.Contains(err.Error(), "no words") {
		t.Errorf("blank corpus: error = %v; want one saying it has no words", err)
	}
}

func TestBuilderValidation(t *testing.T) {
	var zero promptsize.Builder
	if _, err := zero.Build(context.Background(), 100); err == nil || !strings.Contains(err.Error(), "Counter is nil") {
		t.Errorf("zero Builder: error = %v", err)
	}
	b := &promptsize.Builder{Counter: newBPE()}
	if _, err := b.Build(context.Background(), -1); err == nil || !strings.Contains(err.Error(), "-1") {
		t.Errorf("negative target: error = %v", err)
	}
	counterErr := errors.New("tokenizer exploded")
	bad := &promptsize.Builder{Counter: promptsize.CounterFunc(func(context.Context, []promptsize.Message) (int, error) {
		return 0, counterErr
	})}
	if _, err := bad.Build(context.Background(), 100); !errors.Is(err, counterErr) {
		t.Errorf("counter error not wrapped: %v", err)
	}
}

func TestProse(t *testing.T) {
	a := promptsize.Prose(1000)
	b := promptsize.Prose(50000)
	if len(a) < 1000 || len(b) < 50000 || !strings.HasPrefix(b, a) {
		t.Fatalf("Prose lengths %d, %d; the shorter must prefix the longer", len(a), len(b))
	}
	// No sentence-long passage repeats often: count distinct sentences.
	sentences := strings.Split(b, ". ")
	distinct := make(map[string]bool)
	for _, s := range sentences {
		distinct[s] = true
	}
	if float64(len(distinct)) < 0.95*float64(len(sentences)) {
		t.Errorf("only %d distinct of %d sentences", len(distinct), len(sentences))
	}
}

// The fake tokenizers keep the Counter contract the Builder relies on.
func TestFakesPassCounterKit(t *testing.T) {
	countertest.Run(t, newBPE(), nil)
	countertest.Run(t, newMerging(), nil)
}

func countertestCheck(c promptsize.Counter) error {
	return countertest.Check(context.Background(), c, nil)
}

// TestBuilderContentHasNoOuterSpace: with the default atoms a built
// prompt's content neither begins nor ends in white space, with or without
// a salt, whole atoms or repaired, so that a chat template that trims a
// message and one that does not count it alike. (A content of the salt
// alone, at the salted template's own count, ends in the salt's newline.)
// One atom alone may have nothing but such a repair to offer, which the
// Builder then takes rather than fail.
func TestBuilderContentHasNoOuterSpace(t *testing.T) {
	spaced := 0
	for _, c := range []*fakeTokenizer{newBPE(), newMerging(), newDouble()} {
		for _, atoms := range [][]string{nil, {"a "}} {
			b := &promptsize.Builder{Counter: c, Atoms: atoms}
			for target := fakeOverhead + 1; target < fakeOverhead+90; target++ {
				for _, salt := range []string{"", "s1"} {
					p, err := b.BuildSalted(context.Background(), target, salt)
					if err != nil {
						continue // a count the fake cannot reach
					}
					if strings.TrimSpace(p.Content) == p.Content || p.Content == salt+"\n" {
						continue
					}
					if atoms == nil {
						t.Errorf("pp=%d salt %q: content %q (repair %q) has white space around it", target, salt, p.Content, p.Repair)
					}
					spaced++
				}
			}
		}
	}
	if spaced == 0 {
		t.Error("the one atom \"a \" never needed a repair ending in white space on the merging fake: the test shows nothing")
	}
}
