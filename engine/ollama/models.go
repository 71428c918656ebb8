package ollama

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/httpconn"
)

// The control-plane endpoints under the server root.
const (
	tagsPath    = "/api/tags"
	versionPath = "/api/version"
)

// tagsWire is the body of GET /api/tags (api.ListResponse).
type tagsWire struct {
	Models []struct {
		Name    string `json:"name"`
		Model   string `json:"model"`
		Details struct {
			Family            string `json:"family"`
			ParameterSize     string `json:"parameter_size"`
			QuantizationLevel string `json:"quantization_level"`
		} `json:"details"`
	} `json:"models"`
}

// Models lists the models the server has pulled (GET /api/tags). It
// implements engine.ModelLister. ID is the model's name with its tag
// ("llama3.2:latest"), which /api/chat takes as it is (it also takes the
// name without ":latest"); Name is the same name; ContextLength is 0,
// since /api/tags does not say (the context Ollama runs a model with is
// its num_ctx option, 2048 by default in v0.6.5, not the model's).
//
// As a control-plane call it is retried after connection errors and 5xx
// responses (Options.Retries times, backoff from Options.RetryWait); a 4xx
// is returned at once as an *engine.StatusError. It follows redirects
// within the server's origin only.
func (c *Client) Models(ctx context.Context) ([]engine.Model, error) {
	b, err := c.conn.Get(ctx, tagsPath)
	if err != nil {
		return nil, err
	}
	var w tagsWire
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, &engine.Error{Kind: engine.KindMalformed, Op: "GET " + c.conn.Base + tagsPath,
			Err: fmt.Errorf("ollama: want {\"models\": [...]}, found %q: %w", httpconn.Excerpt(c.conn.RedactBytes(b)), err)}
	}
	out := make([]engine.Model, 0, len(w.Models))
	for _, m := range w.Models {
		id := m.Name
		if id == "" {
			id = m.Model
		}
		out = append(out, engine.Model{ID: id, Name: m.Name})
	}
	return out, nil
}

// Version returns the server's version (GET /api/version), for a result
// file's provenance.
func (c *Client) Version(ctx context.Context) (string, error) {
	b, err := c.conn.Get(ctx, versionPath)
	if err != nil {
		return "", err
	}
	var w struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &w); err != nil || w.Version == "" {
		return "", &engine.Error{Kind: engine.KindMalformed, Op: "GET " + c.conn.Base + versionPath,
			Err: fmt.Errorf("ollama: want {\"version\": \"...\"}, found %q", httpconn.Excerpt(c.conn.RedactBytes(b)))}
	}
	return w.Version, nil
}

// Prewarm opens n keep-alive connections to the server and leaves them
// idle in the client's pool, so that the next n concurrent Complete calls
// write their requests at once. It implements engine.Prewarmer.
//
// It sends n GET /api/version at once (the cheapest answer Ollama has:
// no model is touched) and holds every response unread until all n have
// answered, so that no two share a connection; then it drains and closes
// them, which returns the connections to the pool. n must not exceed
// Options.MaxBurst. It does not load the model: a first request to a model
// Ollama has not loaded spends the load in load_duration.
func (c *Client) Prewarm(ctx context.Context, n int) error {
	if n <= 0 {
		return nil
	}
	if n > c.burst {
		return fmt.Errorf("ollama: Prewarm(%d): the client keeps at most %d idle connections (Options.MaxBurst)", n, c.burst)
	}
	okN, _, first := c.conn.Prewarm(ctx, n, versionPath)
	c.conn.Log.DebugContext(ctx, "ollama: prewarm", "want", n, "open", okN)
	if first != nil {
		return c.conn.Redact(engine.Wrap(ctx, engine.KindConnect, "prewarm "+c.conn.Base+versionPath,
			fmt.Errorf("ollama: opened %d of %d connections: %w", okN, n, first)))
	}
	return nil
}
