package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/benchkit/disagg"
	"github.com/inferbench/inferbench/benchkit/report"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
)

// side is one side's resolved settings.
type side struct {
	model, node string
	filter      exo.Filter
}

type config struct {
	// Target is the cluster or the embedded engine: --host, --port,
	// --model (both sides'), --tokenizer, --preset and --no-host-info.
	cli.Target
	configPath, prefillModel, prefillNode, decodeNode string
	format, jsonOut, instanceMeta, sharding           string
	htmlPath                                          string
	repeat, warmup, minNodes, maxNodes                int
	pp, tg, concurrency                               cli.IntList
	allCombinations, compareBaseline, dryRun, stream  bool
	stdout, skipPipelineJaccl, skipTensorRing         bool
	forceDownload, dangerDelete, noProbe              bool
	timeout, settle, pause                            float64

	prefill, decode side
	// given holds the flags set on the command line or by the file.
	given map[string]bool
}

var formats = []string{"table", "md", "json"}

// parse reads the command line and the --config file, applies the
// precedence (command line, then file, then defaults), and checks every
// value. Every error is a *cli.UsageError; nothing has been sent.
func parse(args []string, stderr io.Writer) (*config, error) {
	c := &config{Target: cli.Target{Program: "prefill-decode", Exo: true,
		Sim: sim.Options{Nodes: 2, NoInstance: true, LoadDelay: 50 * time.Millisecond}}}
	fs := flag.NewFlagSet("prefill-decode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.configPath, "config", "", "TOML file with top-level keys and [prefill]/[decode] sections; flags given on the command line win")
	c.AddFlags(fs)
	fs.Lookup("model").Usage = "both sides' model, short name or full id (default: the embedded engine's model)"
	fs.StringVar(&c.prefillModel, "prefill-model", "", "the prefill side's model (default: --model)")
	fs.StringVar(&c.prefillNode, "prefill-node", "", "node of the prefill instance: friendly name or id")
	fs.StringVar(&c.decodeNode, "decode-node", "", "node of the decode instance: friendly name or id")
	fs.Var(&c.pp, "pp", "prompt lengths in tokens, comma list; each must exceed 1000 (embedded default 4096)")
	fs.Var(&c.tg, "tg", "generation lengths in tokens, comma list (embedded default 128)")
	fs.IntVar(&c.repeat, "repeat", 1, "repeats per cell (embedded default 2)")
	fs.IntVar(&c.warmup, "warmup", 0, "warmup requests per phase with the first pp/tg, discarded")
	fs.Var(&c.concurrency, "concurrency", "burst sizes, comma list (default 1)")
	fs.BoolVar(&c.allCombinations, "all-combinations", false, "every pp with every tg")
	fs.BoolVar(&c.compareBaseline, "compare-baseline", false, "also measure prefill_alone and decode_alone (embedded default on)")
	fs.BoolVar(&c.dryRun, "dry-run", false, "print the two placements and the link, create nothing")
	fs.BoolVar(&c.stream, "stream", true, "stream responses, for client TTFT")
	fs.StringVar(&c.jsonOut, "json-out", filepath.Join("results", "prefill-decode.json"), "results JSON file (empty: none)")
	fs.StringVar(&c.htmlPath, "html", "", "write the results as one self-contained HTML page to this file: placements, the sweep, where prefill ran, each cell's phases and speedups, latencies with intervals, an inline TTFT/TPOT plot; it fetches nothing (docs/REPORT.md)")
	fs.BoolVar(&c.stdout, "stdout", false, "print only the results JSON on stdout")
	fs.StringVar(&c.format, "format", "table", "stdout format: "+strings.Join(formats, ", "))
	fs.Float64Var(&c.timeout, "timeout", 7200, "seconds a request may take")
	fs.Float64Var(&c.settle, "settle-timeout", 60, "seconds to wait for placements (0: one look; embedded default 0)")
	fs.StringVar(&c.instanceMeta, "instance-meta", exo.Both, "ring, jaccl or both")
	fs.StringVar(&c.sharding, "sharding", exo.Both, "pipeline, tensor or both")
	fs.IntVar(&c.minNodes, "min-nodes", 1, "fewest nodes of a placement")
	fs.IntVar(&c.maxNodes, "max-nodes", 4, "most nodes of a placement")
	fs.BoolVar(&c.skipPipelineJaccl, "skip-pipeline-jaccl", false, "drop pipeline placements over jaccl (with both filters at both)")
	fs.BoolVar(&c.skipTensorRing, "skip-tensor-ring", false, "drop tensor placements over ring (with both filters at both)")
	fs.BoolVar(&c.forceDownload, "force-download", false, "add a model to the cluster's cards if missing")
	fs.BoolVar(&c.dangerDelete, "danger-delete-downloads", false, "free disk by deleting other downloads")
	fs.Float64Var(&c.pause, "pause", 2, "seconds slept before each request and after each group (embedded default 0)")
	fs.BoolVar(&c.noProbe, "no-probe", false, "skip the probe request after each phase")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &cli.UsageError{Err: err}
	}
	if fs.NArg() > 0 {
		return nil, cli.Usagef("unexpected argument %q; every setting is a flag", fs.Arg(0))
	}
	visited := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { visited[f.Name] = true })
	c.given = map[string]bool{}
	for n := range visited {
		c.given[n] = true
	}
	var fc *fileConfig
	if c.configPath != "" {
		var err error
		if fc, err = loadConfig(c.configPath, fs); err != nil {
			return nil, err
		}
		if err := fc.apply(fs, visited, c.given); err != nil {
			return nil, err
		}
	} else {
		fc = &fileConfig{}
	}
	if err := c.resolveSides(fc, visited); err != nil {
		return nil, err
	}
	return c, c.validate()
}

// resolveSides works out each side's model, node and filter: a flag given
// on the command line wins, then the side's section, then the file's
// top-level key, then the default.
func (c *config) resolveSides(fc *fileConfig, visited map[string]bool) error {
	shared := exo.Filter{InstanceMeta: c.instanceMeta, Sharding: c.sharding, MinNodes: c.minNodes, MaxNodes: c.maxNodes,
		SkipPipelineJaccl: c.skipPipelineJaccl, SkipTensorRing: c.skipTensorRing}
	for _, name := range [...]string{"prefill", "decode"} {
		sec := fc.sides[name]
		s := side{filter: shared}
		str := func(key, flagName, fallback string) string {
			if v, ok := sec[key]; ok && !visited[flagName] {
				return v
			}
			return fallback
		}
		num := func(key, flagName string, fallback int) (int, error) {
			v, ok := sec[key]
			if !ok || visited[flagName] {
				return fallback, nil
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				return 0, cli.Usagef("--config: %s.%s = %q is not an integer", name, key, v)
			}
			return n, nil
		}
		boolean := func(key, flagName string, fallback bool) (bool, error) {
			v, ok := sec[key]
			if !ok || visited[flagName] {
				return fallback, nil
			}
			b, err := strconv.ParseBool(v)
			if err != nil {
				return false, cli.Usagef("--config: %s.%s = %q is not a boolean", name, key, v)
			}
			return b, nil
		}
		var err error
		s.filter.InstanceMeta = str("instance_meta", "instance-meta", shared.InstanceMeta)
		s.filter.Sharding = str("sharding", "sharding", shared.Sharding)
		if s.filter.MinNodes, err = num("min_nodes", "min-nodes", shared.MinNodes); err != nil {
			return err
		}
		if s.filter.MaxNodes, err = num("max_nodes", "max-nodes", shared.MaxNodes); err != nil {
			return err
		}
		if s.filter.SkipPipelineJaccl, err = boolean("skip_pipeline_jaccl", "skip-pipeline-jaccl", shared.SkipPipelineJaccl); err != nil {
			return err
		}
		if s.filter.SkipTensorRing, err = boolean("skip_tensor_ring", "skip-tensor-ring", shared.SkipTensorRing); err != nil {
			return err
		}
		for _, k := range []string{"instance_meta", "sharding", "min_nodes", "max_nodes", "skip_pipeline_jaccl", "skip_tensor_ring"} {
			if _, ok := sec[k]; ok && !visited[strings.ReplaceAll(k, "_", "-")] {
				c.given[strings.ReplaceAll(k, "_", "-")] = true
			}
		}
		if name == "decode" {
			s.model = str("model", "model", c.Model)
			s.node = str("node", "decode-node", c.decodeNode)
			c.decode = s
		} else {
			// --prefill-model, then --model on the command line, then
			// [prefill].model, then the file's prefill_model or model,
			// then the decode side's model (below).
			switch {
			case visited["prefill-model"]:
				s.model = c.prefillModel
			case visited["model"]:
				s.model = c.Model
			case c.prefillModel != "":
				s.model = str("model", "prefill-model", c.prefillModel)
			default:
				s.model = str("model", "prefill-model", c.Model)
			}
			s.node = str("node", "prefill-node", c.prefillNode)
			c.prefill = s
		}
	}
	if c.prefill.model == "" {
		c.prefill.model = c.decode.model
	}
	return nil
}

// validate checks every value and fills the defaults that depend on the
// target, for the flags neither the command line nor the file set.
func (c *config) validate() error {
	if c.Embedded() {
		if !c.given["pp"] {
			c.pp = cli.IntList{4096}
		}
		if !c.given["tg"] {
			c.tg = cli.IntList{128}
		}
		if !c.given["repeat"] {
			c.repeat = 2
		}
		if !c.given["compare-baseline"] {
			c.compareBaseline = true
		}
		if !c.given["settle-timeout"] {
			c.settle = 0
		}
		if !c.given["pause"] {
			c.pause = 0
		}
	} else {
		if c.decode.model == "" {
			return cli.Usagef("--model (or model in --config) is required with --host")
		}
		if c.Preset != "" {
			return cli.Usagef("--preset names simulated hardware; it needs the embedded engine (no --host)")
		}
	}
	if len(c.pp) == 0 || len(c.tg) == 0 {
		return cli.Usagef("--pp and --tg are required")
	}
	if len(c.concurrency) == 0 {
		c.concurrency = cli.IntList{1}
	}
	for _, s := range []struct {
		name string
		f    exo.Filter
	}{{"prefill", c.prefill.filter}, {"decode", c.decode.filter}} {
		if !slices.Contains([]string{"ring", "jaccl", "both"}, s.f.InstanceMeta) {
			return cli.Usagef("%s side: instance_meta=%q: want ring, jaccl or both", s.name, s.f.InstanceMeta)
		}
		if !slices.Contains([]string{"pipeline", "tensor", "both"}, s.f.Sharding) {
			return cli.Usagef("%s side: sharding=%q: want pipeline, tensor or both", s.name, s.f.Sharding)
		}
		if s.f.MinNodes < 1 || s.f.MaxNodes < s.f.MinNodes {
			return cli.Usagef("%s side: min_nodes=%d max_nodes=%d: want 1 ≤ min ≤ max", s.name, s.f.MinNodes, s.f.MaxNodes)
		}
	}
	switch {
	case c.repeat < 1:
		return cli.Usagef("--repeat=%d: must be at least 1", c.repeat)
	case c.warmup < 0:
		return cli.Usagef("--warmup=%d: must be 0 or more", c.warmup)
	case c.Port < 1 || c.Port > 65535:
		return cli.Usagef("--port=%d: not a port number", c.Port)
	case !slices.Contains(formats, c.format):
		return cli.Usagef("--format=%q: want one of %s", c.format, strings.Join(formats, ", "))
	case !(c.timeout > 0):
		return cli.Usagef("--timeout=%v: must be positive", c.timeout)
	case !(c.settle >= 0):
		return cli.Usagef("--settle-timeout=%v: must be 0 or more", c.settle)
	case !(c.pause >= 0):
		return cli.Usagef("--pause=%v: must be 0 or more", c.pause)
	case c.prefill.node != "" && c.prefill.node == c.decode.node:
		return cli.Usagef("--prefill-node and --decode-node both name %q: the two instances need different nodes", c.prefill.node)
	}
	if err := disagg.CheckPlan(c.plan()); err != nil {
		return &cli.UsageError{Err: err}
	}
	return nil
}

func (c *config) plan() benchkit.Plan {
	return benchkit.Plan{
		PP: c.pp, TG: c.tg, AllCombinations: c.allCombinations, Concurrency: c.concurrency,
		Repeat: c.repeat, Warmup: c.warmup, Stream: c.stream,
		PauseBetweenRepeats: seconds(c.pause), PauseBetweenGroups: seconds(c.pause),
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// env is what tests change in run: sim adjusts the embedded engine's
// options before it starts, and stopping sees the engine after the run,
// before it stops.
type env struct {
	sim      func(*sim.Options)
	stopping func(*sim.Server)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runEnv(ctx, args, stdout, stderr, env{})
}

func runEnv(ctx context.Context, args []string, stdout, stderr io.Writer, e env) error {
	c, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.Check(ctx, args, slices.Min(c.pp)); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))

	if !c.dryRun {
		lock, err := claimOutputs(c)
		if err != nil {
			return err
		}
		defer lock.Release()
	}

	if c.Embedded() && e.sim != nil {
		e.sim(&c.Sim)
	}
	// The engine outlives an interrupt, so the cleanup can reach it.
	if err := c.Start(ctx, stderr); err != nil {
		return err
	}
	defer c.Close()
	if c.Server != nil && e.stopping != nil {
		defer e.stopping(c.Server)
	}
	if c.decode.model == "" {
		c.decode.model = c.Model
	}
	if c.prefill.model == "" {
		c.prefill.model = c.decode.model
	}
	client, err := exo.New(c.URL, &exo.Options{MaxBurst: max(slices.Max(c.concurrency), 1), RequestTimeout: seconds(c.timeout)})
	if err != nil {
		return cli.Usagef("--host: %v", err)
	}
	defer client.CloseIdleConnections()
	if c.Counter == nil {
		cnt, err := cli.ServerCounter(ctx, c.URL, c.decode.model, nil)
		if err != nil {
			return fmt.Errorf("no --tokenizer given and the cluster cannot count prompt tokens (%w); pass --tokenizer DIR with the model's tokenizer.json", err)
		}
		c.Counter, c.Info.Tokenizer = cnt, "the server's /tokenize"
	}
	decodeCard, err := client.ResolveModel(ctx, c.decode.model, c.forceDownload)
	if err != nil {
		return fmt.Errorf("resolve the decode model %q: %w", c.decode.model, err)
	}
	prefillCard, err := client.ResolveModel(ctx, c.prefill.model, c.forceDownload)
	if err != nil {
		return fmt.Errorf("resolve the prefill model %q: %w", c.prefill.model, err)
	}
	builder := &promptsize.Builder{Counter: c.Counter}
	overhead, err := builder.Overhead(ctx)
	if err != nil {
		return err
	}
	plan := c.plan()
	if err := plan.Validate(overhead); err != nil {
		return &cli.UsageError{Err: err}
	}

	pair, err := disagg.SelectPair(ctx, client,
		disagg.Side{Card: prefillCard, Node: c.prefill.node, Filter: c.prefill.filter},
		disagg.Side{Card: decodeCard, Node: c.decode.node, Filter: c.decode.filter},
		seconds(c.settle))
	if err != nil {
		return err
	}
	if c.dryRun {
		fmt.Fprintf(stdout, "PREFILL: %s\n", pair.Describe("prefill"))
		fmt.Fprintf(stdout, "DECODE:  %s\n", pair.Describe("decode"))
		fmt.Fprintf(stdout, "LINK:    would link prefill instance %s to decode instance %s ({\"prefill_instances\": [%q], \"decode_instances\": [%q]})\n",
			pair.Prefill.Instance.ID, pair.Decode.Instance.ID, pair.Prefill.Instance.ID, pair.Decode.Instance.ID)
		phases := disagg.PhaseDisaggregated
		if c.compareBaseline {
			phases = strings.Join([]string{disagg.PhasePrefillAlone, disagg.PhaseDisaggregated, disagg.PhaseDecodeAlone}, ", ")
		}
		fmt.Fprintf(stdout, "dry run: nothing created; a run would measure %s with pp=%s tg=%s\n", phases, c.pp.String(), c.tg.String())
		return nil
	}
	logger.Info("PREFILL: " + pair.Describe("prefill"))
	logger.Info("DECODE: " + pair.Describe("decode"))

	c.Info.Provenance.Nonce = cli.RunNonce(0, false)
	d := &disagg.Benchmark{
		Client: client, Pair: pair, CompareBaseline: c.compareBaseline, NoProbe: c.noProbe, Settle: seconds(c.settle),
		PlanOptions: exo.PlanOptions{DeleteDownloads: c.dangerDelete, SettleTimeout: seconds(c.settle)},
		Runner:      benchkit.Runner{Builder: builder, Simulated: c.Info.Simulated, Logger: logger, Nonce: c.Info.Provenance.Nonce},
		Logger:      logger,
	}
	meta := disagg.Meta{RunInfo: c.Info, Prefill: pair.Describe("prefill"), Decode: pair.Describe("decode"),
		Plan: plan, CompareBaseline: c.compareBaseline}
	meta.Started = time.Now().UTC().Format(time.RFC3339)
	// On a terminal, a progress bar on stderr over every phase (each
	// measures the same plan); nothing otherwise.
	phases := 1
	if c.compareBaseline {
		phases = 3
	}
	bar := cli.NewProgress(stderr, phases*plan.Requests())
	if bar != nil {
		d.Sinks = append(d.Sinks, bar)
	}
	bar.Start()
	res, runErr := d.Run(ctx, plan)
	bar.Finish()
	meta.Finished = time.Now().UTC().Format(time.RFC3339)
	if err := writeOutputs(c, disagg.NewDocument(meta, res), stdout, stderr); err != nil {
		return errors.Join(runErr, err)
	}
	if runErr != nil && ctx.Err() != nil {
		runErr = fmt.Errorf("interrupted after %d requests; the link and instances of the run were removed: %w", len(res.Requests), runErr)
	}
	return cli.Outcome(runErr, benchkit.Report{Requests: res.Requests}.Failed(), len(res.Requests), false, "", false)
}

func writeOutputs(c *config, doc disagg.Document, stdout, stderr io.Writer) error {
	var errs []error
	if c.jsonOut != "" && !c.stdout {
		if err := cli.WriteResults(c.jsonOut, doc); err != nil {
			errs = append(errs, err)
		} else {
			fmt.Fprintf(stderr, "prefill-decode: results: %s\n", c.jsonOut)
		}
	}
	if c.htmlPath != "" {
		err := cli.WriteFileAtomic(c.htmlPath, func(w io.Writer) error { return report.WritePrefillDecode(w, doc, report.Options{}) })
		if err != nil {
			errs = append(errs, err)
		} else {
			fmt.Fprintf(stderr, "prefill-decode: page: %s\n", c.htmlPath)
		}
	}
	switch {
	case c.stdout || c.format == "json":
		errs = append(errs, disagg.WriteJSON(stdout, doc))
	default:
		errs = append(errs, disagg.WriteTable(stdout, doc, c.format == "md"))
	}
	return errors.Join(errs...)
}

// claimOutputs locks --json-out (unless --stdout) and --html for the run,
// so that a second run given either path is refused (exit 2, naming this
// one), and removes the previous files there, so that a run that dies
// never leaves them looking like its own.
func claimOutputs(c *config) (*cli.OutputLock, error) {
	jsonOut := c.jsonOut
	if c.stdout {
		jsonOut = ""
	}
	return cli.ClaimOutputs("prefill-decode", cli.Output{Flag: "json-out", Path: jsonOut}, cli.Output{Flag: "html", Path: c.htmlPath})
}
