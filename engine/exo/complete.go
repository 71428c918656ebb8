package exo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/httpconn"
	"github.com/inferbench/inferbench/engine/internal/thinktags"
	"github.com/inferbench/inferbench/timing"
)

// The paths of exo's completion endpoints.
const (
	BenchPath = "/bench/chat/completions"
	ChatPath  = "/v1/chat/completions"
)

// A PrefillProgress is one ": prefill_progress" comment of a stream: how
// many of the prompt's tokens the server has prefilled.
type PrefillProgress struct {
	// At is the instant the comment was read.
	At time.Time
	// Processed and Total are processed_tokens and total_tokens.
	Processed, Total int
}

type prefillKey struct{}

// WithPrefillProgress returns a copy of ctx carrying fn: Complete calls it,
// on its own goroutine, for every ": prefill_progress" comment of a
// streamed response. fn must be quick.
func WithPrefillProgress(ctx context.Context, fn func(PrefillProgress)) context.Context {
	return context.WithValue(ctx, prefillKey{}, fn)
}

// body builds the JSON request body exo expects for req.
func body(req engine.Request) ([]byte, []error, error) {
	m := map[string]any{
		"model":    req.Model,
		"messages": req.Messages,
		"stream":   req.Stream,
	}
	if req.Messages == nil {
		m["messages"] = []engine.Message{}
	}
	var warns []error
	if req.MaxTokens > 0 {
		m["max_tokens"] = req.MaxTokens
	} else if req.IgnoreEOS {
		warns = append(warns, errors.New("exo: bench request without MaxTokens: exo bans end-of-sequence and generates up to 32168 tokens"))
	}
	if req.IgnoreEOS {
		// What exo_bench sends: logprobs off (on, they cost throughput)
		// and the prefix cache flag, which only the bench path reads.
		m["logprobs"] = false
		m["use_prefix_cache"] = req.UsePrefixCache
	}
	if req.MinTokens > 0 {
		warns = append(warns, fmt.Errorf("exo: min_tokens=%d not sent: exo has no such parameter (use IgnoreEOS for an exact count)", req.MinTokens))
	}
	if req.Temperature != nil {
		m["temperature"] = *req.Temperature
	}
	if req.TopP != nil {
		m["top_p"] = *req.TopP
	}
	if req.TopK != nil {
		m["top_k"] = *req.TopK
	}
	if req.Seed != nil {
		m["seed"] = *req.Seed
	}
	if len(req.Stop) > 0 {
		m["stop"] = req.Stop
	}
	if th := req.Thinking; th != nil {
		// exo's ChatCompletionRequest (src/exo/api/types/api.py) takes
		// enable_thinking and reasoning_effort; each implies the other
		// when left out (resolve_reasoning_params) and the template is
		// rendered with enable_thinking, thinking and reasoning_effort
		// (utils_mlx.py).
		if th.Enabled != nil {
			m["enable_thinking"] = *th.Enabled
		}
		if th.Effort != "" {
			m["reasoning_effort"] = th.Effort
		}
		if th.Budget != 0 {
			warns = append(warns, fmt.Errorf("%w: the request asks for a thinking budget of %d tokens; exo has none, it was not sent", ErrUnsupported, th.Budget))
		}
	}
	for k, v := range req.Extra {
		m[k] = v
	}
	b, err := json.Marshal(m)
	return b, warns, err
}

// Complete sends req to the cluster and waits for the whole response. A
// request with IgnoreEOS goes to /bench/chat/completions (end-of-sequence
// banned, use_prefix_cache honoured), any other to /v1/chat/completions.
// It is never retried (but for a request on a reused connection the server
// had closed before any byte of an answer, which goes out again on
// another: Result.Resent). It is Prepare followed by Send.
//
// The trace's Start is the instant the transport hands over an open
// connection, just before the request is written (engine.NotifySend gets
// the same instant; a request written again on another connection, the
// reused one having been closed by the server before any byte of an
// answer, starts when that one is handed over: Result.Resent); Headers is when the response headers have been read;
// End when the body has been read to its end or reading failed. A streamed
// response adds one chunk per data event that carries a choice (exo sends
// one per generated token, even when the token's text is empty), of the
// kind it carried (see Thinking and tool calls in the package doc), with
// its token count taken from the usage deltas when every chunk carries
// usage, else 1.
//
// Every number the server reports (usage, generation_stats, the tokens and
// text a stream carries) is checked against the request with package
// engine's plausibility bounds before it sizes memory or enters a rate:
// the first one past its bound fails the request with an error of kind
// engine.KindImplausibleUsage naming the number and the bound, and the
// Result keeps what arrived, not to be used as a measurement. At most
// engine.MaxKeptText bytes of text are kept in Result.Text.
func (c *Client) Complete(ctx context.Context, req engine.Request) (engine.Result, error) {
	p, err := c.prepare(req)
	if err != nil {
		return engine.Result{}, err
	}
	return p.Send(ctx)
}

// Prepare encodes req's body and builds its HTTP request (path, headers)
// without sending anything, so that a burst's requests are ready before it
// is released; the Prepared's Send writes it and reads the answer as
// Complete does. It implements engine.Preparer. Its only error is a body
// that does not encode (an Extra value json.Marshal refuses), of kind
// engine.KindOther. ctx is not kept.
func (c *Client) Prepare(_ context.Context, req engine.Request) (engine.Prepared, error) {
	p, err := c.prepare(req)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// prepared is a request to the cluster ready to send.
type prepared struct {
	c     *Client
	req   engine.Request // what the answer is checked against
	op    string
	hreq  *http.Request // without a context: Send gives it its own
	warns []error
	sent  atomic.Bool
}

// prepare does Complete's client-side work.
func (c *Client) prepare(req engine.Request) (*prepared, error) {
	path := ChatPath
	if req.IgnoreEOS {
		path = BenchPath
	}
	target := c.url(path, nil)
	op := "POST " + target
	if req.Prompt != nil {
		return nil, &engine.Error{Kind: engine.KindOther, Op: op, Err: errors.New("exo serves chat completions only: a request with a completion Prompt (token ids or raw text) has no endpoint there; send Messages")}
	}
	payload, warns, err := body(req)
	if err != nil {
		return nil, &engine.Error{Kind: engine.KindOther, Op: op, Err: fmt.Errorf("encoding the request: %w", err)}
	}
	hreq, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(payload))
	if err != nil {
		return nil, &engine.Error{Kind: engine.KindOther, Op: op, Err: err}
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			hreq.Header.Add(k, v)
		}
	}
	// The request's id: the caller's X-Request-Id, else a new one (exo
	// ignores it; its own id is the response's, the command id).
	httpconn.SetRequestID(hreq.Header)
	hreq.Header.Set("Content-Type", "application/json")
	if req.Stream {
		hreq.Header.Set("Accept", "text/event-stream")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	return &prepared{c: c, req: req, op: op, hreq: hreq, warns: warns}, nil
}

// Send writes the prepared request and reads the whole response, as
// Complete does; a second Send returns engine.SentTwice's error.
func (p *prepared) Send(ctx context.Context) (engine.Result, error) {
	if !p.sent.CompareAndSwap(false, true) {
		return engine.Result{}, engine.SentTwice(p.op)
	}
	c, req, op := p.c, p.req, p.op
	var res engine.Result
	res.Warnings = p.warns

	res.RequestID = p.hreq.Header.Get(httpconn.RequestIDHeader)
	// Start is when the transport handed over the connection that carried
	// the request (the last attempt's, should a reused connection the
	// server had closed make it write the request again: httpconn.Do).
	resp, ex, err := httpconn.Do(ctx, c.bench, c.now, p.hreq)
	res.Trace.Start, res.Connect = ex.Start, ex.Connect
	if ex.Resent > 0 {
		res.Resent = ex.Resent
		res.Warnings = append(res.Warnings, httpconn.ResentWarning(ErrResent, ex.Resent))
	}
	if err != nil {
		if res.Trace.Start.IsZero() {
			// No connection was ever obtained: the trace starts at the
			// failure, so that it stays valid.
			res.Trace.Start = c.now()
		}
		res.Trace.End = c.now()
		return res, engine.Wrap(ctx, engine.KindReset, op, err)
	}
	defer resp.Body.Close()
	if res.Trace.Start.IsZero() {
		res.Trace.Start = c.now()
	}
	// The response's reads are stamped with their arrival where the
	// platform tells it; the headers' instant is their read's.
	read := httpconn.ReadClock(c.arrivals, c.now, ex.Conn, res.Trace.Start)
	res.Trace.Headers = read()
	res.ServerRequestID = httpconn.Printable(resp.Header.Get(httpconn.RequestIDHeader), 200)

	if resp.StatusCode >= 300 {
		// A redirect is refused before it is followed (the bench client's
		// CheckRedirect); a 3xx reaches here only without a Location.
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		res.Trace.End = c.now()
		return res, engine.NewStatusError(resp.StatusCode, data)
	}
	if req.Stream {
		err = c.readStream(ctx, op, read, req, resp, &res)
	} else {
		err = c.readBody(ctx, op, req, resp, &res)
	}
	if err != nil {
		return res, err
	}
	res.Warnings = append(res.Warnings, checkResult(req, &res)...)
	return res, nil
}

// completionWire is a chat completion or one streamed chunk.
type completionWire struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		FinishReason *string `json:"finish_reason"`
		Message      *struct {
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"message"`
		Delta *struct {
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
			ToolCalls        []struct {
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
	Usage           *engine.Usage      `json:"usage"`
	GenerationStats json.RawMessage    `json:"generation_stats"`
	PowerUsage      *engine.PowerUsage `json:"power_usage"`
}

// readBody reads a non-streaming answer.
func (c *Client) readBody(ctx context.Context, op string, req engine.Request, resp *http.Response, res *engine.Result) error {
	// A body past maxBodyBytes is no completion exo would send; reading it
	// whole would let a broken server exhaust the client's memory.
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	res.Trace.End = c.now()
	if err != nil {
		return engine.Wrap(ctx, engine.KindTruncated, op, err)
	}
	if len(data) > maxBodyBytes {
		return &engine.Error{Kind: engine.KindMalformed, Op: op,
			Err: fmt.Errorf("expected a completion body of at most %d bytes, found more", maxBodyBytes)}
	}
	if err := parseCompletion(data, res); err != nil {
		return err
	}
	return checkCompletion(req, res)
}

// checkCompletion checks a decoded non-streaming answer's server numbers
// (see checkUsage, checkStats, engine.CheckText) and bounds its kept text
// at engine.MaxKeptText. On an implausible number res keeps what the
// server sent (Usage, ServerStats) and the error says which number and
// its bound.
func checkCompletion(req engine.Request, res *engine.Result) error {
	var text engine.KeptText
	text.WriteString(res.Text)
	res.Text = text.String()
	if w := text.TruncatedWarning(); w != nil {
		res.Warnings = append(res.Warnings, w)
	}
	if res.Usage != nil {
		if err := checkUsage(req, res.Usage); err != nil {
			return err
		}
	}
	if res.ServerStats != nil {
		if err := checkStats(req, res.ServerStats); err != nil {
			return err
		}
	}
	return engine.CheckText(text.Received(), req.MaxTokens)
}

// checkUsage checks a usage block against the request: completion_tokens
// within engine.MaxPlausibleCount(MaxTokens), prompt_tokens within
// engine.MaxPlausiblePromptCount(Messages), total_tokens within their sum,
// cached_tokens within prompt_tokens, none negative.
func checkUsage(req engine.Request, u *engine.Usage) error {
	limit, promptLimit := engine.MaxPlausibleCount(req.MaxTokens), engine.MaxPlausiblePromptCount(req.Messages)
	if err := engine.CheckCount("usage.completion_tokens", u.CompletionTokens, limit); err != nil {
		return err
	}
	if err := engine.CheckCount("usage.prompt_tokens", u.PromptTokens, promptLimit); err != nil {
		return err
	}
	if err := engine.CheckCount("usage.total_tokens", u.TotalTokens, limit+promptLimit); err != nil {
		return err
	}
	if n, ok := u.Cached(); ok {
		return engine.CheckCount("usage.prompt_tokens_details.cached_tokens", n, u.PromptTokens)
	}
	return nil
}

// checkStats checks exo's generation_stats against the request:
// generation_tokens and prompt_tokens as checkUsage checks usage's, and
// prompt_tps and generation_tps within engine.CheckRate's bounds.
func checkStats(req engine.Request, st *engine.ServerStats) error {
	if err := engine.CheckCount("generation_stats.generation_tokens", st.GenerationTokens, engine.MaxPlausibleCount(req.MaxTokens)); err != nil {
		return err
	}
	if err := engine.CheckCount("generation_stats.prompt_tokens", st.PromptTokens, engine.MaxPlausiblePromptCount(req.Messages)); err != nil {
		return err
	}
	if err := engine.CheckRate("generation_stats.prompt_tps", st.PromptTPS); err != nil {
		return err
	}
	return engine.CheckRate("generation_stats.generation_tps", st.GenerationTPS)
}

// parseCompletion decodes a non-streaming chat completion (exo's
// BenchChatCompletionResponse or a plain one) into res.
func parseCompletion(data []byte, res *engine.Result) error {
	var w completionWire
	if err := json.Unmarshal(data, &w); err != nil {
		return &engine.Error{Kind: engine.KindMalformed, Op: "decode completion",
			Err: fmt.Errorf("expected a chat.completion JSON object, found %s: %w", excerpt(data), err)}
	}
	res.ResponseID = w.ID
	res.Model = w.Model
	if len(w.Choices) > 0 {
		ch := w.Choices[0]
		if ch.FinishReason != nil {
			res.FinishReason = *ch.FinishReason
		}
		if ch.Message != nil && ch.Message.Content != nil {
			res.Text = *ch.Message.Content
		}
	}
	res.Usage = w.Usage
	res.Power = w.PowerUsage
	if len(w.GenerationStats) > 0 {
		st, err := engine.ParseGenerationStats(w.GenerationStats)
		switch {
		case err == nil:
			res.ServerStats = &st
		case errors.Is(err, engine.ErrNoStats):
			// Null: no chunk carried stats (a cancelled request).
		default:
			return &engine.Error{Kind: engine.KindMalformed, Op: "decode generation_stats", Err: err}
		}
	}
	return nil
}

// readStream reads a Server-Sent Events answer.
//
// Every number the server reports is checked as it arrives: usage against
// checkUsage and, when it is cumulative, against its previous value
// (engine.CheckRising); generation_stats against checkStats; the tokens
// the stream has carried against engine.MaxPlausibleCount(MaxTokens); the
// text against engine.CheckText. The first implausible number ends the
// read with an error of kind engine.KindImplausibleUsage: res keeps what
// arrived until then (the offending usage or stats included), and its
// figures must not be used. At most engine.MaxKeptText bytes of text are
// kept, with a warning when more arrived.
//
// read stamps each read of the body (nil: c.now).
func (c *Client) readStream(ctx context.Context, op string, read func() time.Time, req engine.Request, resp *http.Response, res *engine.Result) error {
	if read == nil {
		read = c.now
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		res.Trace.End = c.now()
		return &engine.Error{Kind: engine.KindMalformed, Op: op,
			Err: fmt.Errorf("expected Content-Type text/event-stream for a streamed request, found %q: %s", resp.Header.Get("Content-Type"), excerpt(data))}
	}
	progress, _ := ctx.Value(prefillKey{}).(func(PrefillProgress))
	sr := engine.NewSSEReader(resp.Body, &engine.SSEOptions{Now: read})
	var (
		text        engine.KeptText
		lastUsage   = -1 // completion_tokens of the previous chunk's usage
		usageBroken bool // a token chunk came without usage
		streamed    int  // tokens of the chunks so far
		limit       = engine.MaxPlausibleCount(req.MaxTokens)
		dec         chunkDecoder
		ck          streamChunk
		ends        []int // text.Received() after each chunk
		field       bool  // a chunk carried delta.reasoning_content
	)
	// implausible ends the read on an implausible server number.
	implausible := func(at time.Time, err error) error {
		res.Trace.End = at
		res.Text = text.String()
		return err
	}
	for sr.Next() {
		ev := sr.Event()
		switch ev.Type {
		case engine.EventComment:
			name, payload := ev.Comment()
			switch string(name) {
			case "generation_stats":
				st, err := engine.ParseGenerationStats(payload)
				if err != nil {
					if errors.Is(err, engine.ErrNoStats) {
						continue
					}
					res.Trace.End = ev.At
					return &engine.Error{Kind: engine.KindMalformed, Op: "read SSE stream", Err: err}
				}
				res.ServerStats = &st
				if err := checkStats(req, &st); err != nil {
					return implausible(ev.At, err)
				}
			case "prefill_progress":
				p, err := parsePrefillProgress(payload)
				if err != nil {
					res.Warnings = append(res.Warnings, err)
					continue
				}
				if progress != nil {
					p.At = ev.At
					progress(p)
				}
			}
		case engine.EventError:
			res.Trace.End = ev.At
			se := ev.ServerError()
			return &engine.Error{Kind: engine.KindStreamError, Op: "read SSE stream", Err: se}
		case engine.EventData:
			if err := dec.decode(ev.Data, &ck); err != nil {
				res.Trace.End = ev.At
				return &engine.Error{Kind: engine.KindMalformed, Op: "read SSE stream",
					Err: fmt.Errorf("expected a chat.completion chunk, found %s: %w", excerpt(ev.Data), err)}
			}
			if res.ResponseID == "" {
				res.ResponseID = string(ck.id)
			}
			if len(ck.model) > 0 && string(ck.model) != res.Model {
				res.Model = string(ck.model)
			}
			if ck.usage != nil {
				if res.Usage == nil {
					res.Usage = new(engine.Usage)
				}
				*res.Usage = *ck.usage
				err := checkUsage(req, ck.usage)
				if err == nil && lastUsage >= 0 {
					err = engine.CheckRising("usage.completion_tokens", lastUsage, ck.usage.CompletionTokens)
				}
				if err != nil {
					return implausible(ev.At, err)
				}
			}
			if ck.choices == 0 {
				// A usage-only chunk: no token.
				if ck.usage != nil {
					lastUsage = ck.usage.CompletionTokens
				}
				continue
			}
			if len(ck.reasoning)+len(ck.content)+len(ck.tool) > 0 {
				text.Write(ck.reasoning)
				text.Write(ck.content)
				text.Write(ck.tool)
				if err := engine.CheckText(text.Received(), req.MaxTokens); err != nil {
					return implausible(ev.At, err)
				}
			}
			if ck.hasFinish && string(ck.finish) != res.FinishReason {
				res.FinishReason = string(ck.finish)
			}
			tokens := 1
			switch {
			case ck.usage == nil:
				usageBroken = true
			case !usageBroken && lastUsage >= 0:
				tokens = ck.usage.CompletionTokens - lastUsage
			case !usageBroken && len(res.Trace.Chunks) == 0:
				tokens = ck.usage.CompletionTokens
			}
			if ck.usage != nil {
				lastUsage = ck.usage.CompletionTokens
			}
			// Usage deltas are bounded by the checks above; a stream
			// without usage counts a token a chunk, and more chunks than
			// the request allows is as implausible as a count.
			if streamed += max(tokens, 1); streamed > limit {
				return implausible(ev.At, &engine.Error{Kind: engine.KindImplausibleUsage, Op: "check server counts",
					Err: fmt.Errorf("the stream carried %d tokens, more than the plausible bound %d for max_tokens %d", streamed, limit, req.MaxTokens)})
			}
			kind := ck.kind()
			field = field || kind == timing.Reasoning
			res.Trace.Chunks = append(res.Trace.Chunks, timing.Chunk{At: ev.At, Tokens: tokens, Kind: kind})
			ends = append(ends, text.Received())
		case engine.EventDone:
			res.Trace.End = ev.At
		}
	}
	res.Text = text.String()
	if w := text.TruncatedWarning(); w != nil {
		res.Warnings = append(res.Warnings, w)
	}
	if err := sr.Err(); err != nil {
		res.Trace.End = c.now()
		return engine.Wrap(ctx, engine.KindTruncated, "read SSE stream", err)
	}
	if res.Trace.End.IsZero() {
		res.Trace.End = c.now()
	}
	// The bench path runs no output parser: a thinking model's block is
	// in the content, its markers visible text.
	tags := false
	if !field && !c.noThinkTags {
		var warns []error
		res.Trace.Chunks, warns = thinktags.Classify(res.Trace.Chunks, res.Text, text.Received(), ends, ErrEstimatedTokens)
		res.Warnings = append(res.Warnings, warns...)
		for _, ch := range res.Trace.Chunks {
			tags = tags || ch.Kind == timing.Reasoning
		}
	}
	res.Warnings = append(res.Warnings, placeUnstreamed(res, tags)...)
	return nil
}

// placeUnstreamed places the tokens the final usage counts beyond the
// stream's chunks (exo writes a chunk per token, but for what its parsers
// swallow: apply_all_parsers in
// src/exo/worker/runner/llm_inference/model_output_parsers.py) and
// returns the warnings that say so. They go to the stream's tool-call
// chunk, when it has one: parse_tool_calls holds a call's tokens back and
// sends the call as one ToolCallChunk. Else, on a stream with thinking,
// they are hidden (Trace.HiddenTokens): parse_thinking_models swallows the
// think_start and think_end tags, parse_gpt_oss the harmony headers.
// The reasoning chunks' tokens are then compared with the usage's
// completion_tokens_details.reasoning_tokens, exo's count of is_thinking
// tokens (count_reasoning_tokens), but for a reasoning count of 0 when
// tags is true: the reasoning was read from a <think> block in the
// content, which a server running no parser never counts.
func placeUnstreamed(res *engine.Result, tags bool) []error {
	u := res.Usage
	if u == nil || len(res.Trace.Chunks) == 0 {
		return nil
	}
	var warns []error
	chunks := res.Trace.Chunks
	tool, thinking := -1, false
	for i, ch := range chunks {
		if ch.Kind == timing.ToolCall {
			tool = i
		}
		thinking = thinking || ch.Kind == timing.Reasoning
	}
	if d := u.CompletionTokens - res.Trace.Tokens(); d > 0 {
		switch {
		case tool >= 0:
			chunks[tool].Tokens += d
		case thinking:
			res.Trace.HiddenTokens = d
			warns = append(warns, fmt.Errorf("%w: usage counts %d completion tokens, the stream's chunks %d: the %d others are the tags and headers exo's parsers swallow on a stream with thinking; Trace.HiddenTokens holds them, out of the chunks' counts and the rates measured from them",
				ErrHiddenTokens, u.CompletionTokens, res.Trace.Tokens(), d))
		}
	}
	if r := u.ReasoningTokens; r != nil && !(tags && *r == 0) {
		n, first := 0, -1
		for _, ch := range chunks {
			if ch.Kind == timing.Reasoning {
				if first < 0 {
					first = ch.Tokens
				}
				n += ch.Tokens
			}
		}
		if n < *r || n-*r > max(first-1, 0) {
			warns = append(warns, fmt.Errorf("%w: the stream's reasoning chunks carried %d tokens, usage.completion_tokens_details.reasoning_tokens says %d",
				ErrReasoningTokens, n, *r))
		}
	}
	return warns
}

// parsePrefillProgress decodes a ": prefill_progress" payload, the tagged
// {"PrefillProgressChunk": {"processed_tokens", "total_tokens"}}.
func parsePrefillProgress(payload []byte) (PrefillProgress, error) {
	tag, body, err := untag(payload)
	if err != nil {
		return PrefillProgress{}, fmt.Errorf("exo: prefill_progress: %w", err)
	}
	var w struct {
		Processed  *int `json:"processed_tokens"`
		Processed2 *int `json:"processedTokens"`
		Total      *int `json:"total_tokens"`
		Total2     *int `json:"totalTokens"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return PrefillProgress{}, fmt.Errorf("exo: prefill_progress %s: %w", tag, err)
	}
	return PrefillProgress{Processed: intOf(w.Processed, w.Processed2), Total: intOf(w.Total, w.Total2)}, nil
}

// checkResult returns the quality warnings of a finished request: missing
// statistics, a generation rate exo could not define, and token counts
// that disagree with each other or with the request.
func checkResult(req engine.Request, res *engine.Result) []error {
	var warns []error
	st := res.ServerStats
	if req.IgnoreEOS && st == nil {
		warns = append(warns, fmt.Errorf("exo: bench response without generation_stats: %w", engine.ErrNoStats))
	}
	if st != nil && st.GenerationTokens < 2 && st.GenerationTPS == 0 {
		warns = append(warns, fmt.Errorf("exo: generation_tps is 0 because %d generated token(s) leave no interval: the rate is undefined, not 0", st.GenerationTokens))
	}
	streamed := res.Trace.Tokens() + res.Trace.HiddenTokens
	if req.Stream && st != nil && streamed != st.GenerationTokens {
		warns = append(warns, fmt.Errorf("exo: the stream carried %d token chunk(s), generation_stats says %d generated tokens", streamed, st.GenerationTokens))
	}
	if req.Stream && res.Usage != nil && streamed != res.Usage.CompletionTokens {
		warns = append(warns, fmt.Errorf("exo: the stream carried %d token chunk(s), usage says %d completion tokens", streamed, res.Usage.CompletionTokens))
	}
	if req.IgnoreEOS && req.MaxTokens > 0 && st != nil && st.GenerationTokens != req.MaxTokens && res.FinishReason != "stop" {
		warns = append(warns, fmt.Errorf("exo: bench request asked for %d tokens, generation_stats says %d were generated (finish_reason %q)",
			req.MaxTokens, st.GenerationTokens, res.FinishReason))
	}
	return warns
}
