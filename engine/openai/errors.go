package openai

import "errors"

// Sentinel errors wrapped by the Warnings of a Result, for errors.Is. A
// warning never fails a request: it says how far to trust a number.
var (
	// ErrEstimatedTokens: some chunk token counts are estimates: the
	// server's counts left tokens beyond one a chunk whose place only
	// counting the text or its length could suggest, or the server sent
	// no final count and the text was counted, or a chunk carried text
	// although the server's cumulative count did not grow and it was
	// counted as one token. It is never given when the stream states
	// every count (as many content chunks as tokens).
	ErrEstimatedTokens = errors.New("openai: chunk token counts estimated")
	// ErrUnknownTokens: some chunk token counts are unknown (0 in the
	// trace, which timing takes as one token each): no per-chunk usage and
	// no counter, or the counter failed.
	ErrUnknownTokens = errors.New("openai: chunk token counts unknown")
	// ErrTokenMismatch: the chunk token counts add up to a different
	// number than the server's final usage.completion_tokens.
	ErrTokenMismatch = errors.New("openai: chunk token counts disagree with the server's usage")
	// ErrShortGeneration: the request asked for bench semantics
	// (IgnoreEOS, or MinTokens) and the server generated fewer tokens than
	// asked.
	ErrShortGeneration = errors.New("openai: fewer tokens generated than asked")
	// ErrUnsupported: the request asked for something the configured
	// Flavour does not take, so it was not sent.
	ErrUnsupported = errors.New("openai: not supported by the server flavour")
	// ErrNotStreamed: a streaming request was answered with a JSON body,
	// so the trace has no chunks.
	ErrNotStreamed = errors.New("openai: server answered a streaming request without streaming")
	// ErrResent: the reused connection the request went out on had been
	// closed by the server before any byte of an answer (llama.cpp's
	// server closes it after every stream), so the request was written
	// again on another (Result.Resent counts the times); Trace.Start is
	// the attempt that carried it.
	ErrResent = errors.New("openai: request resent on a new connection")
	// ErrModelMismatch: the answer's model is not the one the request
	// named. llama.cpp serves its one model under any name and answers
	// with its own; Result.Model holds it.
	ErrModelMismatch = errors.New("openai: the server answered for another model")
	// ErrHiddenFirstTokens: the stream states that the first content
	// chunk carried several tokens (its own usage says so, or it is the
	// only chunk) and the server sent no earlier chunk to mark when the
	// first was generated (Ollama, mlx_lm.server and TGI hold back text
	// that is not yet printable): TTFT may be late and ITL has fewer gaps
	// than tokens. An estimate that puts several tokens there says so in
	// its own warning, wrapping ErrEstimatedTokens, not this.
	ErrHiddenFirstTokens = errors.New("openai: first tokens hidden")
	// ErrPromptTokens: the request's prompt was token ids and the
	// server's usage.prompt_tokens is not their number: it added tokens
	// (a BOS) or did not take the ids as they are.
	ErrPromptTokens = errors.New("openai: the server's prompt count differs from the prompt's token ids")
	// ErrHiddenTokens: usage.completion_tokens counts tokens that came in
	// no chunk of a stream whose reasoning came in a field of its own:
	// the markers that open and close the reasoning, which the server's
	// reasoning parser swallows (Ollama's also the whitespace after
	// them). Trace.HiddenTokens holds their number; no chunk carries
	// them, so the rates measured from chunk arrivals leave them out.
	ErrHiddenTokens = errors.New("openai: tokens counted but never streamed")
	// ErrReasoningTokens: the server's
	// usage.completion_tokens_details.reasoning_tokens disagrees with the
	// tokens of the stream's reasoning chunks (beyond the opening markers
	// the first reasoning chunk may carry, which the server does not
	// count as reasoning). The chunks keep the stream's counts.
	ErrReasoningTokens = errors.New("openai: reasoning tokens disagree with the server's usage")
	// ErrTextCut: the server streamed more text than engine.MaxKeptText;
	// Result.Text holds its start, the counts the whole stream.
	ErrTextCut = errors.New("openai: generated text cut")
)
