// Package exo is a client for an exo cluster (MLX on Apple silicon) that
// covers what a benchmark needs: bench completions with the server's own
// statistics and energy, models, placements, the instance lifecycle, the
// download planning phase, cluster snapshots, node metrics, instance links
// and cancellation.
//
// # Two kinds of call
//
// A benchmark request (Complete) goes out on a plain http.Client whose
// Transport keeps up to Options.MaxBurst idle connections to the cluster, so
// that Prewarm can open every connection of a burst before it is released,
// and Prepare (engine.Preparer) encodes each request's body and builds its
// headers before the release, leaving Send only the I/O. It is never
// retried: a failed request is a recorded error, not a second
// try hidden from the caller.
//
// Every other call (models, state, placements, instances, downloads, links,
// cancel) is a control-plane call, made through
// github.com/hashicorp/go-retryablehttp: connection errors and 5xx answers
// are retried with exponential backoff, 4xx answers never are, and the final
// error is an *APIError that counts the attempts, keeps the last status and
// wraps the cause. A 429's or 503's Retry-After is waited, at most 30 s,
// and a call gives up at once, with that answer, when even the capped wait
// would outlast its context's deadline. Control-plane calls follow a
// redirect within the API node's origin only; bench requests never follow
// one (the 3xx is a status error naming its Location). The retry library's own logging goes to the caller's
// slog.Logger at debug level, or nowhere.
//
// # Bench completions
//
// A Request with IgnoreEOS goes to POST /bench/chat/completions, where exo
// bans end-of-sequence so that exactly MaxTokens tokens are generated;
// any other Request goes to /v1/chat/completions. Non-streaming bench
// answers carry generation_stats (Result.ServerStats) and power_usage
// (Result.Power). Streaming answers give one timing.Chunk per generated
// token, the ": generation_stats" comment, ": prefill_progress" comments
// (see WithPrefillProgress) and, after a 200, error events that become
// errors of kind engine.KindStreamError. Both of exo's spellings of peak
// memory ("inBytes" in JSON bodies, "in_bytes" in stream comments) decode.
//
// With the real clock (Options.Now nil), a chunk's instant is its bytes'
// arrival: on Linux each read carries the kernel's receive instant
// (SO_TIMESTAMPNS), so readers woken late, by a burst's other streams or
// a garbage collection, still stamp each chunk when it came. A chunk read
// only after the next one arrived carries the next one's instant; the
// headers' instant is their read's. Elsewhere, and with a clock of the
// caller's, instants are taken when reads return.
//
// Every request carries an X-Request-Id header (the caller's, or a new
// one), kept in Result.RequestID; exo ignores it, and Result.ResponseID
// is its command id (docs/REQUEST-IDS.md). A request that failed before
// any byte of an answer on a reused connection the server had closed goes
// out again on another; Trace.Start is that attempt's and Result.Resent
// counts the others.
//
// # Thinking and tool calls
//
// What exo streams of a reasoning model was read at exo-explore/exo@b5375f8.
// A thinking token's chunk carries delta.reasoning_content, any other token's
// delta.content (src/exo/api/adapters/chat_completions.py, chunk_to_response
// on TokenChunk.is_thinking); each is a chunk of the trace of its kind
// (timing.Reasoning, timing.Answer), and a tool call, sent whole as one chunk
// with delta.tool_calls and finish_reason "tool_calls", a timing.ToolCall
// chunk. Result.Text holds the reasoning, the content and each call's name
// and arguments in stream order. exo's parsers
// (src/exo/worker/runner/llm_inference/model_output_parsers.py,
// apply_all_parsers) swallow tokens: parse_thinking_models the think_start and
// think_end tags, parse_gpt_oss the harmony channel headers, parse_tool_calls
// a call's tokens until the call is whole. The usage, on the finish chunk
// only, counts them all, so what it counts beyond the stream's chunks goes to
// the tool-call chunk when the stream has one, else, on a stream with
// thinking, to Trace.HiddenTokens, out of the chunks and of the rates
// measured from them, with a Warning wrapping [ErrHiddenTokens]. The usage's
// completion_tokens_details.reasoning_tokens is exo's count of is_thinking
// tokens (count_reasoning_tokens, markers not counted): it is kept in
// Result.Usage.ReasoningTokens and compared with the reasoning chunks'
// tokens, a Warning wrapping [ErrReasoningTokens] when they disagree.
//
// The bench path runs no output parser (batch_generator.py): a thinking
// model's block arrives as content, "<think>" and "</think>" visible text,
// and the usage's reasoning_tokens is 0. On a stream that carried no
// delta.reasoning_content, a "<think>" … "</think>" block at the start of
// the content, or a "</think>" with no opening (the template opened the
// block in the prompt), is read as engine/openai reads it: its chunks,
// the markers' included, are timing.Reasoning, and a chunk of several
// tokens holding the block's end and answer text is split at its instant
// by bytes, with a Warning wrapping [ErrEstimatedTokens]; the server's
// reasoning_tokens of 0 is then not compared. Options.NoThinkTags reads
// the block as answer text. A reply not streamed has no chunks to
// classify: its text keeps the block, its counts the server's.
//
// Request.Thinking goes out as exo's ChatCompletionRequest takes it
// (src/exo/api/types/api.py): Enabled as enable_thinking, Effort as
// reasoning_effort (none, minimal, low, medium, high or xhigh). exo derives the
// one left out from the other (resolve_reasoning_params in
// src/exo/shared/types/text_generation.py: enable_thinking true is effort
// "medium", false is "none") and renders the chat template with
// enable_thinking, thinking and reasoning_effort (utils_mlx.py). exo has no
// thinking budget: a request with one is sent without it, with a Warning
// wrapping [ErrUnsupported].
//
// # Placements and instances
//
// Placements fetches exo's previews, filters them as exo_bench does
// (instance meta ring/jaccl/both, sharding pipeline/tensor/both, node
// bounds, the skip rules), sorts them in exo_bench's order and retries with
// exo's settle backoff while none survive. Unlike exo_bench it labels each
// placement from the instance's own tag and shard tags: exo forces
// single-node placements to MlxRing with pipeline shards while keeping the
// requested labels on the preview, so a preview's labels can lie.
//
// CreateInstance, WaitReady, DeleteInstance and WaitGone drive an
// instance's life; FindInstance finds one to reuse; Plan runs the download
// planning phase (downloads, the disk check, and, only when asked,
// deleting other completed downloads to make room).
//
// # Cluster state and energy
//
// Snapshot captures the "cluster" object exo_bench writes into its result
// file (nodeIdentities, topology, nodeMemory, nodeSystem as raw JSON).
// NodeSystem and NodeSystems read the macmon metrics exo keeps per node
// (sysPower, gpuUsage, temp, pcpuUsage, ecpuUsage), and PowerSource makes
// them an energy.Source for package energy's Sampler. Links, CreateLink,
// UpdateLink and DeleteLink manage prefill/decode instance links; Cancel
// stops a running request by its command id.
//
// # Errors
//
// Control-plane failures are *APIError values; a 404 also matches
// ErrNotFound with errors.Is. Waits fail with *RunnerFailedError,
// *NotReadyError or ErrInstanceGone; model resolution with ErrModelNotFound;
// placement selection with *NoPlacementError; planning with *DiskSpaceError
// and *DownloadFailedError.
package exo
