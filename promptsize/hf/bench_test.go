package hf

import (
	"strings"
	"testing"

	"github.com/inferbench/inferbench/promptsize"
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

// BenchmarkCount counts one chat request of about 4,000 tokens (a user
// message of "a "×4000 through the model's template), as a prompt builder
// does on every step of its search.
func BenchmarkCount(b *testing.B) {
	msgs := []promptsize.Message{{Role: "user", Content: strings.Repeat("a ", 4000)}}
	for _, model := range []string{"qwen3", "llama3_1", "gemma3", "deepseek_v3"} {
		tok := loadShared(b, model)
		b.Run("model="+model, func(b *testing.B) {
			var n int
			for b.Loop() {
				var err error
				if n, err = tok.Count(b.Context(), msgs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n), "prompt-tok")
		})
	}
}
