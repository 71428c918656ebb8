package exo

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// A Preview is one of exo's placement previews (GET /instance/previews):
// an instance exo would create for the model, under the sharding and
// instance-meta labels it was asked for.
type Preview struct {
	ModelID string `json:"model_id"`
	// Sharding and InstanceMeta are the labels exo requested ("Pipeline"
	// or "Tensor"; "MlxRing" or "MlxJaccl"). They can differ from the
	// instance: exo forces single-node placements to MlxRing with pipeline
	// shards and keeps the requested labels.
	Sharding     string `json:"sharding"`
	InstanceMeta string `json:"instance_meta"`
	// Instance is the ready-to-submit instance, nil when exo could not
	// place the model (Error then says why).
	Instance *Instance `json:"instance"`
	// MemoryDeltaByNode is the model's bytes per node of the placement.
	MemoryDeltaByNode map[string]memory `json:"memory_delta_by_node"`
	Error             string            `json:"error"`
}

// Previews fetches exo's placement previews of modelID (its full id). With
// nodeIDs, exo considers only cycles containing all of them.
func (c *Client) Previews(ctx context.Context, modelID string, nodeIDs ...string) ([]Preview, error) {
	q := url.Values{"model_id": {modelID}}
	for _, n := range nodeIDs {
		q.Add("node_ids", n)
	}
	data, err := c.call(ctx, "GET", "/instance/previews", q, nil)
	if err != nil {
		return nil, err
	}
	return parsePreviews(data)
}

// parsePreviews decodes a /instance/previews answer. A preview whose
// instance cannot be decoded keeps its labels, a nil Instance and the
// decoding error in Error, so that one odd preview does not hide the
// others.
func parsePreviews(data []byte) ([]Preview, error) {
	var w struct {
		Previews []json.RawMessage `json:"previews"`
	}
	if err := decode("/instance/previews", data, &w); err != nil {
		return nil, err
	}
	out := make([]Preview, 0, len(w.Previews))
	for _, raw := range w.Previews {
		var p struct {
			Preview
			Instance json.RawMessage `json:"instance"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("exo: decoding a placement preview: expected {model_id, sharding, instance_meta, instance, ...}, found %s: %w", excerpt(raw), err)
		}
		pv := p.Preview
		if len(p.Instance) > 0 && string(p.Instance) != "null" {
			var in Instance
			if err := json.Unmarshal(p.Instance, &in); err != nil {
				if pv.Error == "" {
					pv.Error = err.Error()
				}
			} else {
				pv.Instance = &in
			}
		}
		out = append(out, pv)
	}
	return out, nil
}

// MemoryBytes returns the model bytes exo assigns to each node.
func (p Preview) MemoryBytes() map[string]int64 {
	if p.MemoryDeltaByNode == nil {
		return nil
	}
	m := make(map[string]int64, len(p.MemoryDeltaByNode))
	for k, v := range p.MemoryDeltaByNode {
		m[k] = int64(v)
	}
	return m
}

// A Placement is a preview that passed a Filter, labelled honestly: its
// Sharding and InstanceMeta come from the instance's shard tags and tag,
// not from the preview's requested labels.
type Placement struct {
	ModelID string
	// Sharding is "Pipeline", "Tensor", "Cfg" or "Mixed", from the shard
	// tags.
	Sharding string
	// InstanceMeta is "MlxRing" or "MlxJaccl", from the instance tag.
	InstanceMeta string
	// Nodes is the number of nodes (keys of nodeToRunner).
	Nodes int
	// Instance is what CreateInstance submits.
	Instance Instance
	// Preview is the preview as exo returned it, labels included.
	Preview Preview
}

// Relabelled reports whether exo's labels on the preview differ from what
// the instance is.
func (p Placement) Relabelled() bool {
	return p.Preview.Sharding != p.Sharding || p.Preview.InstanceMeta != p.InstanceMeta
}

// The values of Filter.InstanceMeta and Filter.Sharding, as exo_bench's
// flags spell them. The empty string means Both.
const (
	Both     = "both"
	Ring     = "ring"
	Jaccl    = "jaccl"
	Pipeline = "pipeline"
	Tensor   = "tensor"
)

// A Filter selects placements as exo_bench's flags do. The zero value
// keeps every placement.
type Filter struct {
	// InstanceMeta is "ring", "jaccl" or "both" ("" means both).
	InstanceMeta string
	// Sharding is "pipeline", "tensor" or "both" ("" means both).
	Sharding string
	// MinNodes and MaxNodes bound the node count. Zero MinNodes means 1;
	// zero MaxNodes means no bound (exo_bench's default is 4).
	MinNodes, MaxNodes int
	// SkipPipelineJaccl drops pipeline placements over MlxJaccl, and
	// SkipTensorRing tensor placements over MlxRing. As in exo_bench they
	// act only when both InstanceMeta and Sharding are both.
	SkipPipelineJaccl, SkipTensorRing bool
	// NodeIDs restricts exo's previews to cycles containing all these
	// nodes.
	NodeIDs []string
}

func (f Filter) validate() error {
	switch strings.ToLower(f.InstanceMeta) {
	case "", Both, Ring, Jaccl:
	default:
		return fmt.Errorf("exo: filter instance meta %q: expected ring, jaccl or both", f.InstanceMeta)
	}
	switch strings.ToLower(f.Sharding) {
	case "", Both, Pipeline, Tensor:
	default:
		return fmt.Errorf("exo: filter sharding %q: expected pipeline, tensor or both", f.Sharding)
	}
	if f.MaxNodes > 0 && f.MinNodes > f.MaxNodes {
		return fmt.Errorf("exo: filter nodes: expected MinNodes ≤ MaxNodes, found %d > %d", f.MinNodes, f.MaxNodes)
	}
	return nil
}

// Select filters previews and sorts the survivors, and returns them with
// the count of previews each rule removed. The rules, in order:
//
//   - "error": previews exo could not place;
//   - "no_instance": previews without an instance object;
//   - "instance_meta": the instance's tag does not match InstanceMeta
//     ("ring" matches MlxRing, "jaccl" MlxJaccl, by lower-case substring);
//   - "sharding": the shard tags do not match Sharding;
//   - "skip_pipeline_jaccl", "skip_tensor_ring": the skip rules, only
//     when both filters are both;
//   - "nodes": the node count is outside [MinNodes, MaxNodes];
//   - "duplicate": an earlier survivor has the same instance meta,
//     sharding and node set (exo's single-node previews labelled Tensor or
//     MlxJaccl, which hold the same MlxRing pipeline instance as the one
//     labelled MlxRing/Pipeline).
//
// Matching uses the instance's own tags, where exo_bench uses the
// preview's labels: asking for tensor never yields a pipeline instance
// under a tensor label. Survivors are sorted as exo_bench sorts them,
// descending by (instance meta, sharding, nodes): MlxRing/Tensor,
// MlxRing/Pipeline, MlxJaccl/Tensor, MlxJaccl/Pipeline, more nodes first;
// the sort is stable.
func Select(previews []Preview, f Filter) ([]Placement, map[string]int, error) {
	if err := f.validate(); err != nil {
		return nil, nil, err
	}
	meta := strings.ToLower(f.InstanceMeta)
	shard := strings.ToLower(f.Sharding)
	bothMeta := meta == "" || meta == Both
	bothShard := shard == "" || shard == Both
	minN := max(f.MinNodes, 1)
	removed := map[string]int{}
	seen := map[string]bool{}
	var out []Placement
	for _, pv := range previews {
		if pv.Error != "" {
			removed["error"]++
			continue
		}
		if pv.Instance == nil {
			removed["no_instance"]++
			continue
		}
		p := Placement{
			ModelID:      pick(pv.Instance.ModelID, pv.ModelID),
			Sharding:     pv.Instance.Sharding(),
			InstanceMeta: pv.Instance.InstanceMeta(),
			Nodes:        len(pv.Instance.NodeToRunner),
			Instance:     *pv.Instance,
			Preview:      pv,
		}
		lm, ls := strings.ToLower(p.InstanceMeta), strings.ToLower(p.Sharding)
		if !bothMeta && !strings.Contains(lm, meta) {
			removed["instance_meta"]++
			continue
		}
		if !bothShard && !strings.Contains(ls, shard) {
			removed["sharding"]++
			continue
		}
		if bothMeta && bothShard {
			if f.SkipPipelineJaccl && strings.Contains(ls, Pipeline) && strings.Contains(lm, Jaccl) {
				removed["skip_pipeline_jaccl"]++
				continue
			}
			if f.SkipTensorRing && strings.Contains(ls, Tensor) && strings.Contains(lm, Ring) {
				removed["skip_tensor_ring"]++
				continue
			}
		}
		if p.Nodes < minN || f.MaxNodes > 0 && p.Nodes > f.MaxNodes {
			removed["nodes"]++
			continue
		}
		key := p.InstanceMeta + "|" + p.Sharding + "|" + strings.Join(p.Instance.Nodes(), ",")
		if seen[key] {
			removed["duplicate"]++
			continue
		}
		seen[key] = true
		out = append(out, p)
	}
	slices.SortStableFunc(out, func(a, b Placement) int {
		if c := strings.Compare(b.InstanceMeta, a.InstanceMeta); c != 0 {
			return c
		}
		if c := strings.Compare(b.Sharding, a.Sharding); c != 0 {
			return c
		}
		return b.Nodes - a.Nodes
	})
	return out, removed, nil
}

// Placements fetches the previews of modelID and Selects from them. When
// none survive and settle is positive it fetches again until settle has
// passed, pausing Options.SettleBackoff (1 s) after the first fetch and
// twice as long after each next one, at most MaxSettleBackoff (60 s) and
// never past the deadline: exo_bench's settle loop. With settle zero it
// fetches once. When none survive it returns a *NoPlacementError saying
// what was removed and why.
func (c *Client) Placements(ctx context.Context, modelID string, f Filter, settle time.Duration) ([]Placement, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(settle)
	backoff := c.settleBackoff
	for attempt := 1; ; attempt++ {
		pvs, err := c.Previews(ctx, modelID, f.NodeIDs...)
		if err != nil {
			return nil, err
		}
		ps, removed, err := Select(pvs, f)
		if err != nil {
			return nil, err
		}
		if len(ps) > 0 {
			return ps, nil
		}
		remaining := time.Until(deadline)
		if settle <= 0 || remaining <= 0 {
			e := &NoPlacementError{ModelID: modelID, Previews: len(pvs), Attempts: attempt, Removed: removed}
			for _, pv := range pvs {
				if pv.Error != "" && !slices.Contains(e.PreviewErrors, pv.Error) {
					e.PreviewErrors = append(e.PreviewErrors, pv.Error)
				}
			}
			return nil, e
		}
		wait := min(backoff, remaining)
		if c.log != nil {
			c.log.DebugContext(ctx, "exo: no placement yet, settling", "model", modelID, "attempt", attempt, "wait", wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("exo: waiting for placements of %s to settle: %w", modelID, ctx.Err())
		case <-t.C:
		}
		backoff = min(backoff*2, MaxSettleBackoff)
	}
}
