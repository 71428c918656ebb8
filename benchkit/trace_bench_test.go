package benchkit

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
	"github.com/inferbench/inferbench/workload"
)

// bailian43kFile is a synthetic Bailian-format trace of 43,000 rows (the
// size of the public qwen_traceA's), 16-token blocks: sessions of 1 to 6
// turns, each turn's prompt its parent's ids and new ones (the trace's
// self-contained rows), inputs of about 100 to 8,000 tokens.
var bailian43kFile = sync.OnceValue(func() []byte {
	src := rand.New(rand.NewPCG(43, 0))
	var buf bytes.Buffer
	next := int64(0)
	var parentIDs []int64
	parent, turn := -1, 0
	for i := range 43000 {
		if turn == 0 || src.IntN(3) == 0 || len(parentIDs) > 480 {
			parentIDs, parent, turn = nil, -1, 0
		}
		turn++
		add := 6 + src.IntN(min(40*turn, 200))
		ids := append([]int64(nil), parentIDs...)
		for range add {
			ids = append(ids, next)
			next++
		}
		input := (len(ids)-1)*16 + 1 + src.IntN(16)
		fmt.Fprintf(&buf, `{"chat_id": %d, "parent_chat_id": %d, "timestamp": %.3f, "input_length": %d, "output_length": %d, "type": "text", "turn": %d, "hash_ids": [`,
			i, parent, float64(i)*0.167, input, 20+src.IntN(400), turn)
		for k, id := range ids {
			if k > 0 {
				buf.WriteString(", ")
			}
			fmt.Fprint(&buf, id)
		}
		buf.WriteString("]}\n")
		parentIDs, parent = ids, i
	}
	return buf.Bytes()
})

// BenchmarkTraceBailian43k reads a 43,000-row Bailian-format trace and
// builds every request's prompt, as token ids for a completions endpoint
// (exact token blocks over the embedded engine's vocabulary), per op: what
// a replay does before it sends anything.
func BenchmarkTraceBailian43k(b *testing.B) {
	data := bailian43kFile()
	ctx := context.Background()
	base, err := promptsize.NewTokenBlocks(sim.Counter{}, promptsize.BlockOptions{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	builder := &promptsize.Builder{Counter: sim.Counter{}}
	var tokens int
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		rows, _, err := workload.ReadAll(bytes.NewReader(data), "bailian43k.jsonl", nil)
		if err != nil {
			b.Fatal(err)
		}
		tr := Trace{Rows: rows, BlockSize: 16, Blocks: base.WithSeed(2), Completions: true}
		own := make([]int, len(rows))
		for i := range own {
			own[i] = i
		}
		items, err := tr.Requests(ctx, builder, len(rows), own, nil)
		if err != nil {
			b.Fatal(err)
		}
		tokens = 0
		for _, it := range items {
			tokens += len(it.Prompt.TokenIDs)
		}
	}
	b.ReportMetric(43000, "rows/op")
	b.ReportMetric(float64(tokens), "prompt-tok/op")
}

// BenchmarkReplay1000At100 replays 1,000 rows of a trace at 100 requests/s
// against the embedded engine (token ids on completions, 32 tokens out)
// and reports the schedule lag's p99 and max: how late the client sent
// each request against its row's instant.
func BenchmarkReplay1000At100(b *testing.B) {
	rows, _, err := workload.ReadAll(bytes.NewReader(bailian43kFile()), "bailian43k.jsonl", &workload.Options{Limit: 1000})
	if err != nil {
		b.Fatal(err)
	}
	for i := range rows {
		rows[i].At, rows[i].Output = time.Duration(i)*10*time.Millisecond, 32 // 100 requests/s
	}
	blocks, err := promptsize.NewTokenBlocks(sim.Counter{}, promptsize.BlockOptions{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
		c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
		if err != nil {
			b.Fatal(err)
		}
		l := &Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}, GCPercent: 400, Clock: concurrency.SpinClock{}}
		run, err := l.Run(context.Background(), Trace{Rows: rows, BlockSize: 16, Blocks: blocks, Completions: true}, Traffic{Replay: true}, timing.SLO{})
		c.CloseIdleConnections()
		srv.Close()
		if err != nil {
			b.Fatal(err)
		}
		s := run.Summary
		if s.Failed > 0 {
			b.Fatalf("%d failed", s.Failed)
		}
		b.ReportMetric(*s.ScheduleLag.P99*1e3, "lag-p99-ms")
		b.ReportMetric(*s.ScheduleLag.Max*1e3, "lag-max-ms")
		b.ReportMetric(*s.TheoreticalHitRate, "hit-theory")
		if s.PrefixHitRate != nil {
			b.ReportMetric(*s.PrefixHitRate, "hit-server")
		}
	}
}
