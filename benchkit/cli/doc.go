// Package cli is the command-line plumbing the example programs share,
// kept apart from the measuring library in package benchkit: flag types
// (IntList, ParseRates), usage errors and the exit statuses a run's error
// maps to (Usagef, ExitCode), the two-step interrupt (NotifyContext),
// a progress line for a terminal (Progress, a benchkit.Sink), results files
// claimed for a run and written whole, the same way by every program
// (ClaimOutputs and WriteResults, over LockOutputs and WriteFileAtomic),
// the workload flags of a trace, a dataset or a generated shared-prefix
// load (WorkloadFlags), a reasoning model's thinking controls and their
// sweeps (ThinkingFlags: --thinking, --reasoning-effort,
// --thinking-budget), and the server's own count of prompts as a counter
// (ServerCounter, ResolveServerCounter: vLLM's and SGLang's /tokenize, or
// llama.cpp's /apply-template and /tokenize, found by asking). A tool that
// wants the same flags and behaviour as serve-load or offline imports it;
// a harness that only measures needs benchkit alone.
package cli
