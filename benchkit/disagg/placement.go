package disagg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/inferbench/inferbench/engine/exo"
)

// ResolveNode finds the node id that name designates among the cluster's
// identities: a node id, else the node whose friendly name equals name
// case-insensitively, else the only node whose friendly name contains it.
// No match, or several substring matches, give an error wrapping
// ErrNodeNotFound that lists the friendly names.
func ResolveNode(ids map[string]exo.NodeIdentity, name string) (string, error) {
	if _, ok := ids[name]; ok {
		return name, nil
	}
	keys := make([]string, 0, len(ids))
	for id := range ids {
		keys = append(keys, id)
	}
	sort.Strings(keys)
	var sub, names []string
	low := strings.ToLower(name)
	for _, id := range keys {
		fn := ids[id].FriendlyName
		names = append(names, fmt.Sprintf("%q", fn))
		if strings.EqualFold(fn, name) {
			return id, nil
		}
		if low != "" && strings.Contains(strings.ToLower(fn), low) {
			sub = append(sub, id)
		}
	}
	switch len(sub) {
	case 1:
		return sub[0], nil
	case 0:
		return "", fmt.Errorf("%w: no node is named %q; the cluster's nodes are %s", ErrNodeNotFound, name, strings.Join(names, ", "))
	}
	return "", fmt.Errorf("%w: %q is part of %d node names (%s); give one exactly", ErrNodeNotFound, name, len(sub), strings.Join(names, ", "))
}

// A Side says how to place one side of a disaggregation benchmark.
type Side struct {
	// Card is the side's model.
	Card exo.ModelCard
	// Node, when set, is a node (friendly name or id, see ResolveNode)
	// the side's placement must include.
	Node string
	// Filter selects the side's placements; its NodeIDs are replaced by
	// Node's id.
	Filter exo.Filter
}

// A Pair is the two placements of a disaggregation benchmark, on
// disjoint sets of nodes.
type Pair struct {
	Prefill, Decode exo.Placement
	// PrefillCard and DecodeCard are the two sides' models.
	PrefillCard, DecodeCard exo.ModelCard
	// DecodeDeferred is true when the engine offered no decode placement
	// off the prefill placement's nodes before anything runs: previews
	// place a model on the nodes with the most free memory, so on
	// identical idle nodes every small placement lands on the same node.
	// Decode is then empty and Benchmark.Run chooses it from DecodeSide once
	// the prefill instance holds its node's memory.
	DecodeDeferred bool
	// DecodeSide is the decode side as asked for, its Node resolved to an
	// id in Filter.NodeIDs.
	DecodeSide Side
	// NodeNames maps node ids to friendly names, where the cluster gave
	// them.
	NodeNames map[string]string
}

// Describe writes one side as exo's benchmark logs it: instance meta,
// sharding, node ids with friendly names, the model and the instance id.
// side is "prefill" or "decode".
func (p Pair) Describe(side string) string {
	pl, card := p.Decode, p.DecodeCard
	if side == "prefill" {
		pl, card = p.Prefill, p.PrefillCard
	} else if p.DecodeDeferred && pl.Instance.ID == "" {
		return fmt.Sprintf("%s (%s) on nodes other than the prefill instance's, chosen once the prefill instance runs (the engine places every small placement on the node with the most free memory, so it offers none elsewhere yet)", card.ShortID(), card.FullID())
	}
	nodes := pl.Instance.Nodes()
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n
		if fn := p.NodeNames[n]; fn != "" {
			names[i] = fmt.Sprintf("%s (%s)", n, fn)
		}
	}
	return fmt.Sprintf("%s / %s / nodes=[%s] / %s (%s) / instance_id=%s",
		pl.InstanceMeta, pl.Sharding, strings.Join(names, ", "), card.ShortID(), card.FullID(), pl.Instance.ID)
}

// SelectPair chooses a prefill and a decode placement that share no
// node. Each side's placements are fetched with its Filter (restricted to
// its Node when set): the prefill side's waiting up to settle for at least
// one, as [exo.Client.Placements] does, the decode side's with one look; the
// pair is the first, in the order Placements sorts them (prefill major),
// whose node sets are disjoint. exo's previews
// cover only some of the cycles, so when no pair is disjoint the previews
// of each side without a Node are fetched again restricted to each node
// of the cluster in turn (one look each).
//
// When still no pair is disjoint but some prefill placement leaves a node
// of the cluster free (and not the decode side's Node), the pair is
// returned with that prefill placement and DecodeDeferred set, for
// Benchmark.Run to choose the decode placement once the prefill instance
// runs. Otherwise the error wraps ErrNoDistinctPlacements.
//
// exo's own benchmark looks for a "nodes" field previews do not have and so
// never finds two placements unless both nodes are named.
func SelectPair(ctx context.Context, c *exo.Client, prefill, decode Side, settle time.Duration) (Pair, error) {
	pair := Pair{PrefillCard: prefill.Card, DecodeCard: decode.Card, NodeNames: map[string]string{}}
	ids, err := c.NodeIdentities(ctx)
	if err != nil && (prefill.Node != "" || decode.Node != "") {
		return pair, fmt.Errorf("disagg: read node names to find the named nodes: %w", err)
	}
	nodes := make([]string, 0, len(ids))
	for id, n := range ids {
		pair.NodeNames[id] = n.FriendlyName
		nodes = append(nodes, id)
	}
	sort.Strings(nodes)
	sides := []*Side{&prefill, &decode}
	for i, name := range [...]string{"prefill", "decode"} {
		s := sides[i]
		s.Filter.NodeIDs = nil
		if s.Node != "" {
			id, err := ResolveNode(ids, s.Node)
			if err != nil {
				return pair, fmt.Errorf("--%s-node: %w", name, err)
			}
			s.Filter.NodeIDs = []string{id}
		}
	}
	pair.DecodeSide = decode
	pc, err := c.Placements(ctx, prefill.Card.FullID(), prefill.Filter, settle)
	if err != nil {
		return pair, fmt.Errorf("disagg: no placement for the prefill side (%s): %w", prefill.Card.FullID(), err)
	}
	// One look for the decode side: the prefill side has settled the
	// previews, and a decode side with none yet may get one once the
	// prefill instance holds its memory (below).
	dc, derr := c.Placements(ctx, decode.Card.FullID(), decode.Filter, 0)
	var np *exo.NoPlacementError
	if derr != nil && !errors.As(derr, &np) {
		return pair, fmt.Errorf("disagg: placements of the decode side (%s): %w", decode.Card.FullID(), derr)
	}
	if p, d, ok := firstDisjoint(pc, dc); ok {
		pair.Prefill, pair.Decode = p, d
		return pair, nil
	}
	if pc, err = perNode(ctx, c, prefill, nodes, pc); err != nil {
		return pair, fmt.Errorf("disagg: placements of the prefill side per node: %w", err)
	}
	if dc, err = perNode(ctx, c, decode, nodes, dc); err != nil {
		return pair, fmt.Errorf("disagg: placements of the decode side per node: %w", err)
	}
	if p, d, ok := firstDisjoint(pc, dc); ok {
		pair.Prefill, pair.Decode = p, d
		return pair, nil
	}
	for _, p := range pc {
		pn := p.Instance.Nodes()
		free := false
		for _, n := range nodes {
			if !slices.Contains(pn, n) && (len(decode.Filter.NodeIDs) == 0 || decode.Filter.NodeIDs[0] == n) {
				free = true
			}
		}
		if free {
			pair.Prefill, pair.DecodeDeferred = p, true
			return pair, nil
		}
	}
	if derr != nil {
		return pair, fmt.Errorf("disagg: no placement for the decode side (%s): %w", decode.Card.FullID(), derr)
	}
	return pair, fmt.Errorf("%w: %d prefill and %d decode placements, every pair shares a node; the cluster needs two nodes that can each hold a placement (name them with --prefill-node and --decode-node, or widen --min-nodes/--max-nodes)", ErrNoDistinctPlacements, len(pc), len(dc))
}

// perNode adds to have the placements of side restricted to each node in
// turn, one look each, unless the side names its node.
func perNode(ctx context.Context, c *exo.Client, s Side, nodes []string, have []exo.Placement) ([]exo.Placement, error) {
	if s.Node != "" {
		return have, nil
	}
	for _, n := range nodes {
		f := s.Filter
		f.NodeIDs = []string{n}
		ps, err := c.Placements(ctx, s.Card.FullID(), f, 0)
		var np *exo.NoPlacementError
		if errors.As(err, &np) {
			continue
		}
		if err != nil {
			return have, err
		}
		have = append(have, ps...)
	}
	return have, nil
}

func firstDisjoint(pc, dc []exo.Placement) (exo.Placement, exo.Placement, bool) {
	for _, p := range pc {
		pn := p.Instance.Nodes()
		for _, d := range dc {
			if p.Instance.ID != d.Instance.ID && disjoint(pn, d.Instance.Nodes()) {
				return p, d, true
			}
		}
	}
	return exo.Placement{}, exo.Placement{}, false
}

func disjoint(a, b []string) bool {
	return !slices.ContainsFunc(a, func(n string) bool { return slices.Contains(b, n) })
}
