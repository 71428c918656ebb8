package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	htmlreport "github.com/inferbench/inferbench/benchkit/report"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/workload"
)

// sample is the trace the program replays without --trace: a synthetic
// sample made by scripts/gen_workload_samples.py (no row of a public
// trace), built into the program so that it runs from any directory.
//
//go:embed synthetic_qwen_traceA_1k.jsonl
var sample []byte

// sampleName names the built-in sample in output and results.
const sampleName = "synthetic_qwen_traceA_1k.jsonl (built in)"

// defaultScales are bench_qwen.py's SCALES, "from fast to slow".
const defaultScales = "0.4,0.5,0.6,0.7,0.8,1.6"

// leadIn is when a scale's first request goes, after the scale's start:
// mini-sglang's offset = min(timestamp) − 1.
const leadIn = time.Second

type options struct {
	target         cli.Target
	trace          string
	builtIn        bool // trace is the built-in sample
	rows           int
	scales         []float64
	jsonOut        string
	htmlPath       string
	grace          time.Duration
	allowSaturated bool

	// Read by parse: each scale's rows (At scaled and led in), the
	// trace's block size and format.
	scaled    [][]workload.Row
	blockSize int
	format    workload.Format
}

// parse reads and checks every flag and reads the trace once per scale;
// it returns a *cli.UsageError for anything wrong, before anything is
// started or sent.
func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench-qwen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.target.Program = "bench-qwen"
	o.target.AddFlags(fs)
	fs.StringVar(&o.trace, "trace", "", "Bailian or Mooncake trace to replay (default: the built-in synthetic sample, 1,000 rows paced like qwen_traceA)")
	fs.IntVar(&o.rows, "rows", 1000, "replay the first N rows of the trace (0: all), as bench_qwen.py's N")
	scales := fs.String("scales", defaultScales, "comma list of time scales, each run in turn: a row goes at start + 1 s + scale × its timestamp")
	fs.StringVar(&o.jsonOut, "json-out", "", "write every scale's figures and benchkit load document to this JSON file, rewritten after each scale")
	fs.StringVar(&o.htmlPath, "html", "", "write every scale's figures as one self-contained HTML page to this file at the end: mini-sglang's beside ours with their intervals, warnings, a per-request timeline of each scale; it fetches nothing (docs/REPORT.md)")
	fs.DurationVar(&o.grace, "grace", 10*time.Second, "on interrupt, how long requests in flight may finish")
	fs.BoolVar(&o.allowSaturated, "allow-saturated", false, "exit 0 even when the client itself was the bottleneck (by default such a run exits 3)")
	if err := fs.Parse(args); err != nil {
		return o, &cli.UsageError{Err: err}
	}
	if fs.NArg() > 0 {
		return o, cli.Usagef("unexpected argument %q; every setting is a flag", fs.Arg(0))
	}
	var err error
	if o.scales, err = parseScales(*scales); err != nil {
		return o, err
	}
	switch {
	case o.rows < 0:
		return o, cli.Usagef("--rows must not be negative, got %d", o.rows)
	case o.grace < 0:
		return o, cli.Usagef("--grace must not be negative, got %v", o.grace)
	case !o.target.Embedded() && o.target.Tokenizer == "":
		return o, cli.Usagef("--base-url needs --tokenizer DIR (the model's tokenizer.json): every prompt is made of the trace's hash ids as exact token blocks, which the server's /tokenize cannot build")
	}
	if o.trace == "" {
		o.trace, o.builtIn = sampleName, true
	}
	for _, s := range o.scales {
		rows, err := o.read(s)
		if err != nil {
			return o, err
		}
		o.scaled = append(o.scaled, rows)
	}
	return o, nil
}

// parseScales reads --scales: positive finite numbers, comma-separated.
func parseScales(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, cli.Usagef("--scales: %q is not a positive number (a scale multiplies the trace's timestamps)", strings.TrimSpace(f))
		}
		out = append(out, v)
	}
	return out, nil
}

// read reads the trace's first --rows rows for one scale: the scale
// multiplies the timestamps (Speedup 1/scale), and every row goes leadIn
// later, so the first goes at the scale's start + 1 s.
func (o *options) read(scale float64) ([]workload.Row, error) {
	var src io.Reader = bytes.NewReader(sample)
	if !o.builtIn {
		f, err := os.Open(o.trace)
		if err != nil {
			return nil, cli.Usagef("--trace: %v", err)
		}
		defer f.Close()
		src = f
	}
	r, err := workload.NewReader(src, o.trace, &workload.Options{Limit: o.rows, Speedup: 1 / scale})
	if err != nil {
		return nil, cli.Usagef("--trace: %v", err)
	}
	if r.Format() != workload.Bailian && r.Format() != workload.Mooncake {
		return nil, cli.Usagef("--trace %s is a %s file; bench-qwen replays a Bailian or Mooncake trace", o.trace, r.Format())
	}
	var rows []workload.Row
	for r.Next() {
		row := r.Row()
		row.At += leadIn
		rows = append(rows, row)
	}
	if err := r.Err(); err != nil {
		return nil, cli.Usagef("--trace: %v", err)
	}
	if len(rows) == 0 {
		return nil, cli.Usagef("--trace %s holds no request", o.trace)
	}
	o.blockSize, o.format = r.BlockSize(), r.Format()
	return rows, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runWith(ctx, args, stdout, stderr, hooks{})
}

// hooks let tests change what run does: target changes the target before
// it starts (the embedded engine's faults), wrap wraps the engine the
// requests go to, and afterScale runs after each scale's run.
type hooks struct {
	target     func(*cli.Target)
	wrap       func(engine.Engine) engine.Engine
	afterScale func(i int)
}

// scaleRun is one scale's results: the scale, its benchkit document and
// mini-sglang's figures computed from its requests.
type scaleRun = htmlreport.QwenScale

func runWith(ctx context.Context, args []string, stdout, stderr io.Writer, h hooks) error {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // -h or --help: the usage is written; exit 0
	}
	if err != nil {
		return err
	}
	tg := &o.target
	if err := tg.Check(ctx, args, 0); err != nil {
		return err
	}
	lock, err := lockOutputs(o)
	if err != nil {
		return err
	}
	defer lock.Release()
	if h.target != nil {
		h.target(tg)
	}
	if err := tg.Start(ctx, stderr); err != nil {
		return err
	}
	defer tg.Close()
	vocab, ok := tg.Counter.(promptsize.Vocabulary)
	if !ok {
		return cli.Usagef("%s needs the model's tokenizer (--tokenizer DIR) to make exact token blocks of its hash ids; the server's /tokenize cannot", o.trace)
	}
	blocks, err := promptsize.NewTokenBlocks(vocab, promptsize.BlockOptions{})
	if err != nil {
		return err
	}
	client, err := tg.OpenAI(openai.Options{})
	if err != nil {
		return err
	}
	defer client.CloseIdleConnections()
	var eng engine.Engine = client
	if h.wrap != nil {
		eng = h.wrap(eng)
	}

	runs, runErr := runScales(ctx, &o, tg, eng, blocks, stderr, h)
	if errors.Is(runErr, benchkit.ErrBadLoad) && len(runs) == 0 {
		return runErr // nothing was sent
	}
	if err := report(stdout, o, tg.Info, runs); err != nil {
		return errors.Join(runErr, err)
	}
	if o.htmlPath != "" && len(runs) > 0 {
		if err := writeHTML(o, runs); err != nil {
			return errors.Join(runErr, err)
		}
		fmt.Fprintf(stderr, "bench-qwen: page in %s\n", o.htmlPath)
	}
	failed, total, saturated, reasons := 0, 0, false, []string{}
	for _, r := range runs {
		s := summary(r.Load)
		failed, total = failed+s.Failed, total+s.Requests
		if r.Load.Meta.ClientSaturated {
			saturated = true
			reasons = append(reasons, fmt.Sprintf("scale %g: %s", r.Scale, r.Load.Meta.Saturation()))
		}
	}
	return cli.Outcome(runErr, failed, total, saturated, strings.Join(reasons, "; "), o.allowSaturated)
}

// runScales runs every scale in turn, each with a progress line of its
// own, rewriting --json-out after each. It stops at an interrupt, or at a
// scale whose run failed as a whole, and returns the scales measured.
func runScales(ctx context.Context, o *options, tg *cli.Target, eng engine.Engine, blocks *promptsize.TokenBlocks, stderr io.Writer, h hooks) ([]scaleRun, error) {
	var runs []scaleRun
	for i, scale := range o.scales {
		if ctx.Err() != nil {
			return runs, ctx.Err()
		}
		rows := o.scaled[i]
		fmt.Fprintf(stderr, "bench-qwen: scale %g (%d of %d): %d requests from start + %.1f s to + %.1f s\n",
			scale, i+1, len(o.scales), len(rows), rows[0].At.Seconds(), rows[len(rows)-1].At.Seconds())
		progress := cli.NewProgress(stderr, len(rows))
		progress.Start()
		doc, err := measure(ctx, o, tg, eng, blocks, progress, i)
		progress.Finish()
		if errors.Is(err, benchkit.ErrBadLoad) {
			return runs, err
		}
		var reqs []benchkit.Request
		for _, r := range doc.AllRuns() {
			reqs = append(reqs, r.Requests...)
		}
		runs = append(runs, scaleRun{Scale: scale, Mini: figuresOf(reqs), Load: doc})
		s := summary(doc)
		fmt.Fprintf(stderr, "bench-qwen: scale %g done: %d/%d completed in %.1f s\n", scale, s.Completed, s.Requests, s.DurationS)
		if o.jsonOut != "" {
			if werr := writeJSON(*o, runs); werr != nil {
				return runs, errors.Join(err, werr)
			}
		}
		if h.afterScale != nil {
			h.afterScale(i)
		}
		if err != nil {
			return runs, err
		}
	}
	return runs, nil
}

// measure runs scale i: one Load replaying the scale's rows at their
// instants, its own nonce (so its own blocks), streamed, greedy, EOS
// ignored.
func measure(ctx context.Context, o *options, tg *cli.Target, eng engine.Engine, blocks *promptsize.TokenBlocks, progress *cli.Progress, i int) (benchkit.LoadDocument, error) {
	temp, topK := 0.0, 1
	nonce := cli.RunNonce(0, false)
	prov := *tg.Info.Provenance
	prov.Nonce = nonce
	meta := benchkit.LoadMeta{RunInfo: tg.Info, Stream: true}
	meta.Provenance = &prov
	load := &benchkit.Load{
		Engine:         eng,
		Model:          tg.Model,
		Builder:        &promptsize.Builder{Counter: tg.Counter},
		Request:        engine.Request{Temperature: &temp, TopK: &topK},
		RequestTimeout: tg.Timeout,
		Grace:          o.grace,
		Simulated:      tg.Info.Simulated,
		Nonce:          nonce,
		GCPercent:      cli.DefaultGCPercent,
	}
	if progress != nil {
		load.Sinks = append(load.Sinks, progress)
	}
	w := benchkit.Trace{Name: o.trace, Rows: o.scaled[i], BlockSize: o.blockSize, Blocks: blocks}
	plan := benchkit.LoadPlan{Workload: w, Traffic: benchkit.Traffic{Replay: true}}
	return load.Document(ctx, meta, plan)
}

// lockOutputs locks --json-out and --html for the run and removes the
// previous files.
func lockOutputs(o options) (*cli.OutputLock, error) {
	return cli.ClaimOutputs("bench-qwen", cli.Output{Flag: "json-out", Path: o.jsonOut}, cli.Output{Flag: "html", Path: o.htmlPath})
}
