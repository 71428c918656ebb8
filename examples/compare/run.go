package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/benchkit/compare"
	htmlreport "github.com/inferbench/inferbench/benchkit/report"
)

const usage = `usage: compare [flags] A B

Compares the results file B against A (any inferbench program's JSON
document or JSONL rows): per figure, A, B, the relative change with its
interval, and a verdict (better, worse, no change detected).

Exit status: 0 no regression (or no gate), 1 a file unreadable, the runs
measured different things, or a gate with nothing to test, 2 bad usage,
4 a figure regressed beyond --threshold. --html FILE does not change it.

Flags:
`

type options struct {
	a, b    string
	format  string
	html    string
	cfg     compare.Config
	load    compare.Options
	figures bool
}

// parse reads the flags, which may come before, between or after the two
// files.
func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	threshold := fs.String("threshold", "", "make the comparison a gate: exit 4 when a figure is worse by more than this relative change (5% or 0.05)")
	gate := fs.String("gate-figures", "", "the figures the gate looks at, comma-separated (default every figure; see --list-figures)")
	allow := fs.String("allow", "", "settings that may differ between the runs, comma-separated (model, preset, server, lengths, traffic, rates, …, or all)")
	fs.StringVar(&o.format, "format", "table", "output: table (120 columns), markdown or json")
	fs.StringVar(&o.html, "html", "", "also write the comparison as one self-contained HTML page to this file: both runs side by side, "+
		"what differs, the gate, every figure's verdict and a plot of the changes; it fetches nothing (docs/REPORT.md)")
	fs.Float64Var(&o.cfg.Alpha, "alpha", compare.DefaultAlpha, "family-wise false-alarm rate of the verdicts (Holm over every figure)")
	fs.Float64Var(&o.cfg.Confidence, "confidence", compare.DefaultConfidence, "confidence level of each figure's interval")
	fs.IntVar(&o.load.Batches, "batches", compare.DefaultBatches, "batches a single run is split into (batch means)")
	fs.IntVar(&o.load.MinBatch, "min-batch", compare.DefaultMinBatch, "fewest requests in a batch")
	fs.BoolVar(&o.figures, "list-figures", false, "list the figures and exit")
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return o, err
			}
			return o, &cli.UsageError{Err: err}
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if o.figures {
		return o, nil
	}
	if len(files) != 2 {
		return o, cli.Usagef("want two files, A and B; got %d", len(files))
	}
	o.a, o.b = files[0], files[1]
	if o.html != "" && (sameFile(o.html, o.a) || sameFile(o.html, o.b)) {
		return o, cli.Usagef("--html %s is one of the files compared", o.html)
	}
	switch o.format {
	case "table", "markdown", "md", "json":
	default:
		return o, cli.Usagef("--format %q: want table, markdown or json", o.format)
	}
	if !(o.cfg.Alpha > 0 && o.cfg.Alpha < 1) || !(o.cfg.Confidence > 0 && o.cfg.Confidence < 1) {
		return o, cli.Usagef("--alpha and --confidence must lie between 0 and 1")
	}
	if o.load.Batches < 2 || o.load.MinBatch < 1 {
		return o, cli.Usagef("--batches must be at least 2 and --min-batch at least 1")
	}
	if *threshold != "" {
		t, err := parseThreshold(*threshold)
		if err != nil {
			return o, &cli.UsageError{Err: fmt.Errorf("--threshold: %w", err)}
		}
		o.cfg.Threshold = t
	}
	o.cfg.GateFigures = list(*gate)
	for _, f := range o.cfg.GateFigures {
		if _, ok := compare.FigureByName(f); !ok {
			return o, cli.Usagef("--gate-figures: no figure %q (see --list-figures)", f)
		}
	}
	if len(o.cfg.GateFigures) > 0 && o.cfg.Threshold == 0 {
		return o, cli.Usagef("--gate-figures needs --threshold")
	}
	o.cfg.Allow = list(*allow)
	return o, nil
}

// parseThreshold reads a relative change: "5%" or "0.05", in (0, 10].
func parseThreshold(v string) (float64, error) {
	s, scale := strings.TrimSpace(v), 1.0
	if p, ok := strings.CutSuffix(s, "%"); ok {
		s, scale = strings.TrimSpace(p), 0.01
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) {
		return 0, fmt.Errorf("%q is not a number or a percentage", v)
	}
	x *= scale
	if !(x > 0 && x <= 10) {
		return 0, fmt.Errorf("%q: want a relative change above 0 and at most 1000%%", v)
	}
	return x, nil
}

// sameFile says whether x and y name one file: the same path, or the
// same file reached by another.
func sameFile(x, y string) bool {
	ax, errX := filepath.Abs(x)
	ay, errY := filepath.Abs(y)
	if errX == nil && errY == nil && ax == ay {
		return true
	}
	sx, errX := os.Stat(x)
	sy, errY := os.Stat(y)
	return errX == nil && errY == nil && os.SameFile(sx, sy)
}

func list(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if o.figures {
		for _, name := range compare.Figures() {
			f, _ := compare.FigureByName(name)
			dir := "higher is better"
			if f.Lower {
				dir = "lower is better"
			}
			fmt.Fprintf(stdout, "%-20s %-6s %s\n", f.Name, f.Unit, dir)
		}
		return nil
	}
	// The page is claimed first, so that a comparison that fails never
	// leaves an earlier page looking current.
	lock, err := cli.ClaimOutputs("compare", cli.Output{Flag: "html", Path: o.html})
	if err != nil {
		return err
	}
	defer lock.Release()
	a, err := compare.Load(o.a, o.load)
	if err != nil {
		return err
	}
	b, err := compare.Load(o.b, o.load)
	if err != nil {
		return err
	}
	res, err := compare.Compare(a, b, o.cfg)
	var refused *compare.RefusedError
	if errors.As(err, &refused) && res != nil {
		// A refusal's page names every difference.
		return errors.Join(err, writeHTML(o.html, res))
	}
	if err != nil {
		return err
	}
	return errors.Join(report(res, o, stdout), writeHTML(o.html, res))
}

// writeHTML writes res as a page to path, when a path is given.
func writeHTML(path string, res *compare.Result) error {
	if path == "" {
		return nil
	}
	return cli.WriteFileAtomic(path, func(w io.Writer) error {
		return htmlreport.WriteCompare(w, res, htmlreport.Options{})
	})
}

// report prints res as --format says and returns the gate's verdict: a
// regression (cli.ErrRegression), a gate with nothing to test, or nil.
func report(res *compare.Result, o options, stdout io.Writer) error {
	var err error
	switch o.format {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(res)
	default:
		err = res.WriteTable(stdout, o.format != "table")
	}
	if err != nil {
		return err
	}
	if o.cfg.Threshold > 0 {
		if res.GatedTests == 0 {
			return errors.New("the gate had nothing to test: no gated figure has two units on both sides")
		}
		if reg := res.Regressions(); len(reg) > 0 {
			names := make([]string, len(reg))
			for i, r := range reg {
				names[i] = fmt.Sprintf("%s %s (%+.1f %%)", r.Group, r.Figure.Name, 100*r.Rel)
			}
			return fmt.Errorf("%w of %g %%: %s", cli.ErrRegression, 100*o.cfg.Threshold, strings.Join(names, "; "))
		}
	}
	return nil
}
