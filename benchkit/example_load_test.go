package benchkit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
	"github.com/inferbench/inferbench/workload"
)

// embedded starts the embedded engine and returns a client of its OpenAI
// dialect (vLLM's API), as a test of one's own harness would: sim.NewServer
// is httptest-style, and any OpenAI-compatible server takes its place.
func embedded() (*openai.Client, *sim.Server) {
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
	if err != nil {
		panic(err)
	}
	return c, srv
}

// An open-loop load: requests of drawn lengths sent as a Poisson process
// at 20 requests per second, each prompt token-exact. A Load streams
// unless NoStream is set, so every request has its TTFT, TPOT and ITL.
func ExampleLoad() {
	ctx := context.Background()
	c, srv := embedded()
	defer srv.Close()
	defer c.CloseIdleConnections()
	l := &benchkit.Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}}
	run, err := l.Run(ctx, benchkit.Lengths{Input: 128, Output: 16}, benchkit.Traffic{Rate: 20, NumRequests: 40}, timing.SLO{})
	if err != nil {
		panic(err)
	}
	timed := 0
	for _, r := range run.Requests {
		if r.TTFTS != nil && r.TPOTS != nil && len(r.ITLS) > 0 {
			timed++
		}
	}
	// The run's summary: s.TTFT, s.TPOT, s.ITL and s.E2E hold the mean
	// and percentiles; s.Client says whether the client kept to the
	// schedule.
	s := run.Summary
	fmt.Printf("%s: %d sent, %d completed, %d with TTFT, TPOT and ITL\n", s.Traffic, s.Requests, s.Completed, timed)
	fmt.Printf("%d prompt tokens (128 each), %d generated\n", s.TotalInputTokens, s.TotalOutputTokens)
	// Output:
	// poisson(rate=20/s): 40 sent, 40 completed, 40 with TTFT, TPOT and ITL
	// 5120 prompt tokens (128 each), 640 generated
}

// A trace replayed at its own timing: each Mooncake row is sent at its
// timestamp, its prompt made of exact token blocks (512 tokens per hash
// id, the same wherever the id recurs), so the server's prefix cache sees
// exactly the sharing the trace holds.
func ExampleLoad_replay() {
	ctx := context.Background()
	const trace = `{"timestamp": 0, "input_length": 600, "output_length": 8, "hash_ids": [0, 1]}
{"timestamp": 40, "input_length": 700, "output_length": 8, "hash_ids": [0, 2]}
{"timestamp": 80, "input_length": 300, "output_length": 8, "hash_ids": [3]}
{"timestamp": 120, "input_length": 1100, "output_length": 8, "hash_ids": [0, 1, 4]}
`
	rd, err := workload.NewReader(strings.NewReader(trace), "mooncake.jsonl", nil)
	if err != nil {
		panic(err)
	}
	var rows []workload.Row
	for rd.Next() {
		rows = append(rows, rd.Row())
	}
	if err := rd.Err(); err != nil {
		panic(err)
	}
	c, srv := embedded()
	defer srv.Close()
	defer c.CloseIdleConnections()
	blocks, err := promptsize.NewTokenBlocks(sim.Counter{}, promptsize.BlockOptions{Seed: 1}) // the vocabulary the embedded engine counts with
	if err != nil {
		panic(err)
	}
	tr := benchkit.Trace{Name: "mooncake.jsonl", Rows: rows, BlockSize: rd.BlockSize(), Blocks: blocks}
	l := &benchkit.Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}}
	run, err := l.Run(ctx, tr, benchkit.Traffic{Replay: true}, timing.SLO{})
	if err != nil {
		panic(err)
	}
	for _, r := range run.Requests {
		fmt.Printf("row %d: meant for %3.0f ms, %4d prompt tokens (the server counted %d), TTFT measured %t\n",
			r.Index, r.IntendedSendS*1000, r.PPTokens, *r.ServerPromptTokens, r.TTFTS != nil)
	}
	fmt.Printf("%s: theoretical prefix hit rate %.3f\n", run.Summary.Traffic, *run.Summary.TheoreticalHitRate)
	// Output:
	// row 0: meant for   0 ms,  600 prompt tokens (the server counted 600), TTFT measured true
	// row 1: meant for  40 ms,  700 prompt tokens (the server counted 700), TTFT measured true
	// row 2: meant for  80 ms,  300 prompt tokens (the server counted 300), TTFT measured true
	// row 3: meant for 120 ms, 1100 prompt tokens (the server counted 1100), TTFT measured true
	// replay: theoretical prefix hit rate 0.569
}

// Multi-turn chats: each turn goes after the previous reply, with the
// reply in its history and the whole history counted, so every turn's
// prompt is exact and a prefix cache can serve what earlier turns sent.
func ExampleSessions() {
	ctx := context.Background()
	c, srv := embedded()
	defer srv.Close()
	defer c.CloseIdleConnections()
	s := &benchkit.Sessions{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()},
		Count: 2, Turns: 3, UserTokens: 64, Output: 16}
	rows, err := s.Run(ctx)
	if err != nil {
		panic(err)
	}
	for _, r := range rows {
		fmt.Printf("session %d turn %d: %3d prompt tokens, %d of them history, TTFT measured %t\n",
			slices.Index(sessionIDs(rows), r.Session), r.Turn, r.PPTokens, s.HistoryTokens(r), r.TTFTS != nil)
	}
	// One summary per turn: how TTFT grows with the history.
	for _, sum := range benchkit.Summarize(rows, benchkit.ByTurn, timing.SLO{}) {
		fmt.Printf("%s: %d completed, TTFT p50 measured %t\n", sum.Name(), sum.Completed, sum.TTFT.P50 != nil)
	}
	// Output:
	// session 0 turn 1:  64 prompt tokens, 0 of them history, TTFT measured true
	// session 0 turn 2: 149 prompt tokens, 85 of them history, TTFT measured true
	// session 0 turn 3: 234 prompt tokens, 170 of them history, TTFT measured true
	// session 1 turn 1:  64 prompt tokens, 0 of them history, TTFT measured true
	// session 1 turn 2: 149 prompt tokens, 85 of them history, TTFT measured true
	// session 1 turn 3: 234 prompt tokens, 170 of them history, TTFT measured true
	// turn=1: 2 completed, TTFT p50 measured true
	// turn=2: 2 completed, TTFT p50 measured true
	// turn=3: 2 completed, TTFT p50 measured true
}

// sessionIDs lists the rows' sessions in the order they first come.
func sessionIDs(rows []benchkit.Request) []string {
	var ids []string
	for _, r := range rows {
		if !slices.Contains(ids, r.Session) {
			ids = append(ids, r.Session)
		}
	}
	return ids
}

// Summaries are groupings of the one record: a rate sweep's requests,
// each labelled with its run and rate, summarised per run, and judged
// against an SLO (goodput: the requests that met every objective).
func ExampleSummarize() {
	ctx := context.Background()
	c, srv := embedded()
	defer srv.Close()
	defer c.CloseIdleConnections()
	l := &benchkit.Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}}
	runs, err := l.Sweep(ctx, benchkit.Lengths{Input: 96, Output: 8}, benchkit.Traffic{NumRequests: 6}, []float64{20, 40}, timing.SLO{})
	if err != nil {
		panic(err)
	}
	var rows []benchkit.Request // as a JSONL file of the sweep would give them back
	for _, run := range runs {
		rows = append(rows, run.Requests...)
	}
	slo := timing.SLO{TTFT: 10 * time.Second}
	for _, s := range benchkit.Summarize(rows, benchkit.ByRun, slo) {
		fmt.Printf("%s at %g/s: %d completed, TTFT mean measured %t, goodput judged over %d (%s)\n",
			s.Name(), *s.Labels.Rate, s.Completed, s.TTFT.Mean != nil, s.Goodput.Total, s.Goodput.SLO)
	}
	// Output:
	// run=0 at 20/s: 6 completed, TTFT mean measured true, goodput judged over 6 (ttft≤10s)
	// run=1 at 40/s: 6 completed, TTFT mean measured true, goodput judged over 6 (ttft≤10s)
}

// The results document of a load test, as serve-load's --json-out writes
// it: a sweep puts each run, its summary and its requests, under "runs".
func ExampleLoad_Document() {
	ctx := context.Background()
	c, srv := embedded()
	defer srv.Close()
	defer c.CloseIdleConnections()
	l := &benchkit.Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}}
	doc, err := l.Document(ctx, benchkit.LoadMeta{}, benchkit.LoadPlan{
		Workload: benchkit.Lengths{Input: 96, Output: 8},
		Traffic:  benchkit.Traffic{NumRequests: 4},
		Rates:    []float64{20, 40},
	})
	if err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	if err := benchkit.WriteJSON(&buf, doc); err != nil {
		panic(err)
	}
	var file struct {
		Meta map[string]any `json:"meta"`
		Runs []struct {
			Summary  map[string]any   `json:"summary"`
			Requests []map[string]any `json:"requests"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(buf.Bytes(), &file); err != nil {
		panic(err)
	}
	fmt.Printf("meta: rates %v, stream %v, has lengths and traffic: %t\n", file.Meta["rates"], file.Meta["stream"], hasAll(file.Meta, "lengths", "traffic"))
	for i, run := range file.Runs {
		fmt.Printf("run %d: %d requests, summary has ttft_s, goodput, client_health: %t\n",
			i, len(run.Requests), hasAll(run.Summary, "ttft_s", "goodput", "client_health"))
	}
	// Output:
	// meta: rates [20 40], stream true, has lengths and traffic: true
	// run 0: 4 requests, summary has ttft_s, goodput, client_health: true
	// run 1: 4 requests, summary has ttft_s, goodput, client_health: true
}

// hasAll reports whether m has every key.
func hasAll(m map[string]any, keys ...string) bool {
	have := slices.Collect(maps.Keys(m))
	for _, k := range keys {
		if !slices.Contains(have, k) {
			return false
		}
	}
	return true
}
