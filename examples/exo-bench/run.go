package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/benchkit/plot"
	"github.com/inferbench/inferbench/benchkit/predict"
	htmlreport "github.com/inferbench/inferbench/benchkit/report"
	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/internal/termwidth"
	"github.com/inferbench/inferbench/precision"
	"github.com/inferbench/inferbench/promptsize"
)

type config struct {
	// Target is the cluster or the embedded engine: --host, --port,
	// --model, --tokenizer, --preset and --no-host-info.
	cli.Target
	format, jsonOut, jsonl, plot, plotPower, instanceMeta, sharding string
	htmlPath                                                        string
	repeat, warmup, minNodes, maxNodes                              int
	pp, tg, concurrency                                             cli.IntList
	stdout, dryRun, allCombinations, stream, noMetrics              bool
	allowSaturated, prefixCache, forceDownload, reuse               bool
	dangerDelete, salt, predict                                     bool
	metricsInterval, timeout, settle, pauseRep, pauseGrp, grace     float64
	visited                                                         map[string]bool
	thinking                                                        cli.ThinkingFlags
	until                                                           []precision.Target
	maxRepeat                                                       int
}

// maxSeconds bounds every flag given in seconds: about 31 years, well
// within what a time.Duration holds.
const maxSeconds = 1e9

var formats = []string{"table", "json", "jsonl", "csv", "md", "benchfmt"}

func parse(args []string, stderr io.Writer) (*config, error) {
	c := &config{Target: cli.Target{Program: "exo-bench", Exo: true, DefaultPreset: sim.M3UltraGemma27B(),
		Sim: sim.Options{Nodes: 2, NoInstance: true, LoadDelay: 50 * time.Millisecond}}}
	fs := flag.NewFlagSet("exo-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.AddFlags(fs)
	fs.Var(&c.pp, "pp", "prompt lengths in tokens, comma list, repeatable")
	fs.Var(&c.tg, "tg", "generation lengths in tokens, comma list, repeatable")
	fs.IntVar(&c.repeat, "repeat", 1, "repeats per cell (with --until, the fewest)")
	fs.Func("until", "repeat each cell until these target margins of error on its per-repeat figures are met, at most --max-repeat times: comma list of FIGURE.STAT:MARGIN%[@LEVEL], e.g. gen_tps.mean:5% (figures gen_tps, prompt_tps, agg_tps, throughput, ttft, ttfa, prefill, e2e, j_per_token, server_j_per_token)", func(v string) error {
		ts, err := precision.ParseTargets(v)
		c.until = append(c.until, ts...)
		return err
	})
	fs.IntVar(&c.maxRepeat, "max-repeat", 0, "with --until, the most repeats of a cell (required, at least --repeat and 2)")
	fs.Var(&c.concurrency, "concurrency", "burst sizes, comma list (default 1)")
	fs.IntVar(&c.warmup, "warmup", 0, "warmup requests with the first pp/tg, discarded")
	fs.StringVar(&c.jsonOut, "json-out", filepath.Join("results", "exo-bench.json"), "results JSON file")
	fs.BoolVar(&c.stdout, "stdout", false, "print only the results JSON on stdout")
	fs.BoolVar(&c.dryRun, "dry-run", false, "list the placements and exit")
	fs.BoolVar(&c.allCombinations, "all-combinations", false, "every pp with every tg")
	fs.BoolVar(&c.stream, "stream", false, "stream responses (client TTFT, TPOT, ITL)")
	fs.BoolVar(&c.noMetrics, "no-system-metrics", false, "do not sample node metrics")
	fs.BoolVar(&c.allowSaturated, "allow-saturated", false, "exit 0 even when a burst's dispatch skew showed the client itself was the bottleneck (by default such a run exits 3)")
	fs.Float64Var(&c.metricsInterval, "metrics-interval", 1, "seconds between node metric samples")
	fs.BoolVar(&c.prefixCache, "use-prefix-cache", false, "let the engine reuse cached prefixes")
	fs.Float64Var(&c.timeout, "timeout", 7200, "seconds a request may take")
	fs.Float64Var(&c.grace, "grace", 10, "on interrupt, seconds the requests in flight may take to finish")
	fs.Float64Var(&c.settle, "settle-timeout", 60, "seconds to wait for placements (0: one look)")
	fs.StringVar(&c.instanceMeta, "instance-meta", exo.Both, "ring, jaccl or both")
	fs.StringVar(&c.sharding, "sharding", exo.Both, "pipeline, tensor or both")
	fs.IntVar(&c.minNodes, "min-nodes", 1, "fewest nodes of a placement")
	fs.IntVar(&c.maxNodes, "max-nodes", 4, "most nodes of a placement")
	fs.BoolVar(&c.forceDownload, "force-download", false, "add the model to the cluster's cards if missing")
	fs.BoolVar(&c.reuse, "reuse-instance", false, "run on an existing instance")
	fs.BoolVar(&c.dangerDelete, "danger-delete-downloads", false, "free disk by deleting other downloads")
	fs.StringVar(&c.format, "format", "table", "stdout format: "+strings.Join(formats, ", "))
	fs.StringVar(&c.jsonl, "jsonl", "", "rows as measured (default: --json-out with .jsonl)")
	fs.Float64Var(&c.pauseRep, "pause-repeat", -1, "seconds before each burst (default 3 against a cluster, 0 embedded)")
	fs.Float64Var(&c.pauseGrp, "pause-group", -1, "seconds after each group (default 2 against a cluster, 0 embedded)")
	fs.BoolVar(&c.salt, "salt", false, "a unique prefix per request, led by a random run nonce, so no request shares a prefix beyond the chat template with any other request of this or another run")
	fs.StringVar(&c.plotPower, "plot-power", "", "write a PNG of each node's sampled power over the run, bursts shaded (prefill and generation when streamed)")
	fs.StringVar(&c.htmlPath, "html", "", "write the results as one self-contained HTML page to this file: what was measured, the cell table with intervals, the energy, and plots of each cell's generation rate and energy per token; it fetches nothing (docs/REPORT.md)")
	fs.StringVar(&c.plot, "plot", "", "write a PNG of generation throughput against concurrency (Σ tokens / wall beside exo's max × N)")
	fs.BoolVar(&c.predict, "predict", false, "predict every cell's bursts "+cli.PredictUsage)
	c.thinking.AddFlags(fs, true)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &cli.UsageError{Err: err}
	}
	if fs.NArg() > 0 {
		return nil, cli.Usagef("unexpected arguments %q", fs.Args())
	}
	c.visited = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { c.visited[f.Name] = true })
	return c, c.validate()
}

// validate checks every flag before anything is sent and fills the
// defaults that depend on the target.
func (c *config) validate() error {
	if c.Embedded() {
		if len(c.pp) == 0 {
			c.pp = cli.IntList{128, 256}
		}
		if len(c.tg) == 0 {
			c.tg = cli.IntList{32}
		}
		if !c.visited["repeat"] {
			c.repeat = 2
		}
		if len(c.concurrency) == 0 {
			c.concurrency = cli.IntList{1, 4}
		}
		if !c.visited["max-nodes"] {
			c.maxNodes = 1
		}
		if !c.visited["settle-timeout"] {
			c.settle = 0
		}
		if !c.visited["pause-repeat"] {
			c.pauseRep = 0
		}
		if !c.visited["pause-group"] {
			c.pauseGrp = 0
		}
	} else {
		if c.Model == "" {
			return cli.Usagef("--model is required with --host")
		}
		if c.Tokenizer == "" {
			return cli.Usagef("--tokenizer DIR is required with --host: prompts are counted with the model's own tokenizer.json and chat template")
		}
		if c.Preset != "" {
			return cli.Usagef("--preset names simulated hardware; it needs the embedded engine (no --host)")
		}
		if !c.visited["pause-repeat"] {
			c.pauseRep = benchkit.ExoPauseBetweenRepeats.Seconds()
		}
		if !c.visited["pause-group"] {
			c.pauseGrp = benchkit.ExoPauseBetweenGroups.Seconds()
		}
	}
	if len(c.pp) == 0 || len(c.tg) == 0 {
		return cli.Usagef("--pp and --tg are required")
	}
	if len(c.concurrency) == 0 {
		c.concurrency = cli.IntList{1}
	}
	// Seconds become time.Durations: NaN, infinities and values past what
	// a Duration holds would convert to nonsense.
	for _, f := range []struct {
		name string
		v    float64
	}{{"metrics-interval", c.metricsInterval}, {"timeout", c.timeout}, {"grace", c.grace},
		{"settle-timeout", c.settle}, {"pause-repeat", c.pauseRep}, {"pause-group", c.pauseGrp}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || math.Abs(f.v) > maxSeconds {
			return cli.Usagef("--%s=%v: want a finite number of seconds up to %g", f.name, f.v, float64(maxSeconds))
		}
	}
	if c.repeat < 1 {
		return cli.Usagef("--repeat=%d: must be at least 1", c.repeat)
	}
	if err := c.thinking.Check(); err != nil {
		return err
	}
	if c.warmup < 0 {
		return cli.Usagef("--warmup=%d: must be 0 or more", c.warmup)
	}
	if c.Port < 1 || c.Port > 65535 {
		return cli.Usagef("--port=%d: not a port number", c.Port)
	}
	if !slices.Contains(formats, c.format) {
		return cli.Usagef("--format=%q: want one of %s", c.format, strings.Join(formats, ", "))
	}
	if c.metricsInterval < energy.MinInterval.Seconds() {
		return cli.Usagef("--metrics-interval=%v: must be at least %v seconds", c.metricsInterval, energy.MinInterval.Seconds())
	}
	if c.timeout <= 0 {
		return cli.Usagef("--timeout=%v: must be positive", c.timeout)
	}
	if c.grace < 0 {
		return cli.Usagef("--grace=%v: must be 0 or more", c.grace)
	}
	if c.settle < 0 {
		return cli.Usagef("--settle-timeout=%v: must be 0 or more", c.settle)
	}
	if !slices.Contains([]string{"ring", "jaccl", "both"}, c.instanceMeta) {
		return cli.Usagef("--instance-meta=%q: want ring, jaccl or both", c.instanceMeta)
	}
	if !slices.Contains([]string{"pipeline", "tensor", "both"}, c.sharding) {
		return cli.Usagef("--sharding=%q: want pipeline, tensor or both", c.sharding)
	}
	if c.minNodes < 1 || c.maxNodes < c.minNodes {
		return cli.Usagef("--min-nodes=%d --max-nodes=%d: want 1 ≤ min ≤ max", c.minNodes, c.maxNodes)
	}
	if c.plotPower != "" && c.noMetrics {
		return cli.Usagef("--plot-power needs the node metrics that --no-system-metrics turns off")
	}
	if c.predict {
		if err := c.CheckPredict(); err != nil {
			return err
		}
		if len(c.thinking.Settings()) > 0 || len(c.until) > 0 || (c.prefixCache && !c.salt) || c.reuse || c.dryRun {
			return cli.Usagef("--predict predicts fixed repeats of every cell; not thinking controls, --until, --reuse-instance, --dry-run, or --use-prefix-cache without --salt")
		}
	}
	if c.pauseRep < 0 || c.pauseGrp < 0 {
		return cli.Usagef("--pause-repeat=%v --pause-group=%v: pauses must not be negative", c.pauseRep, c.pauseGrp)
	}
	if c.jsonl == "" && c.jsonOut != "" {
		c.jsonl = strings.TrimSuffix(c.jsonOut, filepath.Ext(c.jsonOut)) + ".jsonl"
	}
	// The plan's own rules (tg ≥ 2, positive lengths and concurrency) are
	// checked here too; the template overhead once the tokenizer is known.
	if err := c.plan().Validate(-1); err != nil {
		return &cli.UsageError{Err: err}
	}
	return nil
}

func (c *config) plan() benchkit.Plan {
	return benchkit.Plan{
		PP: c.pp, TG: c.tg, AllCombinations: c.allCombinations, Concurrency: c.concurrency,
		Repeat: c.repeat, Warmup: c.warmup, Until: c.until, MaxRepeat: c.maxRepeat,
		PauseBetweenRepeats: seconds(c.pauseRep), PauseBetweenGroups: seconds(c.pauseGrp),
		UsePrefixCache: c.prefixCache, Stream: c.stream, Salt: c.salt,
		Thinking: c.thinking.Settings(),
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runWith(ctx, args, stdout, stderr, hooks{})
}

// hooks let tests change what run does: wrap wraps the engine each
// placement's requests go to (a slowed client).
type hooks struct {
	wrap func(engine.Engine) engine.Engine
}

func runWith(ctx context.Context, args []string, stdout, stderr io.Writer, h hooks) error {
	c, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	// With --stdout, stdout carries the results JSON and nothing else.
	info := stdout
	if c.stdout || c.format != "table" {
		info = stderr
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// The tokenizer is loaded, and the plan checked against its chat
	// template's overhead, before the cluster is asked anything.
	if err := c.Check(ctx, args, slices.Min(c.pp)); err != nil {
		return err
	}
	if !c.dryRun {
		lock, err := claimOutputs(c)
		if err != nil {
			return err
		}
		defer lock.Release()
	}
	// The embedded engine lives until run returns, past an interrupt, so
	// that requests in flight can finish and instances be deleted.
	if err := c.Start(ctx, info); err != nil {
		return err
	}
	defer c.Close()
	builder := &promptsize.Builder{Counter: c.Counter}
	if note := c.thinking.CounterNote(c.Counter, c.Info.Tokenizer); note != "" {
		fmt.Fprintln(stderr, "exo-bench:", note)
	}
	// Every thinking setting's prompts must fit: the plan is checked
	// against the widest template's overhead.
	widest, err := c.thinking.WidestCounter(ctx, c.Counter)
	if err != nil {
		return err
	}
	overhead, err := (&promptsize.Builder{Counter: widest}).Overhead(ctx)
	if err != nil {
		return err
	}
	plan := c.plan()
	if err := plan.Validate(overhead); err != nil {
		return &cli.UsageError{Err: err}
	}
	client, err := exo.New(c.URL, &exo.Options{MaxBurst: slices.Max(c.concurrency), RequestTimeout: seconds(c.timeout)})
	if err != nil {
		return cli.Usagef("--host: %v", err)
	}
	card, err := client.ResolveModel(ctx, c.Model, c.forceDownload)
	if err != nil {
		return fmt.Errorf("resolve model %q: %w", c.Model, err)
	}

	prov := c.Info.Provenance
	prov.Nonce = cli.RunNonce(0, false)
	sweep := &benchkit.ExoSweep{
		Client: client, Card: card, Settle: seconds(c.settle), Reuse: c.reuse,
		Filter:      exo.Filter{InstanceMeta: c.instanceMeta, Sharding: c.sharding, MinNodes: c.minNodes, MaxNodes: c.maxNodes},
		PlanOptions: exo.PlanOptions{DeleteDownloads: c.dangerDelete, SettleTimeout: seconds(c.settle)},
		Logger:      logger,
		Runner: benchkit.Runner{
			Builder: builder, Simulated: c.Info.Simulated, Logger: logger, Grace: seconds(c.grace), Nonce: prov.Nonce,
		},
		MetricsInterval: seconds(c.metricsInterval),
		WrapEngine:      h.wrap,
	}
	if c.salt {
		fmt.Fprintf(info, "exo-bench: run nonce %s (leads every request's salt)\n", prov.Nonce)
	}
	if !c.noMetrics {
		sweep.Sources = []energy.Source{client.PowerSource()}
	}
	if c.dryRun {
		ps, err := sweep.Placements(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(info, "%d placement(s) of %s:\n", len(ps), card.FullID())
		for _, p := range ps {
			fmt.Fprintf(info, "  %-8s %-8s %d node(s)  instance %s\n", p.Sharding, p.InstanceMeta, p.Nodes, p.Instance.ID)
		}
		return nil
	}

	// Rows go to the JSONL file as they are measured, as exo's rows,
	// after a run header line: where the rows come from
	// (benchkit.ParseRunHeader reads it; row readers skip it).
	var sinks []benchkit.Sink
	if c.jsonl != "" {
		h := cli.NewRunHeader("exo-bench")
		h.Provenance = prov
		if c.NoHostInfo {
			h.Host = ""
		}
		if err := cli.ClearResults(c.jsonl); err != nil {
			return err
		}
		f, err := benchkit.AppendJSONL(c.jsonl, h)
		if err != nil {
			return err
		}
		defer f.Close()
		f.Exo = true
		sinks = append(sinks, f)
	}
	if c.format == "jsonl" {
		sinks = append(sinks, &benchkit.JSONLSink{W: stdout, Exo: true})
	}
	// On a terminal, a progress bar over every placement's requests.
	progress := newProgress(ctx, stderr, sweep, plan)
	if progress != nil {
		sinks = append(sinks, progress)
	}
	sweep.Runner.Sinks = sinks

	progress.Start()
	started := time.Now()
	var res benchkit.ExoResult
	if c.predict {
		res, err = predictCells(ctx, c, sweep, plan)
	} else {
		res, err = sweep.Run(ctx, plan)
	}
	runErr := err
	progress.Finish()
	meta := &benchkit.Meta{RunInfo: c.Info, Plan: plan, Predicted: c.predict}
	meta.Model, meta.Interrupted, meta.Warnings = card.FullID(), res.Interrupted, res.Warnings
	meta.Started, meta.Finished = started.UTC().Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339)
	if nodes := cli.ExoNodes(res.Cluster); len(nodes) > 0 {
		prov.Server = &benchkit.ServerInfo{Nodes: nodes}
	}
	cells := plan.Summarize(res.Requests) // with each cell's targets checked (--until)
	meta.SaturatedBursts, meta.ClientSaturated = benchkit.Report{Requests: res.Requests}.CheckBursts()
	doc := benchkit.Document{Runs: res.Requests, Cluster: res.Cluster, SystemMetrics: res.SystemMetrics, Meta: meta, Summary: cells}
	if err := writeOutputs(c, doc, cells, stdout, info); err != nil {
		return err
	}
	if meta.ClientSaturated {
		fmt.Fprintf(info, "\n%s\n", termwidth.Wrap("CLIENT SATURATED: the client could not release every burst at once, so those bursts' latencies include its own queueing: "+meta.Saturation()))
	}
	if err := writePowerPlot(c, meta, res, info); err != nil {
		return err
	}
	if runErr != nil && ctx.Err() != nil {
		runErr = fmt.Errorf("interrupted after %d requests, every row written: %w", len(res.Requests), ctx.Err())
	}
	failed := benchkit.Report{Requests: res.Requests}.Failed()
	return cli.Outcome(runErr, failed, len(res.Requests), meta.ClientSaturated, meta.Saturation(), c.allowSaturated)
}

// predictCells computes the plan's bursts on the embedded engine's
// virtual clock (benchkit/predict) on the one placement the sweep would
// measure, each row handed to the sweep's sinks as a measured one is.
func predictCells(ctx context.Context, c *config, sweep *benchkit.ExoSweep, plan benchkit.Plan) (benchkit.ExoResult, error) {
	ps, err := sweep.Placements(ctx)
	if err != nil {
		return benchkit.ExoResult{}, err
	}
	if len(ps) != 1 {
		return benchkit.ExoResult{}, cli.Usagef("--predict predicts one placement, not %d: narrow --min-nodes, --max-nodes, --sharding or --instance-meta", len(ps))
	}
	opts, _ := c.SimOptions()
	p := ps[0]
	place := benchkit.Placement{Sharding: p.Sharding, InstanceMeta: p.InstanceMeta, Nodes: p.Nodes, InstanceID: p.Instance.ID}
	load := &benchkit.Load{Model: sweep.Card.FullID(), Builder: sweep.Runner.Builder, Nonce: sweep.Runner.Nonce, Simulated: true}
	// A live burst reaches the server over some microseconds: its first
	// request starts alone (predict.Predictor.BurstGap).
	rows, err := (&predict.Predictor{Load: load, Options: opts, API: c.PredictAPI(), BurstGap: time.Microsecond}).Cells(ctx, plan, sweep.Card.ShortID(), place)
	for _, row := range rows {
		for _, s := range sweep.Runner.Sinks {
			if serr := s.Add(row); serr != nil {
				return benchkit.ExoResult{Requests: rows}, serr
			}
		}
	}
	return benchkit.ExoResult{Requests: rows, Placements: ps}, err
}

// newProgress returns the sweep's progress bar when w is a terminal, nil
// otherwise. Its total is the plan's requests on every placement the
// sweep will measure, so the bar does not restart at each placement: the
// placements are listed first for it (as the sweep lists them again).
// When they cannot be listed the bar has no total (no ETA); the sweep
// itself then says why.
func newProgress(ctx context.Context, w io.Writer, sweep *benchkit.ExoSweep, plan benchkit.Plan) *cli.Progress {
	if !cli.IsTerminal(w) {
		return nil
	}
	total := 0
	if ps, err := sweep.Placements(ctx); err == nil {
		total = plan.Requests() * len(ps)
	}
	return cli.NewProgress(w, total)
}

func writeOutputs(c *config, doc benchkit.Document, cells []benchkit.Summary, stdout, info io.Writer) error {
	if c.plot != "" {
		title := doc.Meta.Model
		if doc.Meta.Simulated {
			title += " (simulated)"
		}
		p, err := plot.GenerationTPS(title, cells)
		switch {
		case errors.Is(err, plot.ErrNoData):
			fmt.Fprintf(info, "plot: not written, %v\n", err)
		case err != nil:
			return err
		default:
			if err := createDir(c.plot); err != nil {
				return err
			}
			if err := plot.SavePNG(c.plot, p); err != nil {
				return err
			}
			fmt.Fprintf(info, "plot: %s\n", c.plot)
		}
	}
	if c.jsonOut != "" && !c.stdout {
		if err := cli.WriteResults(c.jsonOut, doc); err != nil {
			return err
		}
		fmt.Fprintf(info, "results: %s", c.jsonOut)
		if c.jsonl != "" {
			fmt.Fprintf(info, "\nrows as measured: %s", c.jsonl)
		}
		fmt.Fprintln(info)
	}
	if c.htmlPath != "" {
		if err := cli.WriteFileAtomic(c.htmlPath, func(w io.Writer) error { return htmlreport.WriteExo(w, doc, htmlreport.Options{}) }); err != nil {
			return err
		}
		fmt.Fprintf(info, "page: %s\n", c.htmlPath)
	}
	if c.stdout {
		return benchkit.WriteJSON(stdout, doc)
	}
	sim := doc.Meta.Simulated
	switch c.format {
	case "table", "md":
		return benchkit.WriteTable(stdout, cells, benchkit.TableOptions{Simulated: sim, Predicted: doc.Meta.Predicted, Title: doc.Meta.Model, Markdown: c.format == "md"})
	case "json":
		return benchkit.WriteJSON(stdout, doc)
	case "csv":
		return benchkit.WriteCSV(stdout, doc.Runs)
	case "benchfmt":
		cfg := append([][2]string{{"engine", "exo"}, {"model", doc.Meta.Model}}, doc.Meta.Provenance.Config()...)
		if sim {
			cfg = append(cfg, [2]string{"simulated", doc.Meta.Preset})
		}
		return benchkit.WriteBenchfmt(stdout, doc.Runs, benchkit.BenchfmtOptions{Name: "ExoBench", Config: cfg})
	}
	return nil // jsonl rows were written as measured
}

// claimOutputs locks the run's results files, so that a second run given
// the same --json-out, --html or --jsonl is refused (exit 2, naming this one)
// rather than interleave its rows, and removes the previous run's results
// JSON: until this run writes its own at the end, an older one beside the
// new JSONL would look current, and stay so if the run were killed.
func claimOutputs(c *config) (*cli.OutputLock, error) {
	return cli.ClaimOutputs("exo-bench", cli.Output{Flag: "json-out", Path: c.jsonOut}, cli.Output{Flag: "html", Path: c.htmlPath}, cli.Output{Flag: "jsonl", Path: c.jsonl, Append: true})
}

// writePowerPlot draws each node's sampled power over the run with every
// burst shaded, split at its first token when streamed (--plot-power).
func writePowerPlot(c *config, meta *benchkit.Meta, res benchkit.ExoResult, info io.Writer) error {
	if c.plotPower == "" {
		return nil
	}
	var phases []plot.Phase
	for _, w := range res.Windows {
		if w.FirstToken.IsZero() {
			phases = append(phases, plot.Phase{Name: "burst", Start: w.Start, End: w.End})
			continue
		}
		phases = append(phases, plot.Phase{Name: "prefill", Start: w.Start, End: w.FirstToken},
			plot.Phase{Name: "generation", Start: w.FirstToken, End: w.End})
	}
	title := meta.Model + " power"
	if meta.Simulated {
		title += " (simulated)"
	}
	p, err := plot.Power(title, res.Power, phases)
	if errors.Is(err, plot.ErrNoData) {
		fmt.Fprintf(info, "power plot: not written, %v\n", err)
		return nil
	}
	if err != nil {
		return err
	}
	if err := createDir(c.plotPower); err != nil {
		return err
	}
	if err := plot.SavePNG(c.plotPower, p); err != nil {
		return err
	}
	fmt.Fprintf(info, "power plot: %s\n", c.plotPower)
	return nil
}

// createDir makes the directory a file at path goes in.
func createDir(path string) error {
	if dir := filepath.Dir(path); dir != "." {
		return os.MkdirAll(dir, 0o755)
	}
	return nil
}
