// Package openai is an engine adapter for any server that speaks the OpenAI
// chat completions API: vLLM, SGLang, llama.cpp's llama-server,
// mlx_lm.server and Ollama; and its text completions API, for prompts that
// are not chat messages.
//
// A [Client] implements [engine.Engine] (Complete), [engine.Prewarmer]
// (Prewarm), [engine.Preparer] (Prepare: the body encoded and the headers
// built before a burst is released, Send left with only the I/O) and
// [engine.ModelLister] (Models):
//
//	c, err := openai.New("http://127.0.0.1:8000", &openai.Options{APIKeyEnv: "VLLM_API_KEY"})
//	res, err := c.Complete(ctx, engine.Request{
//		Model:     "meta-llama/Llama-3.1-8B-Instruct",
//		Messages:  []engine.Message{{Role: "user", Content: prompt}},
//		MaxTokens: 128, IgnoreEOS: true, Stream: true,
//	})
//	m, err := res.Trace.Metrics() // TTFT, TPOT, ITL from the client's clock
//
// # Text completions
//
// A request whose Prompt is set goes to /v1/completions instead: no chat
// template, the prompt sent as "prompt", a JSON array of token ids
// (Prompt.Tokens) or a string (Prompt.Text); Messages must then be empty.
// Nothing else selects the endpoint, so a Request says by itself what it
// is. Every other field is sent as for a chat (max_tokens, ignore_eos,
// min_tokens, stop, stream_options with include_usage and
// continuous_usage_stats, Extra), and the answer is read with the same
// token accounting, arrival stamping and bounds: a stream's text is
// choices[0].text of each text_completion chunk, a whole answer's
// choices[0].text. vLLM's completion stream has no role chunk, so its
// first chunk is the first token's; a first token whose text the
// detokenizer holds back still goes out, with text "", and is the trace's
// FirstChunk as a role chunk would be. The server must count a prompt of
// token ids as exactly their number; when usage.prompt_tokens says
// otherwise, a Warning wrapping [ErrPromptTokens] says so, and
// prompt_tokens beyond engine.MaxPlausiblePromptTokens is an error of kind
// engine.KindImplausibleUsage.
//
// # Cached tokens
//
// Result.Usage.CachedTokens is usage.prompt_tokens_details.cached_tokens,
// on either endpoint: the prompt tokens the server took from its prefix
// cache (vLLM with --enable-prompt-tokens-details, SGLang with
// --enable-cache-report). It is nil when the server said nothing, which
// is not 0; a count beyond prompt_tokens is an error of kind
// engine.KindImplausibleUsage.
//
// # Streaming and token counts
//
// A streaming request asks for
//
//	"stream_options": {"include_usage": true, "continuous_usage_stats": true}
//
// vLLM, and SGLang since late 2025, then put a cumulative usage block on
// every chunk, so the number of tokens a chunk carried is exact:
//
//	tokens(chunk i) = completion_tokens(chunk i) − Σ tokens(content chunks before i)
//
// which also credits a content chunk with tokens the server reported on
// text-less chunks since the previous one (text held back until a UTF-8
// sequence completed, a reasoning marker the parser swallowed). A chunk
// that repeats the previous chunk's cumulative count adds its text but no
// token and no gap when it is of the same kind; of another kind (SGLang
// splitting one decode step into a reasoning chunk and a content chunk) it
// is a chunk of its own, and the step's tokens are shared by the two.
// Servers that report usage only at the end (OpenAI, llama.cpp, Ollama,
// mlx_lm.server, TGI, or vLLM behind a gateway that drops per-chunk usage)
// state less, and what they state comes before any count of the text:
// every content chunk carried at least one token (a detokenizer writes
// text only for a token it decoded) and the chunks carried N =
// completion_tokens of the final usage in all. So when there are as many
// content chunks as N, each carried one, exactly and without a warning,
// whatever a tokenizer makes of the text: re-tokenizing generated text is
// not the model's tokenization (",\n\n" is one token of Llama 3's and two
// of Gemma 3's, and a model may emit any split its vocabulary has). With
// finish_reason "stop" one token of N is the end of sequence, which no
// chunk shows (Ollama's eval_count and vLLM's completion_tokens count
// it): it goes to the last chunk, so one chunk per token and an end of
// sequence is exact too. Only the tokens beyond that, S = N − chunks
// (− 1 for an end of sequence), are placed by estimate, in order:
//
//  1. Options.CountText, a plain-text tokenizer, or Options.Counter, a chat
//     Counter, applied to the generated text after the stream has ended (so
//     counting never delays reading): with K_i the tokens counted in the
//     text of content chunks 0 through i,
//     count(chunk i) = max(1, K_i − Σ count(chunks before i)).
//     The S tokens go where the count found more than one: all that it
//     found when it found S or fewer (what it did not place goes to the
//     first chunk: text held back before it, a reasoning marker the parser
//     swallowed), else shared in proportion to what it found per chunk, so
//     that no chunk falls below one and the total stays N.
//     A Counter that is a [promptsize.TokenEnder] (promptsize/hf's
//     Tokenizer) encodes the text once and K_i is the number of its tokens
//     that end by the end of chunk i; any other counter counts each chunk
//     with a bounded left context (at least 512 bytes), so the cost is
//     linear in the text: one count per chunk, none of the whole text.
//     A Result Warning wrapping [ErrEstimatedTokens] says so.
//  2. Without a counter, the S tokens are shared among the chunks by text
//     length: the total and TPOT are exact, per-token ITL approximate, and
//     a Warning wrapping [ErrEstimatedTokens] says so.
//
// The counter is not asked at all when the stream states every count. A
// stream with per-chunk usage on some chunks only is cut at them into
// runs whose totals the usage states, and each run is attributed so.
// Without a final usage the counts come from the counter (a Warning
// wrapping [ErrEstimatedTokens]), and with no counter either each chunk's
// count is 0, which timing reads as "unknown, take it as one token", and
// a Warning wrapping [ErrUnknownTokens] says so: no client can count such
// a stream.
//
// Whenever the server sent a final usage, the counts add up to its N,
// with Trace.HiddenTokens (see Reasoning, answer and tool calls): a
// trace's total, and so TPOT, is never built from a chunk count while the
// usage says otherwise. Tokens after the last content chunk of a stream
// with per-chunk usage (vLLM's end of sequence on a text-less chunk) go to
// that chunk. Only a server count below the number of content chunks
// cannot be met; each chunk then counts one, with a Warning wrapping
// [ErrTokenMismatch].
//
// # The two first instants
//
// Trace.Chunks[0] is the first text; TTFT is measured to it. vLLM and
// SGLang write a role chunk when the engine returns its first output, and
// llama.cpp a role delta with its first decoded token; TGI writes an event
// per token even when the token's text is held back. The first such
// text-less chunk, when it comes before any text, is the trace's
// FirstChunk (timing's first-chunk anchor): TTFT to it is the time to the
// first token, and TPOT and ITL count n − 1 intervals from it, so that a
// first text chunk carrying k0 > 1 tokens (a reasoning parser that hid
// "<think>", a partial UTF-8 sequence held back) is neither late nor
// counted twice. llama.cpp's prompt-progress chunks (return_progress) are
// written during prefill and are not anchors. Ollama and mlx_lm.server
// write nothing before the first text: their first text chunk is the
// first instant, and when the stream states that it carried k0 > 1 tokens
// (its own usage, or it is the only chunk) a Warning wrapping
// [ErrHiddenFirstTokens] says that TTFT may be late by up to k0 − 1 steps
// and ITL has n − k0 gaps. When only an estimate puts several tokens in
// it, the estimate's own warning says so, and nothing claims more. A
// server that wrote a role chunk with its headers, before prefill, would
// make a false anchor; none of these does.
//
// # Numbers a server reports
//
// Every usage count is checked against the request: completion_tokens must
// not be negative, fall, or exceed engine.MaxPlausibleCount(MaxTokens);
// the number of content chunks (each at least one token) is bounded the
// same way; prompt counts must not be negative. A count that fails ends
// the request with an error of kind engine.KindImplausibleUsage naming
// both numbers, and the Result then holds no chunks and no usage. At most
// engine.MaxKeptText bytes of text are kept (a Warning wrapping
// [ErrTextCut] says when more came); the counts come from the whole
// stream. llama.cpp's timings are decoded into Result.ServerStats with
// exo's formulas, under the same bounds.
//
// # Reasoning, answer and tool calls
//
// Every chunk of the trace says what it carried (timing.Chunk.Kind): the
// model's reasoning streamed apart from the answer (timing.Reasoning), the
// answer's text (timing.Answer) or a streamed tool call
// (timing.ToolCall). All three are generated tokens, counted and timed
// alike; Result.Text holds their text in stream order (a tool call's
// function name and arguments). A server chunk that carries two kinds (a
// delta with reasoning and content, or content and tool_calls) is a chunk
// of each at its instant, reasoning first, then content, then tool calls,
// the server's usage closing the last. What each server sends:
//
//   - vLLM: a reasoning parser (--reasoning-parser) streams the reasoning
//     as delta.reasoning since 0.11
//     (vllm/entrypoints/openai/chat_completion/serving.py@5e91864), as
//     delta.reasoning_content before
//     (vllm/entrypoints/openai/serving_chat.py@003fe59); the <think> and
//     </think> outputs write no chunk, and under continuous usage their
//     tokens are in the next chunk's cumulative count. With a parser,
//     every usage carries completion_tokens_details.reasoning_tokens
//     (serving.py@006c49d), the tokens between the markers
//     (BaseThinkingReasoningParser.count_reasoning_tokens). gpt-oss goes
//     through the harmony parser whatever the flags: the analysis channel
//     as reasoning, the final channel as content, a tool call's commentary
//     as tool_calls, no text for the channel headers
//     (chat_completion/stream_harmony.py@1a5f571). Tool parsers write
//     delta.tool_calls: the function's name first, then its arguments in
//     pieces.
//   - SGLang: delta.reasoning_content (separate_reasoning, on by
//     default); a decode step the parser splits goes out as a reasoning
//     chunk and a content chunk with one cumulative count
//     (python/sglang/srt/entrypoints/openai/serving_chat.py@0c078e6). Its
//     usage's top-level reasoning_tokens is not read: SGLang never set it
//     (usage_processor.py at the same commit).
//   - llama.cpp: delta.reasoning_content for every reasoning diff
//     (--reasoning-format, deepseek by default: common/chat.cpp's parsers
//     write none of the tags, and read the block as open when the template
//     opened it in the prompt, as DeepSeek R1's does), gpt-oss's analysis
//     channel too (common_chat_parse_gpt_oss); usage at the end only
//     (tools/server/server-task.cpp@17f5f8a).
//   - Ollama's OpenAI API: delta.reasoning; a runner response that ends
//     the reasoning and starts the answer is two chunks
//     (openai/openai.go@fb30760, ToStreamChunks). Its thinking parser
//     (thinking/parser.go) never returns the tags and eats the white space
//     after each, and ChatHandler (server/routes.go) sends nothing for a
//     response that leaves nothing: those tokens are in eval_count, hence
//     completion_tokens, and in no chunk.
//   - A server whose reasoning parser is off leaves <think> … </think> in
//     delta.content (vLLM without --reasoning-parser, llama.cpp with
//     --reasoning-format none, SGLang with separate_reasoning false). Such
//     a block is read as reasoning: on a stream with no reasoning field,
//     content that starts, after white space, with "<think>" is reasoning
//     up to the end of "</think>" (or of the stream), and content with a
//     "</think>" and no "<think>" before it (a template that opened the
//     block in the prompt) is reasoning up to it. A chunk that holds the
//     block's end and answer text after it is split at its instant when it
//     carried two tokens or more, the reasoning part's count in proportion
//     to its bytes (a Warning wrapping [ErrEstimatedTokens]); of one token
//     it stays an answer chunk. The markers, being text, count as
//     reasoning tokens there. Options.NoThinkTags reads the content as the
//     answer whatever it holds.
//
// White space a server streams as content after the reasoning (vLLM's
// "\n\n" after </think>) is the answer's first chunk: the time to the
// first answer token is measured to it, as the server sent it.
//
// Tokens the server counted and never streamed: on a stream whose
// reasoning came in a field of its own, the tokens that no chunk's usage
// covers and no text shows (the final usage's surplus beyond one token a
// chunk and the end of sequence) are the markers the reasoning parser
// swallowed. They go to Trace.HiddenTokens, not to any chunk, so that the
// rates measured from chunk arrivals leave them out, with a Warning
// wrapping [ErrHiddenTokens]. With Options.CountText or Counter, the
// tokens counting the text finds beyond one a chunk are placed as usual
// and the rest is hidden; without, the whole surplus is (these servers
// write a chunk per token but for what they swallow: one that wrote
// several tokens in a chunk would have them counted as hidden). When the
// first-chunk anchor came before the first text, the token it marks is
// the first chunk's, as on every stream. A stream with per-chunk usage
// states where each token went, markers included, and hides nothing: the
// tokens a chunk's usage covers are its own, of its kind.
//
// When the server sends completion_tokens_details.reasoning_tokens, it is
// kept in Result.Usage.ReasoningTokens and compared with the tokens of the
// stream's reasoning chunks. The server counts the tokens inside the
// reasoning, not the markers that open it, which a stream with per-chunk
// usage credits to its first reasoning chunk: so the stream's count may
// exceed the server's by up to that chunk's tokens less one. Any other
// difference is a Warning wrapping [ErrReasoningTokens]; the chunks keep
// the stream's counts.
//
// # Thinking controls
//
// Request.Thinking goes out in the fields each flavour takes, Extra still
// overriding any of them:
//
//   - chat_template_kwargs = Thinking.TemplateVars() (enable_thinking and
//     thinking when Enabled is set, reasoning_effort when Effort is), the
//     variables the prompt Builder renders the template with: vLLM
//     (ChatCompletionRequest.chat_template_kwargs,
//     chat_completion/protocol.py@002032e), SGLang (protocol.py) and
//     llama.cpp (tools/server/server-common.cpp, where enable_thinking
//     also switches its reasoning parsing) render with them. Not to
//     Ollama, which renders its own Go templates, nor to FlavourOpenAI (a
//     Warning wrapping [ErrUnsupported] when Enabled is set).
//   - reasoning_effort = Effort, top-level: vLLM (gpt-oss's harmony path
//     reads it, not the template), SGLang, llama.cpp, OpenAI, and Ollama,
//     which maps it to its think level (openai/openai.go,
//     thinkFromReasoningEffort). To FlavourOllama, Enabled false is
//     reasoning_effort "none", its only way to turn thinking off there;
//     Enabled true sends nothing (Ollama thinks by default with a model
//     that can).
//   - Budget: vLLM's thinking_token_budget (protocol.py@002032e; the
//     server needs a reasoning configuration for it), llama.cpp's
//     thinking_budget_tokens (server-task.cpp@17f5f8a,
//     params_from_json_cmpl), both to FlavourGeneric (each server ignores
//     the other's). SGLang (a custom logit processor, no request field),
//     Ollama and OpenAI take none: a Warning wrapping [ErrUnsupported].
//
// # Bench semantics
//
// Request.IgnoreEOS and Request.MinTokens are sent as the top-level
// ignore_eos and min_tokens fields that vLLM and SGLang read (llama.cpp
// reads ignore_eos). When IgnoreEOS was asked and the server reports fewer
// completion tokens than MaxTokens, the Result carries a Warning wrapping
// [ErrShortGeneration]. The [Flavour] hint leaves out what a server does
// not take (see the constants). Request.UsePrefixCache is not sent: these
// servers cache prefixes on their own, which a per-request salt in the
// prompt defeats.
//
// # Timing
//
// Trace.Start is the instant net/http/httptrace reports the connection
// obtained (GotConn), just before the request is written and after any
// dial; the same instant goes to [engine.NotifySend]. TTFT and E2E
// therefore never include opening a connection. When the request had to
// wait for a new one, Result.Connect is that wait (GetConn to GotConn:
// DNS, dial, TLS); it is nil on a pooled or prewarmed connection. vLLM's
// benchmark starts its clock before the request is issued, so its TTFT of
// such a request is about Connect + TTFT. Headers is when the response
// headers arrived, each chunk's instant when the bytes completing the chunk
// arrived, and End is when the response has been read.
//
// Arrival is the kernel's receive instant: on Linux every connection
// asks for receive timestamps (SO_TIMESTAMPNS), and each read is stamped
// with the instant its newest packet reached this host, not with the
// instant the reading goroutine was scheduled. Many streams' chunks that
// arrive at once are then each stamped with their own arrival, whatever
// order the Go runtime wakes their readers in, and a collection or a
// busy core delays the reads but not their instants. Two limits remain:
// a chunk read only after the next chunk of its stream has arrived
// carries the next one's instant (the kernel keeps one per read, and
// merges queued packets), and a read whose packets came before the
// kernel turned stamping on (a moment after the process's first such
// connection) is stamped when it returns. Elsewhere, or with
// Options.Now set, every instant is the clock's reading when the read
// returned. A benchmark request is
// never retried: a failure is returned as an *engine.StatusError or an
// *engine.Error whose Kind says what broke. The exception is a request
// the server cannot have answered: written on a reused keep-alive
// connection that failed before any byte of an answer (the server had
// closed it, as llama.cpp's does after every stream while its headers
// say "Keep-Alive"), it is written again on another connection, as
// net/http does for a GET; Trace.Start is the attempt that carried it,
// and Result.Resent with a Warning wrapping [ErrResent] says so. A
// failure on a connection opened for the request, or after the answer
// began, is final. A streamed answer that says "Server: llama.cpp" has
// its connection closed by the client, not pooled, and the client's
// later streams ask for "Connection: close", so that no request takes a
// connection the server has closed.
//
// # Request ids
//
// Every request carries an X-Request-Id header, the caller's
// (Request.Header) or a new one (ib- and 24 random hexadecimal digits),
// kept in Result.RequestID; with FlavourSGLang it also goes as the
// body's "rid", which SGLang takes as its id. Result.ResponseID is the
// answer's "id" (vLLM's is "chatcmpl-" + the X-Request-Id), and
// Result.ServerRequestID the answer's X-Request-Id header when the server
// sends one (vLLM with --enable-request-id-headers). docs/REQUEST-IDS.md
// says how to find a request in each server's logs.
//
// # The model
//
// The answer's "model" is kept in Result.Model; when it is not the model
// the request named, a Warning wrapping [ErrModelMismatch] names both
// (llama.cpp serves its one model under any name and answers with its
// own). Model listing, a control-plane
// call, goes through go-retryablehttp (connection errors and 5xx are
// retried with backoff, 4xx never; a Retry-After is waited at most 30 s,
// and not at all when that would outlast the call's deadline).
//
// A benchmark request never follows a redirect: a 3xx is an
// *engine.StatusError whose message names the status and the Location,
// and nothing is sent there (a 301 would otherwise turn the POST into a
// GET, and take the token to another host). Model listing follows a
// redirect within the server's origin (scheme, host and port) only.
//
// # Credentials
//
// The bearer token is read once, in New, from the environment variable
// Options.APIKeyEnv names or from the file Options.APIKeyFile names. It is
// sent only in the Authorization header, never logged, and removed from
// the text of every error the client returns: a server that echoes it in
// an error body, a stream's error event or a Location has it replaced by
// "[REDACTED]", however it escaped it (\/, \uXXXX, percent encoding; see
// internal/httpsafe). The status error's message is redacted after it is
// decoded from the JSON body as well as before. Credentials set in
// Options.Header (Authorization, X-Api-Key and the like) are redacted
// the same way.
package openai
