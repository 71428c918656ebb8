package cli

import (
	"flag"
	"fmt"
	"os"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/workload"
)

// WorkloadFlags are a program's flags of a trace or dataset workload
// (--trace, --dataset, --trace-format, --trace-rows, --trace-speedup,
// --max-input-tokens, --max-output-tokens, --endpoint), and what was read
// of the file: AddFlags, then Load before anything starts, then Workload
// once the target's counter is known.
type WorkloadFlags struct {
	// Trace and Dataset are the files given; the others are the flags.
	Trace, Dataset, Format, Endpoint string
	Rows, MaxInput, MaxOutput        int
	Speedup                          float64

	rated     bool // the rows go on the traffic's schedule, not their own
	rows      []workload.Row
	blockSize int
}

// AddFlags registers the flags on fs.
func (t *WorkloadFlags) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&t.Trace, "trace", "", "replay this trace file (Mooncake or Bailian JSONL, BurstGPT or Azure CSV) at its own instants; with --rate, on the rate's schedule instead")
	fs.StringVar(&t.Dataset, "dataset", "", "send the requests of this dataset file (ShareGPT JSON, JSONL of prompts or messages) at --rate")
	fs.StringVar(&t.Format, "trace-format", "", "the file's format: "+fmt.Sprint(workload.Formats())+" (default: inferred from the content)")
	fs.IntVar(&t.Rows, "trace-rows", 0, "use the first N rows of the file (0: all)")
	fs.Float64Var(&t.Speedup, "trace-speedup", 1, "divide the trace's gaps by this (AIPerf --synthesis-speedup-ratio R is R; SGLang --mooncake-slowdown-factor f is 1/f; GuideLLM time_scale t is 1/t)")
	fs.IntVar(&t.MaxInput, "max-input-tokens", 0, "skip rows whose input is longer (0: none)")
	fs.IntVar(&t.MaxOutput, "max-output-tokens", 0, "cap each row's output at this (0: none)")
	fs.StringVar(&t.Endpoint, "endpoint", "chat", "chat, or completions: send each trace prompt as token ids to /v1/completions (exact, no re-tokenization)")
}

// Set reports whether a trace or dataset was given.
func (t *WorkloadFlags) Set() bool { return t.Trace != "" || t.Dataset != "" }

// Load checks the flags and reads the whole file, before anything starts:
// a bad row refuses the file (a usage error naming its line and rule).
// rated says the traffic has a schedule of its own (a rate, a burst, a
// closed loop): the rows go on it instead of at their own instants.
func (t *WorkloadFlags) Load(rated bool) error {
	switch {
	case t.Trace != "" && t.Dataset != "":
		return Usagef("--trace and --dataset both set; give one file")
	case t.Endpoint != "chat" && t.Endpoint != "completions":
		return Usagef("--endpoint must be chat or completions, got %q", t.Endpoint)
	case !t.Set() && (t.Endpoint != "chat" || t.Rows != 0 || t.MaxInput != 0 || t.MaxOutput != 0 || t.Format != "" || t.Speedup != 1):
		return Usagef("--endpoint, --trace-rows, --trace-format, --trace-speedup, --max-input-tokens and --max-output-tokens need --trace or --dataset")
	case !t.Set():
		return nil
	case !(t.Speedup > 0):
		return Usagef("--trace-speedup must be a positive factor, got %g", t.Speedup)
	}
	path := t.Trace + t.Dataset
	opts := &workload.Options{Limit: t.Rows, MaxInput: t.MaxInput, MaxOutput: t.MaxOutput}
	if t.Trace != "" {
		opts.Speedup = t.Speedup
	} else if t.Speedup != 1 {
		return Usagef("--trace-speedup applies to a --trace; a --dataset has no timing")
	}
	if t.Format != "" {
		f, err := workload.ParseFormat(t.Format)
		if err != nil {
			return Usagef("--trace-format: %v", err)
		}
		opts.Format = f
	}
	f, err := os.Open(path)
	if err != nil {
		return Usagef("%v", err)
	}
	defer f.Close()
	r, err := workload.NewReader(f, path, opts)
	if err != nil {
		return Usagef("%v", err)
	}
	for r.Next() {
		t.rows = append(t.rows, r.Row())
	}
	if err := r.Err(); err != nil {
		return Usagef("%v", err)
	}
	if len(t.rows) == 0 {
		return Usagef("%s holds no request", path)
	}
	t.blockSize, t.rated = r.BlockSize(), rated || t.Dataset != ""
	return nil
}

// Workload is the invocation's workload and traffic: l and tr without a
// file, else the file's rows, replayed at their instants (Traffic.Replay)
// or sent on tr's schedule, their prompts counted by counter (exact token
// blocks need it to be a promptsize.Vocabulary: a tokenizer, or the
// embedded engine's).
func (t *WorkloadFlags) Workload(l benchkit.Lengths, tr benchkit.Traffic, counter promptsize.Counter) (benchkit.Workload, benchkit.Traffic, error) {
	if !t.Set() {
		return l, tr, nil
	}
	w := benchkit.Trace{Name: t.Trace + t.Dataset, Rows: t.rows, BlockSize: t.blockSize, Completions: t.Endpoint == "completions"}
	if v, ok := counter.(promptsize.Vocabulary); ok {
		blocks, err := promptsize.NewTokenBlocks(v, promptsize.BlockOptions{Seed: tr.Seed})
		if err != nil {
			return nil, tr, err
		}
		w.Blocks = blocks
	} else if w.Completions || len(t.rows[0].HashIDs) > 0 {
		return nil, tr, Usagef("%s needs the model's tokenizer (--tokenizer DIR) to make exact token blocks; the server's /tokenize cannot", w.Name)
	}
	if !t.rated {
		tr.Replay, tr.NumRequests = true, 0
	} else {
		tr.NumRequests = len(t.rows)
	}
	return w, tr, nil
}

// Len is the number of rows read.
func (t *WorkloadFlags) Len() int { return len(t.rows) }
