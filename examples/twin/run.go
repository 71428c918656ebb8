package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/internal/termwidth"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/twin"
)

type config struct {
	target             cli.Target
	out                string
	probePP, probeConc cli.IntList
	probePrefixes      cli.IntList
	noPrefixes         bool
	heldPP, heldConc   cli.IntList
	tg, repeat, chunk  int
	heldRate           float64
	heldRequests       int
	base               string
	noFidelity         bool
}

func parse(args []string, stderr io.Writer) (*config, error) {
	c := &config{target: cli.Target{Program: "twin"}}
	fs := flag.NewFlagSet("twin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.target.AddFlags(fs)
	fs.StringVar(&c.out, "out", "twin.json", "the twin file to write")
	fs.Var(&c.probePP, "probe-pp", "prompt lengths of the probe, each sent alone (default 64,256,1024)")
	fs.Var(&c.probeConc, "probe-concurrency", "burst sizes of the probe (default 2,4,8,16)")
	fs.Var(&c.probePrefixes, "probe-prefixes", "shared-prefix lengths of the probe's cached requests, sent alone after the prefix was cached (default 512,2048)")
	fs.BoolVar(&c.noPrefixes, "no-probe-prefixes", false, "send no cached-prefix requests (the prefill's cached-prefix terms then take their fallback)")
	fs.IntVar(&c.tg, "tg", 32, "generation length of every request")
	fs.IntVar(&c.repeat, "repeat", 3, "repeats of each probe cell")
	fs.IntVar(&c.chunk, "prefill-chunk", 0, "the server's prefill chunk in tokens (0: exo's 4096)")
	fs.StringVar(&c.base, "base", "fast", "built-in preset whose memory and power the twin keeps")
	fs.Var(&c.heldPP, "held-pp", "held-out prompt lengths (default 96,384)")
	fs.Var(&c.heldConc, "held-concurrency", "held-out burst sizes (default 1,3,6,12)")
	fs.Float64Var(&c.heldRate, "held-rate", 0, "held-out Poisson rate in requests/s (0: half the request rate of the probe's largest burst)")
	fs.IntVar(&c.heldRequests, "held-requests", 40, "requests of the held-out Poisson run")
	fs.BoolVar(&c.noFidelity, "no-fidelity", false, "fit and write the twin without held-out runs")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &cli.UsageError{Err: err}
	}
	if fs.NArg() > 0 {
		return nil, cli.Usagef("unexpected arguments %q", fs.Args())
	}
	if len(c.probePP) == 0 {
		c.probePP = cli.IntList{64, 256, 1024}
	}
	if len(c.probeConc) == 0 {
		c.probeConc = cli.IntList{2, 4, 8, 16}
	}
	if len(c.heldPP) == 0 {
		c.heldPP = cli.IntList{96, 384}
	}
	if len(c.heldConc) == 0 {
		c.heldConc = cli.IntList{1, 3, 6, 12}
	}
	for _, l := range []cli.IntList{c.probePP, c.probeConc, c.heldPP, c.heldConc, c.probePrefixes} {
		for _, v := range l {
			if v < 1 {
				return nil, cli.Usagef("lengths and concurrencies must be positive, got %d", v)
			}
		}
	}
	switch {
	case c.tg < 2:
		return nil, cli.Usagef("--tg must be at least 2 (a decode step needs a second token), got %d", c.tg)
	case c.repeat < 1:
		return nil, cli.Usagef("--repeat must be positive, got %d", c.repeat)
	case c.chunk < 0:
		return nil, cli.Usagef("--prefill-chunk must not be negative, got %d", c.chunk)
	case !(c.heldRate >= 0) || c.heldRate > 1e6:
		return nil, cli.Usagef("--held-rate must be in [0, 1e6] requests/s, got %v", c.heldRate)
	case c.heldRequests < 1:
		return nil, cli.Usagef("--held-requests must be positive, got %d", c.heldRequests)
	case c.out == "":
		return nil, cli.Usagef("--out must name a file")
	}
	if _, err := sim.PresetByName(c.base); err != nil {
		return nil, cli.Usagef("--base: %v", err)
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	tg := &c.target
	shortest := min(minOf(c.probePP), minOf(c.heldPP))
	if err := tg.Check(ctx, args, shortest); err != nil {
		return err
	}
	if err := tg.Start(ctx, stderr); err != nil {
		return err
	}
	defer tg.Close()
	client, err := tg.Client(openai.Options{MaxBurst: max(maxOf(c.probeConc), maxOf(c.heldConc))})
	if err != nil {
		return err
	}
	defer client.CloseIdleConnections()
	b := &promptsize.Builder{Counter: tg.Counter}
	popts := twin.ProbeOptions{Lengths: c.probePP, Concurrency: c.probeConc, TG: c.tg, Repeat: c.repeat,
		Prefixes: c.probePrefixes, NoPrefixes: c.noPrefixes, RequestTimeout: tg.Timeout, Simulated: tg.Info.Simulated}
	fmt.Fprintf(stderr, "twin: probing %s: pp %v alone, bursts of %v, tg %d, %d repeats\n", tg.Model, c.probePP, c.probeConc, c.tg, c.repeat)
	rows, err := twin.Probe(ctx, client, tg.Model, b, popts)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	tw, err := twin.Fit(rows, twin.FitOptions{PrefillChunk: c.chunk, Base: c.base, Server: tg.Info.Engine, Provenance: tg.Info.Provenance})
	if err != nil {
		return err
	}
	writeFit(stdout, tw)
	if !c.noFidelity {
		f, err := fidelity(ctx, c, tw, rows, client, b, stderr)
		if err != nil {
			return fmt.Errorf("held-out runs: %w", err)
		}
		tw.Fidelity = &f
		fmt.Fprintln(stdout)
		if err := f.WriteTable(stdout); err != nil {
			return err
		}
	}
	if err := tw.Save(c.out); err != nil {
		return err
	}
	fmt.Fprintln(stderr, termwidth.Wrap(fmt.Sprintf("twin: wrote %s (run it: --sim-preset %s)", c.out, c.out)))
	return nil
}

// fidelity sends the held-out runs to the server and to the embedded
// engine loaded with the twin, and compares them.
func fidelity(ctx context.Context, c *config, tw twin.Twin, probe []benchkit.Request, client cli.Client, b *promptsize.Builder, stderr io.Writer) (twin.Fidelity, error) {
	rate := c.heldRate
	if rate == 0 {
		rate = twin.LargestBurstRate(probe) / 2
	}
	h := twin.HeldOut{
		Bursts: []benchkit.Plan{{PP: c.heldPP, TG: []int{c.tg}, AllCombinations: true, Concurrency: c.heldConc, Repeat: c.repeat, Stream: true, Salt: true}},
		Loads: []twin.LoadRun{{Workload: benchkit.Lengths{Input: c.heldPP[0], Output: c.tg, RangeRatio: 0.5, Seed: 1},
			Traffic: benchkit.Traffic{Rate: rate, NumRequests: c.heldRequests, Seed: 1}}},
		RequestTimeout: c.target.Timeout, Simulated: c.target.Info.Simulated,
	}
	fmt.Fprintln(stderr, termwidth.Wrap(fmt.Sprintf("twin: held-out runs on %s, then on the twin: %v", c.target.Model, h.Describe())))
	measured, err := twin.Measure(ctx, client, c.target.Model, b, h)
	if err != nil {
		return twin.Fidelity{}, err
	}
	opts := tw.Options()
	opts.Counter = c.target.Counter
	srv := sim.NewServer(opts)
	defer srv.Close()
	tc, err := openai.New(srv.OpenAIURL(), &openai.Options{Counter: c.target.Counter, MaxBurst: maxOf(c.heldConc)})
	if err != nil {
		return twin.Fidelity{}, err
	}
	defer tc.CloseIdleConnections()
	h.Simulated = true
	predicted, err := twin.Measure(ctx, tc, srv.Model(), b, h)
	if err != nil {
		return twin.Fidelity{}, err
	}
	f := twin.Compare(predicted, measured)
	f.Plans = h.Describe()
	return f, nil
}

func writeFit(w io.Writer, tw twin.Twin) {
	cf := tw.Coefficients
	fmt.Fprintf(w, "fitted on %s (%s), %d requests\n", tw.Server.Model, tw.Server.Name, tw.Server.Requests)
	for _, l := range []struct {
		name string
		v    float64
	}{{"step overhead", cf.StepOverhead}, {"decode base", cf.DecodeBase}, {"decode per context token", cf.DecodePerContextToken},
		{"decode per request", cf.DecodePerRequest}, {"prefill base", cf.PrefillBase}, {"prefill per token", cf.PrefillPerToken},
		{"prefill per pair", cf.PrefillPerPair}, {"prefill per cached token", cf.PrefillPerCachedToken}, {"client overhead", tw.ClientOverheadS}} {
		fmt.Fprintf(w, "  %-25s %.4g s\n", l.name, l.v)
	}
	fmt.Fprintf(w, "  max running %d (largest batch seen %d)\n", cf.MaxRunning, tw.MaxBatchSeen)
	for _, r := range tw.Residuals {
		fmt.Fprintf(w, "  fit residuals %-14s n=%d MAPE %.2f %% max %.2f %% bias %+.2f %% (on the fitted records: not its accuracy)\n", r.Kind, r.N, r.MAPE, r.Max, r.Bias)
	}
	for _, n := range tw.Notes {
		fmt.Fprintln(w, termwidth.Wrap("  note: "+n))
	}
}

func minOf(l cli.IntList) int {
	m := l[0]
	for _, v := range l {
		m = min(m, v)
	}
	return m
}

func maxOf(l cli.IntList) int {
	m := l[0]
	for _, v := range l {
		m = max(m, v)
	}
	return m
}
