package hf

import (
	"testing"
)

// BenchmarkEncodeCorpus encodes the 200 KB golden corpus. "cold" empties the
// piece cache before every run (what a first call costs, and what
// scripts/node/speed.mjs measures for the JavaScript reference); "warm"
// keeps it; "off" runs without a cache (every piece merged anew). Run with
// -cpu 1 for the single-core figure.
func BenchmarkEncodeCorpus(b *testing.B) {
	corpus := readCorpus(b)
	for _, model := range goldenModels {
		tok := loadShared(b, model)
		n := len(tok.Encode(corpus))
		for _, mode := range []string{"cold", "warm", "off"} {
			b.Run("model="+model+"/cache="+mode, func(b *testing.B) {
				b.SetBytes(int64(len(corpus)))
				saved := tok.cache
				defer func() { tok.cache = saved }()
				if mode == "off" {
					tok.cache = nil
				}
				for b.Loop() {
					if mode == "cold" {
						b.StopTimer()
						tok.cache = newPieceCache(DefaultCacheSize)
						b.StartTimer()
					}
					tok.CountText(corpus)
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
			})
		}
	}
}
