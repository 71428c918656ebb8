package promptsize

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// BlockMode says what a BlockBuilder makes of a trace row.
type BlockMode int

const (
	// BlockTokenIDs makes Prompt.TokenIDs: the row's block tokens, for a
	// completions endpoint that takes token ids as they are (prompt:
	// [ids]). Their count is exact by construction and no Counter is
	// needed. It is the zero value.
	BlockTokenIDs BlockMode = iota
	// BlockChat makes Prompt.Messages: a user message whose text, after the
	// chat template, tokenizes to exactly the row's input length, as the
	// Counter verifies.
	BlockChat
)

func (m BlockMode) String() string {
	switch m {
	case BlockTokenIDs:
		return "token-ids"
	case BlockChat:
		return "chat"
	}
	return fmt.Sprintf("BlockMode(%d)", int(m))
}

// ErrBlockCollision is the warning on a Prompt whose row met an unresolved
// sibling collision (see BlockStats.Collisions): one of its blocks begins
// with the same token as another block after the same prefix, so the two
// rows share one token more than the trace says.
var ErrBlockCollision = errors.New("promptsize: a block begins with the same token as a sibling block")

// maxBlockRepairs bounds the recounts of a chat prompt whose first count
// missed the input length.
const maxBlockRepairs = 4

// A BlockBuilder builds the prompt of a trace row from its hash ids: each
// id becomes its block of Blocks, BlockSize tokens each but the last, which
// holds the rest of the input length. Rows that share k leading ids share
// exactly k·BlockSize leading tokens.
//
// In BlockChat mode the row's tokens become the text of one user message
// (after System, if set), and the chat template's tokens take the places
// of block tokens: with a Counter that is a ContentLocator (hf's is), the p
// tokens the template puts before the content replace the row's first p
// tokens and those it puts after the content the row's last ones, so that
// the templated prompt's token i is the row's token i wherever the content
// is. The content starts with the lead word of Blocks (so that a template
// that trims the content, as Llama 3's and Gemma 3's do, leaves its first
// token alone), which takes the row's token p. Rows sharing k ids then
// share exactly k·BlockSize templated tokens whenever k·BlockSize > p;
// below that they share the template's prefix and the lead, as every row
// does. With a Counter that is no ContentLocator, the whole overhead takes
// the places of the row's first tokens, and rows share k·BlockSize tokens
// less the template's tokens after the content. The Counter's count of the
// request is checked against the input length; a miss is repaired by
// moving the end of the content by the difference and counting again (at
// most four times), and reported in Prompt.Repair.
//
// Set the fields before the first Build and do not change them afterwards.
// A BlockBuilder is safe for concurrent use; it measures the template once.
type BlockBuilder struct {
	// Blocks maps hash ids to tokens. Required.
	Blocks *TokenBlocks
	// BlockSize is the trace's tokens per hash id: 512 for Mooncake's
	// traces, 16 for Bailian's. Required.
	BlockSize int
	// Mode chooses token ids (the zero value) or chat messages.
	Mode BlockMode
	// Counter counts chat requests as the engine will. Required in
	// BlockChat mode; a ContentLocator places the template exactly.
	Counter Counter
	// System is the content of a system message before the user message
	// in BlockChat mode; "" sends none. Its tokens are template overhead.
	System string
	// Logger receives a debug record per chat build; nil logs nothing.
	Logger *slog.Logger

	mu     sync.Mutex
	split  templateSplit
	have   bool
	calls  int64
	builds int64
	fixed  int64
}

// templateSplit is where the chat template's tokens fall: overhead in all,
// prefix of them before the content.
type templateSplit struct {
	overhead, prefix int
}

// Build returns the prompt of the row with hashIDs and inputLength: its
// token ids (BlockTokenIDs) or its chat messages (BlockChat), with
// Prompt.Tokens == inputLength. A row whose ids do not fit its length gives
// an error wrapping ErrBlockRow; in BlockChat mode, a length below the
// template's overhead gives an *OverheadError, and a count that no repair
// makes exact an *UnreachableError.
func (b *BlockBuilder) Build(ctx context.Context, hashIDs []int64, inputLength int) (Prompt, error) {
	if b.Blocks == nil {
		return Prompt{}, errors.New("promptsize: BlockBuilder.Blocks is nil; expected a *TokenBlocks")
	}
	if err := CheckBlockRow(hashIDs, inputLength, b.BlockSize); err != nil {
		return Prompt{}, err
	}
	if err := ctx.Err(); err != nil {
		return Prompt{}, fmt.Errorf("promptsize: block prompt of input_length=%d: %w", inputLength, err)
	}
	switch b.Mode {
	case BlockTokenIDs:
		tb := b.Blocks
		var buf baseBuf
		bases, coll := tb.rowBases(hashIDs, buf[:0])
		ids := tb.appendIDs(make([]int, 0, inputLength), bases, b.BlockSize, 0, inputLength)
		return Prompt{
			Target:   inputLength,
			Tokens:   inputLength,
			TokenIDs: ids,
			Fill:     b.fill(),
			Units:    len(hashIDs),
			Warnings: collisionWarnings(coll),
		}, nil
	case BlockChat:
		return b.buildChat(ctx, hashIDs, inputLength)
	}
	return Prompt{}, fmt.Errorf("promptsize: unknown BlockMode %d; expected BlockTokenIDs or BlockChat", int(b.Mode))
}

func (b *BlockBuilder) fill() string {
	return fmt.Sprintf("hash-id blocks of %d tokens (seed %d)", b.BlockSize, b.Blocks.seed)
}

func collisionWarnings(n int) []error {
	if n == 0 {
		return nil
	}
	return []error{fmt.Errorf("%w: %d of the row's blocks", ErrBlockCollision, n)}
}

// CounterCalls returns the number of Counter calls the BlockBuilder has
// made, the template's measurement (a Count and a ContentOffset) included.
func (b *BlockBuilder) CounterCalls() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

// Repairs returns how many chat prompts were built and how many of them
// needed a repair (a first count that missed the input length).
func (b *BlockBuilder) Repairs() (built, repaired int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.builds, b.fixed
}

// templateSplit returns the template's overhead and prefix, measuring them
// on first use: the count of the request with empty content, and the
// tokens before the content. It returns the Counter calls it made.
// Concurrent first builds may each measure.
func (b *BlockBuilder) templateSplit(ctx context.Context) (templateSplit, int, error) {
	b.mu.Lock()
	if b.have {
		s := b.split
		b.mu.Unlock()
		return s, 0, nil
	}
	b.mu.Unlock()
	msgs := requestMessages(b.System, "")
	o, err := b.Counter.Count(ctx, msgs)
	if err != nil {
		return templateSplit{}, 1, fmt.Errorf("promptsize: counting the chat template's overhead: %w", err)
	}
	s := templateSplit{overhead: o, prefix: o}
	calls := 1
	if cl, ok := b.Counter.(ContentLocator); ok {
		p, err := cl.ContentOffset(ctx, msgs)
		calls++
		if err != nil {
			return templateSplit{}, calls, fmt.Errorf("promptsize: locating the content in the chat template: %w", err)
		}
		if p < 0 || p > o {
			return templateSplit{}, calls, fmt.Errorf("promptsize: the chat template puts %d tokens before the content; expected 0 to the overhead of %d", p, o)
		}
		s.prefix = p
	}
	b.mu.Lock()
	b.split, b.have = s, true
	b.mu.Unlock()
	return s, calls, nil
}

// buildChat makes the chat prompt of a valid row.
func (b *BlockBuilder) buildChat(ctx context.Context, hashIDs []int64, inputLength int) (Prompt, error) {
	if b.Counter == nil {
		return Prompt{}, errors.New("promptsize: BlockBuilder.Counter is nil; expected a Counter in BlockChat mode")
	}
	split, calls, err := b.templateSplit(ctx)
	defer func() {
		b.mu.Lock()
		b.calls += int64(calls)
		b.mu.Unlock()
	}()
	if err != nil {
		return Prompt{}, err
	}
	o := split.overhead
	if inputLength < o {
		return Prompt{}, &OverheadError{Target: inputLength, Overhead: o, Template: o}
	}
	tb := b.Blocks
	var buf baseBuf
	bases, coll := tb.rowBases(hashIDs, buf[:0])
	// Row positions [prefix, input−suffix) are the content: the lead word,
	// then the block tokens from prefix+1 on.
	from, end := split.prefix+1, inputLength-(o-split.prefix)
	var sb strings.Builder
	content := func(to int) string {
		if to < from {
			return "" // no content tokens at all: the input is the overhead
		}
		sb.Reset()
		sb.WriteString(tb.leadText)
		tb.appendText(&sb, bases, b.BlockSize, from, to)
		return sb.String()
	}
	var text string
	var msgs []Message
	var counts []int
	count := func(to int) (int, error) {
		text = content(to)
		msgs = requestMessages(b.System, text)
		calls++
		n, err := b.Counter.Count(ctx, msgs)
		if err != nil {
			return 0, fmt.Errorf("promptsize: counting a block prompt of input_length=%d: %w", inputLength, err)
		}
		counts = append(counts, n)
		return n, nil
	}
	// A miss moves the content's end by the difference and counts again.
	to := end
	n, err := count(to)
	for i := 0; err == nil && n != inputLength && i < maxBlockRepairs && to-(n-inputLength) >= from-1; i++ {
		to -= n - inputLength
		n, err = count(to)
	}
	b.mu.Lock()
	b.builds++
	if len(counts) > 0 && counts[0] != inputLength {
		b.fixed++
	}
	b.mu.Unlock()
	if err != nil {
		return Prompt{}, err
	}
	if n != inputLength {
		return Prompt{}, &UnreachableError{Target: inputLength, Tried: []string{
			fmt.Sprintf("hash-id blocks: counts %v, moving the content's end by the miss each time", counts)}}
	}
	repair := ""
	if len(counts) > 1 {
		repair = fmt.Sprintf("the first count was %d; the content's end moved %+d tokens", counts[0], to-end)
	}
	p := Prompt{
		Target:   inputLength,
		Tokens:   n,
		Content:  text,
		Messages: msgs,
		Overhead: o,
		Fill:     b.fill(),
		Units:    len(hashIDs),
		Repair:   repair,
		Calls:    calls,
		Warnings: collisionWarnings(coll),
	}
	if b.Logger != nil {
		b.Logger.LogAttrs(ctx, slog.LevelDebug, "promptsize: built block prompt",
			slog.Int("input_length", inputLength), slog.Int("blocks", len(hashIDs)),
			slog.String("repair", repair), slog.Int("calls", calls))
	}
	return p, nil
}
