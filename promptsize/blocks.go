package promptsize

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
)

// A Vocabulary is what TokenBlocks needs of a tokenizer: the ids ordinary
// text encodes to, and the encoding and decoding that decide which of them
// are stable. *hf.Tokenizer is one.
type Vocabulary interface {
	// OrdinaryTokens returns the ids of the model's own vocabulary that are
	// not added or special tokens, byte-fallback pieces (<0x41>) or the
	// unknown token.
	OrdinaryTokens() []int
	// Encode returns the ids of text with no special tokens added.
	Encode(text string) []int
	// Decode returns the text of ids.
	Decode(ids []int) string
}

// MinStableTokens is the fewest stable tokens NewTokenBlocks accepts. The
// first tokens of the blocks that follow one shared prefix must all differ,
// so a vocabulary of n stable tokens keeps at most n such blocks apart.
const MinStableTokens = 2

// maxRedraws bounds the new streams tried for an id whose first token is
// taken by a sibling: with n stable tokens and m siblings, one try fails
// with probability m/n.
const maxRedraws = 64

// TokenBlocks maps trace hash ids to blocks of token ids, for replaying
// traces whose rows name their prompts' blocks (Mooncake: one id per
// 512-token block; Alibaba's Bailian traces: 16), so that a server's prefix
// cache sees exactly the sharing the trace records.
//
// Each id owns an endless stream of tokens drawn from the vocabulary's
// stable tokens (StableTokens), seeded by the id and BlockOptions.Seed; a
// block of n tokens is the first n of its id's stream, so a full block and
// a partial one of the same id agree on their common tokens, and an id
// gives the identical block in every row that names it. The stream is a
// pure function of the seed and the id (wyrand over a counter, seeded
// through splitmix64's finalizer): a second run with the same seed and
// vocabulary reproduces every block, another seed gives other blocks.
// Nothing is cached: a token costs about a nanosecond to derive, less than
// looking a block up would.
//
// Streams of different ids are independent draws, so different ids give
// different blocks. Their first tokens are kept apart too: when an id
// first follows a parent (the id before it in a row, or the start of a
// row) whose earlier child began with the same token, the new id is given
// the next stream of its own, so rows that share k leading ids share
// exactly k·B leading tokens and differ at token k·B. That bookkeeping,
// the sibling index, is the only state: a few entries per row for a trace
// that numbers its ids in order of first appearance, as Mooncake's and
// Bailian's do (BlockStats.IndexEntries); BlockOptions.SkipSiblingCheck
// turns it off. Redraws depend on the order in which ids first appear:
// build the rows in trace order to reproduce a run exactly.
//
// Make one with NewTokenBlocks (or WithSeed). A TokenBlocks is safe for
// concurrent use.
type TokenBlocks struct {
	seed     uint64
	stable   []int    // ids of the stable tokens, increasing
	texts    []string // text of each stable token: a space and a word
	lead     int      // the token that starts a chat prompt's content
	leadText string   // its text: a word without a space
	skip     bool     // no sibling index

	mu    sync.Mutex
	ix    siblingIndex
	stats BlockStats
}

// BlockOptions configure NewTokenBlocks. The zero value works.
type BlockOptions struct {
	// Seed selects the blocks. The same seed over the same vocabulary gives
	// the same blocks in every run; another seed gives other blocks, so a
	// run can avoid a prefix cache an earlier run warmed. Record it with
	// the results. Zero is a seed like any other.
	Seed uint64
	// SkipSiblingCheck turns off the sibling index, keeping no state at
	// all: the first tokens of two blocks after one shared prefix then
	// coincide with probability 1/len(StableTokens()) per pair, and the
	// rows share one token more than the trace says.
	SkipSiblingCheck bool
}

// BlockStats are counts over a TokenBlocks' life.
type BlockStats struct {
	// Stable is the number of stable tokens blocks are drawn from.
	Stable int
	// Rows is the number of rows built.
	Rows int64
	// Indexed is the number of distinct ids the sibling index has placed.
	Indexed int
	// IndexEntries is the number of entries the sibling index holds: a
	// run of consecutive ids, an id placed out of order, or an edge to a
	// child that does not continue its parent's run; 30-40 bytes each. A
	// trace numbered in order of first appearance needs a few per row.
	IndexEntries int
	// Redraws is the number of ids moved to another stream because their
	// first token was a sibling's.
	Redraws int64
	// Collisions is the number of times an id met a sibling with the same
	// first token and could not move, because it had been used already
	// (an id under two parents: a trace that is not prefix-chained) or no
	// stream within the redraw bound was free. Each such row pair shares
	// one token more than the trace says.
	Collisions int64
}

// NewTokenBlocks derives the stable tokens of v and returns blocks drawn
// from them. A token is stable when all of these hold:
//
//   - it is one of v.OrdinaryTokens(): no added or special token, no byte
//     fallback, not the unknown token;
//   - it decodes to a space followed by one or more ASCII letters: a whole
//     word that starts a pre-token, so that concatenations split between
//     words and no merge reaches across two tokens;
//   - that text encodes back to exactly the token, the text twice to
//     exactly the token twice, and the lead word followed by the text to
//     exactly the lead and the token.
//
// The lead word starts the content of every chat prompt (see
// BlockBuilder): the first candidate, in id order, of at least four
// letters whose text without its space encodes to one token that decodes
// back to it. NewTokenBlocks needs at least MinStableTokens stable tokens
// and a lead. Deriving them encodes a few short texts per candidate: 0.1
// to 0.5 s for a vocabulary of 100,000-260,000 tokens.
func NewTokenBlocks(v Vocabulary, opts BlockOptions) (*TokenBlocks, error) {
	if v == nil {
		return nil, errors.New("promptsize: NewTokenBlocks: the Vocabulary is nil; expected a tokenizer")
	}
	ords := slices.Clone(v.OrdinaryTokens())
	slices.Sort(ords)
	ords = slices.Compact(ords)
	var cands []int
	var texts []string
	one := make([]int, 1)
	for _, id := range ords {
		one[0] = id
		t := v.Decode(one)
		if isSpaceWord(t) && equalIDs(v.Encode(t), id) && equalIDs(v.Encode(t+t), id, id) {
			cands = append(cands, id)
			texts = append(texts, t)
		}
	}
	tb := &TokenBlocks{seed: opts.Seed, skip: opts.SkipSiblingCheck, lead: -1}
	for _, minLen := range []int{4, 1} { // a word, or else any letters
		if tb.lead >= 0 {
			break
		}
		for _, t := range texts {
			if len(t)-1 < minLen {
				continue
			}
			if l := v.Encode(t[1:]); len(l) == 1 && v.Decode(l) == t[1:] {
				tb.lead, tb.leadText = l[0], t[1:]
				break
			}
		}
	}
	if tb.lead < 0 {
		return nil, fmt.Errorf("promptsize: NewTokenBlocks: none of the vocabulary's %d space-word tokens has a one-token form without its space; expected one to lead chat prompts", len(cands))
	}
	for i, id := range cands {
		if equalIDs(v.Encode(tb.leadText+texts[i]), tb.lead, id) {
			tb.stable = append(tb.stable, id)
			tb.texts = append(tb.texts, texts[i])
		}
	}
	if len(tb.stable) < MinStableTokens {
		return nil, fmt.Errorf("promptsize: NewTokenBlocks: the vocabulary has %d stable tokens among %d ordinary ones; expected at least %d (a space and an ASCII word that encodes back to itself)",
			len(tb.stable), len(ords), MinStableTokens)
	}
	tb.stats.Stable = len(tb.stable)
	return tb, nil
}

// isSpaceWord reports whether s is a space followed by ASCII letters.
func isSpaceWord(s string) bool {
	if len(s) < 2 || s[0] != ' ' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

func equalIDs(got []int, want ...int) bool { return slices.Equal(got, want) }

// StableTokens returns the ids blocks are drawn from, in increasing order.
func (tb *TokenBlocks) StableTokens() []int { return slices.Clone(tb.stable) }

// Seed returns the seed the blocks are drawn with.
func (tb *TokenBlocks) Seed() uint64 { return tb.seed }

// WithSeed returns blocks drawn from the same stable tokens with another
// seed, and with a sibling index of their own: the blocks of another run
// without deriving the stable tokens again.
func (tb *TokenBlocks) WithSeed(seed uint64) *TokenBlocks {
	return &TokenBlocks{
		seed: seed, stable: tb.stable, texts: tb.texts, lead: tb.lead, leadText: tb.leadText,
		skip: tb.skip, stats: BlockStats{Stable: len(tb.stable)},
	}
}

// Stats returns the counts so far.
func (tb *TokenBlocks) Stats() BlockStats {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	s := tb.stats
	s.Indexed = tb.ix.placed
	s.IndexEntries = len(tb.ix.runs) + len(tb.ix.loose) + len(tb.ix.firsts)
	return s
}

// AppendBlock appends the first n tokens of id's block to dst: the block
// of n tokens that id names in any row, and the start of its longer ones.
// For an id no row has named yet it is the block the id will have unless
// the sibling index moves it at its first row.
func (tb *TokenBlocks) AppendBlock(dst []int, id int64, n int) []int {
	tb.mu.Lock()
	base := tb.base(id)
	tb.mu.Unlock()
	for i := range n {
		dst = append(dst, tb.stable[tb.draw(base, i)])
	}
	return dst
}

// AppendRow appends the token ids of a trace row to dst: the block of each
// hash id in order, each of blockSize tokens but the last, which holds the
// rest of inputLength. It returns an error wrapping ErrBlockRow, and dst
// unchanged, for a row whose ids do not fit its length (see CheckBlockRow).
func (tb *TokenBlocks) AppendRow(dst []int, hashIDs []int64, inputLength, blockSize int) ([]int, error) {
	if err := CheckBlockRow(hashIDs, inputLength, blockSize); err != nil {
		return dst, err
	}
	var buf baseBuf
	bases, _ := tb.rowBases(hashIDs, buf[:0])
	return tb.appendIDs(slices.Grow(dst, inputLength), bases, blockSize, 0, inputLength), nil
}

// rowBases places a valid row's ids in the sibling index, appends the
// base of each id's stream to bases and returns them with the collisions
// the row met.
func (tb *TokenBlocks) rowBases(hashIDs []int64, bases []uint64) ([]uint64, int) {
	bases = slices.Grow(bases[:0], len(hashIDs))[:len(hashIDs)]
	if tb.skip {
		for i, id := range hashIDs {
			bases[i] = tb.streamBase(id, 0)
		}
		tb.mu.Lock()
		tb.stats.Rows++
		tb.mu.Unlock()
		return bases, 0
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.stats.Rows++
	return bases, tb.placeRow(hashIDs, bases)
}

// baseBuf is room for the stream bases of a row of up to 1024 ids on the
// stack of whoever builds it.
type baseBuf [1024]uint64

// span returns the stream positions [i0, i1) of block j (of n) that fall
// in row positions [from, to); the last block's stream goes on past the
// row's length when to asks for more.
func span(j, n, blockSize, from, to int) (i0, i1 int) {
	start := j * blockSize
	end := start + blockSize
	if j == n-1 {
		end = max(end, to)
	}
	return max(from, start) - start, min(to, end) - start
}

// appendIDs appends the ids of the tokens at row positions [from, to) of
// the row whose streams start at bases.
func (tb *TokenBlocks) appendIDs(dst []int, bases []uint64, blockSize, from, to int) []int {
	for j, base := range bases {
		i0, i1 := span(j, len(bases), blockSize, from, to)
		for i := i0; i < i1; i++ {
			dst = append(dst, tb.stable[tb.draw(base, i)])
		}
	}
	return dst
}

// appendText writes the text of the tokens at row positions [from, to) of
// the row whose streams start at bases.
func (tb *TokenBlocks) appendText(sb *strings.Builder, bases []uint64, blockSize, from, to int) {
	for j, base := range bases {
		i0, i1 := span(j, len(bases), blockSize, from, to)
		for i := i0; i < i1; i++ {
			sb.WriteString(tb.texts[tb.draw(base, i)])
		}
	}
}

// base returns the base of id's stream: its first, unless the sibling
// index moved it. tb.mu is held.
func (tb *TokenBlocks) base(id int64) uint64 {
	_, stream, _, _ := tb.ix.find(id)
	return tb.streamBase(id, stream)
}

// streamBase returns the base of stream r of id: splitmix64's finalizer
// over the seed, the id and r.
func (tb *TokenBlocks) streamBase(id int64, r uint32) uint64 {
	return mix64(mix64(tb.seed^0x6a09e667f3bcc909) ^ mix64(uint64(id)^uint64(r)<<48^0xbb67ae8584caa73b))
}

// draw returns the stable index of token i of the stream at base: the
// high 32 bits of the i+1-th output of wyrand (a counter stepped by its
// constant, one 128-bit multiply), scaled to the stable count.
func (tb *TokenBlocks) draw(base uint64, i int) uint32 {
	s := base + uint64(i+1)*0xa0761d6478bd642f
	hi, lo := bits.Mul64(s, s^0xe7037ed1a0b428db)
	return uint32(((hi ^ lo) >> 32) * uint64(len(tb.stable)) >> 32)
}

// edgeKey is the sibling index's key of a first token k under parent.
func edgeKey(parent int64, k uint32) uint64 {
	return mix64(uint64(parent)*0x9e3779b97f4a7c15 ^ uint64(k))
}

func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// ErrBlockRow is the condition of a trace row whose hash ids do not fit
// its input length. Errors for it wrap ErrBlockRow: *BlockRowError for a
// count of ids that does not fit, others for a negative id or block size.
var ErrBlockRow = errors.New("promptsize: the row's hash ids do not fit its input length")

// A BlockRowError reports a row whose last block would not hold between 1
// and BlockSize tokens: 0 < InputLength − (IDs−1)·BlockSize ≤ BlockSize
// fails, so IDs is not ⌈InputLength/BlockSize⌉.
type BlockRowError struct {
	InputLength, IDs, BlockSize int
}

func (e *BlockRowError) Error() string {
	want := 0
	if e.InputLength > 0 && e.BlockSize > 0 {
		want = (e.InputLength-1)/e.BlockSize + 1
	}
	return fmt.Sprintf("promptsize: input_length=%d does not fit %d hash ids of %d-token blocks; expected 0 < %d − (ids−1)·%d ≤ %d, which %d ids meet",
		e.InputLength, e.IDs, e.BlockSize, e.InputLength, e.BlockSize, e.BlockSize, want)
}

// Unwrap returns ErrBlockRow.
func (e *BlockRowError) Unwrap() error { return ErrBlockRow }

// MaxBlockRowLength is the longest input length a block row may have:
// 2^24 tokens, above any model's context, far below what would exhaust
// memory.
const MaxBlockRowLength = 1 << 24

// CheckBlockRow returns nil when hashIDs fit inputLength in blocks of
// blockSize, as AIPerf and GuideLLM require and vLLM does not: at least one
// id, every id >= 0, blockSize > 0 and 0 < inputLength − (len−1)·blockSize
// ≤ blockSize, with inputLength at most MaxBlockRowLength. Otherwise it
// returns an error wrapping ErrBlockRow.
func CheckBlockRow(hashIDs []int64, inputLength, blockSize int) error {
	if blockSize <= 0 {
		return fmt.Errorf("promptsize: block size %d; expected a block size > 0: %w", blockSize, ErrBlockRow)
	}
	if inputLength > MaxBlockRowLength {
		return fmt.Errorf("promptsize: input_length=%d; expected at most MaxBlockRowLength (%d): %w", inputLength, MaxBlockRowLength, ErrBlockRow)
	}
	n := len(hashIDs)
	// (n−1)·blockSize < inputLength ≤ n·blockSize, without overflow.
	if n == 0 || inputLength <= 0 || (n-1) > (inputLength-1)/blockSize || inputLength-(n-1)*blockSize > blockSize {
		return &BlockRowError{InputLength: inputLength, IDs: n, BlockSize: blockSize}
	}
	for i, id := range hashIDs {
		if id < 0 {
			return fmt.Errorf("promptsize: hash_ids[%d] = %d; expected ids >= 0: %w", i, id, ErrBlockRow)
		}
	}
	return nil
}
