package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// chunkWire is one chat.completion.chunk as vLLM, SGLang, llama.cpp,
// mlx_lm.server and Ollama send it. Fields the adapter does not use are
// not decoded.
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
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
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
	return e
}

type choiceWire struct {
	Index        int       `json:"index"`
	Delta        deltaWire `json:"delta"`
	Message      deltaWire `json:"message"`
	FinishReason *string   `json:"finish_reason"`
}

// deltaWire is a streamed delta or a complete message. Reasoning text comes
// as reasoning_content (DeepSeek's name, llama.cpp, SGLang, vLLM before
// 0.11) or reasoning (vLLM since 0.11, Ollama); some vLLM versions send
// both with the same text.
type deltaWire struct {
	Content          *string `json:"content"`
	ReasoningContent *string `json:"reasoning_content"`
	Reasoning        *string `json:"reasoning"`
}

// text returns the generated text of d: its reasoning, then its content.
func (d deltaWire) text() string {
	var r, c string
	switch {
	case d.ReasoningContent != nil && *d.ReasoningContent != "":
		r = *d.ReasoningContent
	case d.Reasoning != nil:
		r = *d.Reasoning
	}
	if d.Content != nil {
		c = *d.Content
	}
	return r + c
}

// A parsedChunk is what one chunk contributes to a Result.
type parsedChunk struct {
	ID, Model    string
	Text         string        // generated text of choice 0
	FinishReason string        // of choice 0, empty if null
	Usage        *engine.Usage // nil when the chunk had none
}

// parseChunk decodes the data of one stream event. A chunk holding an
// error object gives a *engine.StreamError.
func parseChunk(data []byte) (parsedChunk, error) {
	var w chunkWire
	if err := json.Unmarshal(data, &w); err != nil {
		return parsedChunk{}, err
	}
	if isError(w.Error) {
		return parsedChunk{}, engine.Event{Type: engine.EventError, Data: data}.ServerError()
	}
	p := parsedChunk{ID: w.ID, Model: w.Model, Usage: w.Usage.usage()}
	for _, ch := range w.Choices {
		if ch.Index != 0 {
			continue
		}
		p.Text += ch.Delta.text()
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			p.FinishReason = *ch.FinishReason
		}
	}
	return p, nil
}

// streamState accumulates a stream's content chunks until the token
// counts can be attributed, after the stream has ended.
type streamState struct {
	text  strings.Builder
	ends  []int // text length after each content chunk
	usage []int // usage.completion_tokens on each content chunk, −1 if none
	final *engine.Usage
}

// readStream reads an event stream into res: the content chunks of its
// trace, text, id, model, finish reason, usage and warnings. It sets
// res.Trace.End when it stops; after an error, res keeps what was read
// until then, chunk token counts included.
func (c *Client) readStream(ctx context.Context, r io.Reader, req engine.Request, res *engine.Result) error {
	sr := engine.NewSSEReader(r, &engine.SSEOptions{Now: c.now, DoneOptional: c.opts.DoneOptional})
	var st streamState
	err := c.scan(sr, &st, res)
	res.Trace.End = c.now()
	res.Text = st.text.String()
	res.Usage = st.final
	res.Warnings = append(res.Warnings, c.attribute(ctx, &st, res.Trace.Chunks)...)
	if err != nil {
		return err
	}
	res.Warnings = append(res.Warnings, shortWarnings(req, res)...)
	return nil
}

// scan reads events until [DONE], the end of the input or an error.
func (c *Client) scan(sr *engine.SSEReader, st *streamState, res *engine.Result) error {
	n := 0
	var (
		dec chunkDecoder
		p   chunkView
	)
	for sr.Next() {
		ev := sr.Event()
		switch ev.Type {
		case engine.EventComment:
			continue
		case engine.EventDone:
			return nil
		case engine.EventError:
			se := ev.ServerError()
			se.Message = string(c.redactBytes([]byte(se.Message)))
			return &engine.Error{Kind: engine.KindStreamError, Op: "read SSE stream", Err: se}
		}
		n++
		if err := dec.decode(ev.Data, &p); err != nil {
			if se, ok := err.(*engine.StreamError); ok {
				se.Message = string(c.redactBytes([]byte(se.Message)))
				return &engine.Error{Kind: engine.KindStreamError, Op: "read SSE stream", Err: se}
			}
			return &engine.Error{Kind: engine.KindMalformed, Op: "read SSE stream",
				Err: fmt.Errorf("openai: event %d: want a chat.completion.chunk JSON object, found %q: %w", n, excerpt(c.redactBytes(ev.Data)), err)}
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
			if st.final == nil {
				st.final = new(engine.Usage)
			}
			*st.final = *p.usage
		}
		if len(p.text) == 0 {
			continue
		}
		st.text.Write(p.text)
		st.ends = append(st.ends, st.text.Len())
		u := -1
		if p.usage != nil {
			u = p.usage.CompletionTokens
		}
		st.usage = append(st.usage, u)
		res.Trace.Chunks = append(res.Trace.Chunks, timing.Chunk{At: ev.At})
	}
	return sr.Err()
}

// attribute sets the token count of each content chunk and returns the
// warnings that qualify them.
//
// With K_i the cumulative count known at content chunk i (the chunk's
// usage.completion_tokens, else N(p_i), the counted tokens of the text of
// chunks 0…i) and A_i the tokens given to chunks before i:
//
//	tokens_i = max(1, K_i − A_i)
//
// A chunk with text carried at least one token, hence the floor. With
// usage on every chunk the counts are exact and add up to the server's
// count at the last content chunk. A chunk with no K (no usage, no
// counter) gets 0, which timing reads as one token of unknown count; it is
// taken as one in A. A stream without per-chunk usage whose final usage
// reports exactly as many tokens as it had content chunks gets one token
// per chunk, which is then exact, without counting.
func (c *Client) attribute(ctx context.Context, st *streamState, chunks []timing.Chunk) []error {
	n := len(chunks)
	if n == 0 {
		return nil
	}
	withUsage := 0
	for _, u := range st.usage {
		if u >= 0 {
			withUsage++
		}
	}
	if withUsage == 0 && st.final != nil && st.final.CompletionTokens == n {
		for i := range chunks {
			chunks[i].Tokens = 1
		}
		return nil
	}
	var warns []error
	var counted []int // N(p_i), nil without a counter
	if withUsage < n {
		var err error
		counted, err = c.countPrefixes(ctx, st)
		if err != nil {
			warns = append(warns, fmt.Errorf("%w: counting the text of %d chunks: %w", ErrUnknownTokens, n-withUsage, err))
			counted = nil
		}
	}
	assigned, clamped, unknown := 0, 0, 0
	for i := range chunks {
		k := -1
		switch {
		case st.usage[i] >= 0:
			k = st.usage[i]
		case counted != nil:
			k = counted[i]
		}
		if k < 0 {
			chunks[i].Tokens = 0
			assigned++
			unknown++
			continue
		}
		t := k - assigned
		if t < 1 {
			t = 1
			if st.usage[i] >= 0 {
				clamped++
			}
		}
		chunks[i].Tokens = t
		assigned += t
	}
	if clamped > 0 {
		warns = append(warns, fmt.Errorf("%w: %d chunks carried text while usage.completion_tokens did not grow; each was counted as one token", ErrEstimatedTokens, clamped))
	}
	if est := n - withUsage - unknown; est > 0 {
		warns = append(warns, fmt.Errorf("%w: %d of %d content chunks carried no usage; their counts come from counting their text", ErrEstimatedTokens, est, n))
	}
	if unknown > 0 {
		final := "no final usage"
		if st.final != nil {
			final = fmt.Sprintf("final usage.completion_tokens=%d", st.final.CompletionTokens)
		}
		warns = append(warns, fmt.Errorf("%w: %d of %d content chunks carried no usage and no CountText or Counter is set (%s); each counts as one token", ErrUnknownTokens, unknown, n, final))
	}
	if withUsage < n && st.final != nil && assigned != st.final.CompletionTokens {
		warns = append(warns, fmt.Errorf("%w: the chunks add up to %d tokens, usage.completion_tokens says %d", ErrTokenMismatch, assigned, st.final.CompletionTokens))
	}
	return warns
}

// countPrefixes returns N(p_i) for every content chunk i, the token count
// of the text of chunks 0…i, or nil when no counter is configured.
// Counting whole prefixes rather than each chunk alone keeps the merges a
// tokenizer makes across chunk boundaries; it costs O(n²) in the text
// length, paid after the stream has ended.
func (c *Client) countPrefixes(ctx context.Context, st *streamState) ([]int, error) {
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
	text := st.text.String()
	out := make([]int, len(st.ends))
	for i, end := range st.ends {
		n, err := count(ctx, text[:end])
		if err != nil {
			return nil, fmt.Errorf("openai: counting %d bytes of generated text: %w", end, err)
		}
		out[i] = n
	}
	return out, nil
}
