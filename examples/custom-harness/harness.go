package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
)

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		return cli.Usagef("custom-harness takes no arguments, got %q: edit the constants", args)
	}
	const n, pp, tg = 4, 512, 64
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer srv.Close()
	fmt.Fprintf(stderr, "custom-harness: measuring the embedded simulated engine at %s; figures are simulated\n", srv.URL)
	eng, err := exo.New(srv.URL, nil)
	b, prompts := &promptsize.Builder{Counter: srv.Counter()}, make([]promptsize.Prompt, n)
	for i := 0; i < n && err == nil; i++ { // salted, so that no request reuses another's cached prefix
		prompts[i], err = b.BuildSalted(ctx, pp, promptsize.Salt(i))
	}
	sampler, serr := energy.NewSampler([]energy.Source{eng.PowerSource()}, energy.WithInterval(energy.MinInterval))
	if err = errors.Join(err, serr); err != nil || sampler.Start(ctx) != nil {
		return fmt.Errorf("set up: %w", err)
	}
	// One call: prewarm n connections, encode the requests, release them at one instant.
	br, err := benchkit.SendPrompts(ctx, eng, srv.Model(), tg, prompts, nil)
	rec := sampler.Stop()
	for i, q := range br.Requests {
		for _, w := range q.Warnings { // the server counted the prompt differently, a broken trace, …
			fmt.Fprintf(stderr, "custom-harness: request %d: warning: %s\n", i, w.Message)
		}
		if q.Failed() || q.TTFTS == nil || q.TPOTS == nil || q.GenerationTPS == nil {
			fmt.Fprintf(stdout, "request %d failed: %s\n", i, cmp.Or(q.Error, "no usable trace"))
			continue
		} // a request is one record, as every driver writes it: its figures in seconds
		fmt.Fprintf(stdout, "request %d: TTFT %.3f ms, TPOT %.3f ms, %.0f tok/s (simulated)\n", i, *q.TTFTS*1e3, *q.TPOTS*1e3, *q.GenerationTPS)
	}
	fmt.Fprintf(stdout, "burst of %d: Σ tokens / wall %.0f tok/s, exo's max×N %.0f tok/s, skew %v, prewarmed %t (simulated)\n", n, br.Stats.ThroughputTPS, br.Stats.ExoAggregateTPS, br.Skew.Max, br.Prewarmed)
	for _, w := range br.Warnings {
		fmt.Fprintln(stderr, "custom-harness: warning:", w)
	}
	rep, merr := energy.Measure(energy.Run{Window: br.Window(), GeneratedTokens: br.Stats.TotalTokens}, rec.Power(), nil)
	err = cli.Outcome(errors.Join(err, merr), br.Stats.Failed, n, false, "", false)
	fmt.Fprintf(stdout, "energy: %.3f J on %d nodes, %.5f J/token (simulated)\n", rep.Total.Joules, len(rep.Nodes), rep.Total.Joules/float64(br.Stats.TotalTokens))
	return err
}
