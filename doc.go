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
//	timing       pure arithmetic on traces and counts: TTFT, TPOT, ITL,
//	             prefill and generation TPS, burst aggregates, summaries,
//	             confidence intervals, goodput
//	promptsize   token-exact prompt construction; the Counter interface
//
// The leaves (timing, promptsize, concurrency, energy) import none of each
// other and are useful alone. More packages appear here as they land.
//
// # Example
//
// Generation TPS of a request whose 3 tokens arrived over 40 ms:
//
//	rate, err := timing.GenerationTPS(3, 40*time.Millisecond) // (3 − 1) / 0.040 s = 50 tok/s
//	if errors.Is(err, timing.ErrUndefined) { ... }             // fewer than 2 tokens or no span
package inferbench
