// Package ollama is an engine adapter for Ollama's native API: POST
// /api/chat, streamed as newline-delimited JSON, with GET /api/tags for
// the model list and GET /api/version for prewarming. Ollama's
// OpenAI-compatible endpoint (engine/openai with FlavourOllama) carries
// only the final token counts and may merge the first tokens; the native
// stream gives one line per piece of text the runner released, with the
// server's own timings on the final line.
//
// A [Client] implements [engine.Engine] (Complete), [engine.Prewarmer]
// (Prewarm), [engine.Preparer] (Prepare) and [engine.ModelLister]
// (Models):
//
//	c, err := ollama.New("http://127.0.0.1:11434", nil)
//	res, err := c.Complete(ctx, engine.Request{
//		Model:     "llama3.2:latest",
//		Messages:  []engine.Message{{Role: "user", Content: prompt}},
//		MaxTokens: 128, Stream: true,
//	})
//	// res.ServerStats.Prefill, .Decode, .Load, .Total: Ollama's own timings
//
// What follows was read in Ollama v0.6.5's source; file references are
// to ollama/ollama@v0.6.5.
//
// # Request
//
// The body is api.ChatRequest (api/types.go): model, messages, stream,
// options. "stream" is always written, since Ollama streams when it is
// left out (ChatRequest.Stream is a *bool, nil meaning true). Request
// fields map to options (api.Options): MaxTokens to num_predict,
// Temperature to temperature, TopP to top_p, TopK to top_k, Seed to seed,
// Stop to stop. Extra's keys go to the top level of the body, replacing a
// field of the same name (Extra["options"] replaces the whole options
// object; Extra["keep_alive"] sets how long the model stays loaded).
//
// Ollama has no ignore_eos and no min_tokens: a request with IgnoreEOS or
// MinTokens is sent without them, with a Warning wrapping
// [ErrUnsupported], as engine/openai does for its Ollama flavour; an
// IgnoreEOS request that then generates fewer than MaxTokens tokens gets a
// second Warning wrapping [ErrShortGeneration]. Ollama caches prompt
// prefixes by itself (the runner's cache slots, runner/llamarunner/cache.go),
// so UsePrefixCache changes nothing. A text completion (Request.Prompt) is
// refused before anything is sent: /api/chat takes messages.
//
// # The stream
//
// ChatHandler (server/routes.go) answers a streaming request through
// streamResponse: Content-Type application/x-ndjson, each value
// json.Marshal'ed and followed by "\n", one api.ChatResponse per line:
//
//	{"model":"llama3.2","created_at":"2025-04-08T10:00:00.123456789Z","message":{"role":"assistant","content":"Hello"},"done":false}
//	...
//	{"model":"llama3.2","created_at":"...","message":{"role":"assistant","content":""},"done_reason":"stop","done":true,
//	 "total_duration":...,"load_duration":...,"prompt_eval_count":26,"prompt_eval_duration":...,"eval_count":12,"eval_duration":...}
//
// created_at is time.Now().UTC() in RFC 3339 with nanoseconds; counts and
// durations (integer nanoseconds) are api.Metrics with omitempty, so a
// zero is left out, and only the final line (done true) carries them.
// done_reason is the runner's llm.DoneReason as a string: "stop" (an end
// of sequence or a stop string), "length" (num_predict reached) or left
// out (the connection closed); a request without messages is answered
// with one object, done_reason "load", and no counts. An error after the
// 200 is written as a line {"error": "..."} (the Completion callback's
// error goes into the channel as gin.H{"error": err.Error()}) and the
// stream ends; it is an error of kind engine.KindStreamError. A
// non-streaming request gets one api.ChatResponse with the whole content
// (application/json), or status 500 {"error": "..."} when generation
// fails. Before the answer, an unknown model is status 404
// {"error":"model \"<name>\" not found, try pulling it first"}
// (handleScheduleError on os.ErrNotExist), a missing or invalid model
// name 400 {"error":"model is required"}, a full queue 503: all an
// *engine.StatusError with Ollama's message.
//
// Ollama's own client (api/client.go, Client.stream) reads the stream
// with a bufio.Scanner of 512 KiB (maxBufferSize) and treats any line
// with a non-empty "error" as the end; this client bounds a line at
// Options.MaxLineBytes, 512 KiB by default, and reports a longer one as
// engine.KindMalformed wrapping [ErrLineTooLong]. A stream that ends
// without a done line is engine.KindTruncated wrapping [ErrNoDone]:
// besides a broken connection, v0.6.5 ends a stream that way when its
// runner aborts a generation that repeated one token more than 30 times
// (llm/server.go, Completion, returns ctx.Err(), nil, without a final
// response).
//
// # One token per line?
//
// Not always. Both runners (runner/llamarunner/runner.go and
// runner/ollamarunner/runner.go, processBatch) append each sampled
// token's piece to seq.pendingResponses and flush the pending pieces,
// joined, as one response, except that they hold the pieces back while
// the text so far ends in an incomplete UTF-8 sequence
// (common.IncompleteUnicode) or in a prefix of a stop string
// (common.ContainsStopSuffix); a later flush then writes several tokens as
// one line. llm/server.go (Completion) forwards each runner response whose
// content is not empty as one callback, and ChatHandler writes each
// callback as one line, so a line is one token, or several when text was
// held back, and never less than one. An end-of-sequence token is sampled
// and counted but never sent ("if it's an end of sequence token, break"),
// and a token whose text is cut by a stop string (common.TruncateStop) is
// counted without its text.
//
// So a chunk of the trace is a line with content, stamped with the
// arrival of its last byte, and it carries one token. When the stream has
// ended, the lines are checked against eval_count N: with L content lines,
// N = L is exact; N = L + 1 with done_reason "stop" is one token without
// a line at the end (the end of sequence), credited to the last chunk so
// that the trace's total is N, as engine/openai does for Ollama's
// OpenAI stream. Any other difference is not placed: the chunks keep what
// this rule gives them and a Warning wrapping [ErrTokenMismatch] names
// both counts. A stream cut before its final line has one token a chunk.
//
// # Thinking and tool calls
//
// What follows was read in a later Ollama, ollama/ollama@fb30760 (v0.6.5
// has no thinking: it ignores think, as it ignores every field it does
// not know). With think on, ChatHandler (server/routes.go) runs each
// runner response through a thinking parser (thinking/parser.go, or the
// model's built-in parser, model/parsers) and writes the text inside the
// model's thinking tags as message.thinking, the rest as message.content
// (api.Message: thinking is omitempty); a tool call comes whole in
// message.tool_calls, the tool parser having held its text back. Each kind
// is a chunk of the trace of its kind (timing.Reasoning, timing.Answer,
// timing.ToolCall): a line that carries two (the response that ends the
// thinking and starts the answer) is a chunk of each at its instant, and
// Result.Text holds the thinking, the content and each call's function
// name and arguments in order.
//
// The thinking parser never returns its tags and eats the white space
// after each, and ChatHandler writes no line for a response that leaves
// nothing: eval_count counts those tokens, no line carries them. So the
// rule of one token a line is extended: what eval_count counts beyond the
// lines and the end of sequence goes, on a stream with a tool call, to the
// last tool-call chunk (the tool parser held the call's tokens back until
// it was whole); else, on a stream with thinking, to Trace.HiddenTokens,
// in no chunk and out of the rates measured from the lines, with a Warning
// wrapping [ErrHiddenTokens]; else a Warning wrapping [ErrTokenMismatch]
// says so, as before.
//
// Request.Thinking goes out as think (api.ChatRequest.Think, an
// api.ThinkValue): false when Enabled is false, the level when Effort is
// set ("low", "medium", "high" or "max"; another is an error of kind
// engine.KindOther before anything is sent), true when only Enabled is.
// Ollama has no thinking budget: a request with one is sent without it,
// with a Warning wrapping [ErrUnsupported]. Ollama thinks by default with
// a model that can, and answers think true for a model that cannot with
// status 400 ("does not support thinking"); false is accepted by any.
// Ollama renders its own Go templates with think, not the Hugging Face
// template the prompt Builder renders.
//
// # Counts and durations
//
// The runner's final response (runner/llamarunner/runner.go, completion)
// is
//
//	PromptEvalCount    = seq.numPromptInputs
//	PromptEvalDuration = seq.startGenerationTime − seq.startProcessingTime
//	EvalCount          = seq.numDecoded (numPredicted in ollamarunner)
//	EvalDuration       = time.Since(seq.startGenerationTime)
//
// and ChatHandler adds LoadDuration = checkpointLoaded − checkpointStart
// (parsing the request and getting a runner: the model's load when it was
// not loaded) and TotalDuration = time.Since(checkpointStart).
//
// prompt_eval_count counts cached tokens: numPromptInputs is len(inputs)
// when the sequence is made (NewSequence), before LoadCacheSlot
// (runner/llamarunner/cache.go) drops the prefix found in the cache from
// seq.inputs. prompt_eval_duration leaves the cached tokens' work out:
// only the remaining inputs are decoded (at least one: a prompt found
// whole in the cache has its last token decoded again, numPast−−). It
// runs from NewSequence's start, before tokenizing, to the decode that
// gives the first token's logits, so it also holds the tokenization and
// any wait for a sequence slot. eval_count counts every sampled token,
// the end of sequence included; eval_duration runs from just before the
// first token is sampled to the final response, so it spans N − 1
// decodes and N samplings.
//
// The Result's Usage is {PromptTokens: prompt_eval_count,
// CompletionTokens: eval_count, TotalTokens: their sum}; its ServerStats
// are Source "ollama", PromptTokens and GenerationTokens the same counts,
// Prefill, Decode, Load and Total the four durations (nil when left out),
// CachedTokens nil (Ollama does not say how much was cached) and
// PrefixCacheHit "none" (not reported), with the rates
//
//	PromptTPS     = prompt_eval_count / prompt_eval_duration
//	GenerationTPS = (eval_count − 1) / eval_duration
//
// PromptTPS is Ollama's own "prompt eval rate" (api/types.go,
// Metrics.Summary) and overstates the prefill rate when part of the
// prompt was cached; when it exceeds engine.MaxPlausibleRate it is 0 with
// a Warning wrapping [ErrPromptRate]. GenerationTPS divides by the
// eval_count − 1 decodes eval_duration spans, as exo's formula does
// (engine.ServerStats); Ollama's own "eval rate" divides eval_count, and
// is higher by a factor N/(N−1). It is 0 below two tokens. A count beyond
// engine.MaxPlausibleCount (eval_count) or
// engine.MaxPlausiblePromptCount (prompt_eval_count), a negative duration
// or one over a week, a generation rate beyond engine.MaxPlausibleRate,
// more content lines than the plausible count or more text than
// engine.MaxPlausibleTextBytes is an error of kind
// engine.KindImplausibleUsage, and such a Result has no chunks, usage or
// stats.
//
// # Trace
//
// Trace.Start is the instant net/http/httptrace reports the connection
// obtained, just before the request is written; the send hook of
// engine.WithSendHook is called once with it. Each line is stamped with
// the kernel's receive instant of the read that delivered its last byte
// on Linux (engine/internal/rxstamp), else when that read returned;
// Options.Now replaces the clock, and then lines are stamped when their
// reads return. Result.Connect is the dial of a new connection. A
// request that failed before any byte of an answer on a reused
// connection the server had closed goes out again on another; Start is
// that attempt's and Result.Resent counts the others.
//
// Every request carries an X-Request-Id header (the caller's, or a new
// one), kept in Result.RequestID; Ollama ignores it, and its answers have
// no id (docs/REQUEST-IDS.md).
package ollama
