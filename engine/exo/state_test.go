package exo

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/energy/sourcetest"
	"github.com/inferbench/inferbench/engine/sim"
)

const nodeSystemJSON = `{"12D3KooWNodeA":{"gpuUsage":0.82,"temp":61.5,"sysPower":88.4,"pcpuUsage":0.11,"ecpuUsage":0.05},` +
	`"12D3KooWNodeB":{"gpuUsage":0.0,"temp":38.0,"sysPower":12.1,"pcpuUsage":0.02,"ecpuUsage":0.04}}`

func stateMux(t *testing.T, parts map[string]string, hits *atomic.Int32) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /state/{path...}", func(w http.ResponseWriter, r *http.Request) {
		if hits != nil {
			hits.Add(1)
		}
		p := r.PathValue("path")
		body, ok := parts[p]
		if !ok {
			notFound(w, p)
			return
		}
		writeJSON(w, 200, []byte(body))
	})
	return mux
}

func TestSnapshot(t *testing.T) {
	parts := map[string]string{
		"nodeIdentities": `{"12D3KooWNodeA": {"modelId": "Mac16,9", "chipId": "Apple M3 Ultra", "friendlyName": "studio", "osVersion": "26.2", "osBuildVersion": "25D125"}}`,
		"topology":       `{"nodes":["12D3KooWNodeA"],"connections":{}}`,
		"nodeMemory":     `{}`, // empty: left out, as exo_bench does
		// nodeSystem absent: 404, left out
	}
	c, _ := newTestClient(t, stateMux(t, parts, nil), nil)
	snap, err := c.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(snap)
	want := `{"nodeIdentities":{"12D3KooWNodeA":{"modelId":"Mac16,9","chipId":"Apple M3 Ultra","friendlyName":"studio","osVersion":"26.2","osBuildVersion":"25D125"}},` +
		`"topology":{"nodes":["12D3KooWNodeA"],"connections":{}}}`
	if string(got) != want {
		t.Errorf("snapshot:\n got %s\nwant %s", got, want)
	}
	if snap.Empty() {
		t.Errorf("Empty() = true")
	}
	ids, err := c.NodeIdentities(context.Background())
	if err != nil || ids[nodeA].FriendlyName != "studio" {
		t.Errorf("NodeIdentities = %+v, %v", ids, err)
	}
}

func TestNodeMetrics(t *testing.T) {
	parts := map[string]string{
		"nodeSystem":               nodeSystemJSON,
		"nodeSystem/12D3KooWNodeA": `{"gpuUsage":0.82,"temp":61.5,"sysPower":88.4,"pcpuUsage":0.11,"ecpuUsage":0.05}`,
		"nodeDisk/12D3KooWNodeA":   `{"total":{"inBytes":1000},"available":{"inBytes":250}}`,
		"nodeMemory":               `{"12D3KooWNodeA":{"ramTotal":{"inBytes":100},"ramAvailable":{"inBytes":60},"swapTotal":{"inBytes":10},"swapAvailable":{"inBytes":9}}}`,
	}
	c, _ := newTestClient(t, stateMux(t, parts, nil), nil)
	ctx := context.Background()
	all, err := c.NodeSystems(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]NodeMetrics{
		nodeA: {GPUUsage: 0.82, Temp: 61.5, SysPower: 88.4, PCPUUsage: 0.11, ECPUUsage: 0.05},
		nodeB: {GPUUsage: 0, Temp: 38, SysPower: 12.1, PCPUUsage: 0.02, ECPUUsage: 0.04},
	}
	if diff := cmp.Diff(want, all); diff != "" {
		t.Errorf("NodeSystems (-want +got):\n%s", diff)
	}
	one, err := c.NodeSystem(ctx, nodeA)
	if err != nil || one != want[nodeA] {
		t.Errorf("NodeSystem(A) = %+v, %v", one, err)
	}
	if _, err := c.NodeSystem(ctx, nodeB); !errors.Is(err, ErrNoMetrics) || !errors.Is(err, ErrNotFound) {
		t.Errorf("NodeSystem(B) = %v, want ErrNoMetrics", err)
	}
	d, err := c.NodeDisk(ctx, nodeA)
	if err != nil || d != (Disk{Total: 1000, Available: 250}) {
		t.Errorf("NodeDisk = %+v, %v", d, err)
	}
	mem, err := c.NodeMemories(ctx)
	if err != nil || mem[nodeA] != (NodeMemory{100, 60, 10, 9}) {
		t.Errorf("NodeMemories = %+v, %v", mem, err)
	}
	var snake NodeMetrics
	if err := json.Unmarshal([]byte(`{"gpu_usage":0.5,"temp":40,"sys_power":20,"pcpu_usage":0.1,"ecpu_usage":0.2}`), &snake); err != nil ||
		snake != (NodeMetrics{GPUUsage: 0.5, Temp: 40, SysPower: 20, PCPUUsage: 0.1, ECPUUsage: 0.2}) {
		t.Errorf("snake_case metrics = %+v, %v", snake, err)
	}
}

func TestPowerSource(t *testing.T) {
	var hits atomic.Int32
	c, _ := newTestClient(t, stateMux(t, map[string]string{"nodeSystem": nodeSystemJSON}, &hits), nil)
	ctx := context.Background()
	rs, err := c.PowerSource().Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []energy.Reading{
		{Node: nodeA, Metric: "sysPower", Value: 88.4},
		{Node: nodeA, Metric: "gpuUsage", Value: 0.82},
		{Node: nodeA, Metric: "temp", Value: 61.5},
		{Node: nodeA, Metric: "pcpuUsage", Value: 0.11},
		{Node: nodeA, Metric: "ecpuUsage", Value: 0.05},
		{Node: nodeB, Metric: "sysPower", Value: 12.1},
		{Node: nodeB, Metric: "gpuUsage", Value: 0},
		{Node: nodeB, Metric: "temp", Value: 38},
		{Node: nodeB, Metric: "pcpuUsage", Value: 0.02},
		{Node: nodeB, Metric: "ecpuUsage", Value: 0.04},
	}
	if diff := cmp.Diff(want, rs); diff != "" {
		t.Errorf("readings (-want +got):\n%s", diff)
	}
	if hits.Load() != 1 {
		t.Errorf("one Read made %d requests, want 1", hits.Load())
	}
	rs, err = c.PowerSource(nodeB, "12D3KooWGone").Read(ctx)
	if err != nil || len(rs) != 5 || rs[0].Node != nodeB {
		t.Errorf("PowerSource(B, gone) = %v, %v; want B's 5 readings", rs, err)
	}
	if _, err := c.PowerSource("12D3KooWGone").Read(ctx); !errors.Is(err, energy.ErrUnavailable) {
		t.Errorf("PowerSource(gone) = %v, want ErrUnavailable", err)
	}
	sourcetest.Run(t, c.PowerSource())
}

func TestPowerSourceUnavailable(t *testing.T) {
	var hits atomic.Int32
	c, _ := newTestClient(t, stateMux(t, map[string]string{"nodeSystem": `{}`}, &hits), nil)
	_, err := c.PowerSource().Read(context.Background())
	if !errors.Is(err, energy.ErrUnavailable) || !errors.Is(err, ErrNoMetrics) {
		t.Errorf("error = %v, want ErrUnavailable", err)
	}
	// A failing API node is not retried by a source.
	f := &flaky{failures: 100, status: 500}
	c2, _ := newTestClient(t, f, nil)
	_, err = c2.PowerSource().Read(context.Background())
	var ae *APIError
	if !errors.As(err, &ae) || ae.Attempts != 1 || f.hits.Load() != 1 {
		t.Errorf("error = %v after %d requests, want one attempt", err, f.hits.Load())
	}
}

func TestPowerSourceSim(t *testing.T) {
	s := newSim(t, sim.Options{})
	sourcetest.Run(t, simClient(t, s).PowerSource())
}

func TestLinks(t *testing.T) {
	var (
		mu     sync.Mutex
		puts   []string
		bodies []map[string][]string
	)
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /v1/instance-links/{id}", func(w http.ResponseWriter, r *http.Request) {
		var b map[string][]string
		_ = json.NewDecoder(r.Body).Decode(&b)
		mu.Lock()
		puts = append(puts, r.PathValue("id"))
		bodies = append(bodies, b)
		mu.Unlock()
		writeJSON(w, 200, []byte(`{"message":"Command received.","command_id":"c1"}`))
	})
	mux.HandleFunc("GET /v1/instance-links", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var ls []map[string]any
		for i, id := range puts {
			ls = append(ls, map[string]any{"linkId": id, "prefillInstances": bodies[i]["prefill_instances"], "decodeInstances": bodies[i]["decode_instances"]})
		}
		b, _ := json.Marshal(ls)
		if ls == nil {
			b = []byte("[]")
		}
		writeJSON(w, 200, b)
	})
	mux.HandleFunc("DELETE /v1/instance-links/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, []byte(`{"message":"Command received.","command_id":"c2"}`))
	})
	c, _ := newTestClient(t, mux, nil)
	ctx := context.Background()
	ls, err := c.Links(ctx)
	if err != nil || len(ls) != 0 {
		t.Fatalf("Links = %v, %v", ls, err)
	}
	id, err := c.CreateLink(ctx, []string{"i-pre"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(id) {
		t.Errorf("link id %q is no UUID4", id)
	}
	if diff := cmp.Diff([]map[string][]string{{"prefill_instances": {"i-pre"}, "decode_instances": {}}}, bodies); diff != "" {
		t.Errorf("PUT bodies (-want +got):\n%s", diff)
	}
	link, err := c.WaitLink(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(InstanceLink{LinkID: id, PrefillInstances: []string{"i-pre"}, DecodeInstances: []string{}}, link); diff != "" {
		t.Errorf("link (-want +got):\n%s", diff)
	}
	if r, err := c.DeleteLink(ctx, id); err != nil || r.CommandID != "c2" {
		t.Errorf("DeleteLink = %+v, %v", r, err)
	}
	var l InstanceLink
	if err := json.Unmarshal([]byte(`{"link_id":"x","prefill_instances":["a"],"decode_instances":["b"]}`), &l); err != nil ||
		!cmp.Equal(l, InstanceLink{LinkID: "x", PrefillInstances: []string{"a"}, DecodeInstances: []string{"b"}}) {
		t.Errorf("snake_case link = %+v, %v", l, err)
	}
}
