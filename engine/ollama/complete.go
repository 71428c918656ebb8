package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"sync/atomic"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/httpconn"
)

// chatPath is Ollama's native chat endpoint under the server root.
const chatPath = "/api/chat"

// Complete sends req to /api/chat and reads the whole answer. It
// implements engine.Engine.
//
// A streaming request's trace has one chunk per NDJSON line that carried
// content, stamped with the arrival of its last byte, each of the tokens
// the package doc's rule gives it; a non-streaming request's trace has
// Start, Headers and End only. The request is never retried (but for a
// request on a reused connection the server had closed before any byte of
// an answer, which goes out again on another: Result.Resent). Its errors
// are an *engine.StatusError for a status of 400 or more (Ollama's
// {"error": "..."} message in Message), else an *engine.Error:
// KindConnect or KindReset before the response, KindTruncated for a
// stream without its final object, KindMalformed for a line that is not a
// JSON object, a line over Options.MaxLineBytes or a content type that is
// not Ollama's, KindStreamError for an {"error": ...} line after the 200,
// KindImplausibleUsage for counts or durations that cannot be true,
// KindCanceled or KindTimeout from ctx. The Result returned with an error
// holds what was measured until then. Complete is Prepare followed by
// Send.
func (c *Client) Complete(ctx context.Context, req engine.Request) (engine.Result, error) {
	p, err := c.prepare(req)
	if err != nil {
		return engine.Result{}, err
	}
	return p.Send(ctx)
}

// Prepare validates req, encodes its body and builds its HTTP request
// without sending anything; the Prepared's Send writes it and reads the
// answer as Complete does. It implements engine.Preparer. Its errors are
// Complete's before anything is sent: an *engine.Error of kind KindOther
// for a text completion (Request.Prompt, which /api/chat does not take),
// a negative MaxTokens or MinTokens, or a body that does not encode.
func (c *Client) Prepare(_ context.Context, req engine.Request) (engine.Prepared, error) {
	p, err := c.prepare(req)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// prepared is a chat request ready to send.
type prepared struct {
	c     *Client
	req   engine.Request
	op    string
	hreq  *http.Request // built without a context: Send gives it its own
	warns []error
	sent  atomic.Bool
}

func (c *Client) prepare(req engine.Request) (*prepared, error) {
	body, warns, err := requestBody(req)
	if err != nil {
		return nil, err
	}
	accept := "application/json"
	if req.Stream {
		accept = "application/x-ndjson" // as Ollama's own client asks
	}
	// The request's id: the caller's X-Request-Id, else a new one (Ollama
	// ignores it; it is the row's key for the client's side).
	header := req.Header.Clone()
	if header == nil {
		header = http.Header{}
	}
	httpconn.SetRequestID(header)
	hreq, err := c.conn.NewRequest(context.Background(), http.MethodPost, chatPath, body, accept, header)
	if err != nil {
		return nil, &engine.Error{Kind: engine.KindOther, Op: "build request", Err: c.conn.Redact(err)}
	}
	return &prepared{c: c, req: req, op: "POST " + hreq.URL.String(), hreq: hreq, warns: warns}, nil
}

// requestBody encodes req as an /api/chat body (api.ChatRequest), with
// the warnings of what Ollama cannot take.
func requestBody(req engine.Request) ([]byte, []error, error) {
	if req.Prompt != nil {
		return nil, nil, &engine.Error{Kind: engine.KindOther, Op: "build request",
			Err: errors.New("ollama: the request is a text completion (Request.Prompt); the adapter speaks /api/chat only: want Messages")}
	}
	if req.MaxTokens < 0 || req.MinTokens < 0 {
		return nil, nil, &engine.Error{Kind: engine.KindOther, Op: "build request",
			Err: fmt.Errorf("ollama: MaxTokens=%d and MinTokens=%d, want both ≥ 0", req.MaxTokens, req.MinTokens)}
	}
	var warns []error
	msgs := req.Messages
	if msgs == nil {
		msgs = []engine.Message{}
	}
	// "stream" is always written: Ollama streams when it is left out.
	m := map[string]any{"model": req.Model, "messages": msgs, "stream": req.Stream}
	opts := map[string]any{}
	if req.MaxTokens > 0 {
		opts["num_predict"] = req.MaxTokens
	}
	if req.Temperature != nil {
		opts["temperature"] = *req.Temperature
	}
	if req.TopP != nil {
		opts["top_p"] = *req.TopP
	}
	if req.TopK != nil {
		opts["top_k"] = *req.TopK
	}
	if req.Seed != nil {
		opts["seed"] = *req.Seed
	}
	if len(req.Stop) > 0 {
		opts["stop"] = req.Stop
	}
	if len(opts) > 0 {
		m["options"] = opts
	}
	if req.IgnoreEOS {
		warns = append(warns, fmt.Errorf("%w: the request asks for IgnoreEOS; Ollama has no ignore_eos, so generation may end at an end of sequence before max_tokens", ErrUnsupported))
	}
	if req.MinTokens > 0 {
		warns = append(warns, fmt.Errorf("%w: the request asks for MinTokens=%d; Ollama has no min_tokens, it was not sent", ErrUnsupported, req.MinTokens))
	}
	if th := req.Thinking; th != nil {
		think, w, err := thinkValue(th)
		if err != nil {
			return nil, nil, err
		}
		if think != nil {
			m["think"] = think
		}
		warns = append(warns, w...)
	}
	for k, v := range req.Extra {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, nil, &engine.Error{Kind: engine.KindOther, Op: "build request",
			Err: fmt.Errorf("ollama: encoding the request body (an Extra value?): %w", err)}
	}
	return b, warns, nil
}

// thinkValue returns api.ChatRequest's think for th (api/types.go,
// ThinkValue): the effort ("low", "medium", "high" or "max") when set,
// unless Enabled is false, which is false; else Enabled; nil when th asks
// for neither. A budget, which Ollama has no parameter for, is a warning
// wrapping ErrUnsupported; an effort Ollama would refuse is an error.
func thinkValue(th *engine.Thinking) (any, []error, error) {
	var warns []error
	if th.Budget != 0 {
		warns = append(warns, fmt.Errorf("%w: the request asks for a thinking budget of %d tokens; Ollama has none, it was not sent", ErrUnsupported, th.Budget))
	}
	switch {
	case th.Enabled != nil && !*th.Enabled:
		return false, warns, nil
	case th.Effort != "":
		switch th.Effort {
		case "low", "medium", "high", "max":
			return th.Effort, warns, nil
		}
		return nil, nil, &engine.Error{Kind: engine.KindOther, Op: "build request",
			Err: fmt.Errorf("ollama: Thinking.Effort %q, want low, medium, high or max (Ollama's think levels)", th.Effort)}
	case th.Enabled != nil:
		return true, warns, nil
	}
	return nil, warns, nil
}

// Send writes the prepared request and reads the whole answer, as
// Complete does; a second Send returns engine.SentTwice's error.
func (p *prepared) Send(ctx context.Context) (engine.Result, error) {
	if !p.sent.CompareAndSwap(false, true) {
		return engine.Result{}, engine.SentTwice(p.op)
	}
	c, req, op := p.c, p.req, p.op
	var res engine.Result
	res.Warnings = append([]error(nil), p.warns...)

	resp, read, err := c.conn.Send(ctx, op, p.hreq, &res)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()

	if resp.StatusCode >= 300 {
		b, rerr := io.ReadAll(io.LimitReader(resp.Body, min(c.maxBody, httpconn.ErrorBodyBytes)))
		res.Trace.End = c.conn.Now()
		if rerr != nil {
			c.conn.Log.LogAttrs(ctx, slog.LevelDebug, "ollama: reading error body", slog.String("error", c.conn.Redact(rerr).Error()))
		}
		return res, c.conn.StatusError(resp.StatusCode, b)
	}

	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case ct != "" && ct != "application/json" && ct != "application/x-ndjson":
		// A proxy's login page, a dashboard: not Ollama's answer.
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		res.Trace.End = c.conn.Now()
		err = &engine.Error{Kind: engine.KindMalformed, Op: "read response",
			Err: fmt.Errorf("ollama: Content-Type %q, want application/x-ndjson or application/json; body starts %q", ct, httpconn.Excerpt(c.conn.RedactBytes(b)))}
	case req.Stream:
		// Ollama answers a streaming request with application/x-ndjson,
		// or, for a request without messages, with one JSON object
		// (application/json): both are read as lines.
		err = c.readStream(ctx, resp.Body, read, req, &res)
	default:
		err = c.readBody(ctx, resp.Body, req, &res)
	}
	err = c.conn.Finish(ctx, "chat", op, resp, req.Stream, &res, err)
	return res, err
}

// readBody reads a non-streaming answer, one api.ChatResponse, into res.
func (c *Client) readBody(ctx context.Context, r io.Reader, req engine.Request, res *engine.Result) error {
	b, err := io.ReadAll(io.LimitReader(r, c.maxBody+1))
	res.Trace.End = c.conn.Now()
	if err != nil {
		return engine.Wrap(ctx, engine.KindTruncated, "read body", err)
	}
	if int64(len(b)) > c.maxBody {
		return &engine.Error{Kind: engine.KindMalformed, Op: "read body",
			Err: fmt.Errorf("ollama: response body exceeds %d bytes (MaxResponseBytes)", c.maxBody)}
	}
	var w chatWire
	if err := decodeObject(b, &w); err != nil {
		return &engine.Error{Kind: engine.KindMalformed, Op: "decode body",
			Err: fmt.Errorf("ollama: want an /api/chat JSON object, found %q: %w", httpconn.Excerpt(c.conn.RedactBytes(b)), err)}
	}
	if isError(w.Error) {
		err := c.streamError(b).(*engine.Error)
		err.Op = "decode body"
		return err
	}
	if !w.Done {
		return &engine.Error{Kind: engine.KindMalformed, Op: "decode body",
			Err: fmt.Errorf(`ollama: a non-streaming answer with "done": false, want the final object (%q)`, httpconn.Excerpt(c.conn.RedactBytes(b)))}
	}
	res.Model = w.Model
	if w.Message != nil {
		var kept engine.KeptText
		kept.WriteString(w.Message.Content)
		if err := engine.CheckText(kept.Received(), req.MaxTokens); err != nil {
			return err
		}
		res.Text = kept.String()
		if kept.Truncated() {
			res.Warnings = append(res.Warnings, fmt.Errorf("%w: the server sent %d bytes of text; the result keeps the first %d (engine.MaxKeptText)",
				ErrTextCut, kept.Received(), len(res.Text)))
		}
	}
	return c.finish(req, &w, res)
}
