package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"sync/atomic"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/httpconn"
)

// The endpoints under the server root: chat completions, and text
// completions for a request with a Prompt.
const (
	chatPath        = "/v1/chat/completions"
	completionsPath = "/v1/completions"
)

// Complete sends req to /v1/chat/completions, or to /v1/completions when
// req.Prompt is set, and reads the whole response. It implements
// engine.Engine.
//
// A streaming request's trace has one chunk per chunk that carried
// generated text in choice 0, and one per kind (reasoning, content, tool
// calls) of a chunk that carried several, each with its kind and token
// count (see the package doc for how they are obtained), and the tokens
// the server counted and never streamed in HiddenTokens; a non-streaming request's
// trace has Start, Headers and End only. The request is never retried
// (but for a request on a reused connection the server had closed: see
// the package doc). Its
// errors are an *engine.StatusError for a status of 400 or more, else an
// *engine.Error: KindConnect or KindReset before the response,
// KindTruncated for a stream without [DONE], KindMalformed for a chunk
// that is not JSON or a streaming response that is neither
// text/event-stream nor JSON, KindStreamError for an error object in a stream (or in
// a 200 body), KindCanceled or KindTimeout from ctx. The Result returned
// with an error holds what was measured until then. Complete is Prepare
// followed by Send.
func (c *Client) Complete(ctx context.Context, req engine.Request) (engine.Result, error) {
	p, err := c.prepare(req)
	if err != nil {
		return engine.Result{}, err
	}
	return p.Send(ctx)
}

// Prepare validates req, encodes its body and builds its HTTP request
// (headers, credentials) without sending anything, so that a burst's
// requests are ready before it is released; the Prepared's Send writes it
// and reads the answer as Complete does. It implements engine.Preparer.
// Its errors are Complete's before anything is sent: an *engine.Error of
// kind KindOther for negative or inconsistent token counts or a body that
// does not encode (an Extra value json.Marshal refuses). ctx is not kept.
func (c *Client) Prepare(_ context.Context, req engine.Request) (engine.Prepared, error) {
	p, err := c.prepare(req)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// prepared is a chat completion request ready to send.
type prepared struct {
	c     *Client
	req   engine.Request // what the answer is checked against
	op    string
	hreq  *http.Request // built without a context: Send gives it its own
	warns []error
	sent  atomic.Bool
}

// prepare does Complete's client-side work.
func (c *Client) prepare(req engine.Request) (*prepared, error) {
	// The request's id: the caller's X-Request-Id, else a new one, sent
	// as the header (vLLM takes it as its own id) and, to SGLang, as the
	// body's rid, which it takes instead.
	header := req.Header.Clone()
	if header == nil {
		header = http.Header{}
	}
	id := httpconn.SetRequestID(header)
	body, warns, err := c.requestBody(req, id)
	if err != nil {
		return nil, err
	}
	accept := "application/json"
	if req.Stream {
		accept = "text/event-stream"
	}
	path := chatPath
	if req.Prompt != nil {
		path = completionsPath
	}
	hreq, err := c.conn.NewRequest(context.Background(), http.MethodPost, path, body, accept, header)
	if err != nil {
		return nil, &engine.Error{Kind: engine.KindOther, Op: "build request", Err: c.conn.Redact(err)}
	}
	return &prepared{c: c, req: req, op: "POST " + hreq.URL.String(), hreq: hreq, warns: warns}, nil
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

	resp, read, err := c.conn.Send(ctx, op, p.hreq, &res)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()

	if resp.StatusCode >= 300 {
		// A redirect is refused before it is followed (CheckRedirect); a
		// 3xx reaches here only without a Location, and is no success.
		b, rerr := io.ReadAll(io.LimitReader(resp.Body, min(c.maxBody, httpconn.ErrorBodyBytes)))
		res.Trace.End = c.conn.Now()
		se := c.conn.StatusError(resp.StatusCode, b)
		c.conn.Log.LogAttrs(ctx, slog.LevelDebug, "openai: error status", slog.String("op", op), slog.Int("status", resp.StatusCode))
		if rerr != nil {
			c.conn.Log.LogAttrs(ctx, slog.LevelDebug, "openai: reading error body", slog.String("error", c.conn.Redact(rerr).Error()))
		}
		return res, se
	}

	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case req.Stream && ct != "application/json" && ct != "text/event-stream" && ct != "":
		// A dashboard page, a proxy's login form: not a stream. (No
		// Content-Type at all is read as a stream.)
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		res.Trace.End = c.conn.Now()
		err = &engine.Error{Kind: engine.KindMalformed, Op: "read response",
			Err: fmt.Errorf("openai: Content-Type %q, want text/event-stream; body starts %q", ct, httpconn.Excerpt(c.conn.RedactBytes(b)))}
	case req.Stream && ct != "application/json":
		err = c.readStream(ctx, resp.Body, read, req, &res)
	default:
		if req.Stream {
			res.Warnings = append(res.Warnings, fmt.Errorf("%w: Content-Type %q, want text/event-stream", ErrNotStreamed, ct))
		}
		err = c.readBody(ctx, resp.Body, req, &res)
		if err == nil && res.ServerStats == nil {
			st, warns, terr := tgiStats(resp.Header, req.MaxTokens)
			res.ServerStats, err = st, terr
			res.Warnings = append(res.Warnings, warns...)
		}
	}
	if err == nil {
		if w := modelWarning(req, res); w != nil {
			res.Warnings = append(res.Warnings, w)
		}
	}
	err = c.conn.Finish(ctx, "completion", op, resp, req.Stream, &res, err)
	return res, err
}

// modelWarning is the warning of an answer whose model is not the one
// the request named, nil when they agree or either is unknown. A server
// that serves one model under any name (llama.cpp) answers with its own:
// the results would otherwise carry the name asked for.
func modelWarning(req engine.Request, res engine.Result) error {
	if req.Model == "" || res.Model == "" || res.Model == req.Model {
		return nil
	}
	return fmt.Errorf("%w: the request named model %q, the server answered as %q (a server with one model, such as llama.cpp, serves it under any name)",
		ErrModelMismatch, req.Model, res.Model)
}

// requestBody encodes req as a chat completions body, or a completions
// body when req.Prompt is set, with the warnings of what the flavour left
// out; id is the request's id, sent as SGLang's rid.
func (c *Client) requestBody(req engine.Request, id string) ([]byte, []error, error) {
	if req.Prompt != nil {
		if err := req.Prompt.Check(); err != nil {
			return nil, nil, &engine.Error{Kind: engine.KindOther, Op: "build request", Err: fmt.Errorf("openai: %w", err)}
		}
		if len(req.Messages) > 0 {
			return nil, nil, &engine.Error{Kind: engine.KindOther, Op: "build request",
				Err: fmt.Errorf("openai: the request has a completion Prompt and %d Messages: want one or the other", len(req.Messages))}
		}
	}
	if req.MaxTokens < 0 || req.MinTokens < 0 {
		return nil, nil, &engine.Error{Kind: engine.KindOther, Op: "build request",
			Err: fmt.Errorf("openai: MaxTokens=%d and MinTokens=%d, want both ≥ 0", req.MaxTokens, req.MinTokens)}
	}
	if req.MaxTokens > 0 && req.MinTokens > req.MaxTokens {
		return nil, nil, &engine.Error{Kind: engine.KindOther, Op: "build request",
			Err: fmt.Errorf("openai: MinTokens=%d exceeds MaxTokens=%d", req.MinTokens, req.MaxTokens)}
	}
	fl := c.opts.Flavour
	strict := fl == FlavourOpenAI
	noBench := strict || fl == FlavourOllama
	var warns []error
	unsupported := func(field string) {
		warns = append(warns, fmt.Errorf("%w: the request asks for %s, which flavour %q does not take; it was not sent", ErrUnsupported, field, fl))
	}

	m := map[string]any{"stream": req.Stream}
	switch p := req.Prompt; {
	case p == nil:
		msgs := req.Messages
		if msgs == nil {
			msgs = []engine.Message{}
		}
		m["messages"] = msgs
	case len(p.Tokens) > 0:
		m["prompt"] = p.Tokens
	default:
		m["prompt"] = p.Text
	}
	if req.Model != "" {
		m["model"] = req.Model
	}
	if fl == FlavourSGLang && id != "" {
		m["rid"] = id
	}
	if req.MaxTokens > 0 {
		m["max_tokens"] = req.MaxTokens
	}
	if req.Stream && !c.opts.NoStreamUsage {
		so := map[string]bool{"include_usage": true}
		if !c.opts.NoContinuousUsage && !strict && fl != FlavourLlamaCpp && fl != FlavourOllama {
			so["continuous_usage_stats"] = true
		}
		m["stream_options"] = so
	}
	if req.Temperature != nil {
		m["temperature"] = *req.Temperature
	}
	if req.TopP != nil {
		m["top_p"] = *req.TopP
	}
	if req.TopK != nil {
		if strict {
			unsupported("top_k")
		} else {
			m["top_k"] = *req.TopK
		}
	}
	if req.Seed != nil {
		m["seed"] = *req.Seed
	}
	if len(req.Stop) > 0 {
		m["stop"] = req.Stop
	}
	if req.IgnoreEOS {
		if noBench {
			unsupported("ignore_eos")
		} else {
			m["ignore_eos"] = true
		}
	}
	if req.MinTokens > 0 {
		if noBench {
			unsupported("min_tokens")
		} else {
			m["min_tokens"] = req.MinTokens
		}
	}
	if th := req.Thinking; th != nil {
		if th.Budget < 0 {
			return nil, nil, &engine.Error{Kind: engine.KindOther, Op: "build request",
				Err: fmt.Errorf("openai: Thinking.Budget=%d, want ≥ 0 (0 sets none)", th.Budget)}
		}
		thinkingFields(th, fl, m, unsupported)
	}
	for k, v := range req.Extra {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, nil, &engine.Error{Kind: engine.KindOther, Op: "build request",
			Err: fmt.Errorf("openai: encoding the request body (an Extra value?): %w", err)}
	}
	return b, warns, nil
}

// thinkingFields writes the thinking controls th asks for in the fields
// flavour fl takes (see the package doc), and calls unsupported for each
// it does not take:
//
//   - chat_template_kwargs = th.TemplateVars() (enable_thinking, thinking,
//     reasoning_effort), which vLLM, SGLang and llama.cpp pass to the chat
//     template; not to Ollama (which renders its own templates) nor to a
//     strict server;
//   - reasoning_effort = th.Effort, top-level: vLLM (gpt-oss's harmony
//     path reads it, not the template), SGLang, llama.cpp, Ollama (which
//     maps it to its think level) and OpenAI; to Ollama, Enabled false is
//     reasoning_effort "none", its way to turn thinking off;
//   - the budget th.Budget: vLLM's thinking_token_budget, llama.cpp's
//     thinking_budget_tokens, both to a generic server (each ignores the
//     other's); SGLang, Ollama and OpenAI take none.
func thinkingFields(th *engine.Thinking, fl Flavour, m map[string]any, unsupported func(string)) {
	switch fl {
	case FlavourOllama:
		switch {
		case th.Effort != "":
			m["reasoning_effort"] = th.Effort
		case th.Enabled != nil && !*th.Enabled:
			m["reasoning_effort"] = "none"
		}
	case FlavourOpenAI:
		if th.Enabled != nil {
			unsupported("chat_template_kwargs (Thinking.Enabled)")
		}
		if th.Effort != "" {
			m["reasoning_effort"] = th.Effort
		}
	default:
		if vars := th.TemplateVars(); vars != nil {
			m["chat_template_kwargs"] = vars
		}
		if th.Effort != "" {
			m["reasoning_effort"] = th.Effort
		}
	}
	if th.Budget > 0 {
		switch fl {
		case FlavourVLLM:
			m["thinking_token_budget"] = th.Budget
		case FlavourLlamaCpp:
			m["thinking_budget_tokens"] = th.Budget
		case FlavourGeneric:
			m["thinking_token_budget"] = th.Budget
			m["thinking_budget_tokens"] = th.Budget
		default:
			unsupported("a thinking budget (Thinking.Budget)")
		}
	}
}

// completionWire is a non-streaming chat completion, or text completion.
type completionWire struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Choices []choiceWire    `json:"choices"`
	Usage   *usageWire      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

// readBody reads a non-streaming response into res.
func (c *Client) readBody(ctx context.Context, r io.Reader, req engine.Request, res *engine.Result) error {
	b, err := io.ReadAll(io.LimitReader(r, c.maxBody+1))
	res.Trace.End = c.conn.Now()
	if err != nil {
		// A body cut by the request's deadline is a timeout, not a
		// truncation.
		return engine.Wrap(ctx, engine.KindTruncated, "read body", err)
	}
	if int64(len(b)) > c.maxBody {
		return &engine.Error{Kind: engine.KindMalformed, Op: "read body",
			Err: fmt.Errorf("openai: response body exceeds %d bytes (MaxResponseBytes)", c.maxBody)}
	}
	var w completionWire
	if err := json.Unmarshal(b, &w); err != nil {
		what := "chat.completion"
		if req.Prompt != nil {
			what = "text_completion"
		}
		return &engine.Error{Kind: engine.KindMalformed, Op: "decode body",
			Err: fmt.Errorf("openai: want a %s JSON object, found %q: %w", what, httpconn.Excerpt(c.conn.RedactBytes(b)), err)}
	}
	if isError(w.Error) {
		return &engine.Error{Kind: engine.KindStreamError, Op: "decode body",
			Err: streamError(c.conn.RedactBytes(b))}
	}
	res.ResponseID, res.Model = w.ID, w.Model
	if u := w.Usage.usage(); u != nil {
		st := newStreamState(req)
		if err := st.checkUsage(u); err != nil {
			return err
		}
		res.Usage = u
	}
	if stats, err := parseTimings(b, req.MaxTokens); err != nil {
		return err
	} else if stats != nil {
		res.ServerStats = stats
	}
	for _, ch := range w.Choices {
		if ch.Index != 0 {
			continue
		}
		if req.Prompt != nil {
			if ch.Text != nil {
				res.Text = *ch.Text
			}
		} else {
			res.Text = ch.Message.text()
		}
		if ch.FinishReason != nil {
			res.FinishReason = *ch.FinishReason
		}
	}
	res.Warnings = append(res.Warnings, shortWarnings(req, res)...)
	return nil
}

// shortWarnings checks bench semantics and a token-id prompt's length
// against the server's counts.
//
// With IgnoreEOS the server should generate exactly MaxTokens tokens; with
// MinTokens at least that many. The count is usage.completion_tokens; with
// no usage there is nothing to check. A prompt of token ids is exactly
// that many tokens: a usage.prompt_tokens that differs gets a Warning
// wrapping ErrPromptTokens.
func shortWarnings(req engine.Request, res *engine.Result) []error {
	if res.Usage == nil {
		return nil
	}
	n := res.Usage.CompletionTokens
	var w []error
	if p := req.Prompt; p != nil && len(p.Tokens) > 0 && res.Usage.PromptTokens != len(p.Tokens) {
		w = append(w, fmt.Errorf("%w: the prompt is %d token ids, the server counted usage.prompt_tokens = %d",
			ErrPromptTokens, len(p.Tokens), res.Usage.PromptTokens))
	}
	if req.IgnoreEOS && req.MaxTokens > 0 && n < req.MaxTokens {
		w = append(w, fmt.Errorf("%w: ignore_eos with max_tokens=%d, the server generated %d (finish_reason %q); does it honour ignore_eos?",
			ErrShortGeneration, req.MaxTokens, n, res.FinishReason))
	}
	if req.MinTokens > 0 && n < req.MinTokens {
		w = append(w, fmt.Errorf("%w: min_tokens=%d, the server generated %d (finish_reason %q)",
			ErrShortGeneration, req.MinTokens, n, res.FinishReason))
	}
	return w
}

// isError reports whether a JSON "error" member holds an error (present
// and not null).
func isError(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}
