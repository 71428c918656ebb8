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
// sequence completed). A chunk that repeats the previous chunk's
// cumulative count (SGLang splitting one decode step into a reasoning
// chunk and a content chunk) adds its text but no token and no gap.
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
// Whenever the server sent a final usage, the counts add up to its N: a
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
// Reasoning text (delta.reasoning_content, or delta.reasoning in vLLM
// since 0.11 and in Ollama) is generated text like content: its chunks are
// content chunks of the trace and its text is part of Result.Text.
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
