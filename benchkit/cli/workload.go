package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/workload"
)

// WorkloadFlags are a program's flags of a trace or dataset workload
// (--trace, --dataset, --trace-format, --trace-rows, --trace-speedup,
// --max-input-tokens, --max-output-tokens, --endpoint) and, with
// AddSharedPrefixFlags, of a generated shared-prefix load (--gsp-*), and
// what was read of the file: AddFlags, then Load before anything starts,
// then Workload once the target's counter is known.
type WorkloadFlags struct {
	// Trace and Dataset are the files given; the others are the flags.
	Trace, Dataset, Format, Endpoint string
	Rows, MaxInput, MaxOutput        int
	Speedup                          float64
	// SharedPrefix is the generated shared-prefix load the --gsp-* flags
	// describe (SGLang's generated-shared-prefix dataset, vLLM's
	// prefix_repetition), sent when any of them is given.
	SharedPrefix workload.SharedPrefix

	// TraceUsage and DatasetUsage, when set before AddFlags, replace the
	// help of --trace and --dataset, for a program that sends a file's
	// rows otherwise than at their own instants or at --rate.
	TraceUsage, DatasetUsage string
	// Nonce, when set before Workload, is the run nonce, whose salt
	// (promptsize.RunSalt) the prompts of a trace's length-only rows
	// start with: Workload counts it into their shortest length. Empty:
	// the prompts are unsalted (a Sessions replay).
	Nonce string

	fs         *flag.FlagSet
	gsp        bool // a --gsp-* flag was given
	rated      bool // the rows go on the traffic's schedule, not their own
	rows       []workload.Row
	blockSize  int
	stats      workload.Stats
	fitted     bool  // Workload dropped the rows too short to build
	short      []int // their lines
	minInput   int
	saltTokens bool // minInput counts a salt's tokens
}

// AddFlags registers the flags on fs.
func (t *WorkloadFlags) AddFlags(fs *flag.FlagSet) {
	t.fs = fs
	traceUsage, datasetUsage := t.TraceUsage, t.DatasetUsage
	if traceUsage == "" {
		traceUsage = "replay this trace file (Mooncake or Bailian JSONL, BurstGPT or Azure CSV) at its own instants; with --rate, on the rate's schedule instead"
	}
	if datasetUsage == "" {
		datasetUsage = "send the requests of this dataset file (ShareGPT JSON, JSONL of prompts or messages) at --rate"
	}
	fs.StringVar(&t.Trace, "trace", "", traceUsage)
	fs.StringVar(&t.Dataset, "dataset", "", datasetUsage)
	fs.StringVar(&t.Format, "trace-format", "", "the file's format: "+fmt.Sprint(workload.Formats())+" (default: inferred from the content)")
	fs.IntVar(&t.Rows, "trace-rows", 0, "use the first N rows of the file (0: all)")
	fs.Float64Var(&t.Speedup, "trace-speedup", 1, "divide the trace's gaps by this (AIPerf --synthesis-speedup-ratio R is R; SGLang --mooncake-slowdown-factor f is 1/f; GuideLLM time_scale t is 1/t)")
	fs.IntVar(&t.MaxInput, "max-input-tokens", 0, "skip rows whose input is longer (0: none)")
	fs.IntVar(&t.MaxOutput, "max-output-tokens", 0, "cap each row's output at this (0: none)")
	fs.StringVar(&t.Endpoint, "endpoint", "chat", "chat, or completions: send each trace prompt as token ids to /v1/completions (exact, no re-tokenization)")
}

// The --gsp-* flags and their defaults, SGLang's (bench_serving's
// --gsp-num-groups and the others of its generated-shared-prefix
// dataset).
const (
	gspPrefix   = "gsp-"
	gspGroups   = 64
	gspPerGroup = 16
	gspSystem   = 2048
	gspQuestion = 128
	gspOutput   = 256
)

// AddSharedPrefixFlags registers the flags of a generated shared-prefix
// load on fs, named as SGLang's bench_serving names them: any of them
// given sends --gsp-num-groups × --gsp-prompts-per-group prompts on the
// traffic's schedule, each group's prompts sharing exactly
// --gsp-system-prompt-len leading tokens after the chat template and
// nothing after them (workload.SharedPrefix). vLLM's prefix_repetition is
// the same load: --prefix-repetition-num-prefixes, -prefix-len,
// -suffix-len and -output-len are --gsp-num-groups, -system-prompt-len,
// -question-len and -output-len.
func (t *WorkloadFlags) AddSharedPrefixFlags(fs *flag.FlagSet) {
	t.fs = fs
	g := &t.SharedPrefix
	fs.IntVar(&g.Groups, gspPrefix+"num-groups", gspGroups, "generated shared-prefix load: the number of groups of prompts sharing a prefix (any --gsp-* flag sends this load; SGLang's generated-shared-prefix, vLLM's prefix_repetition)")
	fs.IntVar(&g.PerGroup, gspPrefix+"prompts-per-group", gspPerGroup, "generated shared-prefix load: prompts per group")
	fs.IntVar(&g.System, gspPrefix+"system-prompt-len", gspSystem, "generated shared-prefix load: tokens every prompt of a group shares, after the chat template's own")
	fs.IntVar(&g.Question, gspPrefix+"question-len", gspQuestion, "generated shared-prefix load: tokens of each prompt's own after the shared ones")
	fs.IntVar(&g.Output, gspPrefix+"output-len", gspOutput, "generated shared-prefix load: output tokens of each prompt")
	fs.Float64Var(&g.Zipf, gspPrefix+"zipf-alpha", 0, "generated shared-prefix load: draw each prompt's group from a Zipf distribution of this exponent (> 1; the first group most often, seeded with --seed) instead of the same number of prompts in each (0)")
}

// Set reports whether a trace, a dataset or a generated shared-prefix
// load was given.
func (t *WorkloadFlags) Set() bool { return t.Trace != "" || t.Dataset != "" || t.gsp }

// Generated reports whether the --gsp-* flags asked for a generated
// shared-prefix load (known after Load).
func (t *WorkloadFlags) Generated() bool { return t.gsp }

// Name names the workload: the file, or the generated shared-prefix
// load with its shape.
func (t *WorkloadFlags) Name() string {
	if t.gsp {
		g := t.SharedPrefix
		return fmt.Sprintf("generated-shared-prefix(groups=%d, per-group=%d, system=%d, question=%d, output=%d)", g.Groups, g.PerGroup, g.System, g.Question, g.Output)
	}
	return t.Trace + t.Dataset
}

// Load checks the flags and reads the whole file (or makes the rows of a
// generated shared-prefix load), before anything starts: a bad row refuses
// the file (a usage error naming its line and rule). rated says the
// traffic has a schedule of its own (a rate, a burst, a closed loop): the
// rows go on it instead of at their own instants.
func (t *WorkloadFlags) Load(rated bool) error {
	if t.fs != nil {
		t.fs.Visit(func(f *flag.Flag) { t.gsp = t.gsp || strings.HasPrefix(f.Name, gspPrefix) })
	}
	switch {
	case t.Trace != "" && t.Dataset != "":
		return Usagef("--trace and --dataset both set; give one file")
	case t.gsp && (t.Trace != "" || t.Dataset != ""):
		return Usagef("the --gsp-* flags make a load of their own; give them or a --trace or --dataset, not both")
	case t.Endpoint != "chat" && t.Endpoint != "completions":
		return Usagef("--endpoint must be chat or completions, got %q", t.Endpoint)
	case t.Trace == "" && t.Dataset == "" && (t.Endpoint != "chat" || t.Rows != 0 || t.MaxInput != 0 || t.MaxOutput != 0 || t.Format != "" || t.Speedup != 1):
		return Usagef("--endpoint, --trace-rows, --trace-format, --trace-speedup, --max-input-tokens and --max-output-tokens need --trace or --dataset")
	case t.gsp:
		return t.loadSharedPrefix()
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
	t.blockSize, t.rated, t.stats = r.BlockSize(), rated || t.Dataset != "", r.Stats()
	return nil
}

// loadSharedPrefix makes the rows of the generated shared-prefix load,
// which go on the traffic's schedule (they have no instants).
func (t *WorkloadFlags) loadSharedPrefix() error {
	g := t.SharedPrefix
	if g.Zipf != 0 {
		g.Requests = g.Groups * g.PerGroup
	}
	rows, bs, err := g.Rows()
	if err != nil {
		return Usagef("--gsp-*: %v", err)
	}
	t.rows, t.blockSize, t.rated = rows, bs, true
	t.stats = workload.Stats{Rows: len(rows)}
	return nil
}

// Workload is the invocation's workload and traffic: l and tr without a
// file, else the file's rows, replayed at their instants (Traffic.Replay)
// or sent on tr's schedule, their prompts counted by counter (exact token
// blocks need it to be a promptsize.Vocabulary: a tokenizer, or the
// embedded engine's).
//
// A row shorter than the tokens its request costs with empty content (the
// chat template's own and, for a row of a length only, its salt's:
// benchkit.Trace.MinInput) cannot be built; it is dropped, as rows over
// --max-input-tokens are, counted and named by Skipped, rather than
// refuse the run. A burst of more requests than the rows left is cut to
// them when the dropped rows made the difference.
func (t *WorkloadFlags) Workload(ctx context.Context, l benchkit.Lengths, tr benchkit.Traffic, counter promptsize.Counter) (benchkit.Workload, benchkit.Traffic, error) {
	if !t.Set() {
		return l, tr, nil
	}
	if t.gsp && t.SharedPrefix.Zipf != 0 && t.SharedPrefix.Seed != tr.Seed {
		t.SharedPrefix.Seed = tr.Seed // the groups' draws follow --seed
		if err := t.loadSharedPrefix(); err != nil {
			return nil, tr, err
		}
		t.fitted = false
	}
	w := benchkit.Trace{Name: t.Name(), Rows: t.rows, BlockSize: t.blockSize, Completions: t.Endpoint == "completions"}
	if v, ok := counter.(promptsize.Vocabulary); ok {
		blocks, err := promptsize.NewTokenBlocks(v, promptsize.BlockOptions{Seed: tr.Seed})
		if err != nil {
			return nil, tr, err
		}
		w.Blocks = blocks
	} else if w.Completions || len(t.rows[0].HashIDs) > 0 {
		return nil, tr, Usagef("%s needs the model's tokenizer (--tokenizer DIR) to make exact token blocks; the server's /tokenize cannot", w.Name)
	}
	if !t.fitted {
		salt := ""
		if t.Nonce != "" {
			salt = promptsize.RunSalt(t.Nonce, 0, len(t.rows)-1)
		}
		min, err := w.MinInput(ctx, &promptsize.Builder{Counter: counter}, salt)
		if err != nil {
			return nil, tr, err
		}
		before := len(t.rows)
		t.rows, t.short = workload.DropUnder(t.rows, min, &t.stats)
		t.minInput, t.fitted, t.saltTokens = min, true, salt != "" && len(t.rows) > 0 && len(t.rows[0].HashIDs) == 0
		if len(t.rows) == 0 {
			return nil, tr, Usagef("every row of %s is shorter than %d tokens, the request's own (the chat template's and any salt's): no prompt can be that short", w.Name, min)
		}
		w.Rows = t.rows
		if tr.Burst > len(t.rows) && tr.Burst <= before {
			tr.Burst = len(t.rows)
		}
	}
	if !t.rated {
		tr.Replay, tr.NumRequests = true, 0
	} else {
		tr.NumRequests = len(t.rows)
	}
	return w, tr, nil
}

// Len is the number of rows read (less those Workload dropped).
func (t *WorkloadFlags) Len() int { return len(t.rows) }

// Skipped says which rows of the file were left out, and why, in one
// line ("" when none was): the reader's drops (workload.Stats: over
// --max-input-tokens, failures, …) and the rows Workload dropped as
// shorter than their request's own tokens, named by line, e.g.
//
//	trace.csv: 998 rows; skipped 1 failures, 2 shorter than 14 tokens (the chat template's and the salt's; lines 3, 17)
func (t *WorkloadFlags) Skipped() string {
	s := t.stats
	s.UnderInput = 0 // said below, with the bound and the lines
	if s.String() == fmt.Sprintf("%d rows", s.Rows) && len(t.short) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(t.Name() + ": " + s.String())
	if n := len(t.short); n > 0 {
		if strings.Contains(b.String(), "; skipped ") {
			b.WriteString(", ")
		} else {
			b.WriteString("; skipped ")
		}
		what := "the chat template's"
		if t.saltTokens {
			what += " and the salt's"
		}
		lines := make([]string, 0, min(n, 10))
		for _, l := range t.short[:min(n, 10)] {
			lines = append(lines, fmt.Sprint(l))
		}
		more := ""
		if n > 10 {
			more = fmt.Sprintf(" and %d more", n-10)
		}
		fmt.Fprintf(&b, "%d shorter than %d tokens (%s, which no prompt can be below; lines %s%s)", n, t.minInput, what, strings.Join(lines, ", "), more)
	}
	return b.String()
}
