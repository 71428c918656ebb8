package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		return benchkit.Usagef("custom-harness takes no arguments, got %q: edit the constants", args)
	}
	const n, pp, tg = 4, 512, 64
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer srv.Close()
	fmt.Fprintf(stderr, "custom-harness: measuring the embedded simulated engine at %s; figures are simulated\n", srv.URL)
	eng, err := exo.New(srv.URL, nil)
	b, preps, p := &promptsize.Builder{Counter: srv.Counter()}, make([]engine.Prepared, n), promptsize.Prompt{}
	for i := 0; i < n && err == nil; i++ { // prompts built and bodies encoded before the burst, never inside it
		if p, err = b.BuildSalted(ctx, pp, promptsize.Salt(i)); err == nil {
			preps[i], err = engine.Prepare(ctx, eng, engine.Request{Model: srv.Model(), Messages: []engine.Message{engine.Message(p.Messages[0])}, MaxTokens: tg, IgnoreEOS: true, Stream: true})
		}
	}
	sampler, serr := energy.NewSampler([]energy.Source{eng.PowerSource()}, energy.WithInterval(energy.MinInterval))
	if err = errors.Join(err, serr); err != nil || sampler.Start(ctx) != nil {
		return fmt.Errorf("set up: %w", err)
	}
	br := concurrency.Burst(ctx, n, func(ctx context.Context, i int, mark func(time.Time)) (engine.Result, error) {
		return preps[i].Send(engine.WithSendHook(ctx, mark))
	}, nil)
	rec, agg := sampler.Stop(), make([]timing.BurstRequest, n)
	for i, q := range br.Requests {
		m, merr := q.Value.Trace.Metrics()
		if agg[i].Failed = q.Err != nil || merr != nil; agg[i].Failed {
			fmt.Fprintf(stdout, "request %d failed: %v\n", i, errors.Join(q.Err, merr))
			continue
		}
		agg[i] = timing.BurstRequest{Tokens: m.Tokens, GenerationTPS: m.GenerationTPS, RateDefined: m.GenerationTPSDefined}
		fmt.Fprintf(stdout, "request %d: TTFT %v, TPOT %v, %.0f tok/s (simulated)\n", i, m.TTFT.Round(time.Microsecond), m.TPOT.Round(time.Microsecond), m.GenerationTPS)
	}
	st := timing.AggregateBurst(agg, br.Wall)
	fmt.Fprintf(stdout, "burst of %d: Σ tokens / wall %.0f tok/s, exo's max×N %.0f tok/s, skew %v (simulated)\n", n, st.ThroughputTPS, st.ExoAggregateTPS, br.Skew.Max)
	rep, err := energy.Measure(energy.Run{Window: energy.Window{Start: br.Start, End: br.Start.Add(br.Wall)}, GeneratedTokens: st.TotalTokens}, rec.Power(), nil)
	if err == nil && st.Failed > 0 {
		err = fmt.Errorf("%w: %d of %d", benchkit.ErrRequestsFailed, st.Failed, n)
	}
	fmt.Fprintf(stdout, "energy: %.3f J on %d nodes, %.5f J/token (simulated)\n", rep.Total.Joules, len(rep.Nodes), rep.Total.Joules/float64(st.TotalTokens))
	return err
}
