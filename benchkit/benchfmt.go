package benchkit

import (
	"fmt"
	"io"
	"math"
	"slices"

	"golang.org/x/perf/benchfmt"
)

// BenchfmtOptions configure WriteBenchfmt.
type BenchfmtOptions struct {
	// Name is the benchmark's base name, written after "Benchmark";
	// "Serve" when empty.
	Name string
	// Config are file configuration lines ("key: value") written before
	// the results, e.g. engine, model, preset. Keys must be lower case
	// without spaces. Put what differs between two runs you want to
	// compare in the name instead: benchstat splits tables on config.
	Config [][2]string
}

// Units written by WriteBenchfmt, with the direction benchstat should read
// them in. Durations are in ns so that benchstat tidies them to seconds.
var benchfmtUnits = []struct{ unit, key, value string }{
	{"tok/s", "better", "higher"},
	{"exo-agg-tok/s", "better", "higher"},
	{"gen-tok/s", "better", "higher"},
	{"prompt-tok/s", "better", "higher"},
	{"ttft-ns/op", "better", "lower"},
	{"e2e-ns/op", "better", "lower"},
	{"J/tok", "better", "lower"},
	{"prompt-tok", "assume", "exact"},
}

// benchfmtSideUnits are the units of a model that reasons, whose metadata
// lines are written when some line has one.
var benchfmtSideUnits = []struct{ unit, key, value string }{
	{"ttfa-ns/op", "better", "lower"},
	{"J/answer-tok", "better", "lower"},
}

// WriteBenchfmt writes rows in the Go benchmark format, so that
// `benchstat old.txt new.txt` compares two runs. It writes one result line
// per repeat of each cell (one burst: the repeats are the independent
// samples, the requests of a burst are not), named
// Benchmark<Name>/placement=<placement>/pp=<pp>/tg=<tg>/conc=<c> (the
// placement part, Placement.String, only for requests that carry one: requests
// of different placements are never one line), whose iteration count is
// the number of successful requests and whose values are:
//
//	tok/s          Σ generated tokens / burst wall time
//	exo-agg-tok/s  exo's max(per-request generation TPS) × N
//	gen-tok/s      mean per-request generation TPS
//	prompt-tok/s   mean server prompt TPS (when reported)
//	ttft-ns/op     mean client TTFT (streamed requests only)
//	e2e-ns/op      mean request wall time from the burst's release
//	J/tok          client energy / Σ generated tokens (with a power source)
//	prompt-tok     the verified prompt length (assume=exact)
//
// and, for a model that reasons before it answers (or any streamed
// request: a request that did not reason has its TTFT as TTFA):
//
//	ttfa-ns/op     mean client time to the first answer token
//	reasoning-tok  mean reasoning tokens of the requests that reasoned
//	answer-tok     mean answer tokens per request
//	J/answer-tok   client energy / Σ answer tokens (with a power source)
//
// A value that is undefined or not positive is left out of its line
// (benchstat's geomean needs positive values); a burst whose requests all
// failed writes no line. Unit metadata lines say which direction is
// better.
func WriteBenchfmt(w io.Writer, rows []Request, opts BenchfmtOptions) error {
	name := opts.Name
	if name == "" {
		name = "Serve"
	}
	bw := benchfmt.NewWriter(w)
	var cfg []benchfmt.Config
	for _, kv := range opts.Config {
		cfg = append(cfg, benchfmt.Config{Key: kv[0], Value: []byte(kv[1]), File: true})
	}
	results := benchfmtResults(rows, name, cfg)
	units := benchfmtUnits
	for _, u := range benchfmtSideUnits {
		if slices.ContainsFunc(results, func(r *benchfmt.Result) bool { _, ok := r.Value(u.unit); return ok }) {
			units = append(slices.Clip(units), u)
		}
	}
	for _, u := range units {
		if err := bw.Write(&benchfmt.UnitMetadata{UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: u.unit, Key: u.key}, OrigUnit: u.unit, Value: u.value}); err != nil {
			return fmt.Errorf("benchkit: write benchfmt: %w", err)
		}
	}
	for _, res := range results {
		if err := bw.Write(res); err != nil {
			return fmt.Errorf("benchkit: write benchfmt: %w", err)
		}
	}
	return nil
}

// benchfmtResults are the result lines of WriteBenchfmt.
func benchfmtResults(rows []Request, name string, cfg []benchfmt.Config) []*benchfmt.Result {
	var out []*benchfmt.Result
	for _, cell := range groupBy(rows, ByCell) {
		k := Summary{Key: ByCell, Labels: cell[0].Labels, Cell: cell[0].Cell()}.Name()
		for _, b := range byRepeat(cell) {
			f := figuresOf(b)
			if f.ok == 0 {
				continue
			}
			res := &benchfmt.Result{Config: cfg, Name: benchfmt.Name(name + "/" + k), Iters: f.ok}
			add := func(v float64, unit string) {
				if v > 0 && !math.IsInf(v, 0) {
					res.Values = append(res.Values, benchfmt.Value{Value: v, Unit: unit})
				}
			}
			add(f.burst.ThroughputTPS, "tok/s")
			add(f.burst.ExoAggregateTPS, "exo-agg-tok/s")
			add(f.burst.MeanTPS, "gen-tok/s")
			add(f.promptTPS, "prompt-tok/s")
			add(math.Round(f.ttftS*1e9), "ttft-ns/op")
			add(math.Round(f.e2eS*1e9), "e2e-ns/op")
			add(f.jPerTok, "J/tok")
			add(float64(f.ppTokens), "prompt-tok")
			add(math.Round(f.ttfaS*1e9), "ttfa-ns/op")
			add(f.reasoningTok, "reasoning-tok")
			add(f.answerTok, "answer-tok")
			add(f.jPerAnswer, "J/answer-tok")
			if len(res.Values) > 0 {
				out = append(out, res)
			}
		}
	}
	return out
}
