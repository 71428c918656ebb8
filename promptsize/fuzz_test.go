package promptsize_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/promptsize"
)

// FuzzBuildCorpus cuts prompts from arbitrary caller corpora (outside
// input): every build is exact, or fails with one of the documented errors.
func FuzzBuildCorpus(f *testing.F) {
	f.Add("The quick brown fox jumps over the lazy dog.", uint16(60), "")
	f.Add("a", uint16(40), "#1")
	f.Add("  lots   of\n\n\nspace\t\there  ", uint16(100), "")
	f.Add("数字 123456789 ünïcödé — emoji 👩‍👩‍👧 done.", uint16(90), "#Z")
	f.Add("no-spaces-at-all-just-one-long-token-ish-thing", uint16(70), "")
	f.Add("\xff\xfe invalid utf8 \xc3", uint16(50), "")
	f.Add(" \n\t", uint16(30), "")
	f.Fuzz(func(t *testing.T, corpus string, target uint16, salt string) {
		c := newMerging()
		b := &promptsize.Builder{Counter: c, Fill: promptsize.FillCorpus, Corpus: corpus}
		pp := int(target % 600)
		p, err := b.BuildSalted(context.Background(), pp, salt)
		if err != nil {
			if errors.Is(err, promptsize.ErrBelowOverhead) || errors.Is(err, promptsize.ErrUnreachable) {
				return
			}
			if strings.TrimSpace(corpus) == "" && strings.Contains(err.Error(), "no words") {
				return
			}
			if strings.Contains(err.Error(), "gave up after") {
				return
			}
			t.Fatalf("pp=%d: unexpected error %v", pp, err)
		}
		got, _ := c.Count(context.Background(), p.Messages)
		if got != pp || p.Tokens != pp {
			t.Fatalf("pp=%d: counted %d, Tokens %d", pp, got, p.Tokens)
		}
		if !strings.HasPrefix(p.Content, salt) {
			t.Fatalf("content %q does not start with salt %q", p.Content, salt)
		}
	})
}

// FuzzBlockRows builds pairs of trace rows from arbitrary ids, lengths and
// block sizes (outside input): a row is refused exactly when its ids do not
// fit its length; a built row has its length, its ids' blocks (a partial
// last block is the start of the full one), and two rows that share k
// leading ids of a prefix-chained trace share exactly k·B leading tokens,
// or all of the shorter row when it has no ids of its own.
func FuzzBlockRows(f *testing.F) {
	f.Add(uint64(0), uint16(16), uint8(3), uint8(2), uint8(5), uint16(70), uint16(40))
	f.Add(uint64(7), uint16(512), uint8(1), uint8(1), uint8(1), uint16(512), uint16(300))
	f.Add(uint64(1), uint16(1), uint8(0), uint8(9), uint8(4), uint16(9), uint16(4))
	f.Add(uint64(3), uint16(0), uint8(1), uint8(1), uint8(1), uint16(1), uint16(1))
	f.Add(uint64(3), uint16(16), uint8(2), uint8(2), uint8(2), uint16(32), uint16(33))
	f.Fuzz(func(t *testing.T, seed uint64, size uint16, shared, na, nb uint8, la, lb uint16) {
		blockSize := int(size % 1024)
		k := int(shared)
		rows := [2]struct {
			ids    []int64
			length int
		}{}
		for i, n := range []uint8{na, nb} {
			ids := make([]int64, max(int(n), k))
			for j := range ids {
				if j < k {
					ids[j] = int64(j) // the shared prefix
				} else {
					ids[j] = int64(1000*(i+1) + j) // each row's own
				}
			}
			rows[i].ids = ids
		}
		rows[0].length, rows[1].length = int(la), int(lb)

		v := newWordVocab(64) // few stable tokens: siblings often redraw
		tb, err := promptsize.NewTokenBlocks(v, promptsize.BlockOptions{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		var got [2][]int
		for i, r := range rows {
			n := len(r.ids)
			ok := blockSize > 0 && n > 0 && r.length > 0 &&
				int64(r.length)-int64(n-1)*int64(blockSize) > 0 && int64(r.length)-int64(n-1)*int64(blockSize) <= int64(blockSize)
			out, err := tb.AppendRow(nil, r.ids, r.length, blockSize)
			if ok != (err == nil) {
				t.Fatalf("row of %d ids, length %d, block %d: err = %v, want ok=%t", n, r.length, blockSize, err, ok)
			}
			if err != nil {
				if !errors.Is(err, promptsize.ErrBlockRow) {
					t.Fatalf("err %v does not wrap ErrBlockRow", err)
				}
				continue
			}
			if len(out) != r.length {
				t.Fatalf("row of length %d has %d tokens", r.length, len(out))
			}
			for j, id := range r.ids {
				blk := out[j*blockSize : min((j+1)*blockSize, r.length)]
				if !slices.Equal(blk, tb.AppendBlock(nil, id, len(blk))) {
					t.Fatalf("block %d (id %d) of the row is not the id's block", j, id)
				}
			}
			again, _ := tb.AppendRow(nil, r.ids, r.length, blockSize)
			if !slices.Equal(out, again) {
				t.Fatal("the same row built twice differs")
			}
			got[i] = out
		}
		if got[0] == nil || got[1] == nil {
			return
		}
		common := 0
		for common < len(got[0]) && common < len(got[1]) && got[0][common] == got[1][common] {
			common++
		}
		want := k * blockSize
		if len(rows[0].ids) == k || len(rows[1].ids) == k {
			want = min(rows[0].length, rows[1].length, want)
		}
		if common != want {
			t.Fatalf("rows of %d and %d ids sharing %d (block %d, lengths %d and %d) share %d tokens, want %d",
				len(rows[0].ids), len(rows[1].ids), k, blockSize, rows[0].length, rows[1].length, common, want)
		}
	})
}
