package exo

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	nodeA = "12D3KooWNodeA"
	nodeB = "12D3KooWNodeB"
)

func TestParsePreviewsGolden(t *testing.T) {
	pvs, err := parsePreviews(fixture(t, "previews.json"))
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Label, Instance string // "meta/sharding"
		ID              string
		Nodes           []string
		Error           string
	}
	var got []row
	for _, pv := range pvs {
		r := row{Label: pv.InstanceMeta + "/" + pv.Sharding, Error: pv.Error}
		if pv.Instance != nil {
			r.Instance = pv.Instance.InstanceMeta() + "/" + pv.Instance.Sharding()
			r.ID = pv.Instance.ID
			r.Nodes = pv.Instance.Nodes()
		}
		got = append(got, r)
	}
	ab := []string{nodeA, nodeB}
	a := []string{nodeA}
	want := []row{
		{"MlxRing/Pipeline", "MlxRing/Pipeline", "i-pr1", a, ""},
		{"MlxRing/Pipeline", "MlxRing/Pipeline", "i-pr2", ab, ""},
		{"MlxJaccl/Pipeline", "MlxRing/Pipeline", "i-pj1", a, ""}, // exo's single-node forcing
		{"MlxJaccl/Pipeline", "MlxJaccl/Pipeline", "i-pj2", ab, ""},
		{"MlxRing/Tensor", "MlxRing/Pipeline", "i-tr1", a, ""},
		{"MlxRing/Tensor", "MlxRing/Tensor", "i-tr2", ab, ""},
		{"MlxJaccl/Tensor", "MlxRing/Pipeline", "i-tj1", a, ""},
		{"MlxJaccl/Tensor", "", "", nil, "No cycles found with sufficient memory and RDMA enabled on every node"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("previews (-want +got):\n%s", diff)
	}
	// memory_delta_by_node splits 729808896 bytes evenly.
	if diff := cmp.Diff(map[string]int64{nodeA: 364904448, nodeB: 364904448}, pvs[1].MemoryBytes()); diff != "" {
		t.Errorf("memory by node (-want +got):\n%s", diff)
	}
	sh := pvs[5].Instance.Shards["r-i-tr2-1"]
	want5 := Shard{Tag: "TensorShardMetadata", ModelID: llama, ModelBytes: 729808896, DeviceRank: 1, WorldSize: 2,
		StartLayer: 8, EndLayer: 16, NLayers: 16}
	if diff := cmp.Diff(want5, sh, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Raw" }, cmp.Ignore())); diff != "" {
		t.Errorf("shard (-want +got):\n%s", diff)
	}
}

func TestInstanceRoundTrip(t *testing.T) {
	// The instance re-encodes exactly as exo sent it, unknown fields
	// (hostsByNode, ephemeralPort, the card's extra keys) included.
	var w struct {
		Previews []struct {
			Instance json.RawMessage `json:"instance"`
		} `json:"previews"`
	}
	if err := json.Unmarshal(fixture(t, "previews.json"), &w); err != nil {
		t.Fatal(err)
	}
	raw := w.Previews[3].Instance
	var in Instance
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(map[string]Instance{"instance": in})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"instance":` + string(raw) + `}`; string(body) != want {
		t.Errorf("re-encoded instance differs:\n got %s\nwant %s", body, want)
	}
	if _, err := json.Marshal(Instance{ID: "x"}); err == nil {
		t.Errorf("encoding an instance without raw JSON succeeded")
	}
}

func TestInstanceSnakeCase(t *testing.T) {
	// exo's /instance/await dumps instances without aliases.
	raw := `{"MlxRingInstance":{"instance_id":"i-1","shard_assignments":{"model_id":"m","node_to_runner":{"n1":"r1"},` +
		`"runner_to_shard":{"r1":{"PipelineShardMetadata":{"model_card":{"model_id":"m","storage_size":{"in_bytes":10}},` +
		`"device_rank":0,"world_size":1,"start_layer":0,"end_layer":4,"n_layers":4}}}}}}`
	var in Instance
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		t.Fatal(err)
	}
	want := Shard{Tag: "PipelineShardMetadata", ModelID: "m", ModelBytes: 10, WorldSize: 1, EndLayer: 4, NLayers: 4}
	if in.ID != "i-1" || in.ModelID != "m" || in.NodeToRunner["n1"] != "r1" {
		t.Errorf("instance = %+v", in)
	}
	if diff := cmp.Diff(want, in.Shards["r1"], cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Raw" }, cmp.Ignore())); diff != "" {
		t.Errorf("shard (-want +got):\n%s", diff)
	}
}

func TestTaggedUnionErrors(t *testing.T) {
	for _, raw := range []string{`{}`, `{"A":{},"B":{}}`, `[]`, `"MlxRingInstance"`, `{"MlxRingInstance":{"instanceId":"x"}}`} {
		var in Instance
		if err := json.Unmarshal([]byte(raw), &in); err == nil {
			t.Errorf("decoding %s as an instance succeeded", raw)
		}
	}
}

func TestSelect(t *testing.T) {
	pvs, err := parsePreviews(fixture(t, "previews.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Survivors are named by instance id; removed counts by rule. The
	// fixture holds, in order: pr1 (ring/pipe, A), pr2 (ring/pipe, AB),
	// pj1 (labelled jaccl, ring/pipe A), pj2 (jaccl/pipe AB), tr1
	// (labelled tensor, ring/pipe A), tr2 (ring/tensor AB), tj1 (labelled
	// jaccl/tensor, ring/pipe A), an error.
	tests := []struct {
		name    string
		f       Filter
		want    []string
		removed map[string]int
	}{
		{"zero filter: duplicates of the forced single-node placement removed, exo's order",
			Filter{}, []string{"i-tr2", "i-pr2", "i-pr1", "i-pj2"},
			map[string]int{"error": 1, "duplicate": 3}},
		{"tensor: the single-node previews labelled Tensor are pipeline runs",
			Filter{Sharding: "Tensor"}, []string{"i-tr2"},
			map[string]int{"error": 1, "sharding": 6}},
		{"jaccl", Filter{InstanceMeta: Jaccl}, []string{"i-pj2"},
			map[string]int{"error": 1, "instance_meta": 6}},
		{"ring pipeline", Filter{InstanceMeta: Ring, Sharding: Pipeline}, []string{"i-pr2", "i-pr1"},
			map[string]int{"error": 1, "instance_meta": 1, "sharding": 1, "duplicate": 3}},
		{"skip tensor ring", Filter{SkipTensorRing: true}, []string{"i-pr2", "i-pr1", "i-pj2"},
			map[string]int{"error": 1, "duplicate": 3, "skip_tensor_ring": 1}},
		{"skip pipeline jaccl", Filter{SkipPipelineJaccl: true}, []string{"i-tr2", "i-pr2", "i-pr1"},
			map[string]int{"error": 1, "duplicate": 3, "skip_pipeline_jaccl": 1}},
		{"skip rules act only when both filters are both", Filter{Sharding: Both, InstanceMeta: Ring, SkipTensorRing: true},
			[]string{"i-tr2", "i-pr2", "i-pr1"},
			map[string]int{"error": 1, "instance_meta": 1, "duplicate": 3}},
		{"min nodes 2", Filter{MinNodes: 2}, []string{"i-tr2", "i-pr2", "i-pj2"},
			map[string]int{"error": 1, "nodes": 4}},
		{"max nodes 1", Filter{MaxNodes: 1}, []string{"i-pr1"},
			map[string]int{"error": 1, "nodes": 3, "duplicate": 3}},
		{"nothing fits", Filter{MinNodes: 3}, nil,
			map[string]int{"error": 1, "nodes": 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, removed, err := Select(pvs, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, p := range ps {
				ids = append(ids, p.Instance.ID)
				if p.Relabelled() {
					t.Errorf("survivor %s is relabelled: preview %s/%s, instance %s/%s", p.Instance.ID,
						p.Preview.InstanceMeta, p.Preview.Sharding, p.InstanceMeta, p.Sharding)
				}
			}
			if diff := cmp.Diff(tt.want, ids); diff != "" {
				t.Errorf("survivors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.removed, removed); diff != "" {
				t.Errorf("removed (-want +got):\n%s", diff)
			}
		})
	}
	for _, f := range []Filter{{InstanceMeta: "rdma"}, {Sharding: "expert"}, {MinNodes: 3, MaxNodes: 2}} {
		if _, _, err := Select(pvs, f); err == nil {
			t.Errorf("Select with %+v succeeded", f)
		}
	}
}

func TestPlacementsSettle(t *testing.T) {
	var hits atomic.Int32
	var gotQuery atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("GET /instance/previews", func(w http.ResponseWriter, r *http.Request) {
		gotQuery.Store(r.URL.RawQuery)
		if hits.Add(1) <= 2 {
			writeJSON(w, 200, []byte(`{"previews":[]}`))
			return
		}
		writeJSON(w, 200, fixture(t, "previews.json"))
	})
	c, _ := newTestClient(t, mux, nil)
	ps, err := c.Placements(context.Background(), llama, Filter{NodeIDs: []string{nodeA}}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 4 || hits.Load() != 3 {
		t.Errorf("got %d placements after %d fetches, want 4 after 3", len(ps), hits.Load())
	}
	if q := gotQuery.Load().(string); q != "model_id=mlx-community%2FLlama-3.2-1B-Instruct-4bit&node_ids=12D3KooWNodeA" {
		t.Errorf("query = %q", q)
	}

	// Settle 0: a single fetch, and an error that says why.
	hits.Store(0)
	_, err = c.Placements(context.Background(), llama, Filter{}, 0)
	var npe *NoPlacementError
	if !errors.As(err, &npe) || npe.Attempts != 1 || npe.Previews != 0 || hits.Load() != 1 {
		t.Errorf("settle 0 on an empty topology: %v after %d fetches, want a NoPlacementError after 1", err, hits.Load())
	}
}

func TestPlacementsGiveUp(t *testing.T) {
	var hits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /instance/previews", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		writeJSON(w, 200, fixture(t, "previews.json"))
	})
	c, _ := newTestClient(t, mux, nil)
	// The settle time is long beside one fetch even on a loaded machine
	// (a fetch is a loopback round trip), so at least two fetches fit in it
	// with the test client's 1 ms first backoff.
	const settle = time.Second
	start := time.Now()
	_, err := c.Placements(context.Background(), llama, Filter{MinNodes: 3}, settle)
	var npe *NoPlacementError
	if !errors.As(err, &npe) {
		t.Fatalf("error = %v, want *NoPlacementError", err)
	}
	if npe.Attempts < 2 || int(hits.Load()) != npe.Attempts {
		t.Errorf("attempts = %d, server hits %d; want ≥ 2 and equal", npe.Attempts, hits.Load())
	}
	if el := time.Since(start); el < settle {
		t.Errorf("gave up after %v, before the settle timeout", el)
	}
	for _, s := range []string{"nodes=7", "error=1", "RDMA enabled"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message %q lacks %q", err, s)
		}
	}
}

func TestPlacementsContextEnds(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /instance/previews", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, []byte(`{"previews":[]}`))
	})
	opts := fastOptions()
	opts.SettleBackoff = time.Hour
	c, _ := newTestClient(t, mux, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := c.Placements(ctx, llama, Filter{}, time.Hour)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want the context's deadline", err)
	}
}
