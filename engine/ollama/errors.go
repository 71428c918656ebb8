package ollama

import "errors"

// Sentinel errors wrapped by the Warnings of a Result, for errors.Is. A
// warning never fails a request: it says how far to trust a number.
var (
	// ErrUnsupported: the request asked for something Ollama's chat API
	// has no parameter for (IgnoreEOS, MinTokens, a thinking budget), so
	// it was not sent.
	ErrUnsupported = errors.New("ollama: not supported by Ollama's chat API")
	// ErrTokenMismatch: the stream's content lines and the final
	// eval_count disagree beyond what the package doc's rule explains
	// (one token a line, and one more without a line when done_reason
	// is "stop"). The chunks keep what that rule gives them; Usage keeps
	// the server's count.
	ErrTokenMismatch = errors.New("ollama: content lines disagree with eval_count")
	// ErrShortGeneration: the request asked for IgnoreEOS, which Ollama
	// cannot honour, and fewer tokens than MaxTokens were generated.
	ErrShortGeneration = errors.New("ollama: fewer tokens generated than asked")
	// ErrPromptRate: the prompt rate prompt_eval_count /
	// prompt_eval_duration is beyond engine.MaxPlausibleRate, which a
	// prompt served from Ollama's cache gives (the count includes cached
	// tokens, the duration leaves their work out); PromptTPS is 0.
	ErrPromptRate = errors.New("ollama: prompt rate not a measurement")
	// ErrResent: the reused connection the request went out on had been
	// closed by the server before any byte of an answer, so the request
	// was written again on another (Result.Resent counts the times);
	// Trace.Start is the attempt that carried it.
	ErrResent = errors.New("ollama: request resent on a new connection")
	// ErrHiddenTokens: eval_count counts tokens that came on no line of a
	// stream with thinking: the tags Ollama's thinking parser swallows
	// and the white space it eats after them. Trace.HiddenTokens holds
	// their number; no chunk carries them, so the rates measured from
	// the lines' arrivals leave them out.
	ErrHiddenTokens = errors.New("ollama: tokens counted but never streamed")
	// ErrTextCut: the server sent more text than engine.MaxKeptText;
	// Result.Text holds its start, the counts the whole stream.
	ErrTextCut = errors.New("ollama: generated text cut")
)

// Errors wrapped by the errors of Complete, for errors.Is.
var (
	// ErrNoDone: the stream ended without its final object ("done":
	// true). Its kind is engine.KindTruncated.
	ErrNoDone = errors.New(`stream ended without its final object ("done": true)`)
	// ErrLineTooLong: a stream line exceeded Options.MaxLineBytes. Its
	// kind is engine.KindMalformed.
	ErrLineTooLong = errors.New("stream line too long")
)
