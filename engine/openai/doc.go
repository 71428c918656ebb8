// Package openai is an engine adapter for any server that speaks the OpenAI
// chat completions API: vLLM, SGLang, llama.cpp's llama-server,
// mlx_lm.server and Ollama.
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
// sequence completed). Servers that report usage only at the end (OpenAI,
// llama.cpp, Ollama) leave the per-chunk counts to the fallbacks, in order:
//
//  1. Options.CountText, a plain-text tokenizer, or Options.Counter, a chat
//     Counter, applied to the generated text after the stream has ended (so
//     counting never delays reading): with N(s) the count of text s and
//     p_i the text of content chunks 0 through i,
//     tokens(chunk i) = max(1, N(p_i) − Σ tokens(chunks before i)),
//     a chunk with text having carried at least one token.
//     A Result Warning wrapping [ErrEstimatedTokens] says so, and another
//     wrapping [ErrTokenMismatch] when the estimates disagree with the
//     server's final usage.
//  2. Before any counting, if the final usage says exactly as many tokens
//     as there were content chunks, each chunk is taken to have carried
//     one token, with no warning.
//  3. Otherwise each chunk's count is 0, which timing reads as "unknown,
//     take it as one token", and a Warning wrapping [ErrUnknownTokens]
//     says so.
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
// obtained, just before the request is written; the same instant goes to
// [engine.NotifySend]. Headers is when Do returned the response headers,
// each chunk's instant is when the SSE reader read the bytes completing the
// chunk, and End is when the response has been read. A benchmark request is
// never retried: a failure is returned as an *engine.StatusError or an
// *engine.Error whose Kind says what broke. Model listing, a control-plane
// call, goes through go-retryablehttp (connection errors and 5xx are
// retried with backoff, 4xx never).
//
// # Credentials
//
// The bearer token is read once, in New, from the environment variable
// Options.APIKeyEnv names or from the file Options.APIKeyFile names. It is
// sent only in the Authorization header, never logged, and removed from
// the text of every error the client returns (a server that echoes it in
// an error body has it replaced by "[REDACTED]").
package openai
