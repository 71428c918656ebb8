package workload

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
)

// genBailian writes a synthetic Bailian trace of n rows: sessions of one
// to six turns whose follow-ups extend their parent's blocks, inputs
// log-uniform over 50 … 16,000 tokens, chat ids in time order.
func genBailian(n int, seed uint64) []byte {
	const B = DefaultBailianBlock
	rng := rand.New(rand.NewPCG(seed, 43000))
	type open struct {
		id, in, out, turn int
		ids               []int64
	}
	var (
		b    bytes.Buffer
		next int64
		live []open // sessions that may continue
		ts   float64
		num  []byte
	)
	newIDs := func(ids []int64, k int) []int64 {
		for range k {
			ids = append(ids, next)
			next++
		}
		return ids
	}
	for id := range n {
		ts += rng.ExpFloat64() * 0.15
		o := open{id: id, out: rng.IntN(800) + 1, turn: 1}
		parent := -1
		if len(live) > 0 && rng.IntN(3) == 0 {
			j := rng.IntN(len(live))
			p := live[j]
			o.in = min(p.in+p.out+rng.IntN(300)+1, MaxTokens)
			keep := p.in / B
			o.ids = newIDs(append([]int64(nil), p.ids[:keep]...), ceilDiv(o.in, B)-keep)
			o.turn, parent = p.turn+1, p.id
			if o.turn >= 6 {
				live = append(live[:j], live[j+1:]...)
			} else {
				live[j] = o
			}
		} else {
			o.in = int(50 * math.Pow(320, rng.Float64()))
			o.ids = newIDs(nil, ceilDiv(o.in, B))
			if live = append(live, o); len(live) > 200 {
				live = live[1:]
			}
		}
		fmt.Fprintf(&b, `{"chat_id": %d, "parent_chat_id": %d, "timestamp": %.3f, "input_length": %d, "output_length": %d, "type": "text", "turn": %d, "hash_ids": [`,
			id, parent, ts, o.in, o.out, o.turn)
		for k, v := range o.ids {
			if k > 0 {
				b.WriteString(", ")
			}
			num = strconv.AppendInt(num[:0], v, 10)
			b.Write(num)
		}
		b.WriteString("]}\n")
	}
	return b.Bytes()
}

// BenchmarkReadBailian43k reads a 43,000-row Bailian trace: the reader's
// share of building a replay of such a trace.
func BenchmarkReadBailian43k(b *testing.B) {
	data := genBailian(43000, 1)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(data), "bench.jsonl", nil)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for r.Next() {
			n++
		}
		if err := r.Err(); err != nil || n != 43000 {
			b.Fatalf("%d rows, %v", n, err)
		}
	}
	b.ReportMetric(float64(len(data))/43000, "B/row")
}

// BenchmarkReadBurstGPT reads a BurstGPT CSV of 100,000 rows.
func BenchmarkReadBurstGPT(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n")
	rng := rand.New(rand.NewPCG(2, 2))
	for i := range 100000 {
		in, out := rng.IntN(3000)+1, rng.IntN(900)
		fmt.Fprintf(&buf, "%d,ChatGPT,%d,%d,%d,Conversation log\n", i/3, in, out, in+out)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(data), "bench.csv", nil)
		if err != nil {
			b.Fatal(err)
		}
		for r.Next() {
		}
		if err := r.Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// countingReader counts the bytes its reader has given.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// genStream yields a Mooncake trace of about size bytes, line by line,
// without holding it, and records where each line ends.
type genStream struct {
	size, made int64
	line       int
	buf        []byte
	ends       []int64
	rng        *rand.Rand
}

func (g *genStream) Read(p []byte) (int, error) {
	if len(g.buf) == 0 {
		if g.made >= g.size {
			return 0, io.EOF
		}
		in := g.rng.IntN(60000) + 1
		l := []byte(fmt.Sprintf(`{"timestamp": %d, "input_length": %d, "output_length": 7, "hash_ids": [`, g.line*10, in))
		for k := range ceilDiv(in, DefaultMooncakeBlock) {
			if k > 0 {
				l = append(l, ", "...)
			}
			l = strconv.AppendInt(l, int64(g.line*1000+k), 10)
		}
		l = append(l, "]}\n"...)
		g.buf = l
		g.made += int64(len(l))
		g.ends = append(g.ends, g.made)
		g.line++
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}

// TestMemoryFlat reads a generated 50 MB trace and checks that the reader
// never reads more than its buffer ahead of the row it returns, and that
// the heap does not grow with the bytes read.
func TestMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 50 MB")
	}
	g := &genStream{size: 50 << 20, rng: rand.New(rand.NewPCG(3, 3))}
	c := &countingReader{r: g}
	r, err := NewReader(c, "big.jsonl", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak uint64
	rows := 0
	for r.Next() {
		row := r.Row()
		rows++
		if ahead := c.n - g.ends[row.Line-1]; ahead > bufSize {
			t.Fatalf("row %d: the reader is %d bytes ahead of it; want at most %d", rows, ahead, bufSize)
		}
		if rows%20000 == 0 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	// What the test itself holds grows too: g.ends, 8 bytes a row.
	if grown := int64(peak) - int64(base) - int64(8*len(g.ends)); grown > 4<<20 {
		t.Errorf("the heap grew by %d bytes over %d rows (%d MB); want it flat", grown, rows, g.made>>20)
	}
	t.Logf("%d rows, %d MB; heap %d KiB at the start, %d KiB at its peak", rows, g.made>>20, base>>10, peak>>10)
}
