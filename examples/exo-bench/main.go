// Command exo-bench measures prompt processing and generation of a model on
// an exo cluster the way exo's bench/exo_bench.py does, with inferbench's
// fixes: token-exact prompts verified against the server's count, prompts
// and connections prepared before each burst is released, honest burst
// aggregates beside exo's max × N, energy integrated over exactly each
// burst's window, and rows written as they are measured.
//
// With no --host (and no EXO_HOST) it starts the embedded simulated engine
// on loopback and measures that: every figure is then simulated and labelled
// so.
//
//	go run ./examples/exo-bench                         # embedded engine, defaults below
//	go run ./examples/exo-bench --host 10.0.0.5 --model Llama-3.2-1B-Instruct-4bit \
//	    --tokenizer ~/models/Llama-3.2-1B-Instruct --pp 512,4096 --tg 128 --concurrency 1,4
//
// Flags of exo_bench.py, with its defaults (the embedded engine changes
// only the defaults marked *):
//
//	--host, --port        cluster address (env EXO_HOST, EXO_PORT; port 52415)
//	--model               short name or full id (* the simulated model)
//	--pp, --tg            prompt and generation lengths: comma lists, repeatable
//	                      (* 128,256 and 32)
//	--repeat 1            repeats per cell (* 2)
//	--concurrency 1       burst sizes, comma list (* 1,4)
//	--warmup 0            warmup requests with the first pp/tg, discarded
//	--json-out results/exo-bench.json (exo: bench/results.json)
//	--stdout              print only the results JSON on stdout (logs to stderr)
//	--dry-run             list the placements and exit
//	--all-combinations    every pp with every tg (else paired when the lists have equal length)
//	--stream              streamed requests: client TTFT, TPOT and ITL (without it the
//	                      table's TTFT column is the server's prefill time, and its energy
//	                      column exo's own power_usage, which streamed responses lack)
//	--no-system-metrics   do not sample node metrics (power)
//	--metrics-interval 1  seconds between node metric samples (≥ 0.05)
//	--use-prefix-cache    let the engine reuse cached prefixes (prompt TPS approximate)
//	--timeout 7200        seconds a request may take
//	--grace 10            on SIGINT or SIGTERM, seconds the requests in flight may take to finish
//	--settle-timeout 60   seconds to wait for placements (0: one look)
//	--instance-meta both  ring, jaccl or both
//	--sharding both       pipeline, tensor or both
//	--min-nodes 1, --max-nodes 4 (* 1 and 1: one placement)
//	--force-download      add the model to the cluster's cards if it is missing
//	--reuse-instance      run on an existing instance; create and delete none
//	--danger-delete-downloads  free disk by deleting other downloads (never of a running model)
//
// inferbench's own:
//
//	--tokenizer DIR       tokenizer.json, tokenizer_config.json (optional chat_template.jinja)
//	                      of the model: required against a real cluster
//	--format table        table, json, jsonl, csv, md or benchfmt on stdout
//	--jsonl PATH          rows as measured (default: --json-out with .jsonl)
//	--preset NAME         simulated hardware of the embedded engine (* m3-ultra-gemma3-27b-4bit)
//	--pause-repeat, --pause-group  seconds slept before each burst and after each
//	                      group (exo: 3 and 2; * 0 and 0)
//	--salt                a unique prefix per request, so no two share a cached prefix
//	--until LIST          repeat each cell past --repeat until the target margins of error
//	                      it lists are met on its per-repeat figures (gen_tps.mean:5% asks
//	                      for the mean generation TPS within ±5 % at 95 %; @90 sets the
//	                      level), at most --max-repeat N times (required); the table's
//	                      notes and the JSON summary's "stopped" and "precision" say per
//	                      cell "target met" or "cap reached" with each achieved margin
//	                      (docs/PRECISION.md)
//	--html FILE           the results as one self-contained HTML page: what was measured
//	                      (placement, model, cells, repeats, the plan), the cell table
//	                      with each figure's interval, the energy where measured, and
//	                      plots of each cell's generation rate and energy per token; it
//	                      fetches nothing (docs/REPORT.md)
//	--plot PNG            generation throughput against concurrency: Σ tokens / wall
//	                      beside exo's max × N, per (pp, tg)
//	--plot-power PNG      each node's sampled power over the run, bursts shaded
//	                      (prefill and generation when --stream)
//	--predict             compute every cell's bursts on the embedded engine's virtual
//	                      clock instead of sending them (no --host; --preset a built-in
//	                      preset or a twin file): rows, table and results labelled
//	                      predicted; one placement, fixed repeats (docs/PREDICT.md)
//
// Results files: --json-out, --html and --jsonl are locked for the run (a lock
// file beside each, path.lock), so a second run given the same path is
// refused with status 2 and told which run holds it. At the start the
// previous results JSON (and page) is removed, so that a run that dies never leaves
// an older one beside its new JSONL; the new one is written to a
// temporary file and renamed into place at the end.
//
// On a terminal, stderr shows a progress bar counted over every placement
// of the sweep (requests done/total, failures, achieved rate, elapsed,
// ETA); piped, nothing.
//
// The client's own health is judged after the run: a burst of n requests
// whose dispatch skew (last send − first send) exceeds max(5 ms, 0.5 ms ×
// n) was released by a client that could not keep up, so its latencies
// include the client's queueing. Such bursts are named on the table's
// stream and in the results JSON (meta.saturated_bursts,
// meta.client_saturated), and the run exits 3 unless --allow-saturated
// (docs/PERFORMANCE.md states how the bound was calibrated).
// --no-host-info leaves the host name out of the results files.
//
// --thinking on|off, --reasoning-effort low|medium|high and
// --thinking-budget N put a reasoning model's thinking controls on every
// request, every prompt counted with the chat template rendered under
// them; lists (--thinking off,on) measure each cell under each setting,
// the rows and the summary's cells labelled "thinking", the table a line
// per cell and setting.
//
// Exit status: 0 when every request succeeded, 1 when some failed (their
// rows say why) or the run failed, 2 for bad usage or results files in use
// by another run (nothing is sent), 3 when a burst's client was saturated
// (every file is written; --allow-saturated exits 0 instead), 130 when
// interrupted (SIGINT or SIGTERM: rows measured so far are written and the
// instances the run created are deleted; a second signal exits at once,
// with the rows written so far synced and no results JSON). A run with
// failed requests exits 1 whether or not it was saturated.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/inferbench/inferbench/benchkit/cli"
)

func main() {
	ctx, stop := cli.NotifyContext(context.Background(), "exo-bench", os.Stderr)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode says why on stderr and maps run's error to the exit status the
// doc promises (cli.ExitCode).
func exitCode(err error, stderr io.Writer) int {
	if err != nil {
		fmt.Fprintf(stderr, "exo-bench: %v\n", err)
	}
	return cli.ExitCode(err)
}
