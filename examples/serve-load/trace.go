package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/workload"
)

// traceFlags are the flags of a trace or dataset workload, and what was
// read of the file.
type traceFlags struct {
	trace, dataset, format, endpoint string
	rows, maxInput, maxOutput        int
	speedup                          float64

	rated     bool // a --rate was given: the rows go on its schedule
	rows_     []workload.Row
	blockSize int
}

func addTraceFlags(fs *flag.FlagSet, t *traceFlags) {
	fs.StringVar(&t.trace, "trace", "", "replay this trace file (Mooncake or Bailian JSONL, BurstGPT or Azure CSV) at its own instants; with --rate, on the rate's schedule instead")
	fs.StringVar(&t.dataset, "dataset", "", "send the requests of this dataset file (ShareGPT JSON, JSONL of prompts or messages) at --rate")
	fs.StringVar(&t.format, "trace-format", "", "the file's format: "+fmt.Sprint(workload.Formats())+" (default: inferred from the content)")
	fs.IntVar(&t.rows, "trace-rows", 0, "use the first N rows of the file (0: all)")
	fs.Float64Var(&t.speedup, "trace-speedup", 1, "divide the trace's gaps by this (AIPerf --synthesis-speedup-ratio R is R; SGLang --mooncake-slowdown-factor f is 1/f; GuideLLM time_scale t is 1/t)")
	fs.IntVar(&t.maxInput, "max-input-tokens", 0, "skip rows whose input is longer (0: none)")
	fs.IntVar(&t.maxOutput, "max-output-tokens", 0, "cap each row's output at this (0: none)")
	fs.StringVar(&t.endpoint, "endpoint", "chat", "chat, or completions: send each trace prompt as token ids to /v1/completions (exact, no re-tokenization)")
}

// set reports whether a trace or dataset was given.
func (t *traceFlags) set() bool { return t.trace != "" || t.dataset != "" }

// load checks the flags and reads the whole file, before anything starts:
// a bad row refuses the file (a usage error naming its line and rule).
func (t *traceFlags) load(rated bool) error {
	switch {
	case t.trace != "" && t.dataset != "":
		return cli.Usagef("--trace and --dataset both set; give one file")
	case t.endpoint != "chat" && t.endpoint != "completions":
		return cli.Usagef("--endpoint must be chat or completions, got %q", t.endpoint)
	case !t.set() && (t.endpoint != "chat" || t.rows != 0 || t.maxInput != 0 || t.maxOutput != 0 || t.format != "" || t.speedup != 1):
		return cli.Usagef("--endpoint, --trace-rows, --trace-format, --trace-speedup, --max-input-tokens and --max-output-tokens need --trace or --dataset")
	case !t.set():
		return nil
	case !(t.speedup > 0):
		return cli.Usagef("--trace-speedup must be a positive factor, got %g", t.speedup)
	}
	path := t.trace + t.dataset
	opts := &workload.Options{Limit: t.rows, MaxInput: t.maxInput, MaxOutput: t.maxOutput}
	if t.trace != "" {
		opts.Speedup = t.speedup
	} else if t.speedup != 1 {
		return cli.Usagef("--trace-speedup applies to a --trace; a --dataset has no timing")
	}
	if t.format != "" {
		f, err := workload.ParseFormat(t.format)
		if err != nil {
			return cli.Usagef("--trace-format: %v", err)
		}
		opts.Format = f
	}
	f, err := os.Open(path)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	defer f.Close()
	r, err := workload.NewReader(f, path, opts)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	for r.Next() {
		t.rows_ = append(t.rows_, r.Row())
	}
	if err := r.Err(); err != nil {
		return cli.Usagef("%v", err)
	}
	if len(t.rows_) == 0 {
		return cli.Usagef("%s holds no request", path)
	}
	t.blockSize, t.rated = r.BlockSize(), rated || t.dataset != ""
	return nil
}

// workload is the invocation's workload and traffic: the random lengths
// and traffic of the flags, or the trace's rows, replayed at their
// instants or sent on the rate's schedule, their prompts counted by
// counter.
func (t *traceFlags) workload(l benchkit.Lengths, tr benchkit.Traffic, rates []float64, counter promptsize.Counter) (benchkit.Workload, benchkit.Traffic, error) {
	if !t.set() {
		return l, tr, nil
	}
	w := benchkit.Trace{Name: t.trace + t.dataset, Rows: t.rows_, BlockSize: t.blockSize, Completions: t.endpoint == "completions"}
	if v, ok := counter.(promptsize.Vocabulary); ok {
		blocks, err := promptsize.NewTokenBlocks(v, promptsize.BlockOptions{Seed: tr.Seed})
		if err != nil {
			return nil, tr, err
		}
		w.Blocks = blocks
	} else if w.Completions || len(t.rows_[0].HashIDs) > 0 {
		return nil, tr, cli.Usagef("%s needs the model's tokenizer (--tokenizer DIR) to make exact token blocks; the server's /tokenize cannot", w.Name)
	}
	if !t.rated {
		tr.Replay, tr.NumRequests = true, 0
	} else {
		tr.NumRequests = len(t.rows_)
	}
	return w, tr, nil
}

// rows is what was read, for the progress line.
func (t *traceFlags) rowsRead() int { return len(t.rows_) }
