// Package inferbench is a Go SDK for measuring LLM inference engines: exo
// clusters, vLLM, SGLang, llama.cpp and any OpenAI-compatible server.
//
// It implements exo's benchmark methodology as importable packages and
// improves on it where exo's numbers can mislead: prompts of an exact token
// length after the model's chat template, one set of documented formulas for
// every rate, concurrent requests released at one instant, energy from power
// telemetry over exactly the window measured, and results in files other
// tools read.
//
// # Packages
//
//	timing            pure arithmetic on traces and counts: TTFT, TPOT, ITL,
//	                  prefill and generation TPS, burst aggregates, summaries,
//	                  confidence intervals, goodput
//	promptsize        token-exact prompt construction; the Counter interface
//	  hf              pure-Go tokenizer.json encoder and chat templates
//	  hfcgo           the same over Hugging Face's Rust tokenizers (cgo, tag hftokenizers)
//	  remote          a Counter that asks the serving engine
//	concurrency       barrier bursts, open- and closed-loop load, rate search
//	energy            power traces, energy counters, samplers and sources
//	workload          readers of public traces and datasets: Mooncake, Bailian,
//	                  BurstGPT, Azure, ShareGPT, custom JSONL
//	engine            the Engine interface, results, typed errors, SSE reading
//	  exo             adapter for exo clusters (MLX on Apple Metal)
//	  openai          adapter for OpenAI-compatible servers
//	  sim             the embedded reference engine (a real loopback server)
//	  enginetest      the conformance kit every adapter runs
//	benchkit          one per-request record for every driver (plans and the
//	                  runner, open and closed loops, trace replay, sessions),
//	                  summaries by run, cell, phase or turn, sinks, and every
//	                  output a view of the records
//	  cli             what the example programs share: the target, flags,
//	                  exit statuses, progress, output files
//	  plot            PNG plots of results
//
// The leaves (timing, promptsize, concurrency, energy, workload) import none
// of each other and are useful alone; engine imports only timing; benchkit composes
// everything.
//
// # Example
//
// Generation TPS of a request whose 3 tokens arrived over 40 ms:
//
//	rate, err := timing.GenerationTPS(3, 40*time.Millisecond) // (3 − 1) / 0.040 s = 50 tok/s
//	if errors.Is(err, timing.ErrUndefined) { ... }             // fewer than 2 tokens or no span
package inferbench
