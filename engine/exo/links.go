package exo

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
)

// An InstanceLink routes a model's prefill to other instances
// (prefill/decode disaggregation, exo's instance links).
type InstanceLink struct {
	LinkID           string   `json:"linkId"`
	PrefillInstances []string `json:"prefillInstances"`
	DecodeInstances  []string `json:"decodeInstances"`
}

// UnmarshalJSON decodes a link in either casing.
func (l *InstanceLink) UnmarshalJSON(data []byte) error {
	var w struct {
		LinkID   string   `json:"linkId"`
		LinkID2  string   `json:"link_id"`
		Prefill  []string `json:"prefillInstances"`
		Prefill2 []string `json:"prefill_instances"`
		Decode   []string `json:"decodeInstances"`
		Decode2  []string `json:"decode_instances"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("exo: instance link: expected {linkId, prefillInstances, decodeInstances}, found %s: %w", excerpt(data), err)
	}
	*l = InstanceLink{LinkID: pick(w.LinkID, w.LinkID2), PrefillInstances: w.Prefill, DecodeInstances: w.Decode}
	if l.PrefillInstances == nil {
		l.PrefillInstances = w.Prefill2
	}
	if l.DecodeInstances == nil {
		l.DecodeInstances = w.Decode2
	}
	return nil
}

// Links lists the instance links (GET /v1/instance-links); exo answers an
// empty list when disaggregation is disabled.
func (c *Client) Links(ctx context.Context) ([]InstanceLink, error) {
	var ls []InstanceLink
	if err := c.getJSON(ctx, "/v1/instance-links", nil, &ls); err != nil {
		return nil, err
	}
	return ls, nil
}

// CreateLink links prefill instances to decode instances and returns the
// new link's id. exo's POST mints an id it does not return (exo's own
// client takes the last listed link, which races with anyone else's);
// CreateLink instead picks a random UUID and upserts the link under it
// with PUT /v1/instance-links/{id}, so the id is known for sure. When
// disaggregation is disabled the error matches ErrDisaggregationDisabled.
func (c *Client) CreateLink(ctx context.Context, prefill, decode []string) (string, error) {
	id := newUUID()
	if _, err := c.UpdateLink(ctx, id, prefill, decode); err != nil {
		return "", err
	}
	return id, nil
}

// UpdateLink creates or replaces the link id (PUT
// /v1/instance-links/{id}).
func (c *Client) UpdateLink(ctx context.Context, id string, prefill, decode []string) (Receipt, error) {
	data, err := c.call(ctx, http.MethodPut, "/v1/instance-links/"+url.PathEscape(id), nil, linkBody(prefill, decode))
	if err != nil {
		return Receipt{}, err
	}
	return receipt("PUT /v1/instance-links", data)
}

// DeleteLink deletes the link id (DELETE /v1/instance-links/{id}); exo
// does not complain about unknown ids.
func (c *Client) DeleteLink(ctx context.Context, id string) (Receipt, error) {
	data, err := c.call(ctx, http.MethodDelete, "/v1/instance-links/"+url.PathEscape(id), nil, nil)
	if err != nil {
		return Receipt{}, err
	}
	return receipt("DELETE /v1/instance-links", data)
}

// WaitLink polls Links every Options.PollInterval until link id is listed
// (commands take effect asynchronously) or ctx ends.
func (c *Client) WaitLink(ctx context.Context, id string) (InstanceLink, error) {
	for {
		ls, err := c.Links(ctx)
		if err != nil {
			return InstanceLink{}, err
		}
		if i := slices.IndexFunc(ls, func(l InstanceLink) bool { return l.LinkID == id }); i >= 0 {
			return ls[i], nil
		}
		if err := sleep(ctx, c.poll); err != nil {
			return InstanceLink{}, fmt.Errorf("exo: link %s not listed among %d link(s) before the wait ended: %w", id, len(ls), err)
		}
	}
}

func linkBody(prefill, decode []string) map[string][]string {
	if prefill == nil {
		prefill = []string{}
	}
	if decode == nil {
		decode = []string{}
	}
	return map[string][]string{"prefill_instances": prefill, "decode_instances": decode}
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
