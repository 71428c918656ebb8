// Command perf measures the SDK's own cost and accuracy, side by side with a
// floor or a reference for each figure, and prints one table (and, with
// -json, a JSON file of the same rows):
//
//  1. skew: the dispatch skew of a concurrency.Burst through the real
//     adapters (engine/exo, engine/openai, prewarmed), each with its
//     requests prepared before the release (engine.Preparer) and through
//     Complete after it, against a loopback server that stamps each
//     request's arrival, beside raw writes of the same bytes on pre-dialed
//     sockets, as a ratio to that floor, and each sender's own work from
//     its release to its first byte;
//  2. sse: ns and allocations per token of the exo and openai stream
//     readers on in-memory streams (the packages' BenchmarkReadStream, run
//     with go test), and the most tokens/s one process ingests across many
//     concurrent loopback streams, with its CPU use;
//  3. itl: client TTFT and per-token ITL against a loopback server that
//     records when it flushed each chunk, some chunks carrying several
//     tokens: error = client instant − server flush instant; the server is
//     this binary started again in a process of its own; then the same
//     through benchkit.Load (serve-load's code) with 16 streams, as
//     --burst 16 and as --rate inf --max-concurrency 16;
//  4. prompt: tokenizer calls and time to build exact prompts with
//     promptsize.Builder on the pure-Go tokenizer, beside promptsize.ExoSearch
//     on the same Counter;
//  5. tokenizer: encode throughput of promptsize/hf beside Hugging Face's
//     Rust tokenizers (npm tokenizers@0.23.2, scripts/node/speed_rust.mjs)
//     and transformers.js (scripts/node/speed.mjs) on the same 1 MiB text;
//  6. energy: energy.Integrate's error beside exo's method
//     (energy.ExoWindowEnergy) on power curves with closed-form integrals.
//
// Usage, from the repository root:
//
//	go run ./cmd/perf [-quick] [-only skew,sse,itl,prompt,tokenizer,energy] [-json perf.json]
//
// Every figure is a measurement of this machine at this moment; the table
// states the targets of issue 11 beside them and says which are met. The
// table's layout is not stable; read the JSON. docs/PERFORMANCE.md holds a
// run with the machine it ran on and what each missed target is missing.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	if os.Getenv(paceEnv) != "" {
		os.Exit(servePace(os.Stdin, os.Stdout, os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "perf:", err)
		os.Exit(1)
	}
}
