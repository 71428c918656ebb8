package exo

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/inferbench/inferbench/engine"
)

// A ModelCard is one entry of exo's /models list.
type ModelCard struct {
	// ID is the card id, the full Hugging Face id.
	ID string `json:"id"`
	// HuggingFaceID is the same id as exo repeats it; it is what requests
	// and instances name.
	HuggingFaceID string `json:"hugging_face_id"`
	// Name is the short name, the part after the last "/".
	Name          string `json:"name"`
	Description   string `json:"description"`
	ContextLength int    `json:"context_length"`
	// StorageSizeMegabytes is the weights' size in MiB (bytes / 1024²,
	// rounded).
	StorageSizeMegabytes int64    `json:"storage_size_megabytes"`
	SupportsTensor       bool     `json:"supports_tensor"`
	Tasks                []string `json:"tasks"`
	IsCustom             bool     `json:"is_custom"`
	Family               string   `json:"family"`
	Quantization         string   `json:"quantization"`
	BaseModel            string   `json:"base_model"`
	Capabilities         []string `json:"capabilities"`
	OwnedBy              string   `json:"owned_by"`
}

// FullID is the id to send as a request's model: HuggingFaceID, else ID,
// else Name.
func (m ModelCard) FullID() string { return pick(m.HuggingFaceID, m.ID, m.Name) }

// ShortID is the short name: Name, else the part of FullID after its last
// "/".
func (m ModelCard) ShortID() string {
	if m.Name != "" {
		return m.Name
	}
	id := m.FullID()
	return id[strings.LastIndex(id, "/")+1:]
}

// StorageBytes is the weights' size in bytes as exo_bench computes it:
// storage_size_megabytes × 1024².
func (m ModelCard) StorageBytes() int64 { return m.StorageSizeMegabytes << 20 }

// ModelCards lists the model cards exo knows (GET /models). With
// downloadedOnly, only those some node has downloaded
// (?status=downloaded).
func (c *Client) ModelCards(ctx context.Context, downloadedOnly bool) ([]ModelCard, error) {
	var q url.Values
	if downloadedOnly {
		q = url.Values{"status": {"downloaded"}}
	}
	var list struct {
		Data []ModelCard `json:"data"`
	}
	if err := c.getJSON(ctx, "/models", q, &list); err != nil {
		return nil, err
	}
	return list.Data, nil
}

// Models lists the models exo can serve, for engine.ModelLister.
func (c *Client) Models(ctx context.Context) ([]engine.Model, error) {
	cards, err := c.ModelCards(ctx, false)
	if err != nil {
		return nil, err
	}
	out := make([]engine.Model, len(cards))
	for i, m := range cards {
		out[i] = engine.Model{ID: m.FullID(), Name: m.ShortID(), OwnedBy: m.OwnedBy, ContextLength: m.ContextLength}
	}
	return out, nil
}

// ResolveModel finds the card of name as exo_bench does: the first card
// whose short name equals name case-insensitively, else the first whose
// full id equals name exactly, else, when add is true and name looks like
// a full id ("org/repo"), the card AddModel returns. Otherwise the error
// matches ErrModelNotFound.
func (c *Client) ResolveModel(ctx context.Context, name string, add bool) (ModelCard, error) {
	cards, err := c.ModelCards(ctx, false)
	if err != nil {
		return ModelCard{}, err
	}
	if m, ok := resolve(cards, name); ok {
		return m, nil
	}
	if add && strings.Contains(name, "/") {
		return c.AddModel(ctx, name)
	}
	hint := ""
	if add {
		hint = " (adding needs a full id such as org/repo)"
	}
	return ModelCard{}, fmt.Errorf("%w: %q matches no short name (case-insensitive) nor full id among %d cards in /models%s",
		ErrModelNotFound, name, len(cards), hint)
}

// resolve is ResolveModel's lookup in a list of cards.
func resolve(cards []ModelCard, name string) (ModelCard, bool) {
	for _, m := range cards {
		if strings.EqualFold(m.Name, name) {
			return m, true
		}
	}
	for _, m := range cards {
		if m.HuggingFaceID == name {
			return m, true
		}
	}
	return ModelCard{}, false
}

// AddModel adds a custom model card by its Hugging Face id (POST
// /models/add). exo fetches the card's config but downloads no weights.
// The returned card's name and id fall back to the id's last part and the
// id itself when exo leaves them empty.
func (c *Client) AddModel(ctx context.Context, id string) (ModelCard, error) {
	data, err := c.call(ctx, http.MethodPost, "/models/add", nil, map[string]string{"model_id": id})
	if err != nil {
		return ModelCard{}, err
	}
	var m ModelCard
	if err := decode("/models/add", data, &m); err != nil {
		return ModelCard{}, err
	}
	if m.Name == "" {
		m.Name = id[strings.LastIndex(id, "/")+1:]
	}
	if m.HuggingFaceID == "" {
		m.HuggingFaceID = id
	}
	return m, nil
}
