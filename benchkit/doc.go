// Package benchkit composes inferbench's packages into a benchmark: a Plan
// of (pp, tg, concurrency) cells, a Runner that builds token-exact prompts,
// releases bursts, samples energy and computes timing, Rows that record
// what was measured and how, and Sinks and renderers that write them as
// they come (JSONL) and at the end (exo's JSON, CSV, Markdown, a terminal
// table, and Go's benchmark format for benchstat).
//
// For one burst without a Plan, SendPrompts (or SendBurst, for requests
// built by the caller) is the whole path in one call: it prewarms the
// engine's connections, prepares every request before the release, sends
// them at one instant and returns each request's client timing with the
// burst's dispatch skew and throughput aggregates:
//
//	br, err := benchkit.SendPrompts(ctx, eng, model, tg, prompts, nil)
//	// br.Requests[i].Metrics.TTFT, br.Skew.Max, br.Stats.ThroughputTPS
//
// exo's prefill/decode disaggregation benchmark, built on the Runner, is
// package benchkit/disagg; the command-line plumbing the example programs
// share (flags, exit statuses, interrupts, progress lines, output files)
// is package benchkit/cli.
package benchkit
