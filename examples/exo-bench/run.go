package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/benchkit/plot"
	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/hf"
	"github.com/inferbench/inferbench/timing"
)

type config struct {
	host, model, tokenizer, format, jsonOut, jsonl, preset, plot, plotPower string
	instanceMeta, sharding                                                  string
	port, repeat, warmup, minNodes, maxNodes                                int
	pp, tg, concurrency                                                     cli.IntList
	stdout, dryRun, allCombinations, stream, noMetrics, noHostInfo          bool
	allowSaturated                                                          bool
	prefixCache, forceDownload, reuse, dangerDelete, salt                   bool
	metricsInterval, timeout, settle, pauseRep, pauseGrp                    float64
	grace                                                                   float64
	embedded                                                                bool
	visited                                                                 map[string]bool
}

// maxSeconds bounds every flag given in seconds: about 31 years, well
// within what a time.Duration holds.
const maxSeconds = 1e9

var formats = []string{"table", "json", "jsonl", "csv", "md", "benchfmt"}

func parse(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("exo-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	envHost, port, err := exo.AddrFromEnv()
	if err != nil {
		return nil, &cli.UsageError{Err: err}
	}
	fs.StringVar(&c.host, "host", envHost, "exo API host (env EXO_HOST); none: the embedded simulated engine")
	fs.IntVar(&c.port, "port", port, "exo API port (env EXO_PORT)")
	fs.StringVar(&c.model, "model", "", "model short name or full id (default with the embedded engine: its model)")
	fs.Var(&c.pp, "pp", "prompt lengths in tokens, comma list, repeatable")
	fs.Var(&c.tg, "tg", "generation lengths in tokens, comma list, repeatable")
	fs.IntVar(&c.repeat, "repeat", 1, "repeats per cell")
	fs.Var(&c.concurrency, "concurrency", "burst sizes, comma list (default 1)")
	fs.IntVar(&c.warmup, "warmup", 0, "warmup requests with the first pp/tg, discarded")
	fs.StringVar(&c.jsonOut, "json-out", filepath.Join("results", "exo-bench.json"), "results JSON file")
	fs.BoolVar(&c.stdout, "stdout", false, "print only the results JSON on stdout")
	fs.BoolVar(&c.dryRun, "dry-run", false, "list the placements and exit")
	fs.BoolVar(&c.allCombinations, "all-combinations", false, "every pp with every tg")
	fs.BoolVar(&c.stream, "stream", false, "stream responses (client TTFT, TPOT, ITL)")
	fs.BoolVar(&c.noMetrics, "no-system-metrics", false, "do not sample node metrics")
	fs.BoolVar(&c.noHostInfo, "no-host-info", false, "leave the host name out of the results files")
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
	fs.StringVar(&c.tokenizer, "tokenizer", "", "directory with the model's tokenizer.json and tokenizer_config.json")
	fs.StringVar(&c.format, "format", "table", "stdout format: "+strings.Join(formats, ", "))
	fs.StringVar(&c.jsonl, "jsonl", "", "rows as measured (default: --json-out with .jsonl)")
	fs.StringVar(&c.preset, "preset", "", "embedded engine preset: "+strings.Join(sim.PresetNames(), ", "))
	fs.Float64Var(&c.pauseRep, "pause-repeat", -1, "seconds before each burst (default 3 against a cluster, 0 embedded)")
	fs.Float64Var(&c.pauseGrp, "pause-group", -1, "seconds after each group (default 2 against a cluster, 0 embedded)")
	fs.BoolVar(&c.salt, "salt", false, "a unique prefix per request, led by a random run nonce, so no request shares a prefix beyond the chat template with any other request of this or another run")
	fs.StringVar(&c.plotPower, "plot-power", "", "write a PNG of each node's sampled power over the run, bursts shaded (prefill and generation when streamed)")
	fs.StringVar(&c.plot, "plot", "", "write a PNG of generation throughput against concurrency (Σ tokens / wall beside exo's max × N)")
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
	c.embedded = c.host == ""
	if c.embedded {
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
		if c.model == "" {
			return cli.Usagef("--model is required with --host")
		}
		if c.tokenizer == "" {
			return cli.Usagef("--tokenizer DIR is required with --host: prompts are counted with the model's own tokenizer.json and chat template")
		}
		if c.preset != "" {
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
	if c.warmup < 0 {
		return cli.Usagef("--warmup=%d: must be 0 or more", c.warmup)
	}
	if c.port < 1 || c.port > 65535 {
		return cli.Usagef("--port=%d: not a port number", c.port)
	}
	if !slicesContains(formats, c.format) {
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
	if !slicesContains([]string{"ring", "jaccl", "both"}, c.instanceMeta) {
		return cli.Usagef("--instance-meta=%q: want ring, jaccl or both", c.instanceMeta)
	}
	if !slicesContains([]string{"pipeline", "tensor", "both"}, c.sharding) {
		return cli.Usagef("--sharding=%q: want pipeline, tensor or both", c.sharding)
	}
	if c.minNodes < 1 || c.maxNodes < c.minNodes {
		return cli.Usagef("--min-nodes=%d --max-nodes=%d: want 1 ≤ min ≤ max", c.minNodes, c.maxNodes)
	}
	if c.preset != "" {
		if _, err := sim.PresetByName(c.preset); err != nil {
			return cli.Usagef("--preset=%q: want one of %s", c.preset, strings.Join(sim.PresetNames(), ", "))
		}
	}
	if c.plotPower != "" && c.noMetrics {
		return cli.Usagef("--plot-power needs the node metrics that --no-system-metrics turns off")
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

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (c *config) plan() benchkit.Plan {
	return benchkit.Plan{
		PP: c.pp, TG: c.tg, AllCombinations: c.allCombinations, Concurrency: c.concurrency,
		Repeat: c.repeat, Warmup: c.warmup,
		PauseBetweenRepeats: seconds(c.pauseRep), PauseBetweenGroups: seconds(c.pauseGrp),
		UsePrefixCache: c.prefixCache, Stream: c.stream, Salt: c.salt,
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
	prov := benchkit.NewProvenance(append([]string{"exo-bench"}, args...), c.noHostInfo)

	var counter promptsize.Counter
	tokenizerNote := ""
	if c.tokenizer != "" {
		tok, err := hf.Load(c.tokenizer)
		if err != nil {
			return cli.Usagef("--tokenizer=%s: %v", c.tokenizer, err)
		}
		counter, tokenizerNote = tok, "tokenizer.json and chat template of "+c.tokenizer
		if err := prov.HashTokenizerDir(c.tokenizer); err != nil {
			return cli.Usagef("--tokenizer=%s: %v", c.tokenizer, err)
		}
		// The plan is checked against the template's overhead before the
		// cluster is asked anything.
		overhead, err := benchkit.Overhead(ctx, &promptsize.Builder{Counter: counter})
		if err != nil {
			return cli.Usagef("--tokenizer=%s: %v", c.tokenizer, err)
		}
		if err := c.plan().Validate(overhead); err != nil {
			return &cli.UsageError{Err: err}
		}
	}

	if !c.dryRun {
		lock, err := claimOutputs(c)
		if err != nil {
			return err
		}
		defer lock.Release()
	}

	base := "http://" + net.JoinHostPort(c.host, strconv.Itoa(c.port))
	simulated := c.embedded
	presetName := ""
	if c.embedded {
		preset := sim.M3UltraGemma27B()
		if c.preset != "" {
			preset, _ = sim.PresetByName(c.preset)
		}
		opts := sim.Options{Preset: preset, NoInstance: true, Nodes: 2, LoadDelay: 50 * time.Millisecond}
		if counter != nil {
			opts.Counter = counter
		}
		// The embedded engine lives until run returns, past an interrupt,
		// so that requests in flight can finish and instances be deleted.
		srv, err := sim.Start(context.WithoutCancel(ctx), "127.0.0.1:0", opts)
		if err != nil {
			return fmt.Errorf("start the embedded engine: %w", err)
		}
		defer srv.Close()
		base, presetName = srv.URL, preset.Name
		if counter == nil {
			counter, tokenizerNote = srv.Counter(), "the embedded engine's built-in tokenizer and chat template"
		}
		if c.model == "" {
			c.model = srv.Model()
		}
		fmt.Fprintf(info, "exo-bench: no --host given: measuring the embedded SIMULATED engine at %s (preset %s); every figure below is simulated, not measured on hardware\n", base, preset.Name)
	}

	client, err := exo.New(base, &exo.Options{MaxBurst: slices.Max(c.concurrency), RequestTimeout: seconds(c.timeout)})
	if err != nil {
		return cli.Usagef("--host: %v", err)
	}
	card, err := client.ResolveModel(ctx, c.model, c.forceDownload)
	if err != nil {
		return fmt.Errorf("resolve model %q: %w", c.model, err)
	}
	builder := &promptsize.Builder{Counter: counter}
	overhead, err := benchkit.Overhead(ctx, builder)
	if err != nil {
		return err
	}
	plan := c.plan()
	if err := plan.Validate(overhead); err != nil {
		return &cli.UsageError{Err: err}
	}

	sweep := &benchkit.ExoSweep{
		Client: client, Card: card, Settle: seconds(c.settle), Reuse: c.reuse,
		Filter:      exo.Filter{InstanceMeta: c.instanceMeta, Sharding: c.sharding, MinNodes: c.minNodes, MaxNodes: c.maxNodes},
		PlanOptions: exo.PlanOptions{DeleteDownloads: c.dangerDelete, SettleTimeout: seconds(c.settle)},
		Logger:      logger,
		Runner: benchkit.Runner{
			Builder: builder, Simulated: simulated, Logger: logger, Grace: seconds(c.grace),
			Nonce: cli.RunNonce(0, false),
		},
		MetricsInterval: seconds(c.metricsInterval),
		WrapEngine:      h.wrap,
	}
	prov.Nonce = sweep.Runner.Nonce
	if c.salt {
		fmt.Fprintf(info, "exo-bench: run nonce %s (leads every request's salt)\n", sweep.Runner.Nonce)
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

	// Rows go to the JSONL file as they are measured, as exo's rows.
	var sinks []benchkit.Sink
	if c.jsonl != "" {
		f, err := createFile(c.jsonl)
		if err != nil {
			return err
		}
		defer f.Close()
		// A run header line first: where the rows come from
		// (benchkit.ParseRunHeader reads it; row readers skip it).
		h := cli.NewRunHeader("exo-bench")
		h.Provenance = prov
		if c.noHostInfo {
			h.Host = ""
		}
		b, err := json.Marshal(map[string]any{"run_header": h})
		if err != nil {
			return err
		}
		if _, err := f.Write(append(b, '\n')); err != nil {
			return err
		}
		sinks = append(sinks, exoJSONL(f))
	}
	if c.format == "jsonl" {
		sinks = append(sinks, exoJSONL(stdout))
	}
	// On a terminal, a progress bar over every placement's requests.
	progress := newProgress(ctx, stderr, sweep, plan)
	if progress != nil {
		sinks = append(sinks, progress)
	}
	sweep.Runner.Sinks = sinks

	progress.Start()
	started := time.Now()
	res, runErr := sweep.Run(ctx, plan)
	progress.Finish()
	doc := benchkit.Document{
		Runs: res.Requests, Cluster: res.Cluster, SystemMetrics: res.SystemMetrics,
		Meta: &benchkit.Meta{
			RunInfo: benchkit.RunInfo{
				Tool: "inferbench exo-bench", Engine: "exo", BaseURL: base, Simulated: simulated, Preset: presetName,
				Model: card.FullID(), Tokenizer: tokenizerNote,
				Started: started.UTC().Format(time.RFC3339), Finished: time.Now().UTC().Format(time.RFC3339),
				Interrupted: res.Interrupted, Warnings: res.Warnings,
				Provenance: prov,
			},
			Plan: plan,
		},
	}
	if nodes := cli.ExoNodes(res.Cluster); len(nodes) > 0 {
		prov.Server = &benchkit.ServerInfo{Nodes: nodes}
	}
	cells := benchkit.Summarize(res.Requests, benchkit.ByCell, timing.SLO{})
	doc.Summary = cells
	doc.Meta.SaturatedBursts, doc.Meta.ClientSaturated = benchkit.CheckBursts(res.Requests)
	if err := writeOutputs(c, doc, cells, stdout, info); err != nil {
		return err
	}
	if doc.Meta.ClientSaturated {
		fmt.Fprintf(info, "\nCLIENT SATURATED: the client could not release every burst at once, so those bursts' latencies include its own queueing: %s\n", doc.Meta.Saturation())
	}
	if err := writePowerPlot(c, doc.Meta, res, info); err != nil {
		return err
	}
	failed := 0
	for _, r := range res.Requests {
		if r.Failed() {
			failed++
		}
	}
	switch {
	case runErr != nil && ctx.Err() != nil:
		return fmt.Errorf("interrupted after %d requests, every row written: %w", len(res.Requests), ctx.Err())
	case runErr != nil:
		return runErr
	case failed > 0:
		return fmt.Errorf("%w: %d of %d; their rows say why", cli.ErrRequestsFailed, failed, len(res.Requests))
	case doc.Meta.ClientSaturated && !c.allowSaturated:
		return fmt.Errorf("%w: %s (--allow-saturated to accept)", cli.ErrClientSaturated, doc.Meta.Saturation())
	}
	return nil
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

// exoJSONL is a sink writing each request to w as one line of exo's row.
func exoJSONL(w io.Writer) *benchkit.JSONLSink {
	s := benchkit.NewJSONLSink(w)
	s.Exo = true
	return s
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
		if err := cli.WriteFileAtomic(c.jsonOut, func(w io.Writer) error { return benchkit.WriteJSON(w, doc) }); err != nil {
			return err
		}
		fmt.Fprintf(info, "results: %s", c.jsonOut)
		if c.jsonl != "" {
			fmt.Fprintf(info, ", rows as measured: %s", c.jsonl)
		}
		fmt.Fprintln(info)
	}
	if c.stdout {
		return benchkit.WriteJSON(stdout, doc)
	}
	sim := doc.Meta.Simulated
	switch c.format {
	case "table", "md":
		return benchkit.WriteTable(stdout, cells, benchkit.TableOptions{Simulated: sim, Title: doc.Meta.Model, Markdown: c.format == "md"})
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
// the same --json-out or --jsonl is refused (exit 2, naming this one)
// rather than interleave its rows, and removes the previous run's results
// JSON: until this run writes its own at the end, an older one beside the
// new JSONL would look current, and stay so if the run were killed.
func claimOutputs(c *config) (*cli.OutputLock, error) {
	var paths []string
	for _, p := range []struct{ flag, path string }{{"json-out", c.jsonOut}, {"jsonl", c.jsonl}} {
		if p.path == "" {
			continue
		}
		if err := createDir(p.path); err != nil {
			return nil, cli.Usagef("--%s: %v", p.flag, err)
		}
		paths = append(paths, p.path)
	}
	lock, err := cli.LockOutputs("exo-bench", paths...)
	if errors.Is(err, cli.ErrOutputInUse) {
		return nil, err
	}
	if err != nil {
		return nil, &cli.UsageError{Err: err}
	}
	if err := cli.ClearResults(c.jsonOut); err != nil {
		lock.Release()
		return nil, err
	}
	return lock, nil
}

func createFile(path string) (*os.File, error) {
	if err := createDir(path); err != nil {
		return nil, err
	}
	return os.Create(path)
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
