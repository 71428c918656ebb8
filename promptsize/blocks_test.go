package promptsize_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/hf"
)

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func newWordBlocks(t testing.TB, words int, opts promptsize.BlockOptions) *promptsize.TokenBlocks {
	t.Helper()
	tb, err := promptsize.NewTokenBlocks(newWordVocab(words), opts)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func row(t testing.TB, tb *promptsize.TokenBlocks, ids []int64, length, blockSize int) []int {
	t.Helper()
	out, err := tb.AppendRow(nil, ids, length, blockSize)
	if err != nil {
		t.Fatalf("row %v of %d tokens in blocks of %d: %v", ids, length, blockSize, err)
	}
	if len(out) != length {
		t.Fatalf("row %v: %d tokens, want %d", ids, len(out), length)
	}
	return out
}

func TestTokenBlocksStableRule(t *testing.T) {
	const words = 40
	tb := newWordBlocks(t, words, promptsize.BlockOptions{})
	var want []int
	for i := range words {
		want = append(want, wordID(i))
	}
	// Not the bytes, not "<s>", not the words without their space, not
	// the duplicate of " aaaa" (it encodes to the first id, not itself).
	if got := tb.StableTokens(); !slices.Equal(got, want) {
		t.Errorf("StableTokens = %v, want the %d space-words %v", got, words, want)
	}
	if got := tb.Stats().Stable; got != words {
		t.Errorf("Stats().Stable = %d, want %d", got, words)
	}

	// A vocabulary with no space-words has nothing to draw from.
	if _, err := promptsize.NewTokenBlocks(newWordVocab(0), promptsize.BlockOptions{}); err == nil {
		t.Error("a vocabulary without words: want an error")
	}
	if _, err := promptsize.NewTokenBlocks(nil, promptsize.BlockOptions{}); err == nil {
		t.Error("a nil Vocabulary: want an error")
	}
}

func TestCheckBlockRow(t *testing.T) {
	ids := func(n int) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(i)
		}
		return out
	}
	for _, tc := range []struct {
		ids          []int64
		length, size int
		ok           bool
	}{
		{ids(1), 1, 512, true},
		{ids(1), 512, 512, true},
		{ids(1), 513, 512, false}, // the last block would hold 513
		{ids(2), 513, 512, true},
		{ids(2), 1024, 512, true},
		{ids(2), 512, 512, false}, // the last block would hold 0
		{ids(3), 1000, 512, false},
		{ids(14), 6758, 512, true}, // Mooncake's first row
		{ids(15), 7322, 512, true},
		{ids(2), 915, 512, true},
		{ids(63), 1000, 16, true},
		{ids(62), 1000, 16, false},
		{ids(64), 1000, 16, false},
		{nil, 0, 16, false},
		{nil, 5, 16, false},
		{ids(1), 0, 16, false},
		{ids(1), -3, 16, false},
		{ids(1), 5, 0, false},
		{ids(1), 5, -16, false},
		{[]int64{0, -1}, 20, 16, false},
		{ids(2), 1 << 24, 1 << 23, true},
		{ids(3), 1 << 24, 1 << 23, false},
		{ids(2), 1<<24 + 1, 1 << 24, false}, // above MaxBlockRowLength
		{ids(1), 1 << 62, 1 << 62, false},
		{ids(3), 1 << 22, 1 << 62, false},
	} {
		err := promptsize.CheckBlockRow(tc.ids, tc.length, tc.size)
		if (err == nil) != tc.ok {
			t.Errorf("%d ids, input_length=%d, block %d: err = %v, want ok=%t", len(tc.ids), tc.length, tc.size, err, tc.ok)
			continue
		}
		if err != nil && !errors.Is(err, promptsize.ErrBlockRow) {
			t.Errorf("%d ids, input_length=%d: %v does not wrap ErrBlockRow", len(tc.ids), tc.length, err)
		}
	}
	var re *promptsize.BlockRowError
	err := promptsize.CheckBlockRow(ids(3), 1000, 512)
	if !errors.As(err, &re) || re.IDs != 3 || re.InputLength != 1000 || re.BlockSize != 512 {
		t.Fatalf("err = %v, want a *BlockRowError with the numbers", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "input_length=1000") || !strings.Contains(msg, "which 2 ids meet") {
		t.Errorf("message %q should name the length and the id count that fits", msg)
	}

	// The builders refuse such rows and produce nothing.
	tb := newWordBlocks(t, 40, promptsize.BlockOptions{})
	if out, err := tb.AppendRow([]int{7}, ids(3), 1000, 512); !errors.Is(err, promptsize.ErrBlockRow) || !slices.Equal(out, []int{7}) {
		t.Errorf("AppendRow of a bad row = %v, %v; want dst unchanged and ErrBlockRow", out, err)
	}
	b := &promptsize.BlockBuilder{Blocks: tb, BlockSize: 512}
	if _, err := b.Build(context.Background(), ids(2), 512); !errors.Is(err, promptsize.ErrBlockRow) {
		t.Errorf("Build of a bad row: err = %v, want ErrBlockRow", err)
	}
}

// sharingCase is a pair of rows that share their first k ids.
type sharingCase struct {
	a, b   []int64
	la, lb int
	k      int
}

// sharingCases returns pairs of prefix-chained rows in blocks of size:
// every k in ks, each row going on past the shared ids by extra to
// extra+2 blocks of its own (the last one partial).
func sharingCases(size int, ks []int, extra int, r *rand.Rand) []sharingCase {
	var out []sharingCase
	next := int64(1000)
	fresh := func(n int) []int64 {
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = next
			next++
		}
		return ids
	}
	for _, k := range ks {
		shared := fresh(k)
		na, nb := k+extra+r.IntN(3), k+extra+r.IntN(3)
		a := append(slices.Clone(shared), fresh(na-k)...)
		b := append(slices.Clone(shared), fresh(nb-k)...)
		out = append(out, sharingCase{a, b, (na-1)*size + 1 + r.IntN(size), (nb-1)*size + 1 + r.IntN(size), k})
	}
	return out
}

func TestBlockRowsShareExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{1, 16, 512} {
		tb := newWordBlocks(t, 500, promptsize.BlockOptions{Seed: 9})
		for _, c := range sharingCases(size, []int{0, 1, 2, 3, 7, 20}, 1, r) {
			a, b := row(t, tb, c.a, c.la, size), row(t, tb, c.b, c.lb, size)
			if got := commonPrefix(a, b); got != c.k*size {
				t.Errorf("block %d: rows sharing %d ids share %d tokens, want exactly %d", size, c.k, got, c.k*size)
			}
		}
	}
}

func TestBlockRowOneID(t *testing.T) {
	tb := newWordBlocks(t, 500, promptsize.BlockOptions{Seed: 3})
	full := tb.AppendBlock(nil, 42, 512)
	for _, length := range []int{1, 2, 300, 511, 512} {
		if got := row(t, tb, []int64{42}, length, 512); !slices.Equal(got, full[:length]) {
			t.Errorf("a row of id 42 with %d tokens is not the first %d of its block", length, length)
		}
	}
}

func TestBlockPartialIsPrefix(t *testing.T) {
	// Keyed by id only: id 8 as a partial last block and as a full one
	// shares its first tokens (vLLM keys by (id, size) and does not).
	tb := newWordBlocks(t, 500, promptsize.BlockOptions{Seed: 3})
	short := row(t, tb, []int64{7, 8}, 16+5, 16)
	long := row(t, tb, []int64{7, 8, 9}, 2*16+3, 16)
	if !slices.Equal(short, long[:21]) {
		t.Errorf("the partial block of id 8 is not the start of its full block:\n%v\n%v", short[16:], long[16:32])
	}
	if !slices.Equal(long[16:32], tb.AppendBlock(nil, 8, 16)) {
		t.Error("the full block of id 8 in a row differs from AppendBlock(8, 16)")
	}
}

func TestBlockSameIDDifferentPositions(t *testing.T) {
	const size = 512
	tb := newWordBlocks(t, 500, promptsize.BlockOptions{Seed: 5})
	// Mooncake's conversation trace begins every row with id 0.
	rows := [][]int64{{0, 1, 2}, {0, 14, 15, 16}, {0, 462}}
	var first []int
	for i, ids := range rows {
		got := row(t, tb, ids, (len(ids)-1)*size+100, size)
		if i == 0 {
			first = got[:size]
		} else if !slices.Equal(got[:size], first) {
			t.Errorf("row %d: the block of id 0 differs from row 0's", i)
		}
	}
	// An id in another position of another row (a trace that is not
	// prefix-chained) keeps its block.
	a := row(t, tb, []int64{70, 71}, 2*size, size)
	b := row(t, tb, []int64{71, 72, 70}, 3*size, size)
	if !slices.Equal(a[size:], b[:size]) || !slices.Equal(a[:size], b[2*size:]) {
		t.Error("ids 70 and 71 have other blocks in other positions")
	}
}

func TestBlockDeterminism(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	cases := sharingCases(16, []int{0, 1, 4, 9}, 1, r)
	build := func(tb *promptsize.TokenBlocks) [][]int {
		var out [][]int
		for _, c := range cases {
			out = append(out, row(t, tb, c.a, c.la, 16), row(t, tb, c.b, c.lb, 16))
		}
		return out
	}
	base := newWordBlocks(t, 500, promptsize.BlockOptions{Seed: 11})
	first := build(base)
	again := build(newWordBlocks(t, 500, promptsize.BlockOptions{Seed: 11}))
	if !slices.EqualFunc(first, again, slices.Equal) {
		t.Error("the same seed gave other blocks in a second run")
	}
	if !slices.EqualFunc(first, build(base.WithSeed(11)), slices.Equal) {
		t.Error("WithSeed(the same seed) gave other blocks")
	}
	other := build(base.WithSeed(12))
	for i := range first {
		same := 0
		for j := range first[i] {
			if first[i][j] == other[i][j] {
				same++
			}
		}
		// 500 stable tokens: a token agrees by chance once in 500.
		if same > len(first[i])/10 {
			t.Errorf("row %d: seeds 11 and 12 agree on %d of %d tokens", i, same, len(first[i]))
		}
	}
}

func TestBlockSiblings(t *testing.T) {
	const words = 8
	tb := newWordBlocks(t, words, promptsize.BlockOptions{Seed: 1})
	b := &promptsize.BlockBuilder{Blocks: tb, BlockSize: 4}
	ctx := context.Background()
	parent := row(t, tb, []int64{1}, 4, 4)
	// Eight children of id 1: with eight stable tokens each begins with
	// its own, however the first draws fell.
	firsts := map[int]int64{}
	for c := int64(100); c < 100+words; c++ {
		p, err := b.Build(ctx, []int64{1, c}, 8)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(p.TokenIDs[:4], parent) {
			t.Fatalf("child %d: the parent's block changed", c)
		}
		if prev, dup := firsts[p.TokenIDs[4]]; dup {
			t.Errorf("children %d and %d of id 1 begin with the same token", prev, c)
		}
		firsts[p.TokenIDs[4]] = c
		if len(p.Warnings) != 0 {
			t.Errorf("child %d: warnings %v", c, p.Warnings)
		}
	}
	st := tb.Stats()
	if st.Redraws == 0 || st.Collisions != 0 {
		t.Errorf("stats %+v: want some redraws (8 draws of 8 rarely differ) and no collisions", st)
	}
	// A ninth cannot differ from all eight: a collision, reported.
	p, err := b.Build(ctx, []int64{1, 200}, 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) != 1 || !errors.Is(p.Warnings[0], promptsize.ErrBlockCollision) {
		t.Errorf("the ninth sibling: warnings %v, want ErrBlockCollision", p.Warnings)
	}
	if got := tb.Stats().Collisions; got != 1 {
		t.Errorf("Collisions = %d, want 1", got)
	}

	// An id already used under one parent is not moved when it meets a
	// sibling under another: its block stays, and the collision is told.
	tb = newWordBlocks(t, 2, promptsize.BlockOptions{Seed: 1})
	b = &promptsize.BlockBuilder{Blocks: tb, BlockSize: 4}
	y := row(t, tb, []int64{50, 51}, 8, 4)[4]
	x := int64(1000)
	for tb.AppendBlock(nil, x, 1)[0] != y {
		x++
	}
	before := row(t, tb, []int64{60, x}, 8, 4)[4:]
	p, err = b.Build(ctx, []int64{50, x}, 8)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.TokenIDs[4:], before) {
		t.Error("an id used before got another block under a second parent")
	}
	if len(p.Warnings) != 1 || !errors.Is(p.Warnings[0], promptsize.ErrBlockCollision) {
		t.Errorf("warnings %v, want ErrBlockCollision", p.Warnings)
	}

	// Without the index there is no state at all.
	tb = newWordBlocks(t, words, promptsize.BlockOptions{Seed: 1, SkipSiblingCheck: true})
	for c := int64(100); c < 100+2*words; c++ {
		row(t, tb, []int64{1, c}, 8, 4)
	}
	if st := tb.Stats(); st.Indexed != 0 || st.Redraws != 0 || st.Collisions != 0 || st.Rows != 2*words {
		t.Errorf("SkipSiblingCheck: stats %+v, want rows only", st)
	}
}

func TestBlockBuilderTokenIDs(t *testing.T) {
	tb := newWordBlocks(t, 500, promptsize.BlockOptions{Seed: 2})
	b := &promptsize.BlockBuilder{Blocks: tb, BlockSize: 16}
	ids := []int64{3, 4, 5}
	p, err := b.Build(context.Background(), ids, 40)
	if err != nil {
		t.Fatal(err)
	}
	if want := row(t, tb, ids, 40, 16); !slices.Equal(p.TokenIDs, want) {
		t.Error("Build's TokenIDs differ from AppendRow's")
	}
	if p.Target != 40 || p.Tokens != 40 || p.Units != 3 || p.Content != "" || p.Messages != nil || p.Calls != 0 {
		t.Errorf("prompt %+v: want Target = Tokens = 40, Units 3, no messages, no counter calls", p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Build(ctx, ids, 40); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: err = %v", err)
	}
	if _, err := (&promptsize.BlockBuilder{BlockSize: 16}).Build(context.Background(), ids, 40); err == nil {
		t.Error("no Blocks: want an error")
	}
	if _, err := (&promptsize.BlockBuilder{Blocks: tb, BlockSize: 16, Mode: 7}).Build(context.Background(), ids, 40); err == nil {
		t.Error("an unknown mode: want an error")
	}
}

func TestBlockChatFake(t *testing.T) {
	v := newWordVocab(500)
	tb, err := promptsize.NewTokenBlocks(v, promptsize.BlockOptions{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ids := []int64{3, 4, 5}
	for _, tc := range []struct {
		name    string
		counter promptsize.Counter
		prefix  int // template tokens before the content
		repairs bool
	}{
		{"locator", vocabLocator{vocabCounter{v: v}}, 3, false},
		{"counter", vocabCounter{v: v}, 5, false}, // all of the overhead up front
		{"merging", vocabLocator{vocabCounter{v: v, mergeAbove: 20}}, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &promptsize.BlockBuilder{Blocks: tb, BlockSize: 16, Mode: promptsize.BlockChat, Counter: tc.counter}
			const overhead = 5
			for length := 33; length <= 48; length++ {
				p, err := b.Build(ctx, ids, length)
				if err != nil {
					t.Fatalf("input_length=%d: %v", length, err)
				}
				if n, _ := tc.counter.Count(ctx, p.Messages); n != length || p.Tokens != length || p.Overhead != overhead {
					t.Errorf("input_length=%d: counted %d, Tokens %d, Overhead %d", length, n, p.Tokens, p.Overhead)
				}
				if (p.Repair != "") != tc.repairs {
					t.Errorf("input_length=%d: Repair %q", length, p.Repair)
				}
				// The content is the lead word, then the row's tokens from
				// just after the prefix and the lead.
				var want []int
				for j, id := range ids {
					n := 16
					if j == len(ids)-1 {
						n = 64 // the last block's stream goes on
					}
					want = tb.AppendBlock(want, id, n)
				}
				content := v.Encode(p.Content)
				if len(content) < 1 || v.Decode(content[:1]) != word(0) {
					t.Fatalf("input_length=%d: content %.30q does not start with the lead %q", length, p.Content, word(0))
				}
				if n := len(content) - 1; !slices.Equal(content[1:], want[tc.prefix+1:tc.prefix+1+n]) {
					t.Errorf("input_length=%d: content tokens are not the row's tokens %d-%d", length, tc.prefix+1, tc.prefix+n)
				}
			}
			built, fixed := b.Repairs()
			if built != 16 || (fixed > 0) != tc.repairs {
				t.Errorf("Repairs() = %d, %d", built, fixed)
			}
			// The measurement (a Count, and a ContentOffset for a
			// locator), then one count per build and one per repair.
			want := int64(1 + 16 + fixed)
			if _, ok := tc.counter.(promptsize.ContentLocator); ok {
				want++
			}
			if got := b.CounterCalls(); got != want {
				t.Errorf("CounterCalls() = %d, want %d", got, want)
			}
		})
	}

	b := &promptsize.BlockBuilder{Blocks: tb, BlockSize: 16, Mode: promptsize.BlockChat, Counter: vocabLocator{vocabCounter{v: v}}}
	var oe *promptsize.OverheadError
	if _, err := b.Build(ctx, []int64{1}, 4); !errors.As(err, &oe) || oe.Overhead != 5 || oe.Target != 4 {
		t.Errorf("below the overhead: err = %v, want an *OverheadError naming 4 and 5", err)
	}
	if p, err := b.Build(ctx, []int64{1}, 5); err != nil || p.Content != "" || p.Tokens != 5 {
		t.Errorf("at the overhead: %+v, %v; want empty content", p, err)
	}
	if p, err := b.Build(ctx, []int64{1}, 6); err != nil || p.Content != word(0) {
		t.Errorf("one above the overhead: content %q, %v; want the lead alone", p.Content, err)
	}
	if _, err := (&promptsize.BlockBuilder{Blocks: tb, BlockSize: 16, Mode: promptsize.BlockChat}).Build(ctx, ids, 40); err == nil {
		t.Error("chat without a Counter: want an error")
	}
	broken := promptsize.CounterFunc(func(_ context.Context, m []promptsize.Message) (int, error) {
		if m[0].Content == "" {
			return 5, nil
		}
		return 1000, nil
	})
	_, err = (&promptsize.BlockBuilder{Blocks: tb, BlockSize: 16, Mode: promptsize.BlockChat, Counter: broken}).Build(ctx, ids, 40)
	if !errors.Is(err, promptsize.ErrUnreachable) {
		t.Errorf("a counter no repair satisfies: err = %v, want ErrUnreachable", err)
	}
}

func TestBlocksConcurrent(t *testing.T) {
	tb := newWordBlocks(t, 2000, promptsize.BlockOptions{Seed: 8})
	b := &promptsize.BlockBuilder{Blocks: tb, BlockSize: 16}
	rows := bailianRows(400, 16, 3)
	got := make([][]int, len(rows))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(rows); i += 4 {
				p, err := b.Build(context.Background(), rows[i].ids, rows[i].length)
				if err != nil {
					t.Error(err)
					return
				}
				got[i] = p.TokenIDs
			}
		})
	}
	testkit.WaitWithin(t, &wg, testkit.Patience)
	// Whatever the order, an id's block is the same in every row.
	blocks := map[int64][]int{}
	for i, r := range rows {
		for j, id := range r.ids {
			blk := got[i][j*16 : min((j+1)*16, r.length)]
			if prev, ok := blocks[id]; ok {
				n := min(len(prev), len(blk))
				if !slices.Equal(prev[:n], blk[:n]) {
					t.Fatalf("id %d has two blocks", id)
				}
				if len(blk) > len(prev) {
					blocks[id] = blk
				}
			} else {
				blocks[id] = blk
			}
		}
	}
}

// realBlocks returns the TokenBlocks of a real model, derived once per
// test binary; tests take their own with WithSeed.
var realBlocksOnce sync.Map // model -> func() (*promptsize.TokenBlocks, error)

func realBlocks(tb testing.TB, model string) (*hf.Tokenizer, *promptsize.TokenBlocks) {
	tb.Helper()
	tok := realTokenizer(tb, model)
	f, _ := realBlocksOnce.LoadOrStore(model, sync.OnceValues(func() (*promptsize.TokenBlocks, error) {
		return promptsize.NewTokenBlocks(tok, promptsize.BlockOptions{})
	}))
	blocks, err := f.(func() (*promptsize.TokenBlocks, error))()
	if err != nil {
		tb.Fatal(err)
	}
	return tok, blocks
}

// templated returns the ids of a chat request as the engine sees them:
// rendered with the generation prompt, then encoded.
func templated(t *testing.T, tok *hf.Tokenizer, msgs []promptsize.Message) []int {
	t.Helper()
	s, err := tok.Render(msgs, hf.RenderOptions{AddGenerationPrompt: true, Date: realDate})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Encode(s)
}

func TestBlocksRealTokenizers(t *testing.T) {
	if testing.Short() {
		t.Skip("real tokenizers are slow to load; skipped in -short")
	}
	ctx := context.Background()
	for _, model := range realModels {
		t.Run(model, func(t *testing.T) {
			tok, base := realBlocks(t, model)
			tb := base.WithSeed(77)
			stable := tb.StableTokens()
			t.Logf("%d stable tokens of %d ordinary", len(stable), len(tok.OrdinaryTokens()))
			for _, id := range stable[:200] {
				if s := tok.Decode([]int{id}); !slices.Equal(tok.Encode(s), []int{id}) {
					t.Fatalf("stable token %d (%q) does not round-trip", id, s)
				}
			}
			for _, size := range []int{16, 512} {
				r := rand.New(rand.NewPCG(uint64(size), 1))
				ks := []int{0, 1, 2, 3}
				if size == 16 {
					ks = []int{0, 1, 5, 9, 30}
				}
				for _, system := range []string{"", "You are a terse assistant."} {
					ids := &promptsize.BlockBuilder{Blocks: tb, BlockSize: size}
					chat := &promptsize.BlockBuilder{Blocks: tb, BlockSize: size, Mode: promptsize.BlockChat, Counter: tok, System: system}
					prefix, err := tok.ContentOffset(ctx, []promptsize.Message{{Role: "user", Content: ""}})
					if system != "" {
						prefix, err = tok.ContentOffset(ctx, []promptsize.Message{{Role: "system", Content: system}, {Role: "user", Content: ""}})
					}
					if err != nil {
						t.Fatal(err)
					}
					for _, c := range sharingCases(size, ks, max(1, 100/size), r) {
						var tokens, chats [2][]int
						for i, rw := range []struct {
							ids    []int64
							length int
						}{{c.a, c.la}, {c.b, c.lb}} {
							p, err := ids.Build(ctx, rw.ids, rw.length)
							if err != nil {
								t.Fatal(err)
							}
							tokens[i] = p.TokenIDs
							p, err = chat.Build(ctx, rw.ids, rw.length)
							var oe *promptsize.OverheadError
							if errors.As(err, &oe) {
								t.Fatalf("block %d: %v", size, err)
							}
							if err != nil {
								t.Fatal(err)
							}
							got := templated(t, tok, p.Messages)
							if n, _ := tok.Count(ctx, p.Messages); len(got) != rw.length || n != rw.length || p.Tokens != rw.length {
								t.Fatalf("block %d: templated %d tokens, Count %d, Tokens %d, want %d", size, len(got), n, p.Tokens, rw.length)
							}
							// Past the template's prefix and the lead, the
							// templated tokens are the row's tokens, position
							// for position, up to the template's suffix.
							suffix := p.Overhead - prefix
							if !slices.Equal(got[prefix+1:rw.length-suffix], tokens[i][prefix+1:rw.length-suffix]) {
								t.Errorf("block %d system=%t: the templated tokens %d-%d are not the row's", size, system != "", prefix+1, rw.length-suffix)
							}
							chats[i] = got
						}
						if got := commonPrefix(tokens[0], tokens[1]); got != c.k*size {
							t.Errorf("block %d: token-id rows sharing %d ids share %d tokens, want %d", size, c.k, got, c.k*size)
						}
						got, want := commonPrefix(chats[0], chats[1]), c.k*size
						if want < prefix+1 {
							want = prefix + 1 // the template and the lead are every row's
							if got < want {
								t.Errorf("block %d: chat rows share %d tokens, less than the template's %d and the lead", size, got, prefix)
							}
							continue
						}
						if got != want {
							t.Errorf("block %d system=%t: chat rows sharing %d ids share %d templated tokens, want exactly %d", size, system != "", c.k, got, want)
						}
					}
				}
			}
		})
	}
}

// TestBlocksChatCountsReal builds chat prompts of many lengths, block sizes
// and systems on every real tokenizer: each count equals the Counter's
// after the chat template, and the repairs needed are logged.
func TestBlocksChatCountsReal(t *testing.T) {
	if testing.Short() {
		t.Skip("real tokenizers are slow to load; skipped in -short")
	}
	ctx := context.Background()
	rows := 300
	if raceEnabled {
		rows = 60
	}
	for _, model := range realModels {
		t.Run(model, func(t *testing.T) {
			tok, base := realBlocks(t, model)
			r := rand.New(rand.NewPCG(5, 5))
			var built, fixed int64
			for _, system := range []string{"", "Answer in one word."} {
				for _, size := range []int{16, 512} {
					b := &promptsize.BlockBuilder{Blocks: base.WithSeed(r.Uint64()), BlockSize: size, Mode: promptsize.BlockChat, Counter: tok, System: system}
					for i := range rows / 4 {
						length := 1 + r.IntN(4000)
						if i < 8 {
							length = 60 + i // around gpt-oss's overhead
						}
						n := (length + size - 1) / size
						ids := make([]int64, n)
						for j := range ids {
							ids[j] = int64(i*10000 + j)
						}
						p, err := b.Build(ctx, ids, length)
						var oe *promptsize.OverheadError
						if errors.As(err, &oe) {
							if length >= oe.Overhead {
								t.Fatalf("input_length=%d: %v", length, err)
							}
							continue
						}
						if err != nil {
							t.Fatalf("input_length=%d: %v", length, err)
						}
						if got, _ := tok.Count(ctx, p.Messages); got != length || p.Tokens != length {
							t.Fatalf("input_length=%d: Count %d, Tokens %d", length, got, p.Tokens)
						}
					}
					bb, bf := b.Repairs()
					built += bb
					fixed += bf
				}
			}
			t.Logf("%s: %d chat prompts, %d needed a repair", model, built, fixed)
		})
	}
}

// bailianRow is a synthetic trace row.
type bailianRow struct {
	ids    []int64
	length int
}

// bailianRows returns n synthetic rows shaped like Alibaba's Bailian
// traces (blocks of size tokens, prefix-chained ids): input lengths
// log-normal around a median of 2,500 tokens (up to 32,768); 40% of rows
// are the next turn of a recent row, whose full blocks they extend by
// 200-1,000 tokens; 70% of the others begin with one of 64 system prompts
// of 200-3,000 tokens, the popular ones more often.
func bailianRows(n, size int, seed uint64) []bailianRow {
	r := rand.New(rand.NewPCG(seed, 0x6a09e667))
	next := int64(0)
	fresh := func(k int) []int64 {
		ids := make([]int64, k)
		for i := range ids {
			ids[i] = next
			next++
		}
		return ids
	}
	systems := make([][]int64, 64)
	for i := range systems {
		systems[i] = fresh((200 + r.IntN(2800)) / size)
	}
	out := make([]bailianRow, 0, n)
	var recent []int
	for len(out) < n {
		var prefix []int64
		var length int
		if len(recent) > 0 && r.Float64() < 0.4 {
			parent := out[recent[r.IntN(len(recent))]]
			prefix = parent.ids[:parent.length/size]
			length = parent.length + 200 + r.IntN(800)
		} else {
			length = int(2500 * math.Exp(0.9*r.NormFloat64()))
			if r.Float64() < 0.7 {
				sys := systems[min(int(r.ExpFloat64()*8), len(systems)-1)]
				prefix = sys
			}
		}
		length = max(1, min(length, 32768))
		k := (length + size - 1) / size
		prefix = prefix[:min(len(prefix), k-1)]
		ids := append(slices.Clone(prefix), fresh(k-len(prefix))...)
		out = append(out, bailianRow{ids, length})
		recent = append(recent, len(out)-1)
		if len(recent) > 2000 {
			recent = recent[1:]
		}
	}
	return out
}
