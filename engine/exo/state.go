package exo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// A Cluster is the snapshot exo_bench writes under "cluster" in its result
// file: four parts of the cluster state, as exo serves them (camelCase).
// A part exo does not have, or has empty, is left out.
type Cluster struct {
	NodeIdentities json.RawMessage `json:"nodeIdentities,omitempty"`
	Topology       json.RawMessage `json:"topology,omitempty"`
	NodeMemory     json.RawMessage `json:"nodeMemory,omitempty"`
	NodeSystem     json.RawMessage `json:"nodeSystem,omitempty"`
}

// Empty reports whether the snapshot holds nothing (exo_bench then omits
// "cluster").
func (s Cluster) Empty() bool {
	return s.NodeIdentities == nil && s.Topology == nil && s.NodeMemory == nil && s.NodeSystem == nil
}

// Snapshot reads /state/nodeIdentities, /state/topology, /state/nodeMemory
// and /state/nodeSystem, as exo_bench's capture_cluster_snapshot does, and
// keeps the non-empty ones. A part exo answers 404 for is left out; any
// other failure is an error.
func (c *Client) Snapshot(ctx context.Context) (Cluster, error) {
	var s Cluster
	parts := []struct {
		key string
		dst *json.RawMessage
	}{
		{"nodeIdentities", &s.NodeIdentities},
		{"topology", &s.Topology},
		{"nodeMemory", &s.NodeMemory},
		{"nodeSystem", &s.NodeSystem},
	}
	for _, p := range parts {
		data, err := c.call(ctx, http.MethodGet, statePath(p.key), nil, nil)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return Cluster{}, err
		}
		if !json.Valid(data) {
			return Cluster{}, fmt.Errorf("exo: /state/%s: expected JSON, found %s", p.key, excerpt(data))
		}
		if emptyJSON(data) {
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, data); err != nil {
			return Cluster{}, fmt.Errorf("exo: /state/%s: %w", p.key, err)
		}
		*p.dst = buf.Bytes()
	}
	return s, nil
}

// emptyJSON reports whether data is null, {}, [], "" or false.
func emptyJSON(data []byte) bool {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return false
	}
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	case string:
		return v == ""
	case bool:
		return !v
	}
	return false
}

// NodeMetrics are one node's system metrics (/state/nodeSystem/{node}),
// macmon readings that exo refreshes once a second and relays through its
// events, so they lag the hardware by a second or more.
type NodeMetrics struct {
	// GPUUsage, PCPUUsage and ECPUUsage are usage fractions in [0, 1] of
	// the GPU, the performance cores and the efficiency cores.
	GPUUsage  float64 `json:"gpuUsage"`
	PCPUUsage float64 `json:"pcpuUsage"`
	ECPUUsage float64 `json:"ecpuUsage"`
	// Temp is the average GPU temperature in °C.
	Temp float64 `json:"temp"`
	// SysPower is the whole system's power draw in watts.
	SysPower float64 `json:"sysPower"`
}

// UnmarshalJSON decodes the metrics in either casing (exo serves
// camelCase; its Python names are snake_case).
func (m *NodeMetrics) UnmarshalJSON(data []byte) error {
	var w struct {
		GPUUsage   *float64 `json:"gpuUsage"`
		GPUUsage2  *float64 `json:"gpu_usage"`
		PCPUUsage  *float64 `json:"pcpuUsage"`
		PCPUUsage2 *float64 `json:"pcpu_usage"`
		ECPUUsage  *float64 `json:"ecpuUsage"`
		ECPUUsage2 *float64 `json:"ecpu_usage"`
		Temp       *float64 `json:"temp"`
		SysPower   *float64 `json:"sysPower"`
		SysPower2  *float64 `json:"sys_power"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("exo: node metrics: expected {gpuUsage, temp, sysPower, pcpuUsage, ecpuUsage}, found %s: %w", excerpt(data), err)
	}
	f := func(ps ...*float64) float64 {
		for _, p := range ps {
			if p != nil {
				return *p
			}
		}
		return 0
	}
	*m = NodeMetrics{
		GPUUsage:  f(w.GPUUsage, w.GPUUsage2),
		PCPUUsage: f(w.PCPUUsage, w.PCPUUsage2),
		ECPUUsage: f(w.ECPUUsage, w.ECPUUsage2),
		Temp:      f(w.Temp),
		SysPower:  f(w.SysPower, w.SysPower2),
	}
	return nil
}

// NodeSystem returns one node's metrics. A node without metrics (no
// macmon: not macOS) gives an error matching ErrNoMetrics and ErrNotFound.
func (c *Client) NodeSystem(ctx context.Context, nodeID string) (NodeMetrics, error) {
	var m NodeMetrics
	err := c.getJSON(ctx, statePath("nodeSystem", nodeID), nil, &m)
	if errors.Is(err, ErrNotFound) {
		return NodeMetrics{}, fmt.Errorf("%w for node %s: %w", ErrNoMetrics, nodeID, err)
	}
	return m, err
}

// NodeSystems returns the metrics of every node that reports them, by
// node id, from one GET /state/nodeSystem.
func (c *Client) NodeSystems(ctx context.Context) (map[string]NodeMetrics, error) {
	var m map[string]NodeMetrics
	err := c.getJSON(ctx, statePath("nodeSystem"), nil, &m)
	if errors.Is(err, ErrNotFound) {
		return map[string]NodeMetrics{}, nil
	}
	if m == nil && err == nil {
		m = map[string]NodeMetrics{}
	}
	return m, err
}

// A Disk is a node's disk space (/state/nodeDisk/{node}), which exo
// refreshes every 30 s.
type Disk struct {
	Total, Available int64
}

// NodeDisk returns a node's disk space; a node exo has no reading for
// gives an error matching ErrNotFound.
func (c *Client) NodeDisk(ctx context.Context, nodeID string) (Disk, error) {
	var w struct {
		Total     memory `json:"total"`
		Available memory `json:"available"`
	}
	if err := c.getJSON(ctx, statePath("nodeDisk", nodeID), nil, &w); err != nil {
		return Disk{}, err
	}
	return Disk{Total: int64(w.Total), Available: int64(w.Available)}, nil
}

// A NodeMemory is a node's memory (/state/nodeMemory/{node}).
type NodeMemory struct {
	RAMTotal, RAMAvailable, SwapTotal, SwapAvailable int64
}

// NodeMemories returns every node's memory by node id.
func (c *Client) NodeMemories(ctx context.Context) (map[string]NodeMemory, error) {
	var w map[string]struct {
		RAMTotal      memory `json:"ramTotal"`
		RAMAvailable  memory `json:"ramAvailable"`
		SwapTotal     memory `json:"swapTotal"`
		SwapAvailable memory `json:"swapAvailable"`
	}
	err := c.getJSON(ctx, statePath("nodeMemory"), nil, &w)
	if errors.Is(err, ErrNotFound) {
		return map[string]NodeMemory{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]NodeMemory, len(w))
	for k, v := range w {
		out[k] = NodeMemory{int64(v.RAMTotal), int64(v.RAMAvailable), int64(v.SwapTotal), int64(v.SwapAvailable)}
	}
	return out, nil
}

// A NodeIdentity is a node's identity (/state/nodeIdentities/{node}).
type NodeIdentity struct {
	ModelID        string `json:"modelId"`
	ChipID         string `json:"chipId"`
	FriendlyName   string `json:"friendlyName"`
	OSVersion      string `json:"osVersion"`
	OSBuildVersion string `json:"osBuildVersion"`
}

// NodeIdentities returns every node's identity by node id.
func (c *Client) NodeIdentities(ctx context.Context) (map[string]NodeIdentity, error) {
	var m map[string]NodeIdentity
	err := c.getJSON(ctx, statePath("nodeIdentities"), nil, &m)
	if errors.Is(err, ErrNotFound) {
		return map[string]NodeIdentity{}, nil
	}
	return m, err
}
