package sim

import (
	"strings"
	"testing"

	"github.com/inferbench/inferbench/internal/testkit"
)

// BenchmarkTokenize measures the built-in tokenizer on a 4096-atom prompt.
func BenchmarkTokenize(b *testing.B) {
	text := strings.Repeat("a ", 4096)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		CountText(text)
	}
}

// BenchmarkBenchRequest measures the sim's own cost per request on the
// fast preset: a 1-token bench request over loopback, whose simulated time
// is about 2 ms (one prefill chunk and one decode step).
func BenchmarkBenchRequest(b *testing.B) {
	s := NewServer(Options{Preset: Fast()})
	defer s.Close()
	body := chatBody(s.Model(), "hello", 1, "")
	for b.Loop() {
		resp, err := testkit.Client.Post(s.URL+"/bench/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
}
