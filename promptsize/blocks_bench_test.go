package promptsize_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/inferbench/inferbench/promptsize"
)

var bailian43k = sync.OnceValue(func() []bailianRow { return bailianRows(43000, 16, 1) })

// BenchmarkBlocksBailian43k builds every prompt of a synthetic 43,000-row
// Bailian trace (bailianRows: 16-token blocks, median input 2,959 tokens,
// 176M tokens in all, 11M block references to 5.2M distinct prefix-chained
// ids) per op, with a sibling index of its own each op (WithSeed), so that
// every op places every id as a first run does:
//
//   - mode=token-ids: BlockBuilder.Build in BlockTokenIDs mode on qwen3's
//     stable tokens, a new []int per row, as a trace driver calls it;
//   - mode=token-ids/api=append: TokenBlocks.AppendRow into one buffer;
//   - mode=chat/model=M/rows=4300: BlockBuilder.Build in BlockChat mode on
//     the trace's first 4,300 rows (a tenth), each prompt counted by model
//     M's tokenizer as loaded by the tests. The Counter is nearly all of
//     the time: one count per row, linear in the row's tokens. hf's piece
//     cache (32,768 pieces by default) is smaller than the stable words a
//     trace draws on; hf.WithCacheSize(1 << 18) makes qwen3's counts about
//     four times faster here.
func BenchmarkBlocksBailian43k(b *testing.B) {
	all := bailian43k()
	ctx := context.Background()
	run := func(b *testing.B, rows []bailianRow, base *promptsize.TokenBlocks, build func(tb *promptsize.TokenBlocks, r bailianRow) error) {
		var tokens int64
		for _, r := range rows {
			tokens += int64(r.length)
		}
		var tb *promptsize.TokenBlocks
		b.ReportAllocs()
		for b.Loop() {
			tb = base.WithSeed(1)
			for _, r := range rows {
				if err := build(tb, r); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(len(rows)), "rows/op")
		b.ReportMetric(float64(tokens), "prompt-tok/op")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(rows)), "ns/row")
		st := tb.Stats()
		b.ReportMetric(float64(st.Indexed), "ids")
		b.ReportMetric(float64(st.IndexEntries), "index-entries")
		b.ReportMetric(float64(st.Redraws), "redraws/op")
	}
	b.Run("mode=token-ids", func(b *testing.B) {
		_, base := realBlocks(b, "qwen3")
		run(b, all, base, func(tb *promptsize.TokenBlocks, r bailianRow) error {
			bl := promptsize.BlockBuilder{Blocks: tb, BlockSize: 16}
			_, err := bl.Build(ctx, r.ids, r.length)
			return err
		})
	})
	b.Run("mode=token-ids/api=append", func(b *testing.B) {
		_, base := realBlocks(b, "qwen3")
		var buf []int
		run(b, all, base, func(tb *promptsize.TokenBlocks, r bailianRow) error {
			var err error
			buf, err = tb.AppendRow(buf[:0], r.ids, r.length, 16)
			return err
		})
	})
	for _, model := range realModels {
		b.Run("mode=chat/model="+model+"/rows=4300", func(b *testing.B) {
			tok, base := realBlocks(b, model)
			var bl *promptsize.BlockBuilder
			run(b, all[:4300], base, func(tb *promptsize.TokenBlocks, r bailianRow) error {
				if bl == nil || bl.Blocks != tb {
					bl = &promptsize.BlockBuilder{Blocks: tb, BlockSize: 16, Mode: promptsize.BlockChat, Counter: tok}
				}
				_, err := bl.Build(ctx, r.ids, r.length)
				return err
			})
			built, fixed := bl.Repairs()
			b.ReportMetric(float64(fixed)/float64(built), "repaired/prompt")
		})
	}
}

// TestBailianRows checks the synthetic trace: valid, prefix-chained rows
// with a median input of a few thousand tokens and heavy reuse of ids.
func TestBailianRows(t *testing.T) {
	n := 43000
	if raceEnabled || testing.Short() {
		n = 4300 // the checks are map-heavy; a tenth shows the shape
	}
	rows := bailianRows(n, 16, 1)
	lengths := make([]int, len(rows))
	parent := map[int64]int64{}
	refs, reused := 0, 0
	for i, r := range rows {
		if err := promptsize.CheckBlockRow(r.ids, r.length, 16); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		lengths[i] = r.length
		prev := int64(-1)
		for _, id := range r.ids {
			refs++
			if p, ok := parent[id]; ok {
				reused++
				if p != prev {
					t.Fatalf("row %d: id %d follows %d here and %d before: not prefix-chained", i, id, prev, p)
				}
			}
			parent[id] = prev
			prev = id
		}
	}
	slices.Sort(lengths)
	med := lengths[len(lengths)/2]
	t.Logf("%d rows, median input %d tokens, %d block references of %d distinct ids (%.0f%% reused)",
		len(rows), med, refs, len(parent), 100*float64(reused)/float64(refs))
	if med < 2000 || med > 5000 || reused*5 < refs {
		t.Errorf("median %d, %d of %d references reused: not the trace the benchmark means", med, reused, refs)
	}
}
