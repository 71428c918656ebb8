// Package engine is the contract between a benchmark and the inference
// engine it measures: the request and result types, the Engine interface and
// its optional capabilities, typed errors, and one Server-Sent Events reader
// that every HTTP adapter shares.
//
// # Engines
//
// An [Engine] has one method, Complete, which sends one request (a chat of
// Messages, or a text completion of a [Prompt] of token ids or raw text)
// and returns its [Result]: the client's [timing.Trace] (when the request was
// written, when headers and each content chunk arrived and what it carried,
// the answer, reasoning streamed apart from it or a tool call, one kind a
// chunk; the tokens the server counted and never streamed; when the
// response ended), the server's own statistics when it reports them
// ([ServerStats]: exo's generation_stats, llama.cpp's timings, Ollama's
// durations, TGI's timing headers, with Source saying whose), the OpenAI
// usage block ([Usage], with the reasoning tokens where the server says),
// exo's power_usage block ([PowerUsage]), the text and the response id.
// [Request.Thinking] asks for a reasoning model's thinking controls, which
// each adapter sends as its server takes them (see its package doc).
//
// Everything else an engine may offer is a small optional interface that
// callers discover with a type assertion:
//
//	if p, ok := e.(engine.Prewarmer); ok {
//		err = p.Prewarm(ctx, n) // open n connections before a burst
//	}
//
// [Preparer] is the companion of [Prewarmer]: Prepare does a request's
// client-side work (validation, JSON encoding, headers) ahead of time, so a
// request released with a burst has only I/O left; [Prepare] gives every
// engine that shape, falling back to Complete at Send for engines without
// it.
//
// [Prewarmer], [ModelLister], [TokenCounter] and [Preparer] each come with a
// Func adapter. Adapters live in subpackages (engine/exo, engine/openai, engine/ollama) and the
// embedded reference engine in engine/sim, so importing this package pulls in
// no client of a particular server.
//
// A caller that must know the instant a request's bytes begin to leave the
// machine (a burst recording its dispatch skew) attaches a hook to the
// context with [WithSendHook]; adapters call it through [NotifySend].
//
// # Errors
//
// Complete's errors can be told apart without matching text. A response
// with an HTTP status of 400 or more is a [*StatusError]; every other
// failure is an [*Error] whose [Kind] says what went wrong (connect, reset,
// timeout, canceled, truncated stream, malformed stream, in-stream error
// event). [KindOf] reduces any error to that short, stable string for a
// result row. A benchmark request is never retried behind the caller's back:
// a failure is a recorded row. The one exception is a request the server
// cannot have answered: written on a reused keep-alive connection that
// the server had closed (llama.cpp's server closes one after every
// stream while saying keep-alive) and failing before any byte of an
// answer, it goes out again on another connection, and
// [Result.Resent] says so.
//
// # Server-Sent Events
//
// [SSEReader] reads the text/event-stream that exo, vLLM, SGLang and
// llama.cpp stream: data lines (several joined with "\n"), comment lines
// (exo's ": generation_stats {...}", ": prefill_progress {...}" and
// ": keep-alive"), named events ("event: error"), LF, CRLF and CR line ends,
// the closing "data: [DONE]", and a bound on line length. Each event carries
// the instant its bytes were read, from a clock the caller may replace (the
// exo and openai adapters give it one that reads the kernel's receive
// instant of the bytes, on Linux). It
// is shaped like [bufio.Scanner] (Next, Event, Err) and reuses its buffers,
// so reading a stream allocates nothing per event.
//
// # Conformance
//
// Package engine/enginetest checks that an adapter keeps these contracts:
// exact token counts on bench requests, valid monotonic traces, statistics
// where claimed, prompt cancellation and typed errors.
package engine
