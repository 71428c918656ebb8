// Package benchkit composes inferbench's packages into a benchmark, around
// one record: a Request is one measured request, what was asked, what came
// back and how each figure was measured, with the labels that place it
// (run and rate, placement, burst and repeat, phase, session and turn,
// thinking setting).
//
// Every driver emits Requests, built by one function (NewRequest), so a
// figure follows one rule whichever driver measured it:
//
//   - a Runner measures a Plan of (pp, tg, concurrency) cells as
//     barrier-released bursts, with energy sampled over each (ExoSweep
//     runs it on every placement of an exo cluster; package
//     benchkit/disagg runs exo's prefill/decode disaggregation benchmark);
//   - a Load sends a Workload (random lengths, or a Trace of a trace's
//     or dataset's rows) on an open-loop schedule, as one burst, as a
//     closed loop or as a replay, sweeps rates and searches the highest
//     one meeting an SLO; its requests stream unless NoStream is set;
//   - Sessions runs multi-turn chats, each turn after the previous reply
//     with the reply in its history and its prompt exact with the history
//     counted, rows labelled by session and turn;
//   - SendBurst and SendPrompts send one burst in one call.
//
// A reasoning model's thinking control (engine.Thinking: on or off, an
// effort, a budget) goes on every request from the drivers' Request
// template, and is a sweep axis: Plan.Thinking measures each cell under
// each setting, LoadPlan.Thinking a load's runs. The drivers count the
// prompts with the chat template variables the control sends (a Counter
// with WithTemplateVars: see package promptsize), label each row with its
// setting (Labels.Thinking) and never summarise settings together.
//
// A run can go on until its answer is known rather than for a fixed
// length: Load.Until and Plan.Until are target margins of error
// (package precision: "ttft.p99:5%"), checked as requests complete or
// repeats end; a load run stops dispatching once they are met, a cell
// stops repeating, each within its cap (the traffic's requests or
// duration, Plan.MaxRepeat), and the summary says which stopped it
// (Summary.Stopped, Summary.Precision). A load summary's latency
// quantiles carry their confidence intervals (Quantiles.P99CI, …), and
// the tables print them. docs/PRECISION.md gives the method.
//
// Sinks receive the Requests as they are measured (a JSONL file, a
// progress line, a caller's own). Summaries are groupings of Requests
// (Summarize with a Key: ByRun, ByCell, ByPhase, ByTurn), and every output
// is a view of them: a Request's own JSON (a load test's row), ExoRun
// (exo's "runs" row), the results documents (Document, LoadDocument), CSV,
// Go's benchmark format for benchstat, and the tables.
//
//	br, err := benchkit.SendPrompts(ctx, eng, model, tg, prompts, nil)
//	// br.Requests[i].TTFTS, br.Skew.Max, br.Stats.ThroughputTPS
//
// The server's own view of a run, read from its /metrics (Load.ServerMetrics,
// Sessions.ServerMetrics), is package engine/metrics/view's; benchkit sets
// it beside the client's summary of the same run (Summary.Server). The
// timings a server puts on each response (llama.cpp's, Ollama's, TGI's)
// are summarised beside it (Summary.Responses, ResponseTimings), each
// difference from the client's labelled with what it holds on that
// server, and for llama.cpp, whose timings leave out the wait for a slot,
// that wait estimated per request.
//
// The command-line plumbing the example programs share (flags, the target
// they measure, exit statuses, interrupts, progress lines, output files)
// is package benchkit/cli.
package benchkit
