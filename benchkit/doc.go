// Package benchkit composes inferbench's packages into a benchmark: a Plan
// of (pp, tg, concurrency) cells, a Runner that builds token-exact prompts,
// releases bursts, samples energy and computes timing, Rows that record
// what was measured and how, and Sinks and renderers that write them as
// they come (JSONL) and at the end (exo's JSON, CSV, Markdown, a terminal
// table, and Go's benchmark format for benchstat).
package benchkit
