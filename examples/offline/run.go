package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/benchkit/predict"
	"github.com/inferbench/inferbench/benchkit/report"
	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/internal/termwidth"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runWith(ctx, args, stdout, stderr, hooks{})
}

// hooks let tests change what run does: wrap wraps the engine requests go
// to (a slowed client); clock, when set, is the burst's clock.
type hooks struct {
	wrap  func(engine.Engine) engine.Engine
	clock concurrency.Clock
}

func runWith(ctx context.Context, args []string, stdout, stderr io.Writer, h hooks) error {
	fs := flag.NewFlagSet("offline", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tg := &cli.Target{Program: "offline"}
	tg.AddFlags(fs)
	numSeqs := fs.Int("num-seqs", 64, "number of requests, all submitted at once")
	minIn := fs.Int("min-input-len", 100, "shortest prompt, in tokens of the whole chat request")
	maxIn := fs.Int("max-input-len", 512, "longest prompt")
	minOut := fs.Int("min-output-len", 16, "shortest reply, in tokens")
	maxOut := fs.Int("max-output-len", 128, "longest reply")
	seed := fs.Uint64("seed", 0, "seed of the lengths and, when given, of the run nonce in every prompt (default: a random nonce, so no run resends another's prompts)")
	sharedPrefix := fs.Int("shared-prefix", 0, "tokens every prompt shares after the chat template, for prefix-cache ablations (0: none)")
	jsonOut := fs.String("json-out", "", "write every request and the summary as JSON to this file")
	htmlPath := fs.String("html", "", "write the results as one self-contained HTML page to this file: throughputs, latencies with intervals, the burst's release, the server's view, warnings, an inline timeline; it fetches nothing (docs/REPORT.md)")
	allowEOS := fs.Bool("allow-eos", false, "let the server stop at an end of sequence before the drawn output length (no ignore_eos; Ollama has none, and a real model may stop early)")
	allowSaturated := fs.Bool("allow-saturated", false, "exit 0 even when the client itself was the bottleneck (by default such a run exits 3)")
	gcPercent := cli.GCPercent(cli.DefaultGCPercent)
	fs.Var(&gcPercent, "gc-percent", cli.GCPercentUsage)
	segment := fs.String("segment", "", "send only segment i/N of the plan: request k when k mod N = i (needs --seed; docs/DISTRIBUTED.md)")
	segments := fs.Int("segments", 0, "split the plan in N segments, the index from $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job)")
	startAt := fs.String("start-at", "", "release the requests at this RFC 3339 wall time, shared by every segment")
	predictOn := fs.Bool("predict", false, "predict the burst "+cli.PredictUsage)
	var wf cli.WorkloadFlags
	wf.TraceUsage = "send the rows of this trace file (Mooncake or Bailian JSONL, BurstGPT or Azure CSV) all at once, at no instants of their own"
	wf.DatasetUsage = "send the requests of this dataset file (ShareGPT JSON, JSONL of prompts or messages) all at once"
	wf.AddFlags(fs)
	wf.AddSharedPrefixFlags(fs)
	var thinking cli.ThinkingFlags
	thinking.AddFlags(fs, false)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // -h or --help: the usage is written; exit 0
		}
		return &cli.UsageError{Err: err}
	}
	if fs.NArg() > 0 {
		return cli.Usagef("unexpected argument %q; every setting is a flag", fs.Arg(0))
	}
	lengths := benchkit.Lengths{InputMin: *minIn, InputMax: *maxIn, OutputMin: *minOut, OutputMax: *maxOut, Seed: *seed}
	if err := lengths.Validate(); err != nil {
		return &cli.UsageError{Err: err}
	}
	if *numSeqs < 1 {
		return cli.Usagef("--num-seqs must be at least 1, got %d", *numSeqs)
	}
	if *sharedPrefix < 0 {
		return cli.Usagef("--shared-prefix must not be negative, got %d", *sharedPrefix)
	}
	if err := thinking.Check(); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *predictOn {
		if err := tg.CheckPredict(); err != nil {
			return err
		}
		if *segment != "" || *segments > 0 || *startAt != "" || thinking.Setting() != nil {
			return cli.Usagef("--predict predicts a whole burst without --segment, --segments, --start-at or thinking controls")
		}
	}
	seeded := set["seed"]
	// A trace's or dataset's rows go all at once, as the random lengths
	// do: one request per row unless --num-seqs says fewer.
	if err := wf.Load(true); err != nil {
		return err
	}
	if *sharedPrefix > 0 && wf.Generated() {
		return cli.Usagef("--shared-prefix and the --gsp-* flags both set; the generated shared-prefix load shares its own prefixes")
	}
	if wf.Set() && !set["num-seqs"] {
		*numSeqs = wf.Len()
	}
	traffic := benchkit.Traffic{Burst: *numSeqs, Seed: *seed}
	seg, start, err := cli.ResolveSplit(*segment, *segments, *startAt, seeded, nil)
	if err != nil {
		return &cli.UsageError{Err: err}
	}
	// A tokenizer given on the command line is loaded, and the shortest
	// prompt checked against its chat template's overhead, before anything
	// is started or sent.
	shortest, _ := lengths.InputRange()
	if wf.Set() {
		shortest = 0 // each row's prompt is checked as it is built
	}
	if err := tg.Check(ctx, args, shortest); err != nil {
		return err
	}
	meta := benchkit.LoadMeta{Traffic: traffic}
	if seg.Split() || !start.IsZero() {
		meta.Segment = seg.Header(start, traffic)
	}
	prov := tg.Info.Provenance
	prov.Nonce, prov.Seed, prov.Seeded, prov.SharedPrefix = cli.RunNonce(*seed, seeded), *seed, seeded, *sharedPrefix

	// --json-out and --html are this run's until it ends: a second run
	// given either is refused (exit 2), and the previous results go now,
	// so that a run that dies never leaves them looking like its own.
	lock, err := cli.ClaimOutputs("offline", cli.Output{Flag: "json-out", Path: *jsonOut}, cli.Output{Flag: "html", Path: *htmlPath})
	if err != nil {
		return err
	}
	defer lock.Release()

	if err := tg.Start(ctx, stderr); err != nil {
		return err
	}
	defer tg.Close()
	client, err := tg.Client(openai.Options{MaxBurst: max(*numSeqs, openai.DefaultMaxBurst)})
	if err != nil {
		return err
	}
	defer client.CloseIdleConnections()
	meta.RunInfo = tg.Info
	counter, model := tg.Counter, tg.Model
	if note := thinking.CounterNote(counter, tg.Info.Tokenizer); note != "" {
		fmt.Fprintln(stderr, "offline:", note)
	}
	wf.Nonce = prov.Nonce
	// A trace's rows are fitted to the template as the thinking control
	// makes the server render it.
	fit, err := thinking.WidestCounter(ctx, counter)
	if err != nil {
		return err
	}
	w, traffic, err := wf.Workload(ctx, lengths, traffic, fit)
	if err != nil {
		return err
	}
	if note := wf.Skipped(); note != "" {
		fmt.Fprintln(stderr, "offline:", note)
		meta.Warnings = append(meta.Warnings, note)
	}
	meta.Workload, meta.Traffic = w, traffic
	keeper := newReplyKeeper()
	load := &benchkit.Load{Engine: engine.Observe(client, keeper.keep), Model: model, Builder: &promptsize.Builder{Counter: counter}, NoStream: true, Simulated: meta.Simulated,
		Grace: 10 * time.Second, RequestTimeout: tg.Timeout, Nonce: prov.Nonce, SharedPrefix: *sharedPrefix, Segment: seg, StartAt: start,
		GCPercent: int(gcPercent), ServerMetrics: tg.Metrics, AllowEOS: *allowEOS,
		Request: engine.Request{Thinking: thinking.Setting()}}
	if seg.Split() || !start.IsZero() {
		fmt.Fprintf(stderr, "offline: segment %s of the plan, shared start %s\n", seg, meta.Segment.StartAt)
	}
	fmt.Fprintf(stderr, "offline: run nonce %s (in every prompt's salt; --seed reproduces it)\n", prov.Nonce)
	if h.wrap != nil {
		load.Engine = h.wrap(load.Engine)
	}
	if h.clock != nil {
		load.Clock = h.clock
	}
	// On a terminal, a progress line on stderr; nothing otherwise.
	planned := *numSeqs
	if seg.Split() {
		planned = 0 // this segment's share is the Load's to tell
	}
	progress := cli.NewProgress(stderr, planned)
	if progress != nil {
		load.Sinks = append(load.Sinks, progress)
	}
	progress.Start()
	meta.Started = time.Now().UTC().Format(time.RFC3339)
	var res benchkit.LoadRun
	var runErr error
	if *predictOn {
		// The burst computed on the embedded engine's virtual clock
		// (benchkit/predict), not sent; its rows carry their usage.
		opts, _ := tg.SimOptions()
		meta.Predicted = true
		res, runErr = (&predict.Predictor{Load: load, Options: opts, API: tg.PredictAPI(), BurstGap: time.Microsecond}).Run(ctx, w, traffic, timing.SLO{})
	} else {
		res, runErr = load.Run(ctx, w, traffic, timing.SLO{})
	}
	progress.Finish()
	if errors.Is(runErr, benchkit.ErrBadLoad) {
		return runErr
	}
	meta.Finished = time.Now().UTC().Format(time.RFC3339)
	meta.Interrupted = ctx.Err() != nil
	// Replies without usage (offline does not stream) are counted by the
	// prompts' counter, now that nothing is being measured.
	countUnreported(context.WithoutCancel(ctx), counter, meta.Tokenizer, keeper, &res)
	s := res.Summary
	label := ""
	switch {
	case meta.Predicted:
		label = " (PREDICTED on the embedded engine's virtual clock: nothing was sent)"
	case meta.Simulated:
		label = " (simulated)"
	}
	if wf.Set() {
		fmt.Fprintf(stdout, "%d requests at once, the first rows of %s, model %s%s\n", traffic.Burst, wf.Name(), model, label)
	} else {
		ilo, ihi := lengths.InputRange()
		olo, ohi := lengths.OutputRange()
		fmt.Fprintf(stdout, "%d requests at once, input %d–%d and output %d–%d tokens, model %s%s\n", *numSeqs, ilo, ihi, olo, ohi, model, label)
	}
	fmt.Fprintf(stdout, "Total: %d output tokens (%d input) in %.3f s\n", s.TotalOutputTokens, s.TotalInputTokens, s.DurationS)
	if s.OutputThroughput != nil {
		fmt.Fprintf(stdout, "Output throughput: %.1f tok/s%s\n", *s.OutputThroughput, label)
		fmt.Fprintf(stdout, "Total throughput: %.1f tok/s, %.2f requests/s%s\n", *s.TotalThroughput, *s.RequestThroughput, label)
		fmt.Fprintln(stdout, "(one burst: these throughputs have no interval; run it again for one)")
	}
	if err := s.WriteServerView(stdout); err != nil {
		return errors.Join(runErr, err)
	}
	for _, w := range s.Warnings {
		fmt.Fprintln(stdout, termwidth.Wrap("warning: "+w))
	}
	meta.Judge([]benchkit.LoadRun{res}, false)
	if meta.ClientSaturated {
		fmt.Fprintln(stdout, termwidth.Wrap("CLIENT SATURATED: the client could not release the burst at once, so latencies include its own queueing: "+meta.Saturation()))
	}
	doc := benchkit.NewLoadDocument(meta, []benchkit.LoadRun{res}, nil)
	if *jsonOut != "" {
		if err := cli.WriteResults(*jsonOut, doc); err != nil {
			return errors.Join(runErr, err)
		}
	}
	if *htmlPath != "" {
		if err := cli.WriteFileAtomic(*htmlPath, func(w io.Writer) error { return report.WriteOffline(w, doc, report.Options{}) }); err != nil {
			return errors.Join(runErr, err)
		}
	}
	return cli.Outcome(runErr, s.Failed, s.Requests, meta.ClientSaturated, meta.Saturation(), *allowSaturated)
}
