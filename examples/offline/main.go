// Command offline measures an engine's throughput at full load, as
// nano-vllm's offline benchmark does: every request is submitted at once
// (one barrier-released burst), each with an input and an output length
// drawn uniformly from a range, every prompt exact to the token and every
// reply exactly its length (ignore_eos). It reports
//
//	output throughput = Σ generated tokens / wall time
//
// where the wall time runs from the release of the burst to the end of
// the last response. It measures how fast the engine is, not how any one
// request fares (see serve-load for that).
//
// Generated tokens are the server's usage.completion_tokens. A reply that
// carries no usage is counted, after the run, with the counter the prompts
// were built with (--tokenizer, the server's /tokenize, or the embedded
// engine's); its row and the summary then say so in a warning beginning
// "client-counted completion_tokens" that names the counter.
//
// --trace FILE or --dataset FILE sends a trace's or dataset's rows
// instead, all at once (the flags of serve-load's, cli.WorkloadFlags):
// every prompt exact, hash-id rows made of exact token blocks, token ids
// to /v1/completions with --endpoint completions; a row shorter than its
// request's own tokens is skipped, counted and named by line. The --gsp-*
// flags (serve-load's) send a generated shared-prefix load all at once,
// its theoretical prefix hit rate beside the server's.
//
// --thinking on|off, --reasoning-effort low|medium|high and
// --thinking-budget N put a reasoning model's thinking controls on every
// request, every prompt counted with the chat template rendered under them
// (one setting; serve-load and exo-bench sweep them).
//
// With no flags it measures the embedded simulated engine on 127.0.0.1;
// its figures are simulated.
//
//	offline --base-url http://127.0.0.1:8000 --model Qwen/Qwen3-0.6B \
//	    --num-seqs 256 --min-input-len 100 --max-input-len 1024 --min-output-len 100 --max-output-len 1024
//
// Every wait is bounded. --timeout (10 minutes by default, 0 for none)
// bounds each request from dialing to the end of its answer, so an endless
// stream or a server that never sends its headers is a failed request of
// kind timeout, and bounds the model-list and /tokenize calls. With
// --api-key-env the token goes, in the Authorization header, to the chat
// endpoint, the model list and /tokenize, never across a redirect, and is
// redacted from every message and file however the server echoes it.
//
// --json-out is locked for the run (a second run given it is refused,
// told which run holds it), the previous file is removed when the run
// starts, and the new one is renamed into place whole at the end
// (cli.ClaimOutputs and cli.WriteResults, as every program does).
//
// --html FILE writes the results as one self-contained HTML page
// (report.WriteOffline): what was measured and its provenance, the
// throughputs (one burst: no interval), each request's latency with its
// intervals, how at once the burst went out, the server's view, the
// warnings and a per-request timeline as inline SVG. The page fetches
// nothing. It is claimed and written like --json-out (docs/REPORT.md).
//
// Every prompt's salt carries a run nonce, random unless --seed is given,
// so no two runs share a prefix beyond the chat template; --shared-prefix N
// puts the same text of about N tokens before every salt, for prefix-cache
// ablations. --no-host-info leaves the host name out of the results file.
//
// The client's own health is judged after the burst: when the p99 of its
// requests' schedule lag (send − release, less any dial) exceeds max(5 ms,
// 0.5 ms × n), the client could not release the burst at once and the
// latencies include its own queueing. stdout then says CLIENT SATURATED
// with the reason, the results JSON records it (summary.client_health,
// meta.client_saturated), and the run exits 3 unless --allow-saturated
// (docs/PERFORMANCE.md states how the bound was calibrated). The burst runs
// with the garbage collector at --gc-percent (400 by default, Go's is 100);
// summary.client_health counts the collections that ran inside it.
//
// On a terminal, stderr shows a progress bar (requests done/total,
// failures, achieved rate, elapsed, ETA); piped, nothing. -h or --help
// prints the flags and exits 0.
//
// Exit status: 0 when every request succeeded, 1 when some failed, 2 for
// bad flags or a --json-out in use by another run (nothing is sent), 3
// when the client was saturated (the results are written;
// --allow-saturated exits 0 instead), 130 when interrupted (a second
// SIGINT or SIGTERM exits at once, without the results JSON).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/inferbench/inferbench/benchkit/cli"
)

func main() {
	ctx, stop := cli.NotifyContext(context.Background(), "offline", os.Stderr)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "offline:", err)
	}
	os.Exit(cli.ExitCode(err))
}
