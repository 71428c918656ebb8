package openai

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/httpconn"
)

// modelsPath is the model list endpoint under the server root.
const modelsPath = "/v1/models"

// modelListWire is the body of GET /v1/models.
type modelListWire struct {
	Data []modelWire `json:"data"`
}

// modelWire is one model as the servers describe it: max_model_len is
// vLLM's and SGLang's context window, meta.n_ctx_train llama.cpp's
// training context.
type modelWire struct {
	ID          string `json:"id"`
	OwnedBy     string `json:"owned_by"`
	MaxModelLen int    `json:"max_model_len"`
	Meta        *struct {
		NCtxTrain int `json:"n_ctx_train"`
	} `json:"meta"`
}

// Models lists the models the server serves (GET /v1/models). It
// implements engine.ModelLister. ContextLength is vLLM's and SGLang's
// max_model_len, else llama.cpp's meta.n_ctx_train, else 0.
//
// As a control-plane call it is retried after connection errors and 5xx
// responses (Options.Retries times, backoff from Options.RetryWait, a
// Retry-After capped at httpsafe.MaxRetryAfter); a 4xx is returned at once
// as an *engine.StatusError. Options.Timeout, when set, bounds the whole
// call, waits included; a Retry-After that would outlast the call's
// deadline ends it at once. It follows redirects within the server's
// origin only. The error after the last attempt says how many were made
// and wraps the last cause.
func (c *Client) Models(ctx context.Context) ([]engine.Model, error) {
	b, err := c.conn.Get(ctx, modelsPath)
	if err != nil {
		return nil, err
	}
	var w modelListWire
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, &engine.Error{Kind: engine.KindMalformed, Op: "GET " + c.conn.Base + modelsPath,
			Err: c.conn.Redact(fmt.Errorf("openai: want {\"data\": [models]}, found %q: %w", httpconn.Excerpt(c.conn.RedactBytes(b)), err))}
	}
	out := make([]engine.Model, 0, len(w.Data))
	for _, m := range w.Data {
		em := engine.Model{ID: m.ID, OwnedBy: m.OwnedBy, ContextLength: m.MaxModelLen}
		if em.ContextLength == 0 && m.Meta != nil {
			em.ContextLength = m.Meta.NCtxTrain
		}
		out = append(out, em)
	}
	return out, nil
}

// Prewarm opens n keep-alive connections to the server and leaves them idle
// in the client's pool, so that the next n concurrent Complete calls write
// their requests at once instead of dialing. It implements
// engine.Prewarmer.
//
// It sends n GET /v1/models at once and holds every response unread until
// all n have answered, so that no two share a connection; then it drains
// and closes the bodies, which returns the connections to the pool. The
// status does not matter (a server without /v1/models still keeps the
// connection). n must not exceed Options.MaxBurst, or the pool would close
// the surplus. Prewarm is not retried; its error says how many of the n
// connections it managed.
func (c *Client) Prewarm(ctx context.Context, n int) error {
	if n <= 0 {
		return nil
	}
	if n > c.burst {
		return fmt.Errorf("openai: Prewarm(%d): the client keeps at most %d idle connections (Options.MaxBurst)", n, c.burst)
	}
	okN, fresh, first := c.conn.Prewarm(ctx, n, modelsPath)
	c.conn.Log.DebugContext(ctx, "openai: prewarm", "want", n, "open", okN, "new", fresh)
	if first != nil {
		return c.conn.Redact(engine.Wrap(ctx, engine.KindConnect, "prewarm "+c.conn.Base+modelsPath,
			fmt.Errorf("openai: opened %d of %d connections: %w", okN, n, first)))
	}
	return nil
}
