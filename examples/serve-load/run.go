package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/benchkit/plot"
	htmlreport "github.com/inferbench/inferbench/benchkit/report"
	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/internal/termwidth"
	"github.com/inferbench/inferbench/precision"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

type options struct {
	target                                          cli.Target
	pp, tg, inputLen, outputLen                     int
	rangeRatio                                      float64
	numRequests                                     int
	duration                                        time.Duration
	until                                           []precision.Target
	rate                                            string
	burstiness                                      float64
	ramp                                            string
	rampEnd, probeRate                              float64
	rampDuration                                    time.Duration
	maxConcurrency, burst, users                    int
	think                                           time.Duration
	trace                                           cli.WorkloadFlags
	seed                                            uint64
	seeded                                          bool
	sharedPrefix                                    int
	gcPercent                                       cli.GCPercent
	stream, allowSaturated, allowEOS                bool
	sloTTFT, sloTTFA, sloTPOT, sloITL, sloE2E       float64
	attainment                                      float64
	findMaxRate                                     bool
	searchStart, searchMax, searchFactor, searchTol float64
	jsonOut, jsonl, format, plotPath, htmlPath      string
	grace                                           time.Duration
	split                                           splitFlags
	thinking                                        cli.ThinkingFlags
	warmup                                          int
	capacity                                        capacityFlags
	predict                                         bool
}

// parse reads and checks every flag; it returns a *cli.UsageError
// for anything wrong, before anything is started or sent.
func parse(args []string, stderr io.Writer) (options, []float64, timing.SLO, error) {
	var o options
	fs := flag.NewFlagSet("serve-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.target.Program = "serve-load"
	o.target.AddFlags(fs)
	fs.IntVar(&o.pp, "pp", 0, "fixed prompt length in tokens (same as --input-len with --range-ratio 0)")
	fs.IntVar(&o.tg, "tg", 0, "fixed generation length in tokens (same as --output-len with --range-ratio 0)")
	fs.IntVar(&o.inputLen, "input-len", 256, "mean prompt length in tokens, chat template included")
	fs.IntVar(&o.outputLen, "output-len", 64, "mean generation length in tokens")
	fs.Float64Var(&o.rangeRatio, "range-ratio", 0, "lengths are uniform in [len·(1−r), len·(1+r)], r in [0, 1)")
	fs.IntVar(&o.numRequests, "num-requests", 32, "requests per run (0: bounded by --duration only)")
	fs.DurationVar(&o.duration, "duration", 0, "schedule requests for at most this long (0: no bound)")
	fs.Func("until", "stop each run once these target margins of error are met, --num-requests/--duration its cap: comma list of FIGURE.STAT:MARGIN%[@LEVEL], e.g. ttft.p99:5%,tpot.mean:2%@90 (figures ttft, tpot, itl, e2e, ttfa; stats mean, p50, p90, p95, p99)", func(v string) error {
		ts, err := precision.ParseTargets(v)
		o.until = append(o.until, ts...)
		return err
	})
	fs.StringVar(&o.rate, "rate", "inf", "requests per second; inf sends all at once; a comma list runs a sweep")
	fs.Float64Var(&o.burstiness, "burstiness", 1, "gamma shape of the gaps: 1 is Poisson, <1 burstier, >1 more regular")
	fs.StringVar(&o.ramp, "ramp", "", "ramp the rate from --rate (the start; 0 allowed for linear) to --ramp-end-rate over --ramp-duration, then hold it: linear or exponential")
	fs.Float64Var(&o.rampEnd, "ramp-end-rate", 0, "with --ramp: the rate in requests per second the ramp ends at")
	fs.DurationVar(&o.rampDuration, "ramp-duration", 0, "with --ramp: how long the ramp takes, from the schedule's start")
	fs.Float64Var(&o.probeRate, "probe-rate", 0, "send one-token head-of-line probes at this many per second beside the load, outside --max-concurrency, reported apart (0: none)")
	fs.IntVar(&o.maxConcurrency, "max-concurrency", 0, "cap on requests in flight (0: none)")
	fs.IntVar(&o.burst, "burst", 0, "send one barrier-synchronised burst of N requests instead of an open loop")
	o.trace.AddFlags(fs)
	o.trace.AddSharedPrefixFlags(fs)
	fs.IntVar(&o.users, "users", 0, "send a closed loop of N users instead, each sending its next request when its previous reply ends (--num-requests in all)")
	fs.DurationVar(&o.think, "think", 0, "with --users: each user's pause between a reply and its next request")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the lengths, the arrival schedule and, when given, the run nonce in every prompt (default: a random nonce, so no run resends another's prompts)")
	o.gcPercent = cli.DefaultGCPercent
	fs.Var(&o.gcPercent, "gc-percent", cli.GCPercentUsage)
	fs.IntVar(&o.sharedPrefix, "shared-prefix", 0, "tokens every prompt shares after the chat template, for prefix-cache ablations (0: none; each prompt differs from its first content token)")
	fs.BoolVar(&o.stream, "stream", true, "stream responses (needed for TTFT, TPOT and ITL)")
	fs.Float64Var(&o.sloTTFT, "slo-ttft", 0, "TTFT objective in ms for goodput (0: none)")
	fs.Float64Var(&o.sloTTFA, "slo-ttfa", 0, "objective in ms on the time to the first answer token, after a reasoning model's thinking (TTFT for one that does not reason) (0: none)")
	fs.Float64Var(&o.sloTPOT, "slo-tpot", 0, "TPOT objective in ms (0: none)")
	fs.Float64Var(&o.sloITL, "slo-itl", 0, "ITL objective in ms: every gap within it (0: none)")
	fs.Float64Var(&o.sloE2E, "slo-e2e", 0, "E2E objective in ms (0: none)")
	fs.Float64Var(&o.attainment, "slo-attainment", benchkit.DefaultSLOAttainment, "share of requests that must meet every objective for a run to meet the SLOs")
	fs.BoolVar(&o.findMaxRate, "find-max-rate", false, "search the highest rate meeting the SLOs")
	fs.Float64Var(&o.searchStart, "search-start", concurrency.DefaultSearchStart, "first rate --find-max-rate probes")
	fs.Float64Var(&o.searchMax, "search-max", 0, "highest rate --find-max-rate probes (0: no ceiling)")
	fs.Float64Var(&o.searchFactor, "search-factor", concurrency.DefaultSearchFactor, "--find-max-rate multiplies the rate by this while bracketing")
	fs.Float64Var(&o.searchTol, "search-tolerance", concurrency.DefaultSearchTolerance, "--find-max-rate stops bisecting when (hi − lo)/lo is at most this")
	o.capacity.addFlags(fs)
	fs.StringVar(&o.jsonOut, "json-out", "", "write the results as JSON to this file")
	fs.StringVar(&o.jsonl, "jsonl", "", "append each request's row to this file as one JSON line as soon as it ends, after a run header line ({\"run_header\": ...}), so an interrupted run keeps every row")
	fs.StringVar(&o.format, "format", "table", "stdout format: table, markdown or json")
	fs.StringVar(&o.plotPath, "plot", "", "write a PNG plot to this file (TTFT by prompt length; p99 latency by rate for sweeps)")
	fs.StringVar(&o.htmlPath, "html", "", "write the results as one self-contained HTML page to this file: tables with intervals, the server's view, warnings, inline plots; it fetches nothing (docs/REPORT.md)")
	fs.BoolVar(&o.allowEOS, "allow-eos", false, "let the server stop at an end of sequence before the drawn output length (no ignore_eos; Ollama has none, and a real model may stop early)")
	fs.BoolVar(&o.allowSaturated, "allow-saturated", false, "exit 0 even when the client itself was the bottleneck (by default such a run exits 3)")
	fs.DurationVar(&o.grace, "grace", 10*time.Second, "on interrupt, how long requests in flight may finish")
	fs.IntVar(&o.warmup, "warmup", 0, "before each run, send N warm-up requests of the workload's kind (own salts, at most --max-concurrency at once) and drop them: in no row and no figure")
	fs.BoolVar(&o.predict, "predict", false, "predict the plan on the embedded engine's virtual clock instead of sending it, in a fraction of its time (no --base-url; a rate or a rate list, a burst, a trace replay, --users, --max-concurrency, --find-capacity or --find-max-rate): rows and table labelled predicted (docs/PREDICT.md)")
	addSplitFlags(fs, &o.split)
	o.thinking.AddFlags(fs, true)
	var slo timing.SLO
	if err := fs.Parse(args); err != nil {
		return o, nil, slo, &cli.UsageError{Err: err}
	}
	if fs.NArg() > 0 {
		return o, nil, slo, cli.Usagef("unexpected argument %q; every setting is a flag", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	o.seeded = set["seed"]
	if err := o.trace.Load(set["rate"] || o.users > 0 || o.burst > 0); err != nil {
		return o, nil, slo, err
	}
	if o.sharedPrefix < 0 {
		return o, nil, slo, cli.Usagef("--shared-prefix must not be negative, got %d", o.sharedPrefix)
	}
	if o.sharedPrefix > 0 && o.trace.Generated() {
		return o, nil, slo, cli.Usagef("--shared-prefix and the --gsp-* flags both set; the generated shared-prefix load shares its own prefixes")
	}
	if set["pp"] && set["input-len"] || set["tg"] && set["output-len"] {
		return o, nil, slo, cli.Usagef("--pp/--tg and --input-len/--output-len both set; use one pair")
	}
	if set["pp"] {
		o.inputLen = o.pp
	}
	if set["tg"] {
		o.outputLen = o.tg
	}
	if (set["pp"] || set["tg"]) && o.rangeRatio != 0 {
		return o, nil, slo, cli.Usagef("--pp/--tg are fixed lengths; use --input-len/--output-len with --range-ratio for random ones")
	}
	rates, err := cli.ParseRates(o.rate)
	if o.ramp != "" && strings.TrimSpace(o.rate) == "0" {
		rates, err = []float64{0}, nil // a linear ramp from nothing
	}
	if err != nil {
		return o, nil, slo, &cli.UsageError{Err: fmt.Errorf("--rate: %w", err)}
	}
	for _, v := range []struct {
		name string
		ms   float64
		d    *time.Duration
	}{{"slo-ttft", o.sloTTFT, &slo.TTFT}, {"slo-ttfa", o.sloTTFA, &slo.TTFA}, {"slo-tpot", o.sloTPOT, &slo.TPOT}, {"slo-itl", o.sloITL, &slo.ITL}, {"slo-e2e", o.sloE2E, &slo.E2E}} {
		if math.IsNaN(v.ms) || v.ms < 0 || math.IsInf(v.ms, 0) {
			return o, nil, slo, cli.Usagef("--%s must be a non-negative number of milliseconds, got %g", v.name, v.ms)
		}
		*v.d = time.Duration(v.ms * float64(time.Millisecond))
	}
	switch {
	case o.format != "table" && o.format != "markdown" && o.format != "json":
		return o, nil, slo, cli.Usagef("--format must be table, markdown or json, got %q", o.format)
	case o.burst > 0 && (len(rates) > 1 || set["rate"] || o.findMaxRate):
		return o, nil, slo, cli.Usagef("--burst sends one burst; it takes no --rate and no --find-max-rate")
	case o.users > 0 && (o.burst > 0 || set["rate"] || o.findMaxRate || o.duration > 0):
		return o, nil, slo, cli.Usagef("--users runs a closed loop of --num-requests; it takes no --burst, --rate, --duration or --find-max-rate")
	case o.users < 0 || o.think < 0 || (o.think > 0 && o.users == 0):
		return o, nil, slo, cli.Usagef("--think needs --users, and neither may be negative")
	case o.ramp != "" && (!set["rate"] || len(rates) > 1 || o.findMaxRate || o.capacity.on):
		return o, nil, slo, cli.Usagef("--ramp starts at one --rate (its start rate) and takes no rate list, no --find-max-rate and no --find-capacity")
	case o.ramp == "" && (set["ramp-end-rate"] || set["ramp-duration"]):
		return o, nil, slo, cli.Usagef("--ramp-end-rate and --ramp-duration need --ramp linear or --ramp exponential")
	case o.findMaxRate && len(rates) > 1:
		return o, nil, slo, cli.Usagef("--find-max-rate searches the rate itself; drop the --rate list")
	case o.findMaxRate && slo == (timing.SLO{}):
		return o, nil, slo, cli.Usagef("--find-max-rate needs at least one of --slo-ttft, --slo-ttfa, --slo-tpot, --slo-itl, --slo-e2e")
	case o.findMaxRate && (o.searchStart <= 0 || math.IsNaN(o.searchStart) || math.IsInf(o.searchStart, 0)):
		return o, nil, slo, cli.Usagef("--search-start must be a positive rate, got %g", o.searchStart)
	case o.findMaxRate && !(o.searchFactor > 1 && o.searchFactor < math.Inf(1)):
		return o, nil, slo, cli.Usagef("--search-factor must be a finite number above 1, got %g", o.searchFactor)
	case o.findMaxRate && !(o.searchTol > 0 && o.searchTol < math.Inf(1)):
		return o, nil, slo, cli.Usagef("--search-tolerance must be a positive number, got %g", o.searchTol)
	case o.searchMax < 0 || math.IsNaN(o.searchMax):
		return o, nil, slo, cli.Usagef("--search-max must not be negative, got %g", o.searchMax)
	case o.attainment <= 0 || o.attainment > 1 || math.IsNaN(o.attainment):
		return o, nil, slo, cli.Usagef("--slo-attainment must be in (0, 1], got %g", o.attainment)
	case !o.stream && slo.TTFT+slo.TTFA+slo.TPOT+slo.ITL > 0:
		return o, nil, slo, cli.Usagef("TTFT, TTFA, TPOT and ITL objectives need --stream")
	case o.target.Timeout < 0 || o.grace < 0:
		return o, nil, slo, cli.Usagef("--timeout and --grace must not be negative")
	case o.warmup < 0:
		return o, nil, slo, cli.Usagef("--warmup must not be negative, got %d", o.warmup)
	}
	if err := o.thinking.Check(); err != nil {
		return o, nil, slo, err
	}
	settings := len(o.thinking.Settings())
	if o.findMaxRate && settings > 1 {
		return o, nil, slo, cli.Usagef("--find-max-rate searches under one thinking setting; --thinking and --reasoning-effort give %d", settings)
	}
	if err := o.capacity.check(o, set["rate"], rates, settings); err != nil {
		return o, nil, slo, err
	}
	if err := o.split.resolve(o.seeded, len(rates) > 1 || o.findMaxRate || o.capacity.on || settings > 1); err != nil {
		return o, nil, slo, err
	}
	if err := o.checkPredict(settings); err != nil {
		return o, nil, slo, err
	}
	if o.findMaxRate || o.capacity.on {
		rates = nil
	}
	if err := (&benchkit.Load{Until: o.until, NoStream: !o.stream, Segment: o.split.seg}).CheckUntil(traffic(o)); err != nil {
		return o, nil, slo, &cli.UsageError{Err: fmt.Errorf("--until: %w", err)}
	}
	// Check lengths and traffic now, so a bad value is a usage error.
	if err := lengths(o).Validate(); err != nil {
		return o, nil, slo, &cli.UsageError{Err: err}
	}
	for _, r := range append(rates, o.searchStart) {
		t := traffic(o)
		t.Rate = r
		if err := t.Validate(); err != nil {
			return o, nil, slo, &cli.UsageError{Err: err}
		}
	}
	return o, rates, slo, nil
}

func lengths(o options) benchkit.Lengths {
	return benchkit.Lengths{Input: o.inputLen, Output: o.outputLen, RangeRatio: o.rangeRatio, Seed: o.seed}
}

func traffic(o options) benchkit.Traffic {
	return benchkit.Traffic{Burstiness: o.burstiness, Burst: o.burst, NumRequests: o.numRequests,
		Duration: o.duration, MaxConcurrency: o.maxConcurrency, Users: o.users, Think: o.think, Seed: o.seed,
		RampShape: o.ramp, RampTo: o.rampEnd, RampOver: o.rampDuration, ProbeRate: o.probeRate}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "merge" {
		return runMerge(ctx, args[1:], stdout, stderr)
	}
	return runWith(ctx, args, stdout, stderr, hooks{})
}

// hooks let tests change what run does: wrap wraps the engine requests go
// to (a slowed client); clock, when set, is the schedule's clock (a fake
// one makes every send exactly punctual).
type hooks struct {
	wrap  func(engine.Engine) engine.Engine
	clock concurrency.Clock
}

// plannedRequests is how many requests the invocation will send, for the
// progress line's total and ETA; 0 when it cannot be told in advance (a
// search, a --duration bound, one segment of a split plan).
func plannedRequests(o options, rates []float64) int {
	settings := max(len(o.thinking.Settings()), 1)
	switch {
	case o.findMaxRate || o.capacity.on || o.split.seg.Split():
		return 0
	case o.burst > 0:
		return o.burst * settings
	case o.trace.Set():
		return o.trace.Len() * max(len(rates), 1) * settings
	case o.duration > 0 || o.numRequests <= 0:
		return 0
	}
	return o.numRequests * max(len(rates), 1) * settings
}

func runWith(ctx context.Context, args []string, stdout, stderr io.Writer, h hooks) (err error) {
	o, rates, slo, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // -h or --help: the usage is written; exit 0
	}
	if err != nil {
		return err
	}
	// The target's checks (the token's variable, the preset, a tokenizer
	// and the shortest prompt against its chat template's overhead) come
	// before anything is started or sent.
	tg := &o.target
	shortest, _ := lengths(o).InputRange()
	if o.trace.Set() {
		shortest = 0 // a trace's rows have their own lengths, each checked as it is built
	}
	if err := tg.Check(ctx, args, shortest); err != nil {
		return err
	}
	prov := tg.Info.Provenance
	prov.Nonce, prov.Seed, prov.Seeded, prov.SharedPrefix = cli.RunNonce(o.seed, o.seeded), o.seed, o.seeded, o.sharedPrefix
	meta := benchkit.LoadMeta{Stream: o.stream}

	// The results files are this run's until it ends: a second run given
	// the same paths is refused (exit 2). The previous results JSON goes
	// now, so that a run that dies never leaves it looking current.
	lock, err := lockOutputs(o)
	if err != nil {
		return err
	}
	defer lock.Release()

	// The target: the given server, or the embedded engine, which lives
	// until the end of run, past an interrupt, so requests in flight can
	// finish.
	if err := tg.Start(ctx, stderr); err != nil {
		return err
	}
	defer tg.Close()
	client, err := tg.Client(openai.Options{})
	if err != nil {
		return err
	}
	defer client.CloseIdleConnections()
	meta.RunInfo = tg.Info
	if note := o.thinking.CounterNote(tg.Counter, tg.Info.Tokenizer); note != "" {
		fmt.Fprintln(stderr, "serve-load:", note)
	}
	// The rows file is opened once the provenance is whole, for its run
	// header; nothing has been sent yet.
	var rowsOut *jsonlFile
	if o.jsonl != "" {
		if rowsOut, err = appendJSONL(o.jsonl, prov, tg.NoHostInfo, o.split.header(traffic(o), rates)); err != nil {
			return &cli.UsageError{Err: err}
		}
		defer rowsOut.close()
	}

	load := &benchkit.Load{
		Engine:         client,
		Model:          tg.Model,
		Builder:        &promptsize.Builder{Counter: tg.Counter},
		NoStream:       !o.stream,
		RequestTimeout: tg.Timeout,
		Grace:          o.grace,
		Simulated:      meta.Simulated,
		Nonce:          prov.Nonce,
		SharedPrefix:   o.sharedPrefix,
		Segment:        o.split.seg,
		StartAt:        o.split.start,
		GCPercent:      int(o.gcPercent),
		ServerMetrics:  tg.Metrics,
		AllowEOS:       o.allowEOS,
		Warmup:         o.warmup,
		Until:          o.until,
	}
	if meta.Segment = o.split.header(traffic(o), rates); meta.Segment != nil {
		fmt.Fprintf(stderr, "serve-load: segment %s of the plan, shared start %q\n", o.split.seg, meta.Segment.StartAt)
	}
	fmt.Fprintf(stderr, "serve-load: run nonce %s (in every prompt's salt; --seed reproduces it)\n", prov.Nonce)
	if h.wrap != nil {
		load.Engine = h.wrap(load.Engine)
	}
	// Waits end on a timer, then spin to the instant: a timer alone wakes
	// about a millisecond late at p99, and every send with it.
	load.Clock = concurrency.SpinClock{}
	if h.clock != nil {
		load.Clock = h.clock
	}
	if rowsOut != nil {
		load.Sinks = append(load.Sinks, rowsOut)
	}
	// On a terminal, a progress line on stderr; nothing otherwise.
	progress := cli.NewProgress(stderr, plannedRequests(o, rates))
	if progress != nil {
		load.Sinks = append(load.Sinks, progress)
	}
	progress.Start()
	o.trace.Nonce = prov.Nonce
	// A trace's rows must fit every thinking setting's template.
	counter, err := o.thinking.WidestCounter(ctx, tg.Counter)
	if err != nil {
		return err
	}
	w, t, err := o.trace.Workload(ctx, lengths(o), traffic(o), counter)
	if err != nil {
		return err
	}
	if note := o.trace.Skipped(); note != "" {
		fmt.Fprintln(stderr, "serve-load:", note)
		meta.Warnings = append(meta.Warnings, note)
	}
	plan := benchkit.LoadPlan{Workload: w, Traffic: t, Rates: rates, SLO: slo, Attainment: o.attainment, Thinking: o.thinking.Settings()}
	if t.Replay {
		plan.Rates = nil
	}
	if o.findMaxRate {
		plan.Search = &concurrency.SearchOptions{Start: o.searchStart, Max: o.searchMax, Factor: o.searchFactor, Tolerance: o.searchTol}
	}
	if o.capacity.on {
		plan.Capacity = o.capacity.options(o)
	}
	var doc benchkit.LoadDocument
	var runErr error
	if o.predict {
		doc, runErr = predictPlan(ctx, tg, load, meta, plan)
	} else {
		doc, runErr = load.Document(ctx, meta, plan)
	}
	progress.Finish()
	if errors.Is(runErr, benchkit.ErrBadLoad) {
		return runErr
	}
	err = report(o, doc, slo, stdout, stderr)
	if rowsOut != nil {
		err = errors.Join(err, rowsOut.close())
	}
	if err != nil {
		return errors.Join(runErr, err)
	}
	failed, total := 0, 0
	for _, r := range doc.AllRuns() {
		failed, total = failed+r.Summary.Failed, total+r.Summary.Requests
	}
	if o.findMaxRate || o.capacity.on {
		failed = 0 // a search probes past the rates that fail
	}
	return cli.Outcome(runErr, failed, total, doc.Meta.ClientSaturated, doc.Meta.Saturation(), o.allowSaturated)
}

// runTitle is the title of the table and the plot: the model and the
// traffic actually sent ("rate inf: all at once" for an infinite rate, a
// rate sweep or a search by their rates), and the thinking settings, after
// "SIMULATED (preset)" for the embedded engine.
func runTitle(o options, meta benchkit.LoadMeta, runs []benchkit.LoadRun) string {
	traffic := meta.Traffic.String()
	// Each thinking setting runs the same traffic: one setting's runs.
	perSetting := len(runs) / max(len(meta.Thinking), 1)
	switch {
	case o.findMaxRate:
		traffic = fmt.Sprintf("search for the highest rate meeting the SLO (%d probes)", len(runs))
	case o.capacity.on:
		traffic = fmt.Sprintf("capacity search over %d rates", len(runs))
	case meta.Traffic.Replay:
		traffic = "replay of " + o.trace.Trace
	case perSetting <= 1 && len(runs) > 0 && runs[0].Summary.RequestRate == nil && meta.Traffic.Burst == 0 && meta.Traffic.Users == 0 && meta.Traffic.RampShape == "":
		traffic = "rate inf: all at once"
	case perSetting <= 1 && len(runs) > 0:
		traffic = runs[0].Summary.Traffic
	case perSetting > 1:
		traffic = fmt.Sprintf("sweep of %d rates", perSetting)
	}
	if len(meta.Thinking) > 0 {
		traffic += ", thinking " + strings.Join(meta.Thinking, " / ")
	}
	title := meta.Model + ", " + traffic
	if meta.Simulated {
		title = "SIMULATED (" + meta.Preset + "): " + title
	}
	if meta.Predicted {
		title = "PREDICTED, " + title
	}
	return title
}

// report writes the results: stdout in the chosen format, the JSON file
// and the plot.
func report(o options, doc benchkit.LoadDocument, slo timing.SLO, stdout, stderr io.Writer) error {
	meta, runs, maxRate := doc.Meta, doc.AllRuns(), doc.MaxRate
	title := runTitle(o, meta, runs)
	sums := make([]benchkit.Summary, len(runs))
	for i, r := range runs {
		sums[i] = r.Summary
	}
	if doc.Capacity != nil {
		byRate(sums)
	}
	var errs []error
	switch o.format {
	case "json":
		errs = append(errs, benchkit.WriteJSON(stdout, doc))
	default:
		errs = append(errs, benchkit.WriteTable(stdout, sums, benchkit.TableOptions{Title: title, Simulated: meta.Simulated, Predicted: meta.Predicted, Markdown: o.format == "markdown", Capacity: doc.Capacity}))
	}
	if o.format != "json" {
		writeProbes(stdout, runs)
	}
	if meta.ClientSaturated && o.format != "json" {
		fmt.Fprintf(stdout, "\n%s\n", termwidth.Wrap("CLIENT SATURATED: the load generator could not keep its schedule, so latencies include its own queueing: "+meta.Saturation()))
	}
	if maxRate != nil && o.format != "json" {
		switch {
		case maxRate.RateRPS > 0 && maxRate.Hi == 0 && o.searchMax > 0 && maxRate.RateRPS >= o.searchMax:
			fmt.Fprintf(stdout, "\nthe search reached --search-max %.3g requests/s and it met %s for %.0f%% of requests: the highest rate is at least that, not found (%d probes); raise --search-max\n",
				o.searchMax, maxRate.SLO, maxRate.Attainment*100, maxRate.Probes)
		case maxRate.RateRPS > 0 && maxRate.Hi == 0:
			fmt.Fprintf(stdout, "\nevery rate probed, up to %.3g requests/s, met %s for %.0f%% of requests: the highest rate is at least that, not found (%d probes)\n",
				maxRate.RateRPS, maxRate.SLO, maxRate.Attainment*100, maxRate.Probes)
		case maxRate.RateRPS > 0:
			fmt.Fprintf(stdout, "\nhighest rate meeting %s for %.0f%% of requests: %.3g requests/s (next probe up, %.3g/s, did not; %d probes)\n",
				maxRate.SLO, maxRate.Attainment*100, maxRate.RateRPS, maxRate.Hi, maxRate.Probes)
		default:
			fmt.Fprintf(stdout, "\nno rate probed met %s for %.0f%% of requests\n", maxRate.SLO, maxRate.Attainment*100)
		}
	}
	if o.jsonOut != "" {
		errs = append(errs, cli.WriteResults(o.jsonOut, doc))
	}
	if o.htmlPath != "" {
		errs = append(errs, cli.WriteFileAtomic(o.htmlPath, func(w io.Writer) error {
			return htmlreport.WriteLoad(w, doc, htmlreport.Options{Title: title, SLO: slo})
		}))
	}
	if o.plotPath != "" && len(runs) > 0 {
		var p plot.Drawing
		var err error
		if len(runs) > 1 {
			var fig *plot.Figure
			if fig, err = plot.LatencyPanels(title, plot.RatePoints(sums), slo); err == nil && doc.Capacity != nil {
				err = plot.MarkCapacity(fig, *doc.Capacity)
			}
			p = fig
		} else {
			p, err = plot.TTFTByPromptLength(title, runs[0].Requests)
		}
		if err == nil {
			err = plot.SavePNG(o.plotPath, p)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// lockOutputs claims --json-out, --html and --jsonl for this run: another run
// holding either is refused with a message naming it (exit 2), and the
// previous results JSON goes now, so that a run that dies never leaves it
// looking current; --jsonl keeps the earlier runs' rows.
func lockOutputs(o options) (*cli.OutputLock, error) {
	return cli.ClaimOutputs("serve-load", cli.Output{Flag: "json-out", Path: o.jsonOut}, cli.Output{Flag: "html", Path: o.htmlPath}, cli.Output{Flag: "jsonl", Path: o.jsonl, Append: true})
}

// jsonlFile is a benchkit.Sink that appends each row as one line as soon
// as its request ends and syncs it to stable storage, so a run that is
// interrupted, or killed, keeps every row measured until then. The run's
// rows follow a run header line, so the runs appended to one file can be
// told apart (benchkit.ParseRunHeader). The first write error is kept and
// reported by close, and does not stop the run; later rows are not
// written.
type jsonlFile struct {
	f   *benchkit.JSONLSink
	err error
}

func appendJSONL(path string, prov *benchkit.Provenance, noHost bool, seg *benchkit.SegmentHeader) (*jsonlFile, error) {
	h := cli.NewRunHeader("serve-load")
	h.Segment = seg
	h.Provenance = prov
	if noHost {
		h.Host = ""
	}
	f, err := benchkit.AppendJSONL(path, h)
	if err != nil {
		return nil, fmt.Errorf("--jsonl: %w", err)
	}
	return &jsonlFile{f: f}, nil
}

// Add writes r's line. It never fails: close reports the first error.
func (j *jsonlFile) Add(r benchkit.Request) error {
	if j.err != nil {
		return nil
	}
	if err := j.f.Add(r); err != nil {
		j.err = fmt.Errorf("--jsonl: %w", err)
	}
	return nil
}

// close closes the file once and returns the first error.
func (j *jsonlFile) close() error {
	if j.f == nil {
		return j.err
	}
	err := j.f.Close()
	j.f = nil
	if j.err == nil && err != nil {
		j.err = fmt.Errorf("--jsonl: %w", err)
	}
	return j.err
}
