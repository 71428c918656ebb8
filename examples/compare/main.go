// Command compare says whether B is better than A: it reads two saved
// results files of any inferbench program (serve-load's, offline's,
// exo-bench's, multi-turn's or bench-qwen's JSON document, a merged load,
// or the JSONL rows of any of them; the kind is detected) and, for every
// figure both have, prints A's and B's values, the relative change with
// its 95 % interval and a verdict: better, worse, or no change detected.
//
//	compare old.json new.json
//	compare --threshold 5% --gate-figures tpot_mean,ttft_p99 old.json new.json
//
// The test is Welch's t-test over the independent units of each side,
// never over the requests of one run (a queue makes neighbouring
// requests' latencies correlated): the repeats of an exo-bench cell, the
// runs of a file that holds several at the same settings, or, for one
// run, consecutive batches of its requests (batch means), widened when
// the batches are correlated. The verdicts are corrected for the number
// of figures (Holm), so that a comparison of two runs of the same thing
// says "worse" or "better" anywhere at most 1 % of the time (--alpha).
// docs/COMPARE.md gives the method.
//
// Runs that measured different things (model, prompt and output lengths,
// rates and traffic, thinking, streaming, the embedded engine's preset,
// what the server says about itself, …) are refused, each difference
// named; --allow NAME,… lets named differences through (--allow preset to
// compare two presets on purpose, --allow all for any).
//
// --html FILE also writes the comparison as one self-contained HTML page
// (package benchkit/report, WriteCompare): what each side measured, side
// by side; every setting in which they differ, refused or allowed; the
// gate's outcome; each figure's A, B, relative change with its interval,
// test, p-values and verdict; a plot of the changes around 0; and, for
// load documents, each run's latencies A beside B. A refused comparison
// still writes its page, naming each difference. The page fetches
// nothing, and the exit status is the same with it as without
// (docs/REPORT.md).
//
// --threshold makes the comparison a gate: a figure whose verdict is
// "worse" and whose relative change is worse by more than the threshold
// is a regression, and the program exits 4.
//
// Exit status: 0 when no gated figure regressed (or no --threshold was
// given), 1 when a file cannot be read, the runs measured different
// things, or a gate had nothing to test, 2 for bad usage, 4 when a figure
// regressed beyond the threshold.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/inferbench/inferbench/benchkit/cli"
)

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", strings.TrimPrefix(err.Error(), "compare: "))
	}
	os.Exit(cli.ExitCode(err))
}
