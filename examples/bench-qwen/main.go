// Command bench-qwen is mini-sglang's online benchmark,
// benchmark/online/bench_qwen.py, on inferbench: the first 1,000 rows of a
// Qwen Bailian trace (qwen_traceA_blksz_16.jsonl there) replayed at six
// time scales, 0.4, 0.5, 0.6, 0.7, 0.8 and 1.6, one after another. A scale
// multiplies the trace's timestamps (0.4 sends 2.5 times faster than the
// trace, 1.6 slower), and every scale's first request goes 1 s after its
// start, as mini-sglang's does. Each request is a streamed chat completion
// with max_tokens the row's output_length, end-of-sequence ignored,
// temperature 0 and top_k 1, as bench_qwen.py sends them.
//
// For every scale it prints mini-sglang's own figures beside ours:
//
//   - theirs, as python/minisgl/benchmark/client.py computes them
//     (process_benchmark_results), from the chunk instants we record:
//     "TTFT" the first chunk's gap, "TPOT" every later inter-chunk gap of
//     every request pooled, "E2E" the first instant to the last, the
//     duration the first instant of any request to the last, token/s the
//     instants counted (chunks + 1 per request) over it and req/s the
//     requests over it, percentiles as sorted[int(n·q)];
//   - ours, benchkit's: TTFT from the send to the first text, TPOT per
//     request, (E2E − TTFT)/(n − 1), ITL per token, E2E from the send to the
//     end of the response, percentiles interpolated, output tokens and
//     requests per second over the run from its start.
//
// We do not record the instant their clock starts at (the response
// headers) nor the finish chunk's, so their figures stand on the send
// instant and on the end of the response instead; the output says so,
// and says once, after the tables, where each pair differs and why. A
// last table gives the headline figures of every scale, theirs | ours.
//
// With no flags it replays the sample built into the program,
// synthetic_qwen_traceA_1k.jsonl (432 KB, made up by
// scripts/gen_workload_samples.py, no row of the public trace: about 6
// requests a second over 171 s, traceA's pace), from whatever directory it
// runs in, against the embedded simulated engine; its figures are
// simulated. That
// default is the faithful run: all six scales, Σ scales × span ≈ 4.6 ×
// 171 s ≈ 13 minutes of trace time. --rows and --scales shorten it:
//
//	bench-qwen --rows 200 --scales 0.4,1.6
//	bench-qwen --base-url http://127.0.0.1:1919 --tokenizer ~/models/Qwen3-32B \
//	    --trace qwen_traceA_blksz_16.jsonl --json-out qwen.json
//
// --trace FILE takes a Bailian or Mooncake trace (the format is inferred;
// its rows must be in time order, as the public files are). Every prompt
// is exact and made of the row's hash ids, one block of exact tokens per
// id, so the server's prefix cache sees the sharing the trace holds; that
// needs the model's tokenizer (--tokenizer DIR; the embedded engine has
// its own). mini-sglang instead sends prefixes of one random text and runs
// its server with --cache naive; --prefix-cache naive does that to the
// embedded engine. Each scale draws its own blocks (its own run nonce), so
// no scale is served from what an earlier one left in the cache.
//
// --json-out FILE writes one JSON document holding every scale: for each,
// the scale, mini-sglang's figures and benchkit's load-test document
// (serve-load's --json-out, with every request's row). It is rewritten
// whole after each scale, so an interrupted run keeps the scales it
// finished, and locked for the run.
//
// --html FILE writes the same document as one self-contained HTML page at
// the end (package benchkit/report, report.WriteQwen): what was replayed
// and against what, every scale's headline figures theirs beside ours,
// why they differ, and for each scale mini-sglang's figures, ours with
// their intervals (the note that our ITL's is too narrow: it pools the
// correlated gaps of each request), the throughputs, the warnings and a
// per-request timeline. The page fetches nothing. Like --json-out it is
// claimed when the run starts; an interrupted run's page holds the scales
// run so far (docs/REPORT.md).
//
// Each scale's start and end are said on stderr, and on a terminal a
// progress bar shows the scale's requests between them. On SIGINT or SIGTERM
// nothing more is sent, requests in flight get --grace (10 s), and the
// scales so far are printed and written; a second signal exits at once.
//
// Exit status: 0 when every request succeeded, 1 when some failed, 2 for
// bad flags (nothing is sent), 3 when the client was saturated
// (--allow-saturated exits 0 instead), 130 when interrupted.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/inferbench/inferbench/benchkit/cli"
)

func main() {
	ctx, stop := cli.NotifyContext(context.Background(), "bench-qwen", os.Stderr)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-qwen:", err)
	}
	os.Exit(cli.ExitCode(err))
}
