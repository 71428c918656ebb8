package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/benchkit/plot"
	"github.com/inferbench/inferbench/benchkit/predict"
	htmlreport "github.com/inferbench/inferbench/benchkit/report"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// systemPrompt is the system message every session shares.
const systemPrompt = "You are a patient assistant. Answer each question in a few plain sentences, and keep to what was asked."

type options struct {
	target             cli.Target
	sessions, turns    int
	userTokens, output int
	turnsMax, userMax  int
	outputMax          int
	maxActive          int
	rate               float64
	think              time.Duration
	thinkExp           bool
	header             string
	prefixCache        bool // --prefix-cache given: run that mode only
	jsonl, jsonOut     string
	htmlPath           string
	seed               uint64
	plot               string
	rows               *rowsFile
	source             cli.WorkloadFlags
	recorded, barrier  bool
	trim               bool
	noted              bool // the rows the source skipped were said
	thinking           cli.ThinkingFlags
	thinkNoted         bool // the counter's note on the thinking control was said
	predict            bool // --predict: the sessions computed, not sent
}

// arm is one run of the sessions: the cache mode it ran with ("" for a
// server's own) and its rows.
type arm struct {
	mode string
	s    *benchkit.Sessions
	rows []benchkit.Request
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("multi-turn", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.target.Program = "multi-turn"
	o.target.DefaultPreset = sim.H100Llama8B()
	o.target.AddFlags(fs)
	fs.IntVar(&o.sessions, "sessions", 4, "number of sessions")
	fs.IntVar(&o.turns, "turns", 5, "turns (rounds) per session")
	fs.IntVar(&o.userTokens, "user-tokens", 512, "new user tokens per turn")
	fs.IntVar(&o.output, "output-len", 64, "output tokens per turn (max_tokens)")
	fs.IntVar(&o.turnsMax, "turns-max", 0, "draw each session's turns uniformly from [--turns, this] (0: fixed)")
	fs.IntVar(&o.userMax, "user-tokens-max", 0, "draw each turn's new user tokens uniformly from [--user-tokens, this] (0: fixed)")
	fs.IntVar(&o.outputMax, "output-len-max", 0, "draw each turn's output uniformly from [--output-len, this] (0: fixed)")
	fs.IntVar(&o.maxActive, "max-active", 0, "most sessions under way at once (0: all)")
	fs.Float64Var(&o.rate, "session-rate", 0, "session starts per second, Poisson (0: all at once)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the session starts")
	fs.DurationVar(&o.think, "think", 0, "think time before every turn after the first")
	fs.BoolVar(&o.thinkExp, "think-exp", false, "draw each think time from an exponential distribution of mean --think")
	fs.StringVar(&o.header, "session-header", "", `header naming each request's session ("": X-Session-ID, "-": none)`)
	fs.StringVar(&o.jsonl, "jsonl", "", "write every row to this JSONL file")
	fs.StringVar(&o.jsonOut, "json-out", filepath.Join("results", "multi-turn.json"), "write the results (each run's summaries by turn and over the run, and every row) as JSON to this file (\"\": none)")
	fs.StringVar(&o.htmlPath, "html", "", "write the results as one self-contained HTML page to this file: the settings, TTFT by turn of each run as an inline plot, each run's figures by turn with their intervals, warnings; it fetches nothing (docs/REPORT.md)")
	fs.StringVar(&o.plot, "plot", "results/multi-turn-ttft.png", "write a PNG of each arm's TTFT p50 against the turn to this file (\"\": none)")
	o.source.TraceUsage = "run the sessions of this trace file instead (a Bailian trace's rows linked by parent_chat_id; any other trace's rows are sessions of one turn), each turn at its row's instant or when the previous reply ends, whichever is later"
	o.source.DatasetUsage = "run the conversations of this dataset file instead (ShareGPT JSON, JSONL of OpenAI messages), one session each, every turn sent when the previous reply ends (and --think)"
	o.source.AddFlags(fs)
	fs.BoolVar(&o.recorded, "recorded-replies", false, "with --dataset: carry the dataset's recorded replies into the history instead of the server's")
	fs.BoolVar(&o.barrier, "round-barrier", false, "hold every session's next turn until every session has ended the current one")
	fs.BoolVar(&o.trim, "trim-replies", false, "carry each reply into the history without the white space around it, for a server whose chat template keeps what the tokenizer's trims (Ollama with Llama 3)")
	o.thinking.AddFlags(fs, false)
	fs.BoolVar(&o.predict, "predict", false, "predict the sessions "+cli.PredictUsage+"; not with --trace, --dataset or thinking controls")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &cli.UsageError{Err: err}
	}
	fs.Visit(func(f *flag.Flag) { o.prefixCache = o.prefixCache || f.Name == "prefix-cache" })
	// A trace's or dataset's sessions are its own: its rows' lengths, links
	// and instants (--trace-speedup), or its conversations.
	if err := o.source.Load(false); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return cli.Usagef("unexpected argument %q", fs.Arg(0))
	case o.sessions <= 0 || o.turns <= 0 || o.userTokens <= 0 || o.output <= 0:
		return cli.Usagef("--sessions, --turns, --user-tokens and --output-len must be positive")
	case o.turnsMax < 0 || o.userMax < 0 || o.outputMax < 0 || (o.turnsMax > 0 && o.turnsMax < o.turns) ||
		(o.userMax > 0 && o.userMax < o.userTokens) || (o.outputMax > 0 && o.outputMax < o.output):
		return cli.Usagef("--turns-max, --user-tokens-max and --output-len-max must be at least --turns, --user-tokens and --output-len")
	case o.maxActive < 0 || o.rate < 0 || o.think < 0:
		return cli.Usagef("--max-active, --session-rate and --think must not be negative")
	}
	if err := o.thinking.Check(); err != nil {
		return err
	}
	modes := []string{""}
	if o.target.Embedded() {
		modes = []string{string(sim.PrefixCacheRadix), string(sim.PrefixCacheNaive)}
		if o.prefixCache {
			modes = []string{string(o.target.Sim.PrefixCache)}
		}
	} else if o.prefixCache {
		return cli.Usagef("--prefix-cache sets the embedded engine's cache; a server's is its own")
	}
	tg := &o.target
	if o.predict {
		if err := tg.CheckPredict(); err != nil {
			return err
		}
		if o.source.Set() || o.thinking.Setting() != nil {
			return cli.Usagef("--predict predicts synthetic sessions, without --trace, --dataset or thinking controls")
		}
		if o.barrier && o.maxActive > 0 && o.maxActive < o.sessions {
			return cli.Usagef("--predict with --round-barrier needs --max-active 0 or at least --sessions: the barrier waits for sessions that cannot start")
		}
	}
	if err := tg.Check(ctx, args, 0); err != nil {
		return err
	}
	// The results files are this run's until it ends: a second run given
	// either is refused (exit 2), and the previous ones go now.
	lock, err := cli.ClaimOutputs("multi-turn", cli.Output{Flag: "json-out", Path: o.jsonOut}, cli.Output{Flag: "html", Path: o.htmlPath}, cli.Output{Flag: "jsonl", Path: o.jsonl})
	if err != nil {
		return err
	}
	defer lock.Release()
	var rows *rowsFile
	if o.jsonl != "" {
		f, err := os.Create(o.jsonl)
		if err != nil {
			return &cli.UsageError{Err: err}
		}
		defer f.Close()
		rows = &rowsFile{sink: benchkit.NewJSONLSink(f)}
	}
	o.rows = rows
	var arms []arm
	var runErr error
	started := time.Now().UTC().Format(time.RFC3339)
	for _, mode := range modes {
		a, err := runArm(ctx, &o, mode, stderr)
		arms = append(arms, a)
		if err != nil {
			runErr = err
			break
		}
	}

	if o.predict {
		fmt.Fprintln(stdout, "PREDICTED: every figure below was computed on the embedded engine's virtual clock (nothing was sent), not measured.")
	}
	failed, mismatched, total := report(stdout, arms, o.predict)
	if o.jsonOut != "" || o.htmlPath != "" {
		info := tg.Info
		if note := o.source.Skipped(); note != "" {
			info.Warnings = append(info.Warnings, note)
		}
		doc := document(info, arms, started, ctx.Err() != nil)
		doc.Meta.Predicted = o.predict
		if o.jsonOut != "" {
			if err := cli.WriteResults(o.jsonOut, doc); err != nil {
				return errors.Join(runErr, err)
			}
			fmt.Fprintf(stderr, "multi-turn: results in %s\n", o.jsonOut)
		}
		if o.htmlPath != "" {
			if err := cli.WriteFileAtomic(o.htmlPath, func(w io.Writer) error {
				return htmlreport.WriteSessions(w, doc, htmlreport.Options{})
			}); err != nil {
				return errors.Join(runErr, err)
			}
			fmt.Fprintf(stderr, "multi-turn: page in %s\n", o.htmlPath)
		}
	}
	if err := writePlot(o.plot, arms, o.target.Info.Simulated, o.predict); err != nil {
		fmt.Fprintf(stderr, "multi-turn: plot not written: %v\n", err)
	} else if o.plot != "" {
		fmt.Fprintf(stderr, "multi-turn: TTFT by turn in %s\n", o.plot)
	}
	switch {
	case runErr != nil:
		return runErr
	case failed > 0:
		return fmt.Errorf("%w: %d of %d turns; their rows say why", cli.ErrRequestsFailed, failed, total)
	case mismatched > 0:
		return fmt.Errorf("%d of %d turns' prompt counts differ from the server's: its chat template is not the tokenizer's (one that keeps white space the tokenizer's trims counts a reply differently: --trim-replies)", mismatched, total)
	}
	return nil
}

// runArm starts the target (the embedded engine with its cache in mode),
// runs the sessions and stops it.
func runArm(ctx context.Context, o *options, mode string, stderr io.Writer) (arm, error) {
	tg := &o.target
	tg.Sim.PrefixCache = sim.PrefixCacheMode(mode)
	if err := tg.Start(ctx, stderr); err != nil {
		return arm{mode: mode}, err
	}
	defer tg.Close()
	client, err := tg.Client(openai.Options{})
	if err != nil {
		return arm{mode: mode}, err
	}
	defer client.CloseIdleConnections()
	s := &benchkit.Sessions{
		Engine: client, Model: tg.Model,
		Builder: &promptsize.Builder{Counter: tg.Counter, System: systemPrompt},
		Count:   o.sessions, Turns: o.turns, UserTokens: o.userTokens, Output: o.output,
		MaxActive: o.maxActive, Rate: o.rate, Seed: o.seed, Think: o.think, ThinkExp: o.thinkExp,
		Header: o.header, RequestTimeout: tg.Timeout, RecordedReplies: o.recorded, Barrier: o.barrier, TrimReplies: o.trim,
		TurnsMax: o.turnsMax, UserTokensMax: o.userMax, OutputMax: o.outputMax,
		ServerMetrics: tg.Metrics,
		Request:       engine.Request{Thinking: o.thinking.Setting()},
	}
	if note := o.thinking.CounterNote(tg.Counter, tg.Info.Tokenizer); note != "" && !o.thinkNoted {
		fmt.Fprintln(stderr, "multi-turn:", note)
		o.thinkNoted = true
	}
	if o.rows != nil {
		o.rows.mode = mode
		s.Sinks = []benchkit.Sink{o.rows}
	}
	if o.source.Set() {
		// The rows are fitted to the template as the thinking control
		// makes the server render it.
		fit, err := o.thinking.WidestCounter(ctx, tg.Counter)
		if err != nil {
			return arm{mode: mode}, err
		}
		w, _, err := o.source.Workload(ctx, benchkit.Lengths{}, benchkit.Traffic{}, fit)
		if err != nil {
			return arm{mode: mode}, err
		}
		tr := w.(benchkit.Trace)
		s.Trace, s.Builder.System = &tr, ""
		if note := o.source.Skipped(); note != "" && !o.noted {
			fmt.Fprintln(stderr, "multi-turn:", note)
			o.noted = true
		}
	}
	if o.predict {
		// The sessions computed on the embedded engine's virtual clock
		// (benchkit/predict), not sent.
		opts, ok := tg.SimOptions()
		if !ok {
			return arm{mode: mode}, errors.New("--predict: the embedded engine is not started")
		}
		s.ServerMetrics = nil
		rows, err := (&predict.Predictor{Options: opts, BurstGap: time.Microsecond}).Sessions(ctx, s)
		for _, r := range rows {
			if o.rows != nil {
				err = errors.Join(err, o.rows.Add(r))
			}
		}
		return arm{mode: mode, s: s, rows: rows}, err
	}
	rows, err := s.Run(ctx)
	return arm{mode: mode, s: s, rows: rows}, err
}

// document is the results file: each arm's summaries by turn and over
// the run, and its rows.
func document(info benchkit.RunInfo, arms []arm, started string, interrupted bool) benchkit.SessionsDocument {
	info.Started, info.Finished, info.Interrupted = started, time.Now().UTC().Format(time.RFC3339), interrupted
	if len(arms) > 1 {
		info.PrefixCache = "" // each run's own
	}
	doc := benchkit.SessionsDocument{Meta: benchkit.SessionsMeta{RunInfo: info}, Runs: []benchkit.SessionsRun{}}
	for _, a := range arms {
		if a.s == nil {
			continue
		}
		doc.Meta.Sessions = a.s.Settings()
		doc.Runs = append(doc.Runs, a.s.Result(a.mode, a.rows, timing.SLO{}))
	}
	return doc
}

// report prints each arm's per-turn table and, for two arms, their TTFT
// side by side; it returns the failed and mismatched turns of all arms.
func report(w io.Writer, arms []arm, predicted bool) (failed, mismatched, total int) {
	for _, a := range arms {
		if a.s == nil {
			continue
		}
		for _, r := range a.rows {
			total++
			if r.Failed() {
				failed++
			} else if r.ServerPromptTokens == nil || *r.ServerPromptTokens != r.PPTokens {
				mismatched++
			}
		}
		title := "server"
		if a.mode != "" {
			title = "prefix cache " + a.mode
		}
		if predicted {
			title = "PREDICTED, " + title
		}
		if a.s.Trace != nil {
			fmt.Fprintf(w, "\n%s: the sessions of %s (%d rows)\n", title, a.s.Trace.Name, len(a.s.Trace.Rows))
		} else {
			turns := fmt.Sprint(a.s.Turns)
			if a.s.TurnsMax > a.s.Turns {
				turns = fmt.Sprintf("%d–%d", a.s.Turns, a.s.TurnsMax)
			}
			fmt.Fprintf(w, "\n%s: %d sessions × %s turns\n", title, a.s.Count, turns)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "turn\tok\tTTFT p50 ms\tTPOT p50 ms\tE2E p50 ms\tprompt\tnew\tcached\thit rate\ttheoretical\tcounts\t")
		all := append(a.s.Summarize(a.rows, benchkit.ByTurn, timing.SLO{}), a.s.Summarize(a.rows, benchkit.ByRun, timing.SLO{})...)
		for j, sum := range all {
			turn := fmt.Sprint(sum.Labels.Turn)
			if j == len(all)-1 {
				turn = "all"
			}
			prompt, hist, n, ok := 0, 0, 0, 0
			for _, r := range a.rows {
				if (turn == "all" || r.Turn == sum.Labels.Turn) && !r.Failed() {
					prompt += r.PPTokens
					hist += a.s.HistoryTokens(r)
					n++
					if r.ServerPromptTokens != nil && *r.ServerPromptTokens == r.PPTokens {
						ok++
					}
				}
			}
			newTok := 0
			if n > 0 {
				newTok = (prompt - hist) / n // the mean tokens no earlier turn sent
			}
			fmt.Fprintf(tw, "%s\t%d/%d\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%d/%d\t\n", turn, sum.Completed, sum.Requests,
				msCI(sum.TTFT.P50, sum.TTFT.P50CI), msCI(sum.TPOT.P50, sum.TPOT.P50CI), msCI(sum.E2E.P50, sum.E2E.P50CI), mean(prompt, n), newTok, sum.CachedTokens,
				pct(sum.PrefixHitRate), pct(sum.TheoreticalHitRate), ok, n)
		}
		tw.Flush()
		fmt.Fprintln(w, intervalNote)
		all[len(all)-1].WriteServerView(w)
	}
	if len(arms) == 2 && arms[0].s != nil && arms[1].s != nil {
		label := ""
		if predicted {
			label = "PREDICTED "
		}
		fmt.Fprintf(w, "\n%sTTFT p50 per turn, prefix cache %s against %s\n", label, arms[0].mode, arms[1].mode)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "turn\t%s ms\t%s ms\t%s/%s\t%s vs turn 1\t%s vs turn 1\t\n", arms[0].mode, arms[1].mode, arms[1].mode, arms[0].mode, arms[0].mode, arms[1].mode)
		on := arms[0].s.Summarize(arms[0].rows, benchkit.ByTurn, timing.SLO{})
		off := arms[1].s.Summarize(arms[1].rows, benchkit.ByTurn, timing.SLO{})
		for k := range min(len(on), len(off)) {
			a, b := on[k].TTFT.P50, off[k].TTFT.P50
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t\n", on[k].Labels.Turn, ms(a), ms(b), ratio(b, a), ratio(a, on[0].TTFT.P50), ratio(b, off[0].TTFT.P50))
		}
		tw.Flush()
		fmt.Fprintln(w, "the p50s' intervals are in the tables above; the ratios of two p50s have none here")
	}
	return failed, mismatched, total
}

// intervalNote says, under each arm's table, what its ± are and which
// figures have none.
const intervalNote = "± is the larger side of the p50's 95 % confidence interval (order statistics, distribution-free;\n" +
	"none: too few requests to bound it); the token counts and hit rates are counts of this run, with no interval"

// msCI writes a percentile in ms with the larger side of its interval,
// "±none" when it has no interval.
func msCI(v *float64, ci *[2]float64) string {
	if v == nil {
		return "-"
	}
	if ci == nil {
		return ms(v) + " ±none"
	}
	return fmt.Sprintf("%s ±%.2f", ms(v), max(*v-ci[0], ci[1]-*v)*1e3)
}

func ms(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *v*1e3)
}

func pct(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f %%", *v*100)
}

func ratio(a, b *float64) string {
	if a == nil || b == nil || *b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", *a / *b)
}

func mean(sum, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(sum / n)
}

// rowsFile opens path for the rows, written as each turn ends, each
// labelled with its arm's cache mode (its phase), so that an interrupted
// run keeps what it measured.
type rowsFile struct {
	sink *benchkit.JSONLSink
	mode string
}

func (f *rowsFile) Add(r benchkit.Request) error {
	r.Phase = f.mode
	return f.sink.Add(r)
}

// writePlot draws each arm's TTFT p50 against the turn to path.
func writePlot(path string, arms []arm, simulated, predicted bool) error {
	if path == "" {
		return nil
	}
	series := map[string][]benchkit.Summary{}
	for _, a := range arms {
		if a.s == nil {
			continue
		}
		name := "server"
		if a.mode != "" {
			name = "prefix cache " + a.mode
		}
		series[name] = a.s.Summarize(a.rows, benchkit.ByTurn, timing.SLO{})
	}
	title := "TTFT by turn"
	switch {
	case predicted:
		title += " (predicted)"
	case simulated:
		title += " (simulated)"
	}
	p, err := plot.TTFTByTurn(title, series)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return plot.SavePNG(path, p)
}
