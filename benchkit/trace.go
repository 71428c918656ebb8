package benchkit

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/workload"
)

// A Trace is the Workload of a trace or dataset file (package workload
// reads them): request i is row i, sent at the row's own instant when the
// traffic replays it (Traffic.Replay), and every prompt is exact:
//
//   - a row with hash ids (Mooncake, Bailian) is made of exact token
//     blocks (promptsize.BlockBuilder): each id becomes BlockSize tokens,
//     the same wherever the id recurs and different for different ids, so
//     the server's prefix cache sees exactly the sharing the trace holds;
//   - a row with a length only (BurstGPT, Azure) is a salted exact prompt
//     of that length, as Lengths builds, sharing nothing;
//   - a row with messages (ShareGPT, JSONL) sends them as they are,
//     counted as the engine counts them.
//
// With Completions the block and length rows go as token ids to a
// completions endpoint (engine.Prompt), exact with no re-tokenization;
// otherwise as chat messages whose count after the chat template is exact,
// the template's own tokens counted in the first block.
type Trace struct {
	// Name names the trace in results (its file).
	Name string
	// Rows are the trace's requests, in order.
	Rows []workload.Row
	// BlockSize is the tokens per hash id (workload.Reader.BlockSize).
	BlockSize int
	// Blocks maps hash ids to tokens; required for rows with hash ids,
	// and for length rows with Completions. Each run of a Load draws its
	// blocks with a seed of its own (the run's nonce and index), so that
	// no run hits what an earlier one left in the server's cache.
	Blocks *promptsize.TokenBlocks
	// Completions sends token ids instead of chat messages.
	Completions bool
	// Output is the max_tokens of rows that give no output length; 0
	// means 128.
	Output int
}

// Len is the number of requests: one per row.
func (t Trace) Len() int { return len(t.Rows) }

// Requests builds requests own of the trace: Workload's method. n may be
// at most the number of rows.
func (t Trace) Requests(ctx context.Context, b *promptsize.Builder, n int, own []int, salt func(int) string) ([]Item, error) {
	if n > len(t.Rows) {
		return nil, fmt.Errorf("%w: the schedule holds %d requests and the trace %s %d rows", ErrBadLoad, n, t.Name, len(t.Rows))
	}
	bb := t.builder(b, salt)
	items := make([]Item, len(own))
	for j, i := range own {
		row := t.Rows[i]
		it, err := t.item(ctx, b, bb, row, i, salt)
		if err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %w", ErrBadLoad, t.Name, row.Line, err)
		}
		if row.Timed() {
			at := row.At
			it.At = &at
		}
		it.MaxTokens = row.Output
		if it.MaxTokens == 0 {
			it.MaxTokens = max(t.Output, 0)
			if it.MaxTokens == 0 {
				it.MaxTokens = 128
			}
		}
		it.Labels = Labels{Session: row.Session, Turn: row.Turn}
		items[j] = it
	}
	return items, nil
}

// builder is the block builder of one run: its blocks drawn with the
// run's own seed.
func (t Trace) builder(b *promptsize.Builder, salt func(int) string) *promptsize.BlockBuilder {
	if t.Blocks == nil {
		return nil
	}
	blocks := t.Blocks
	if salt != nil {
		h := fnv.New64a()
		h.Write([]byte(salt(0)))
		blocks = blocks.WithSeed(t.Blocks.Seed() ^ h.Sum64())
	}
	mode := promptsize.BlockChat
	if t.Completions {
		mode = promptsize.BlockTokenIDs
	}
	return &promptsize.BlockBuilder{Blocks: blocks, BlockSize: t.BlockSize, Mode: mode, Counter: b.Counter, System: b.System}
}

// lengthIDBase is where the ids of the blocks of length-only rows start,
// far above any trace's own: row i's blocks are lengthIDBase + i·2²⁰ + k.
const lengthIDBase = int64(1) << 50

// item builds row i's prompt.
func (t Trace) item(ctx context.Context, b *promptsize.Builder, bb *promptsize.BlockBuilder, row workload.Row, i int, salt func(int) string) (Item, error) {
	switch {
	case len(row.HashIDs) > 0:
		if bb == nil {
			return Item{}, errors.New("the row has hash ids and the trace no Blocks to make them of")
		}
		p, err := bb.Build(ctx, row.HashIDs, row.Input)
		return Item{Prompt: p, PPTarget: row.Input}, err
	case len(row.Messages) > 0:
		if t.Completions {
			return Item{}, errors.New("a row of chat messages goes to a chat endpoint, not to completions")
		}
		msgs := make([]promptsize.Message, len(row.Messages))
		for k, m := range row.Messages {
			msgs[k] = promptsize.Message{Role: m.Role, Content: m.Content}
		}
		n, err := b.Counter.Count(ctx, msgs)
		return Item{Prompt: promptsize.Prompt{Messages: msgs, Tokens: n}, PPTarget: n}, err
	case t.Completions:
		if bb == nil {
			return Item{}, errors.New("token ids need the trace's Blocks")
		}
		ids := make([]int64, (row.Input+t.BlockSize-1)/max(t.BlockSize, 1))
		for k := range ids {
			ids[k] = lengthIDBase + int64(i)<<20 + int64(k)
		}
		p, err := bb.Build(ctx, ids, row.Input)
		return Item{Prompt: p, PPTarget: row.Input}, err
	}
	s := ""
	if salt != nil {
		s = salt(i)
	}
	p, err := b.BuildSalted(ctx, row.Input, s)
	return Item{Prompt: p, PPTarget: row.Input}, err
}

// MinInput is the shortest input a row of the trace can be built to with
// b: the tokens of the request with empty content (the chat template's
// own and b's system prompt) for a row of hash ids, and for a row of a
// length only, which is salted, those of the request whose content is
// salt alone (give the longest salt of the run). Rows that carry messages,
// and every row with Completions (token ids, no template), have no bound
// (0). A shorter row cannot be built (promptsize.ErrBelowOverhead); drop
// such rows before the run (workload.DropUnder) rather than have them
// refuse it.
func (t Trace) MinInput(ctx context.Context, b *promptsize.Builder, salt string) (int, error) {
	if t.Completions || len(t.Rows) == 0 || t.Rows[0].Input == 0 {
		return 0, nil
	}
	content := ""
	if len(t.Rows[0].HashIDs) == 0 && salt != "" {
		content = salt + "\n" // as Builder.BuildSalted puts it
	}
	msgs := []promptsize.Message{{Role: "user", Content: content}}
	if b.System != "" {
		msgs = append([]promptsize.Message{{Role: "system", Content: b.System}}, msgs...)
	}
	n, err := b.Counter.Count(ctx, msgs)
	if err != nil {
		return 0, fmt.Errorf("benchkit: count the chat template's overhead for %s: %w", t.Name, err)
	}
	return n, nil
}

// TheoreticalHitRate is the prefix hit rate the trace's hash ids allow
// its requests own (workload.PrefixHitRate): shared leading blocks over
// input tokens; ok is false for a trace without hash ids.
func (t Trace) TheoreticalHitRate(own []int) (float64, bool) {
	rows := make([]workload.Row, 0, len(own))
	for _, i := range own {
		if i < len(t.Rows) {
			rows = append(rows, t.Rows[i])
		}
	}
	if len(rows) == 0 || len(rows[0].HashIDs) == 0 {
		return 0, false
	}
	rate, _, _ := workload.PrefixHitRate(rows, t.BlockSize)
	return rate, true
}

// MarshalJSON describes the trace in results (a load test's meta, its
// plan hash): its name, size, block size, endpoint and a hash of its rows,
// not the rows.
func (t Trace) MarshalJSON() ([]byte, error) {
	h := sha256.New()
	var buf [8]byte
	for _, r := range t.Rows {
		for _, v := range []int64{int64(r.At), int64(r.Input), int64(r.Output), int64(len(r.HashIDs))} {
			binary.LittleEndian.PutUint64(buf[:], uint64(v))
			h.Write(buf[:])
		}
		for _, id := range r.HashIDs {
			binary.LittleEndian.PutUint64(buf[:], uint64(id))
			h.Write(buf[:])
		}
		for _, m := range r.Messages {
			fmt.Fprintf(h, "%d:%s%d:%s", len(m.Role), m.Role, len(m.Content), m.Content)
		}
	}
	return json.Marshal(struct {
		Trace       string `json:"trace"`
		Rows        int    `json:"rows"`
		BlockSize   int    `json:"block_size,omitempty"`
		Completions bool   `json:"completions,omitempty"`
		Output      int    `json:"default_output,omitempty"`
		SHA256      string `json:"rows_sha256"`
	}{t.Name, len(t.Rows), t.BlockSize, t.Completions, t.Output, hex.EncodeToString(h.Sum(nil))})
}
