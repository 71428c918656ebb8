// Command serve-load measures an OpenAI-compatible server (vLLM, SGLang,
// llama.cpp, …) under online load: requests arrive on an open-loop
// schedule (Poisson, or gamma with a burstiness factor) or as one
// barrier-synchronised burst (or, with --users N, as a closed loop of N
// users each waiting for its previous reply), every prompt exact to the
// token, and each request's TTFT, TPOT, ITL and E2E are recorded beside
// the schedule. A
// comma list of rates runs a sweep; --find-max-rate searches the highest
// rate that meets the SLOs (--slo-ttft, --slo-tpot, --slo-itl, --slo-e2e,
// and --slo-ttfa on the time to the first answer token: when a reasoning
// model's answer begins after its thinking). --find-capacity sweeps rates
// until the server over-saturates and brackets the knee (where the
// throughput stops following the offered rate) and the capacity at the
// SLOs, adding rates between the runs on each side; the table and the
// plot mark both (docs/CAPACITY.md).
//
// --ramp linear or --ramp exponential ramps the open loop's rate from
// --rate (the start; 0 for a linear ramp from nothing) to --ramp-end-rate
// over --ramp-duration, then holds it; the summary then has no single
// offered rate (request_rate null) and names the ramp. --probe-rate R
// sends one-token head-of-line probes, R a second, beside the load until
// its last request is dispatched, outside --max-concurrency: they are
// flagged rows ("probe": true), in none of the load's figures, summarised
// apart (summary.probes, and a line below the table) to show how long
// the load makes an unrelated request wait. docs/RAMPS-AND-PROBES.md
// defines both.
//
// --trace FILE replays a trace (Mooncake or Bailian JSONL, BurstGPT or
// Azure CSV; --trace-format names it when the content does not) at its
// rows' instants, --trace-speedup R times faster, each prompt exact: rows
// with hash ids are made of exact token blocks, so the server's prefix
// cache sees exactly the sharing the trace holds, and the summary gives
// the trace's theoretical hit rate beside the server's measured one. With
// --rate the rows go on the rate's schedule instead. --dataset FILE sends
// a dataset's requests (ShareGPT, JSONL of prompts or messages) at --rate.
// --trace-rows N keeps the first N rows, --max-input-tokens skips longer
// rows, --max-output-tokens caps outputs, and --endpoint completions sends
// token ids to /v1/completions (exact with no re-tokenization; it needs
// --tokenizer against a real server). A row shorter than its request's own
// tokens (the chat template's, and a length-only row's salt's) cannot be
// built: it is skipped, counted and named by line on stderr and in the
// results' warnings, and the other rows run.
//
// --gsp-num-groups G, --gsp-prompts-per-group P, --gsp-system-prompt-len S,
// --gsp-question-len Q and --gsp-output-len O (SGLang's bench_serving
// names; any of them turns the load on, SGLang's defaults 64, 16, 2048, 128
// and 256 filling the rest) send a generated shared-prefix load on the
// rate's schedule: G·P prompts of S + Q tokens, those of a group sharing
// exactly their S leading tokens after the chat template and nothing
// after them (vLLM's prefix_repetition is the same load: its num-prefixes,
// prefix-len, suffix-len and output-len). --gsp-zipf-alpha A draws each
// prompt's group from a Zipf distribution instead. The summary's
// theoretical hit rate is the load's; the server's measured one stands
// beside it.
//
// With no flags it starts the embedded simulated engine on 127.0.0.1 and
// measures that; its figures are simulated. --predict sends nothing: it
// computes the plan (a rate, a rate list, a burst, a trace replay, a closed
// loop, a capped open loop, or a search for the capacity or the highest
// rate meeting the SLO) on the embedded engine's scheduler run on a
// virtual clock, in a fraction of the schedule's time, and labels the
// table, the results and every row predicted (docs/PREDICT.md).
//
//	serve-load --base-url http://127.0.0.1:8000 --model meta-llama/Llama-3.1-8B-Instruct \
//	    --input-len 1024 --output-len 128 --range-ratio 0.5 --num-requests 200 --rate 4 \
//	    --slo-ttft 500 --slo-tpot 50 --json-out results.json --jsonl rows.jsonl --plot ttft.png
//
// --jsonl appends each request's row as one synced line as soon as it
// ends, so an interrupted run keeps every row. The file is never
// truncated: each run first appends a header line,
// {"run_header": {"program", "pid", "host", "started"}}, and its rows
// follow it; benchkit.JSONLReader skips such lines, and
// benchkit.ParseRunHeader tells them from rows. --json-out is written to a
// temporary file and renamed into place at the end; the previous one is
// removed when the run starts. Both paths are locked for the run: a
// second run given either is refused, naming the run that holds it.
//
// --html FILE writes the results as one self-contained HTML page (package
// benchkit/report): what was measured and its provenance, the summary
// tables with every figure's interval, the steady state beside the whole
// run, the server's view, the warnings, the latency against the offered
// rate of a sweep (knee and capacity marked) and a per-request timeline,
// as inline SVG. The page fetches nothing. Like --json-out it is claimed
// when the run starts and written whole at the end (docs/REPORT.md).
//
// --warmup N sends N requests of the workload's kind before each run and
// drops them (each salted apart, sharing no prefix with a measured one):
// they are in no row and no figure, and the summary counts them. Every
// run's summary also holds its steady-state window, the figures over it
// beside the whole run's (a "↳ steady" line in the table;
// docs/STEADY-STATE.md).
//
// On SIGINT or SIGTERM no request is sent any more and those in flight
// get --grace (10 s) to finish; a second signal exits at once with status
// 130, the rows written so far synced and no results JSON written.
//
// Every wait is bounded. --timeout (10 minutes by default, 0 for none)
// bounds each request from dialing to the end of its answer, so an endless
// stream or a server that never sends its headers is a row of kind
// timeout, and bounds the model-list and /tokenize calls; a Retry-After on
// the model list is waited 30 s at most, within that bound. With
// --api-key-env the token goes, in the Authorization header, to the chat
// endpoint, the model list and /tokenize, never across a redirect, and is
// redacted from every row, message and file however the server echoes it.
//
// Every run draws a random nonce that salts every prompt, so no two
// requests of any run share a prefix beyond the chat template (each salt
// opens with the request's own index, so the prompts differ from their
// first content token) and a server's prefix cache serves nothing from an
// earlier run; --seed makes
// the nonce and the schedule reproducible, and --shared-prefix N gives
// every prompt the same first N tokens for prefix-cache ablations. Results
// files record where they came from (build, platform, the command line
// with secrets redacted, nonce and seed, tokenizer and template hashes,
// what the server says about itself); --no-host-info leaves out the host
// name. On a terminal a progress bar shows requests done, failures, rate,
// elapsed time and ETA.
//
// Each send waits on a timer and then spins to its instant
// (concurrency.SpinClock), so that requests leave on schedule to within a
// fraction of a millisecond rather than a timer's wake-up late; the spin
// costs up to 2 ms of CPU a request. Chunk instants are the kernel's
// receive instants of their bytes (Linux),
// so a reader woken late still stamps each chunk when it arrived; the
// schedule runs with the garbage collector at --gc-percent (400 by
// default, Go's is 100), so that fewer collections stall the readers past
// a stream's next chunk.
//
// The client's own health is recorded in every summary: schedule lag,
// dispatch lag, achieved against intended rate, CPU over wall time, the
// garbage collections that ran inside the schedule. When
// lag p99 exceeds max(5 ms, 10 % of the mean gap between arrivals), or the
// achieved rate falls below 90 % of the intended, the load generator was
// the bottleneck: the summary says client_saturated with the reason and
// the exit status is 3, unless --allow-saturated.
//
// --thinking on|off, --reasoning-effort low|medium|high and
// --thinking-budget N put a reasoning model's thinking controls on every
// request, every prompt counted with the chat template rendered as the
// server renders it under them (cli.ThinkingFlags). Lists sweep them:
// --thinking off,on --rate 1,2 is four runs, each rate under each setting,
// labelled in every row and summary, the table led by a thinking column.
//
// --until LIST stops each run once the target margins of error it lists
// are met (ttft.p99:5% asks for the p99 of TTFT within ±5 % at 95 %;
// tpot.mean:2%@90 for the mean TPOT within ±2 % at 90 %): the run checks
// them as requests complete, stops sending once every one is met and lets
// those in flight finish; --num-requests or --duration is then its cap.
// The table's notes and the summary's "stopped" and "precision" say
// whether the targets were met or the cap was reached, with each
// achieved margin (docs/PRECISION.md).
//
// --segment i/N (or --segments N with JOB_COMPLETION_INDEX) sends one
// share of the schedule a single process would send with the same --seed,
// from a shared --start-at; `serve-load merge` recomputes one result from
// the segments' rows (docs/DISTRIBUTED.md).
//
// Exit status: 0 when every request succeeded, 1 when some failed (their
// rows say why), 2 for bad flags or results files in use by another run
// (nothing is sent), 3 when the client was saturated (see above), 130 when
// interrupted.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/inferbench/inferbench/benchkit/cli"
)

func main() {
	ctx, stop := cli.NotifyContext(context.Background(), "serve-load", os.Stderr)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve-load:", err)
	}
	os.Exit(cli.ExitCode(err))
}
