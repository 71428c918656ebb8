package engine_test

import (
	"strings"
	"testing"

	"github.com/inferbench/inferbench/engine"
)

// benchChunk is a typical exo content chunk.
const benchChunk = `data: {"id":"3f7e2a64-1c1b-4a8e-9d1e-5e0c2b8a9f10","object":"chat.completion","created":1767225603,"model":"mlx-community/Llama-3.2-1B-Instruct-4bit","choices":[{"index":0,"delta":{"role":"assistant","content":" a"}}]}` + "\n\n"

// cyclicReader serves an endless stream of events, perRead of them per
// Read call (as a socket delivers a server's writes).
type cyclicReader struct {
	block []byte // perRead events
	off   int
}

func newCyclicReader(perRead int) *cyclicReader {
	return &cyclicReader{block: []byte(strings.Repeat(benchChunk, perRead))}
}

func (r *cyclicReader) Read(p []byte) (int, error) {
	n := copy(p, r.block[r.off:])
	r.off += n
	if r.off == len(r.block) {
		r.off = 0
	}
	return n, nil
}

// BenchmarkSSEReader measures one event per op: ns/op is ns/event and
// allocs/op is allocs/event.
func BenchmarkSSEReader(b *testing.B) {
	for _, tc := range []struct {
		name    string
		perRead int
	}{{"events_per_read=1", 1}, {"events_per_read=64", 64}} {
		b.Run(tc.name, func(b *testing.B) {
			sr := engine.NewSSEReader(newCyclicReader(tc.perRead), nil)
			b.SetBytes(int64(len(benchChunk)))
			b.ReportAllocs()
			for b.Loop() {
				if !sr.Next() {
					b.Fatal(sr.Err())
				}
			}
		})
	}
}

func TestSSEReaderSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	for _, perRead := range []int{1, 3, 64} {
		sr := engine.NewSSEReader(newCyclicReader(perRead), nil)
		for range 10 { // let the buffers grow
			sr.Next()
		}
		allocs := testing.AllocsPerRun(1000, func() {
			if !sr.Next() || sr.Event().Type != engine.EventData {
				t.Fatal("no data event", sr.Err())
			}
		})
		if allocs != 0 {
			t.Errorf("%d events per read: %v allocations per event, want 0", perRead, allocs)
		}
	}
}
