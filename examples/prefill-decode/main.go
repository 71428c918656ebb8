// Command prefill-decode measures prefill/decode disaggregation on an exo
// cluster the way exo's bench/prefill_decode_bench.py does: it creates a
// prefill instance and a decode instance of a model on two different
// nodes, links them (POST /v1/instance-links: the prefill instance as
// prefill, the decode instance as decode), and sends bench requests to the
// decode model, whose prompts the decode instance hands to the prefill
// instance when more than 1000 of their tokens are uncached. With
// --compare-baseline it also measures the prefill instance alone (before
// the decode instance exists) and the decode instance alone (after the link
// and the prefill instance are removed) and prints the speedup of the
// disaggregated setup over each.
//
// With no --host (and no EXO_HOST) it starts the embedded simulated engine
// with two simulated nodes on loopback and measures that: the first line on
// stderr says so, and every figure is labelled simulated.
//
//	go run ./examples/prefill-decode                    # embedded engine, defaults marked * below
//	go run ./examples/prefill-decode --config bench/prefill-decode.toml
//	go run ./examples/prefill-decode --host 10.0.0.5 --model gpt-oss-20b-MXFP4-Q8 \
//	    --tokenizer ~/models/gpt-oss-20b --prefill-node mike --decode-node james \
//	    --pp 4096 --tg 512 --repeat 3 --compare-baseline
//
// Flags (exo's, with its defaults unless marked):
//
//	--config FILE          TOML: top-level keys are the flags below (with _ for -), and
//	                       [prefill]/[decode] sections set model, node, instance_meta,
//	                       sharding, min_nodes, max_nodes, skip_pipeline_jaccl and
//	                       skip_tensor_ring per side. A flag given on the command line
//	                       beats the file; the file beats the flags' defaults (exo lets
//	                       truthy defaults beat the file, so its shipped host = "james"
//	                       is ignored). An unknown key is an error.
//	--host, --port         cluster address (env EXO_HOST, EXO_PORT; port 52415); the
//	                       file beats the environment
//	--model                both sides' model, short name or full id (* the simulated model)
//	--prefill-model        the prefill side's model (default: --model)
//	--prefill-node, --decode-node  a node's friendly name (exact, case-insensitive, else a
//	                       unique part of one) or id; default: any two distinct nodes
//	--pp, --tg             prompt and generation lengths, comma lists; every pp must
//	                       exceed 1000, exo's remote prefill threshold (* 4096 and 128)
//	--repeat 1             repeats per cell (* 2)
//	--warmup 0             warmup requests per phase, discarded
//	--concurrency 1        burst sizes, comma list (exo's script sends one at a time)
//	--all-combinations     every pp with every tg
//	--compare-baseline     also measure prefill_alone and decode_alone (* on)
//	--dry-run              print the two placements and the link, create nothing
//	--stream               streamed requests, for client TTFT (default on; exo's
//	                       script does not stream: --stream=false)
//	--json-out results/prefill-decode.json (exo: bench/prefill_decode_results.json),
//	                       written also when the run fails, with the rows measured
//	--html FILE            write the results as one self-contained HTML page: the placements,
//	                       the link and the sweep, where each phase's prefill ran, each
//	                       cell's phase means and speedups, each phase's latencies with
//	                       their intervals, and an inline plot of TTFT and TPOT against the
//	                       sweep; it fetches nothing, and is claimed and written like
//	                       --json-out (docs/REPORT.md)
//	--stdout               print only the results JSON on stdout
//	--format table         table, md or json on stdout
//	--timeout 7200         seconds a request may take
//	--settle-timeout 60    seconds to wait for placements (* 0)
//	--instance-meta both, --sharding both, --min-nodes 1, --max-nodes 4,
//	--skip-pipeline-jaccl, --skip-tensor-ring   placement filters of both sides
//	--force-download       add a model to the cluster's cards if it is missing
//	--danger-delete-downloads  free disk by deleting other downloads (never of a running model)
//	--tokenizer DIR        the model's tokenizer.json and tokenizer_config.json; without
//	                       it prompts are counted by the server's /tokenize, which exo
//	                       lacks
//	--preset fast          simulated hardware of the embedded engine
//	--pause 2              seconds slept before each request and after each group (* 0)
//	--no-probe             skip the one extra request per phase that asks the engine
//	                       where its prefill ran (only the embedded engine says)
//	--no-host-info         leave the host name out of the results file's provenance
//
// The link and both instances the run created are removed before it exits:
// on success, on failure and on Ctrl-C. After each phase one probe request
// asks the engine where its prefill ran; the embedded engine reports it and
// a disaggregated phase whose prefill ran locally fails the run, while
// against exo (which falls back to local prefill silently) the output says
// that it cannot tell.
//
// --config is read only when it is at most 64 KiB and nested at most 10
// deep (tables, arrays, inline tables and dotted keys together): a deeper
// or larger file is refused with status 2 before it is parsed, as the
// TOML parser's time grows with the square of the nesting.
//
// --json-out and --html are locked for the run (a lock file beside each,
// path.lock): a second run given the same path is refused with status 2,
// told which run holds it. The previous files there are removed when the
// run starts, and the new ones written to a temporary file renamed into
// place.
//
// On a terminal, stderr shows a progress bar counted over every phase
// (requests done/total, failures, achieved rate, elapsed, ETA); piped,
// nothing.
//
// Exit status: 0 when every request succeeded, 1 when some failed (their
// rows say why) or the run failed, 2 for bad usage or a --json-out in use
// by another run (nothing is created), 130 when interrupted (rows measured
// so far are written; a second SIGINT or SIGTERM exits at once, without
// the results JSON and without removing what the run created).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/inferbench/inferbench/benchkit/cli"
)

func main() {
	ctx, stop := cli.NotifyContext(context.Background(), "prefill-decode", os.Stderr)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "prefill-decode:", err)
	}
	os.Exit(cli.ExitCode(err))
}
