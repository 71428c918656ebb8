// Command serve-load measures an OpenAI-compatible server (vLLM, SGLang,
// llama.cpp, …) under online load: requests arrive on an open-loop
// schedule (Poisson, or gamma with a burstiness factor) or as one
// barrier-synchronised burst, every prompt exact to the token, and each
// request's TTFT, TPOT, ITL and E2E are recorded beside the schedule. A
// comma list of rates runs a sweep; --find-max-rate searches the highest
// rate that meets the SLOs.
//
// With no flags it starts the embedded simulated engine on 127.0.0.1 and
// measures that; its figures are simulated.
//
//	serve-load --base-url http://127.0.0.1:8000 --model meta-llama/Llama-3.1-8B-Instruct \
//	    --input-len 1024 --output-len 128 --range-ratio 0.5 --num-requests 200 --rate 4 \
//	    --slo-ttft 500 --slo-tpot 50 --json-out results.json --jsonl rows.jsonl --plot ttft.png
//
// --jsonl writes each request's row as one line as soon as it ends, so an
// interrupted run keeps every row. On SIGINT or SIGTERM no request is sent
// any more and those in flight get --grace (10 s) to finish.
//
// Exit status: 0 when every request succeeded, 1 when some failed (their
// rows say why), 2 for bad flags (nothing is sent), 130 when interrupted.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/inferbench/inferbench/benchkit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve-load:", err)
	}
	os.Exit(benchkit.ExitCode(err))
}
