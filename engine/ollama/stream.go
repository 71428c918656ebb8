package ollama

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/httpconn"
	"github.com/inferbench/inferbench/timing"
)

// chatWire is one object of /api/chat: a line of a stream or a whole
// answer (api.ChatResponse with its embedded api.Metrics, or the
// {"error": "..."} object the handler writes instead). The counts and
// durations are pointers because Ollama leaves a zero out (omitempty);
// they are int64 because Ollama writes time.Duration, integer
// nanoseconds, and a value that is not an integer is not Ollama's.
type chatWire struct {
	Model              string          `json:"model"`
	Message            *messageWire    `json:"message"`
	Done               bool            `json:"done"`
	DoneReason         string          `json:"done_reason"`
	TotalDuration      *int64          `json:"total_duration"`
	LoadDuration       *int64          `json:"load_duration"`
	PromptEvalCount    *int64          `json:"prompt_eval_count"`
	PromptEvalDuration *int64          `json:"prompt_eval_duration"`
	EvalCount          *int64          `json:"eval_count"`
	EvalDuration       *int64          `json:"eval_duration"`
	Error              json.RawMessage `json:"error"`
}

// messageWire is api.Message as a response carries it: the content, the
// thinking (with think on, the text the thinking parser found inside the
// model's thinking tags) and the tool calls, each whole (Ollama's tool
// parser holds a call's text back until it has parsed it).
type messageWire struct {
	Role      string         `json:"role"`
	Content   string         `json:"content"`
	Thinking  string         `json:"thinking"`
	ToolCalls []toolCallWire `json:"tool_calls"`
}

// toolCallWire is an api.ToolCall.
type toolCallWire struct {
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// parts returns the generated text of m by kind, in the order the model
// generated it: thinking, content, tool calls (each call's function name
// and arguments as sent). A kind without text is left out.
func (m *messageWire) parts() []messagePart {
	if m == nil {
		return nil
	}
	var out []messagePart
	if m.Thinking != "" {
		out = append(out, messagePart{timing.Reasoning, m.Thinking})
	}
	if m.Content != "" {
		out = append(out, messagePart{timing.Answer, m.Content})
	}
	var calls strings.Builder
	for _, tc := range m.ToolCalls {
		calls.WriteString(tc.Function.Name)
		if a := tc.Function.Arguments; len(a) > 0 && string(a) != "null" {
			calls.Write(a)
		}
	}
	if calls.Len() > 0 {
		out = append(out, messagePart{timing.ToolCall, calls.String()})
	}
	return out
}

// A messagePart is the text of one kind in a response.
type messagePart struct {
	kind timing.ChunkKind
	text string
}

// decodeObject decodes one object of /api/chat. Anything but a JSON
// object (null, an array, a string, a number, text) is an error.
func decodeObject(b []byte, w *chatWire) error {
	*w = chatWire{}
	t := bytes.TrimSpace(b)
	if len(t) == 0 || t[0] != '{' {
		return errors.New("not a JSON object")
	}
	return json.Unmarshal(t, w)
}

// isError reports whether a JSON "error" member holds an error.
func isError(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null" && string(raw) != `""`
}

// maxPlausibleDuration bounds every duration Ollama reports about one
// request: a week. A longer one, or a negative one, is a broken or
// hostile server's.
const maxPlausibleDuration = 7 * 24 * time.Hour

// lineReader reads newline-delimited lines of at most max bytes, each with
// the instant of the read that delivered its last byte. It keeps one
// buffer of at most max+1 bytes, so an endless line costs that much memory
// and ends in ErrLineTooLong.
type lineReader struct {
	r        io.Reader
	now      func() time.Time
	max      int
	buf      []byte
	start    int // unread data is buf[start:end]
	end      int
	lastRead time.Time

	line    []byte    // the current line, without its "\n" (and "\r")
	at      time.Time // when its last byte was read
	partial bool      // the input ended inside the line: no "\n" after it
	eof     bool
	err     error
}

func newLineReader(r io.Reader, now func() time.Time, max int) *lineReader {
	return &lineReader{r: r, now: now, max: max, buf: make([]byte, min(max+1, 32<<10))}
}

// next advances to the next line; false at the end of the input or on an
// error (see err).
func (lr *lineReader) next() bool {
	for {
		if i := bytes.IndexByte(lr.buf[lr.start:lr.end], '\n'); i >= 0 {
			lr.line = bytes.TrimSuffix(lr.buf[lr.start:lr.start+i], []byte("\r"))
			lr.start += i + 1
			lr.at, lr.partial = lr.lastRead, false
			if i > lr.max {
				lr.err = fmt.Errorf("%w: a line of %d bytes, more than %d (Options.MaxLineBytes)", ErrLineTooLong, i, lr.max)
				return false
			}
			return true
		}
		if lr.end-lr.start > lr.max {
			lr.err = fmt.Errorf("%w: more than %d bytes without a newline (Options.MaxLineBytes)", ErrLineTooLong, lr.max)
			return false
		}
		if lr.eof || lr.err != nil {
			if lr.end > lr.start && lr.err == nil {
				lr.line = lr.buf[lr.start:lr.end]
				lr.start = lr.end
				lr.at, lr.partial = lr.lastRead, true
				return true
			}
			return false
		}
		// Make room: move the unread data to the front, then grow up to
		// max+1 bytes.
		if lr.start > 0 {
			lr.end = copy(lr.buf, lr.buf[lr.start:lr.end])
			lr.start = 0
		}
		if lr.end == len(lr.buf) {
			nb := make([]byte, min(2*len(lr.buf), lr.max+1))
			copy(nb, lr.buf[:lr.end])
			lr.buf = nb
		}
		n, err := lr.r.Read(lr.buf[lr.end:])
		if n > 0 {
			lr.end += n
			lr.lastRead = lr.now()
		}
		switch {
		case errors.Is(err, io.EOF):
			lr.eof = true
		case err != nil:
			lr.err = err
		}
	}
}

// readStream reads an NDJSON stream of /api/chat into res: one chunk per
// line with content, the text, model, done_reason, usage, server stats
// and warnings. It sets res.Trace.End when it stops; after an error res
// keeps what was read until then, each chunk one token. A count that
// cannot be true ends the stream with an error of kind
// engine.KindImplausibleUsage, and then res has no chunks, no usage and
// no stats.
//
// read stamps each read of r (nil: the client's clock).
func (c *Client) readStream(ctx context.Context, r io.Reader, read func() time.Time, req engine.Request, res *engine.Result) error {
	if read == nil {
		read = c.conn.Now
	}
	lr := newLineReader(r, read, c.maxLine)
	err := c.scan(lr, req, res)
	res.Trace.End = c.conn.Now()
	if engine.KindOf(err) == engine.KindImplausibleUsage {
		res.Trace.Chunks, res.Usage, res.ServerStats = nil, nil, nil
	}
	return err
}

// scan reads the lines of a stream until the final object, the end of
// the input or an error.
func (c *Client) scan(lr *lineReader, req engine.Request, res *engine.Result) error {
	limit := engine.MaxPlausibleCount(req.MaxTokens)
	var (
		kept  engine.KeptText
		w     chatWire
		final *chatWire
		n     int
	)
	defer func() {
		res.Text = kept.String()
		if kept.Truncated() {
			res.Warnings = append(res.Warnings, fmt.Errorf("%w: the server streamed %d bytes of text; the result keeps the first %d (engine.MaxKeptText)",
				ErrTextCut, kept.Received(), len(res.Text)))
		}
	}()
	for final == nil && lr.next() {
		n++
		if len(bytes.TrimSpace(lr.line)) == 0 {
			continue // Ollama writes none; tolerated
		}
		if err := decodeObject(lr.line, &w); err != nil {
			if lr.partial {
				return &engine.Error{Kind: engine.KindTruncated, Op: "read NDJSON stream",
					Err: fmt.Errorf("ollama: line %d ends without a newline and is not a whole object (%q): %w", n, httpconn.Excerpt(c.conn.RedactBytes(lr.line)), err)}
			}
			return &engine.Error{Kind: engine.KindMalformed, Op: "read NDJSON stream",
				Err: fmt.Errorf("ollama: line %d: want a JSON object of /api/chat, found %q: %w", n, httpconn.Excerpt(c.conn.RedactBytes(lr.line)), err)}
		}
		if isError(w.Error) {
			return c.streamError(lr.line)
		}
		if w.Model != "" {
			res.Model = w.Model
		}
		// A line of several kinds (the response that ends the thinking
		// and starts the answer) is a chunk of each at its instant.
		for _, part := range w.Message.parts() {
			if len(res.Trace.Chunks) >= limit {
				return &engine.Error{Kind: engine.KindImplausibleUsage, Op: "check server counts",
					Err: fmt.Errorf("the stream carried more than %d content lines, each at least one token, for max_tokens=%d (plausible bound %d)",
						len(res.Trace.Chunks), req.MaxTokens, limit)}
			}
			kept.WriteString(part.text)
			if err := engine.CheckText(kept.Received(), req.MaxTokens); err != nil {
				return err
			}
			res.Trace.Chunks = append(res.Trace.Chunks, timing.Chunk{At: lr.at, Tokens: 1, Kind: part.kind})
		}
		if w.Done {
			final = &w
		}
	}
	if final == nil {
		if err := lr.err; err != nil {
			if errors.Is(err, ErrLineTooLong) {
				return &engine.Error{Kind: engine.KindMalformed, Op: "read NDJSON stream", Err: err}
			}
			return err // classified by the caller's engine.Wrap
		}
		return &engine.Error{Kind: engine.KindTruncated, Op: "read NDJSON stream",
			Err: fmt.Errorf("ollama: after %d lines: %w", n, ErrNoDone)}
	}
	if err := c.finish(req, final, res); err != nil {
		return err
	}
	hidden, warns := attribute(res.Trace.Chunks, res.Usage, res.FinishReason)
	res.Trace.HiddenTokens = hidden
	res.Warnings = append(res.Warnings, warns...)
	return nil
}

// streamError is the error of an {"error": ...} object.
func (c *Client) streamError(data []byte) error {
	se := engine.Event{Type: engine.EventError, Data: data}.ServerError()
	se.Message = c.conn.RedactString(se.Message)
	return &engine.Error{Kind: engine.KindStreamError, Op: "read NDJSON stream", Err: se}
}

// finish checks the final object's figures and sets res's finish reason,
// usage and server stats from them.
//
// A count Ollama left out is 0 (it writes counts with omitempty); when
// both are left out, as in the answer to a request without messages
// (done_reason "load"), there is no usage and no stats. A duration left
// out is nil.
func (c *Client) finish(req engine.Request, w *chatWire, res *engine.Result) error {
	res.FinishReason = w.DoneReason
	for _, d := range []struct {
		what string
		v    *int64
	}{
		{"prompt_eval_duration", w.PromptEvalDuration},
		{"eval_duration", w.EvalDuration},
		{"load_duration", w.LoadDuration},
		{"total_duration", w.TotalDuration},
	} {
		if d.v == nil {
			continue
		}
		if *d.v < 0 {
			return &engine.Error{Kind: engine.KindImplausibleUsage, Op: "check server counts",
				Err: fmt.Errorf("%s = %d ns is negative", d.what, *d.v)}
		}
		if *d.v > int64(maxPlausibleDuration) {
			return &engine.Error{Kind: engine.KindImplausibleUsage, Op: "check server counts",
				Err: fmt.Errorf("%s = %d ns exceeds the plausible bound %v", d.what, *d.v, maxPlausibleDuration)}
		}
	}
	if w.EvalCount == nil && w.PromptEvalCount == nil {
		return nil
	}
	// Clamped to 32 bits, far beyond every bound, so that the int of any
	// platform holds it.
	val := func(p *int64) int {
		if p == nil {
			return 0
		}
		return int(max(min(*p, math.MaxInt32), math.MinInt32))
	}
	gen, prompt := val(w.EvalCount), val(w.PromptEvalCount)
	if err := engine.CheckCount("eval_count", gen, engine.MaxPlausibleCount(req.MaxTokens)); err != nil {
		return err
	}
	if err := engine.CheckCount("prompt_eval_count", prompt, engine.MaxPlausiblePromptCount(req.Messages)); err != nil {
		return err
	}
	res.Usage = &engine.Usage{PromptTokens: prompt, CompletionTokens: gen, TotalTokens: prompt + gen}
	dur := func(p *int64) *time.Duration {
		if p == nil {
			return nil
		}
		d := time.Duration(*p)
		return &d
	}
	st := &engine.ServerStats{
		Source:           "ollama",
		PromptTokens:     prompt,
		GenerationTokens: gen,
		PrefixCacheHit:   engine.PrefixCacheNone, // Ollama does not say
		Prefill:          dur(w.PromptEvalDuration),
		Decode:           dur(w.EvalDuration),
		Load:             dur(w.LoadDuration),
		Total:            dur(w.TotalDuration),
	}
	if d := st.Prefill; d != nil && *d > 0 {
		st.PromptTPS = float64(prompt) / d.Seconds()
		if engine.CheckRate("prompt_eval_count / prompt_eval_duration", st.PromptTPS) != nil {
			res.Warnings = append(res.Warnings, fmt.Errorf("%w: %d prompt tokens in prompt_eval_duration %v is %.3g tok/s, beyond %g; most of the prompt likely came from Ollama's cache, which the count includes; PromptTPS is 0",
				ErrPromptRate, prompt, *d, st.PromptTPS, engine.MaxPlausibleRate))
			st.PromptTPS = 0
		}
	}
	if d := st.Decode; d != nil && *d > 0 && gen >= 2 {
		st.GenerationTPS = float64(gen-1) / d.Seconds()
		if err := engine.CheckRate("(eval_count − 1) / eval_duration", st.GenerationTPS); err != nil {
			res.Usage = nil
			return err
		}
	}
	res.ServerStats = st
	if req.IgnoreEOS && req.MaxTokens > 0 && gen < req.MaxTokens {
		res.Warnings = append(res.Warnings, fmt.Errorf("%w: IgnoreEOS with max_tokens=%d, Ollama generated eval_count = %d (done_reason %q): it has no ignore_eos",
			ErrShortGeneration, req.MaxTokens, gen, res.FinishReason))
	}
	return nil
}

// attribute sets the token count of each content chunk from the final
// eval_count (see the package doc) and returns the tokens counted in no
// chunk (Trace.HiddenTokens): one a line; with done_reason "stop" one
// more token without a line (the end of sequence, or a stop string's
// token whose text was cut), credited to the last chunk. What remains is
// placed when the stream says where it went: to the last tool-call chunk
// (the tool parser held the call's text back until it was whole), else,
// on a stream with thinking, it is the tags the thinking parser swallowed
// and the white space it ate after them, hidden, with a warning wrapping
// ErrHiddenTokens. Any other difference is not placed: the chunks keep
// one token each and a warning wrapping ErrTokenMismatch names both
// counts.
func attribute(chunks []timing.Chunk, u *engine.Usage, reason string) (int, []error) {
	if u == nil {
		return 0, nil
	}
	lines, n := len(chunks), u.CompletionTokens
	eos := 0
	if n > lines && reason == "stop" {
		eos = 1
		if lines > 0 {
			chunks[lines-1].Tokens++
		}
	}
	surplus := n - lines - eos
	if surplus == 0 {
		return 0, nil
	}
	thinking, tool := false, -1
	for i, ch := range chunks {
		thinking = thinking || ch.Kind == timing.Reasoning
		if ch.Kind == timing.ToolCall {
			tool = i
		}
	}
	switch {
	case surplus > 0 && tool >= 0:
		chunks[tool].Tokens += surplus
		return 0, nil
	case surplus > 0 && thinking:
		return surplus, []error{fmt.Errorf("%w: eval_count = %d counts %d tokens that came on no line of a stream with thinking: the tags the thinking parser swallows and the white space it eats after them (thinking/parser.go); Trace.HiddenTokens holds them, out of the chunks' counts and the rates measured from them",
			ErrHiddenTokens, n, surplus)}
	}
	why := "more lines than tokens, which Ollama's runner cannot write (each line is at least one token)"
	const held = "came on lines that carried several (text held back while a UTF-8 sequence or a possible stop string was incomplete) or on none; the chunks leave them out"
	if surplus > 0 {
		why = fmt.Sprintf("the surplus of %d %s", surplus, held)
		if eos == 1 {
			why = fmt.Sprintf("one is the end of sequence, credited to the last chunk; the other %d %s", surplus, held)
		}
	}
	return 0, []error{fmt.Errorf("%w: %d content lines, eval_count = %d (done_reason %q): %s", ErrTokenMismatch, lines, n, reason, why)}
}
