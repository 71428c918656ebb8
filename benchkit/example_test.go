package benchkit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/hf"
	"github.com/inferbench/inferbench/timing"
)

// The README's library example: measure the embedded engine's exo API
// with prompts counted by a real tokenizer (here a small one in testdata;
// hf.Load takes any Hugging Face model directory). The sim counts with the
// same tokenizer (sim.Options.Counter), as a real engine counts with its
// own, so the server's prompt counts match the client's and no row warns
// of a mismatch.
func ExampleRunner() {
	ctx := context.Background()
	tok, err := hf.Load("testdata/tiny-model") // the model's tokenizer.json and tokenizer_config.json
	if err != nil {
		panic(err)
	}
	srv := sim.NewServer(sim.Options{Preset: sim.Fast(), Counter: tok}) // or any exo cluster / OpenAI server
	defer srv.Close()
	eng, err := exo.New(srv.URL, nil)
	if err != nil {
		panic(err)
	}
	r := &benchkit.Runner{Engine: eng, Model: srv.Model(),
		Builder: &promptsize.Builder{Counter: tok}, Simulated: true}
	rep, err := r.Run(ctx, benchkit.Plan{PP: []int{512}, TG: []int{64}, Concurrency: []int{1, 8}, Repeat: 3})
	if err != nil {
		panic(err)
	}
	exact, warned := 0, 0
	for _, row := range rep.Requests {
		if row.PPTokens == 512 && row.Stats.PromptTokens == 512 && row.Stats.GenerationTokens == 64 {
			exact++
		}
		if len(row.Warnings) > 0 {
			warned++
		}
	}
	fmt.Printf("%d rows, %d exact, %d with warnings, %d cells, %d failed\n", len(rep.Requests), exact, warned, len(rep.Cells()), rep.Failed())
	// Output:
	// 27 rows, 27 exact, 0 with warnings, 2 cells, 0 failed
}

// One burst in one call: four token-exact prompts sent to the embedded
// engine over prewarmed connections, released at one instant.
func ExampleSendPrompts() {
	ctx := context.Background()
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer srv.Close()
	eng, err := exo.New(srv.URL, nil)
	if err != nil {
		panic(err)
	}
	b := &promptsize.Builder{Counter: srv.Counter()}
	prompts := make([]promptsize.Prompt, 4)
	for i := range prompts {
		if prompts[i], err = b.BuildSalted(ctx, 512, promptsize.Salt(i)); err != nil {
			panic(err)
		}
	}
	br, err := benchkit.SendPrompts(ctx, eng, srv.Model(), 64, prompts, nil)
	if err != nil {
		panic(err)
	}
	for i, q := range br.Requests {
		// Each is the record every driver writes: TTFTS, TPOTS, E2ES,
		// the per-token gaps, the server's counts, the error if any.
		fmt.Printf("request %d: %d tokens, TTFT measured: %t\n", i, q.Tokens(), q.TTFTS != nil)
	}
	// br.Skew.Max is the spread of the send instants.
	fmt.Printf("prewarmed %t, %d failed, %d tokens, %d warnings\n", br.Prewarmed, br.Stats.Failed, br.Stats.TotalTokens, len(br.Warnings))
	// Output:
	// request 0: 64 tokens, TTFT measured: true
	// request 1: 64 tokens, TTFT measured: true
	// request 2: 64 tokens, TTFT measured: true
	// request 3: 64 tokens, TTFT measured: true
	// prewarmed true, 0 failed, 256 tokens, 0 warnings
}

// The burst SendPrompts sends, wired by hand for a harness that must do
// its own work between the steps: open the connections (engine.Prewarmer),
// ready every request before the barrier (engine.Prepare inside
// concurrency.BurstOptions.Prepare), let each send mark the instant its
// bytes leave (engine.WithSendHook), and release them (concurrency.Burst).
func Example_handWiredBurst() {
	ctx := context.Background()
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer srv.Close()
	eng, err := exo.New(srv.URL, nil)
	if err != nil {
		panic(err)
	}
	b := &promptsize.Builder{Counter: srv.Counter()}
	const n = 4
	reqs := make([]engine.Request, n)
	for i := range reqs {
		p, err := b.BuildSalted(ctx, 512, promptsize.Salt(i))
		if err != nil {
			panic(err)
		}
		// engine.Message is promptsize.Message: the prompt's turns go in whole.
		reqs[i] = engine.Request{Model: srv.Model(), Messages: p.Messages, MaxTokens: 64, IgnoreEOS: true, Stream: true}
	}
	if err := eng.Prewarm(ctx, n); err != nil { // without it, each request dials inside the burst
		panic(err)
	}
	prepared := make([]engine.Prepared, n)
	opts := &concurrency.BurstOptions{Prepare: func(ctx context.Context, i int) error {
		var err error
		prepared[i], err = engine.Prepare(ctx, eng, reqs[i])
		return err
	}}
	br := concurrency.Burst(ctx, n, func(ctx context.Context, i int, mark func(time.Time)) (engine.Result, error) {
		return prepared[i].Send(engine.WithSendHook(ctx, mark))
	}, opts)
	agg := make([]timing.BurstRequest, n)
	for i, q := range br.Requests {
		m, err := q.Value.Trace.Metrics()
		if agg[i].Failed = q.Err != nil || err != nil; !agg[i].Failed {
			agg[i] = timing.BurstRequest{Tokens: m.Tokens, GenerationTPS: m.GenerationTPS, RateDefined: m.GenerationTPSDefined}
		}
	}
	st := timing.AggregateBurst(agg, br.Wall)
	// br.Skew is the dispatch skew; st.ThroughputTPS is Σ tokens / wall.
	fmt.Printf("%d dispatched, %d failed, %d tokens\n", br.Dispatched, st.Failed, st.TotalTokens)
	// Output:
	// 4 dispatched, 0 failed, 256 tokens
}
