package disagg

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/sim"
)

func TestResolveNode(t *testing.T) {
	ids := map[string]exo.NodeIdentity{
		"n1": {FriendlyName: "mike"},
		"n2": {FriendlyName: "james"},
		"n3": {FriendlyName: "James's Mac Studio"},
	}
	tests := []struct {
		name, want, err string
	}{
		{"n2", "n2", ""},
		{"MIKE", "n1", ""},
		{"james", "n2", ""}, // exact beats the substring of n3
		{"studio", "n3", ""},
		{"m", "", "part of 3 node names"}, // mike, james, James's Mac Studio
		{"zoe", "", `no node is named "zoe"`},
	}
	for _, tc := range tests {
		got, err := ResolveNode(ids, tc.name)
		if tc.err != "" {
			if !errors.Is(err, ErrNodeNotFound) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want ErrNodeNotFound saying %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestSelectPairNamedNodes(t *testing.T) {
	s, c := simCluster(t, sim.Options{Nodes: 2})
	ctx := context.Background()
	card, err := c.ResolveModel(ctx, s.Model(), false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = SelectPair(ctx, c, Side{Card: card, Node: "sim-node-9"}, Side{Card: card}, 0)
	if !errors.Is(err, ErrNodeNotFound) || !strings.Contains(err.Error(), "sim-node-1") {
		t.Errorf("unknown node: err = %v", err)
	}
	pair, err := SelectPair(ctx, c, Side{Card: card, Node: "sim-node-1"}, Side{Card: card, Node: "sim-node-2"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := pair.Prefill.Instance.Nodes(); len(got) != 1 || pair.NodeNames[got[0]] == "" || !strings.HasPrefix(pair.NodeNames[got[0]], "sim-node-1 ") {
		t.Errorf("prefill on %v (%v)", got, pair.NodeNames)
	}
	if pair.Decode.Instance.ID == "" && !(pair.DecodeDeferred && cmp.Equal(pair.DecodeSide.Filter.NodeIDs, []string{"12D3KooWSimNode02"})) {
		t.Errorf("decode %+v deferred %v side %+v", pair.Decode, pair.DecodeDeferred, pair.DecodeSide.Filter)
	}
	if !strings.Contains(pair.Describe("prefill"), "sim-node-1") {
		t.Errorf("describe: %s", pair.Describe("prefill"))
	}
}
