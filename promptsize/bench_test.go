package promptsize_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/inferbench/inferbench/promptsize"
)

// BenchmarkBuild measures counter calls and time per Build beside exo's
// binary search (ExoSearch) on the same fake tokenizers:
//
//   - method=builder-cold: a new Builder per build, so the template overhead
//     is measured and nothing is remembered (the fair comparison with exo);
//   - method=builder-warm: one Builder, the cache off, building the same
//     target again with the overhead and tokens per atom remembered;
//   - method=builder-salted: one Builder, a new salt per build (one per
//     request of a burst);
//   - method=exo: ExoSearch, its base measurement included.
func BenchmarkBuild(b *testing.B) {
	fakes := []struct {
		name string
		new  func() *fakeTokenizer
	}{{"bpe", newBPE}, {"merging", newMerging}}
	for _, fake := range fakes {
		for _, pp := range []int{512, 4096, 32768} {
			for _, fill := range []promptsize.Fill{promptsize.FillAtoms, promptsize.FillCorpus} {
				name := fmt.Sprintf("tok=%s/fill=%s/pp=%d", fake.name, fill, pp)
				b.Run(name+"/method=builder-cold", func(b *testing.B) {
					c := fake.new()
					for b.Loop() {
						bl := &promptsize.Builder{Counter: c, Fill: fill}
						if _, err := bl.Build(context.Background(), pp); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(c.calls.Load())/float64(b.N), "calls/op")
				})
				b.Run(name+"/method=builder-warm", func(b *testing.B) {
					c := fake.new()
					bl := &promptsize.Builder{Counter: c, Fill: fill, CacheSize: -1}
					if _, err := bl.Build(context.Background(), pp); err != nil {
						b.Fatal(err)
					}
					c.calls.Store(0)
					for b.Loop() {
						if _, err := bl.Build(context.Background(), pp); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(c.calls.Load())/float64(b.N), "calls/op")
				})
				b.Run(name+"/method=builder-salted", func(b *testing.B) {
					c := fake.new()
					bl := &promptsize.Builder{Counter: c, Fill: fill, CacheSize: -1}
					if _, err := bl.Build(context.Background(), pp); err != nil {
						b.Fatal(err)
					}
					c.calls.Store(0)
					i := 0
					for b.Loop() {
						i++
						if _, err := bl.BuildSalted(context.Background(), pp, promptsize.Salt(i)); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(c.calls.Load())/float64(b.N), "calls/op")
				})
				if fill != promptsize.FillAtoms {
					continue // exo has no corpus fill
				}
				b.Run(name+"/method=exo", func(b *testing.B) {
					c := fake.new()
					for b.Loop() {
						if _, err := promptsize.ExoSearch(context.Background(), c, pp, "a "); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(c.calls.Load())/float64(b.N), "calls/op")
				})
			}
		}
	}
}
