package openai

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
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// chunkWire is one chat.completion.chunk as vLLM, SGLang, llama.cpp,
// mlx_lm.server and Ollama send it, or one text_completion chunk of
// /v1/completions (whose choices carry text, not a delta). Fields the
// adapter does not use are not decoded.
type chunkWire struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Choices []choiceWire    `json:"choices"`
	Usage   *usageWire      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

// usageWire is the OpenAI usage block, decoded in one pass (engine.Usage's
// own decoder decodes twice).
type usageWire struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens *int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens *int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// usage returns u as an engine.Usage, nil for nil.
func (u *usageWire) usage() *engine.Usage {
	if u == nil {
		return nil
	}
	e := &engine.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if u.PromptTokensDetails != nil {
		e.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	if u.CompletionTokensDetails != nil {
		e.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	}
	return e
}

type choiceWire struct {
	Index        int       `json:"index"`
	Delta        deltaWire `json:"delta"`
	Message      deltaWire `json:"message"`
	Text         *string   `json:"text"` // a completion choice's
	FinishReason *string   `json:"finish_reason"`
}

// deltaWire is a streamed delta or a complete message. Reasoning text comes
// as reasoning_content (DeepSeek's name, llama.cpp, SGLang, vLLM before
// 0.11) or reasoning (vLLM since 0.11, Ollama); some vLLM versions send
// both with the same text. Tool calls come as tool_calls, each delta of a
// call with its function's name (the first) or a piece of its arguments.
type deltaWire struct {
	Content          *string        `json:"content"`
	ReasoningContent *string        `json:"reasoning_content"`
	Reasoning        *string        `json:"reasoning"`
	ToolCalls        []toolCallWire `json:"tool_calls"`
}

// toolCallWire is one element of a delta's or a message's tool_calls.
type toolCallWire struct {
	Function *struct {
		Name      *string `json:"name"`
		Arguments *string `json:"arguments"`
	} `json:"function"`
}

// reasoning returns d's reasoning text: reasoning_content when it has
// text, else reasoning.
func (d deltaWire) reasoning() string {
	switch {
	case d.ReasoningContent != nil && *d.ReasoningContent != "":
		return *d.ReasoningContent
	case d.Reasoning != nil:
		return *d.Reasoning
	}
	return ""
}

// content returns d's content.
func (d deltaWire) content() string {
	if d.Content == nil {
		return ""
	}
	return *d.Content
}

// tool returns the text of d's tool calls: each call's function name and
// arguments, in order. A function's arguments that are not a JSON string
// (a server that sends an object) are not counted.
func (d deltaWire) tool() string {
	var s string
	for _, tc := range d.ToolCalls {
		if f := tc.Function; f != nil {
			if f.Name != nil {
				s += *f.Name
			}
			if f.Arguments != nil {
				s += *f.Arguments
			}
		}
	}
	return s
}

// text returns the generated text of d: its reasoning, its content, its
// tool calls.
func (d deltaWire) text() string { return d.reasoning() + d.content() + d.tool() }

// A parsedChunk is what one chunk contributes to a Result.
type parsedChunk struct {
	ID, Model string
	// Text is the generated text of choice 0: Reasoning, Content and
	// Tool, in that order.
	Text                     string
	Reasoning, Content, Tool string
	FinishReason             string        // of choice 0, empty if null
	Usage                    *engine.Usage // nil when the chunk had none
	Choice                   bool          // the chunk had a choice of index 0
}

// parseChunk decodes the data of one stream event, a text_completion
// chunk when completion is set, else a chat.completion.chunk. A chunk
// holding an error object gives a *engine.StreamError.
func parseChunk(data []byte, completion bool) (parsedChunk, error) {
	var w chunkWire
	if err := json.Unmarshal(data, &w); err != nil {
		return parsedChunk{}, err
	}
	if isError(w.Error) {
		return parsedChunk{}, streamError(data)
	}
	p := parsedChunk{ID: w.ID, Model: w.Model, Usage: w.Usage.usage()}
	for _, ch := range w.Choices {
		if ch.Index != 0 {
			continue
		}
		p.Choice = true
		if completion {
			if ch.Text != nil {
				p.Content += *ch.Text
			}
		} else {
			p.Reasoning += ch.Delta.reasoning()
			p.Content += ch.Delta.content()
			p.Tool += ch.Delta.tool()
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			p.FinishReason = *ch.FinishReason
		}
	}
	p.Text = p.Reasoning + p.Content + p.Tool
	return p, nil
}

// streamError decodes an error event's data, reading TGI's
// {"error": {"message", "http_status_code"}} code where the shared decoder
// finds none.
func streamError(data []byte) *engine.StreamError {
	se := engine.Event{Type: engine.EventError, Data: data}.ServerError()
	if se.Code == 0 {
		var tgi struct {
			Error struct {
				Code int `json:"http_status_code"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &tgi) == nil && tgi.Error.Code > 0 && tgi.Error.Code < 1000 {
			se.Code = tgi.Error.Code
		}
	}
	return se
}

// timingsWire is llama.cpp's "timings" object, sent on the final chunk
// (and on every chunk with timings_per_token).
type timingsWire struct {
	Timings *struct {
		CacheN          *int     `json:"cache_n"`
		PromptN         *int     `json:"prompt_n"`
		PromptMS        *float64 `json:"prompt_ms"`
		PromptPerSecond *float64 `json:"prompt_per_second"`
		PredictedN      *int     `json:"predicted_n"`
		PredictedMS     *float64 `json:"predicted_ms"`
	} `json:"timings"`
}

// parseTimings decodes llama.cpp's timings into server stats with exo's
// formulas (see engine.ServerStats):
//
//	PromptTokens     = cache_n + prompt_n
//	PromptTPS        = prompt_n / prompt_ms × 1000 (the uncached tokens)
//	GenerationTokens = predicted_n
//	GenerationTPS    = (predicted_n − 1) / predicted_ms × 1000
//	CachedTokens     = cache_n
//	Prefill, Decode  = prompt_ms, predicted_ms
//
// predicted_ms runs from the first sampled token to the last, so it spans
// predicted_n − 1 intervals; llama.cpp's own predicted_per_second divides
// predicted_n by it. A count beyond the plausible bound, a negative or
// non-finite figure is an error of kind implausible_usage. It returns nil
// stats and no error for a chunk without timings.
func parseTimings(data []byte, maxTokens int) (*engine.ServerStats, error) {
	if !bytes.Contains(data, []byte(`"timings"`)) {
		return nil, nil
	}
	var w timingsWire
	if json.Unmarshal(data, &w) != nil || w.Timings == nil {
		return nil, nil
	}
	t := w.Timings
	val := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	fval := func(p *float64) float64 {
		if p == nil {
			return 0
		}
		return *p
	}
	cache, prompt, pred := val(t.CacheN), val(t.PromptN), val(t.PredictedN)
	if err := engine.CheckCount("timings.predicted_n", pred, engine.MaxPlausibleCount(maxTokens)); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		what string
		n    int
	}{{"timings.prompt_n", prompt}, {"timings.cache_n", cache}} {
		if err := engine.CheckCount(c.what, c.n, engine.NoMaxTokensBound); err != nil {
			return nil, err
		}
	}
	pms, gms := fval(t.PromptMS), fval(t.PredictedMS)
	for _, f := range []struct {
		what string
		v    float64
	}{{"timings.prompt_ms", pms}, {"timings.predicted_ms", gms}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return nil, &engine.Error{Kind: engine.KindImplausibleUsage, Op: "check server counts",
				Err: fmt.Errorf("%s = %v, want a finite duration ≥ 0", f.what, f.v)}
		}
	}
	st := &engine.ServerStats{PromptTokens: cache + prompt, GenerationTokens: pred, PrefixCacheHit: engine.PrefixCacheNone, Source: "llama.cpp"}
	if cache > 0 {
		st.PrefixCacheHit = engine.PrefixCachePartial
	}
	if t.CacheN != nil {
		st.CachedTokens = &cache
	}
	ms := func(p *float64) *time.Duration {
		if p == nil {
			return nil
		}
		d := time.Duration(math.Round(*p * float64(time.Millisecond)))
		return &d
	}
	st.Prefill, st.Decode = ms(t.PromptMS), ms(t.PredictedMS)
	if pms > 0 {
		st.PromptTPS = float64(prompt) / pms * 1000
	}
	if pred >= 2 && gms > 0 {
		st.GenerationTPS = float64(pred-1) / gms * 1000
	}
	return st, nil
}

// streamState accumulates a stream's content chunks until the token
// counts can be attributed, after the stream has ended.
type streamState struct {
	maxTokens  int  // the request's MaxTokens, which bounds the counts
	promptMax  int  // the plausible bound of prompt_tokens
	completion bool // a text completion: text in choices[].text

	text    strings.Builder    // at most engine.MaxKeptText bytes
	total   int                // bytes of text received, kept or not
	ends    []int              // total after each content chunk
	usage   []int              // usage.completion_tokens on each content chunk, −1 if none
	kinds   []timing.ChunkKind // what each content chunk carried
	final   *engine.Usage      // the last usage block seen
	lastCum int                // the last completion_tokens seen, −1 before any

	first  time.Time // the first chunk with a choice, if before any text
	inText bool      // a content chunk has been read
	stats  *engine.ServerStats

	// fieldReasoning: some chunk carried reasoning in a field of its own
	// (the server's reasoning parser was on), so the markers that open
	// and close the reasoning were never streamed as text.
	fieldReasoning bool
	// hidden is the number of tokens of the final usage that came in no
	// chunk (see attribute), for Trace.HiddenTokens.
	hidden int
}

// readStream reads an event stream into res: the content chunks of its
// trace, text, id, model, finish reason, usage and warnings. It sets
// res.Trace.End when it stops; after an error, res keeps what was read
// until then, chunk token counts included (counted, after a timeout,
// within countAfterTimeout of a fresh context), without the warnings on
// how they were reached. A server count that cannot be
// true ends the stream with an error of kind engine.KindImplausibleUsage,
// and then res has no chunks and no usage: nothing in it can be trusted.
//
// read stamps each read of r (nil: the client's clock).
func (c *Client) readStream(ctx context.Context, r io.Reader, read func() time.Time, req engine.Request, res *engine.Result) error {
	if read == nil {
		read = c.conn.Now
	}
	sr := engine.NewSSEReader(r, &engine.SSEOptions{Now: read, DoneOptional: c.opts.DoneOptional})
	st := newStreamState(req)
	err := c.scan(sr, &st, res)
	res.Trace.End = c.conn.Now()
	res.Text = st.text.String()
	if engine.KindOf(err) == engine.KindImplausibleUsage {
		res.Trace.Chunks = nil
		res.Usage = nil
		return err
	}
	res.Usage = st.final
	if st.stats != nil {
		res.ServerStats = st.stats
	}
	if st.total > st.text.Len() {
		res.Warnings = append(res.Warnings, fmt.Errorf("%w: the server streamed %d bytes of text; the result keeps the first %d (engine.MaxKeptText), the token counts come from the whole stream",
			ErrTextCut, st.total, st.text.Len()))
	}
	if !st.first.IsZero() && len(res.Trace.Chunks) > 0 {
		res.Trace.FirstChunk = st.first
	}
	// Counting text after the stream: a request that timed out has an
	// expired context, which would fail the count; a fresh short one
	// bounds it instead.
	cctx := ctx
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), countAfterTimeout)
		defer cancel()
	}
	warns := c.attribute(cctx, &st, res.Trace.Chunks, res.FinishReason, !res.Trace.FirstChunk.IsZero())
	res.Trace.HiddenTokens = st.hidden
	if !st.fieldReasoning && !st.completion && !c.opts.NoThinkTags {
		var tw []error
		res.Trace.Chunks, tw = st.thinkInContent(res.Trace.Chunks)
		warns = append(warns, tw...)
	}
	if w := reasoningWarning(res.Trace.Chunks, st.final); w != nil {
		warns = append(warns, w)
	}
	if err != nil {
		// A failed request's figures are not reported as measurements:
		// how its chunk counts were reached would be a note on every
		// failed row, saying nothing about the failure.
		return err
	}
	res.Warnings = append(res.Warnings, warns...)
	res.Warnings = append(res.Warnings, shortWarnings(req, res)...)
	return nil
}

// countAfterTimeout bounds the count of a stream's text after its
// request's context expired.
const countAfterTimeout = 5 * time.Second

// newStreamState returns the state of reading the answer to req.
func newStreamState(req engine.Request) streamState {
	st := streamState{maxTokens: req.MaxTokens, lastCum: -1, promptMax: 2 * engine.NoMaxTokensBound, completion: req.Prompt != nil}
	if st.completion {
		st.promptMax = engine.MaxPlausiblePromptTokens(req)
	}
	return st
}

// checkUsage bounds the counts of a usage block the server sent: none
// negative, completion_tokens within engine.MaxPlausibleCount of the
// request and never falling, prompt_tokens within
// engine.MaxPlausiblePromptTokens for a text completion, cached_tokens
// within prompt_tokens.
func (st *streamState) checkUsage(u *engine.Usage) error {
	if err := engine.CheckCount("usage.completion_tokens", u.CompletionTokens, engine.MaxPlausibleCount(st.maxTokens)); err != nil {
		return err
	}
	if err := engine.CheckRising("usage.completion_tokens", st.lastCum, u.CompletionTokens); err != nil {
		return err
	}
	if err := engine.CheckCount("usage.prompt_tokens", u.PromptTokens, st.promptMax); err != nil {
		return err
	}
	if err := engine.CheckCount("usage.total_tokens", u.TotalTokens, st.promptMax+engine.NoMaxTokensBound); err != nil {
		return err
	}
	if n, ok := u.Cached(); ok {
		return engine.CheckCount("usage.prompt_tokens_details.cached_tokens", n, u.PromptTokens)
	}
	return nil
}

// chunkObject names what a chunk of the stream is.
func (st *streamState) chunkObject() string {
	if st.completion {
		return "text_completion chunk"
	}
	return "chat.completion.chunk"
}

// scan reads events until [DONE], the end of the input or an error.
//
// Two content chunks become one chunk of the trace when the second adds
// no token: when both carry the same cumulative usage.completion_tokens
// (SGLang splits one decode step into a reasoning chunk and a content
// chunk). The second adds its text, no token and no gap.
func (c *Client) scan(sr *engine.SSEReader, st *streamState, res *engine.Result) error {
	n := 0
	limit := engine.MaxPlausibleCount(st.maxTokens)
	var (
		dec   chunkDecoder
		p     chunkView
		parts []chunkPart
	)
	for sr.Next() {
		ev := sr.Event()
		switch ev.Type {
		case engine.EventComment:
			continue
		case engine.EventDone:
			return nil
		case engine.EventError:
			se := streamError(ev.Data)
			se.Message = string(c.conn.RedactBytes([]byte(se.Message)))
			return &engine.Error{Kind: engine.KindStreamError, Op: "read SSE stream", Err: se}
		}
		n++
		if err := dec.decode(ev.Data, &p, st.completion); err != nil {
			if se, ok := err.(*engine.StreamError); ok {
				se.Message = string(c.conn.RedactBytes([]byte(se.Message)))
				return &engine.Error{Kind: engine.KindStreamError, Op: "read SSE stream", Err: se}
			}
			return &engine.Error{Kind: engine.KindMalformed, Op: "read SSE stream",
				Err: fmt.Errorf("openai: event %d: want a %s JSON object, found %q: %w", n, st.chunkObject(), httpconn.Excerpt(c.conn.RedactBytes(ev.Data)), err)}
		}
		if res.ResponseID == "" {
			res.ResponseID = string(p.id)
		}
		if len(p.model) > 0 && string(p.model) != res.Model {
			res.Model = string(p.model)
		}
		if len(p.finish) > 0 && string(p.finish) != res.FinishReason {
			res.FinishReason = string(p.finish)
		}
		if p.usage != nil {
			if err := st.checkUsage(p.usage); err != nil {
				return err
			}
			st.lastCum = p.usage.CompletionTokens
			if st.final == nil {
				st.final = new(engine.Usage)
			}
			*st.final = *p.usage
		}
		if stats, err := parseTimings(ev.Data, st.maxTokens); err != nil {
			return err
		} else if stats != nil {
			st.stats = stats
		}
		// The first text-less chunk with a choice, before any text, marks
		// the first token (vLLM's and SGLang's role chunk, llama.cpp's
		// role delta, TGI's event for a token whose text is held back);
		// llama.cpp's prompt-progress chunks go out during prefill and do
		// not.
		parts = p.parts(parts)
		if p.choice && !st.inText && st.first.IsZero() && len(parts) == 0 && !bytes.Contains(ev.Data, []byte(`"prompt_progress"`)) {
			st.first = ev.At
		}
		if len(parts) == 0 {
			continue
		}
		st.inText = true
		u := -1
		if p.usage != nil {
			u = p.usage.CompletionTokens
		}
		for j, part := range parts {
			// A chunk that carried several kinds (Ollama's response that
			// ends the reasoning and starts the answer, a delta with
			// content and a tool call) is a chunk of each kind at the same
			// instant; its usage closes the last of them.
			pu := -1
			if j == len(parts)-1 {
				pu = u
			}
			if part.kind == timing.Reasoning {
				st.fieldReasoning = true
			}
			if room := engine.MaxKeptText - st.text.Len(); room > 0 {
				st.text.Write(part.text[:min(len(part.text), room)])
			}
			st.total += len(part.text)
			chunks := res.Trace.Chunks
			if last := len(chunks) - 1; last >= 0 && pu >= 0 && st.usage[last] == pu {
				if st.kinds[last] == part.kind {
					// The same decode step's text again (SGLang writes a
					// step the reasoning parser split as two chunks with
					// one cumulative count): no token, no gap.
					st.ends[last] = st.total
					continue
				}
				// Another kind in the same step: a chunk of its own,
				// and the step's count closes it instead.
				st.usage[last] = -1
			}
			if len(chunks) >= limit {
				return &engine.Error{Kind: engine.KindImplausibleUsage, Op: "check server counts",
					Err: fmt.Errorf("the stream carried more than %d content chunks, each at least one token, for max_tokens=%d (plausible bound %d)", len(chunks), st.maxTokens, limit)}
			}
			st.ends = append(st.ends, st.total)
			st.usage = append(st.usage, pu)
			st.kinds = append(st.kinds, part.kind)
			res.Trace.Chunks = append(res.Trace.Chunks, timing.Chunk{At: ev.At, Kind: part.kind})
		}
	}
	return sr.Err()
}

// countContext is how many bytes of the text before a chunk countChunks
// keeps in the text it counts with the chunk, at least, when the counter
// cannot say where tokens end: far more than any tokenizer merges across.
const countContext = 512

// countChunks returns K_i for every content chunk i, the tokens the
// counter finds in the text of chunks 0…i, −1 for a chunk whose text was
// not all kept (past engine.MaxKeptText), or nil when no counter is
// configured. It runs after the stream has ended, and its cost is linear
// in the text:
//
//   - a Counter that is a promptsize.TokenEnder encodes the whole text
//     once; K_i is the number of its tokens that end within chunks 0…i;
//   - otherwise (CountText, or a Counter such as a server's /tokenize),
//     K_i = K_{i−1} + N(text[s:end_i]) − N(text[s:end_{i−1}]), where s is
//     a chunk boundary at least countContext bytes before end_{i−1}, moved
//     forward only once the counted text has grown past 2·countContext.
//     Both counts start at s, so what the tokenizer does at s cancels and
//     K_i equals N(prefix i) whenever no token or merge reaches back
//     countContext bytes; with s = 0 (texts under 1 KiB) it is N(prefix i)
//     exactly. One count per chunk, each of at most about 3·countContext
//     bytes and the chunk, and one more each time s moves.
func (c *Client) countChunks(ctx context.Context, st *streamState) ([]int, error) {
	text := st.text.String()
	kept := len(st.ends)
	for kept > 0 && st.ends[kept-1] > len(text) {
		kept--
	}
	if c.opts.CountText == nil {
		if te, ok := c.opts.Counter.(promptsize.TokenEnder); ok {
			out := make([]int, len(st.ends))
			last := 0
			if kept > 0 {
				last = st.ends[kept-1]
			}
			ends, err := te.TokenEnds(ctx, text[:last], nil)
			if err != nil {
				return nil, fmt.Errorf("openai: counting %d bytes of generated text: %w", last, err)
			}
			k := 0
			for i, end := range st.ends {
				if i >= kept {
					out[i] = -1
					continue
				}
				for k < len(ends) && ends[k] <= end {
					k++
				}
				out[i] = k
			}
			return out, nil
		}
	}
	count := c.opts.CountText
	if count == nil && c.opts.Counter != nil {
		ctr := c.opts.Counter
		base, err := ctr.Count(ctx, []promptsize.Message{{Role: "assistant", Content: ""}})
		if err != nil {
			return nil, fmt.Errorf("openai: Counter on an empty assistant message: %w", err)
		}
		count = func(ctx context.Context, s string) (int, error) {
			n, err := ctr.Count(ctx, []promptsize.Message{{Role: "assistant", Content: s}})
			return n - base, err
		}
	}
	if count == nil {
		return nil, nil
	}
	out := make([]int, len(st.ends))
	s, j := 0, 0 // the window's start, a chunk boundary, and the first chunk after it
	prevN, k := 0, 0
	for i, end := range st.ends {
		if i >= kept {
			out[i] = -1
			continue
		}
		prevEnd := 0
		if i > 0 {
			prevEnd = st.ends[i-1]
		}
		if end-s > 2*countContext && prevEnd-s > countContext {
			ns := s
			for j < i && st.ends[j] <= prevEnd-countContext {
				ns = st.ends[j]
				j++
			}
			if ns > s {
				s = ns
				n, err := count(ctx, text[s:prevEnd])
				if err != nil {
					return nil, fmt.Errorf("openai: counting %d bytes of generated text: %w", prevEnd-s, err)
				}
				prevN = n
			}
		}
		n, err := count(ctx, text[s:end])
		if err != nil {
			return nil, fmt.Errorf("openai: counting %d bytes of generated text: %w", end-s, err)
		}
		k += n - prevN
		prevN = n
		out[i] = k
	}
	return out, nil
}
