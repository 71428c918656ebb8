package metrics

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// BenchmarkParse parses a vLLM /metrics body as Python's prometheus_client
// writes it (testdata/vllm_after.txt): what one scrape costs the client,
// and so what each gauge sample of a run does.
func BenchmarkParse(b *testing.B) {
	body, err := os.ReadFile("testdata/vllm_after.txt")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(bytes.NewReader(body), Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseEightRanks parses a body of eight data-parallel engines'
// series (the golden's series repeated with engine="1" … "7"), the size a
// large vLLM deployment serves.
func BenchmarkParseEightRanks(b *testing.B) {
	body, err := os.ReadFile("testdata/vllm_after.txt")
	if err != nil {
		b.Fatal(err)
	}
	var all strings.Builder
	all.Write(body)
	for r := 1; r < 8; r++ {
		for _, line := range strings.Split(string(body), "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			all.WriteString(strings.Replace(line, `engine="0"`, `engine="`+string(rune('0'+r))+`"`, 1) + "\n")
		}
	}
	big := []byte(all.String())
	if _, err := Parse(bytes.NewReader(big), Options{}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(big)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(bytes.NewReader(big), Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDelta subtracts two scrapes of the golden and reads the figures
// a run's server view takes from them.
func BenchmarkDelta(b *testing.B) {
	read := func(name string) Snapshot {
		body, err := os.ReadFile(name)
		if err != nil {
			b.Fatal(err)
		}
		s, err := Parse(bytes.NewReader(body), Options{})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	before, after := read("testdata/vllm_before.txt"), read("testdata/vllm_after.txt")
	b.ReportAllocs()
	for b.Loop() {
		w, _ := Delta(before, after)
		if h, ok := w.TTFT(); ok {
			h.Quantile(0.99)
		}
	}
}
