package exo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

// untag unwraps one of exo's tagged unions: a single-key object whose key
// is the Python class name, {"MlxRingInstance": {...}}.
func untag(data []byte) (tag string, body json.RawMessage, err error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return "", nil, fmt.Errorf("expected a tagged object {\"<Type>\": {...}}, found %s: %w", excerpt(data), err)
	}
	if len(m) != 1 {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return "", nil, fmt.Errorf("expected a tagged object with one key, found %d keys %q", len(m), keys)
	}
	for k, v := range m {
		return k, v, nil
	}
	panic("unreachable")
}

// orderedObject decodes a JSON object keeping its keys in the order they
// came: exo's dictionaries are ordered, and "the first instance of the
// model" means the first in that order.
func orderedObject(data []byte) (keys []string, values map[string]json.RawMessage, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	t, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if t == nil {
		return nil, nil, nil
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("expected a JSON object, found %s", excerpt(data))
	}
	values = make(map[string]json.RawMessage)
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if _, dup := values[k]; !dup {
			keys = append(keys, k)
		}
		values[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, err
	}
	return keys, values, nil
}

// memory is exo's Memory value: {"inBytes": N} by alias, {"in_bytes": N}
// without, and tolerated as a bare number or null.
type memory int64

func (m *memory) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, []byte("null")) {
		*m = 0
		return nil
	}
	if len(data) > 0 && data[0] != '{' {
		f, err := strconv.ParseFloat(string(data), 64)
		if err != nil {
			return fmt.Errorf("expected a Memory object or a number of bytes, found %s", excerpt(data))
		}
		*m = memory(f)
		return nil
	}
	var w struct {
		InBytes  *float64 `json:"inBytes"`
		InBytes2 *float64 `json:"in_bytes"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("expected a Memory object {\"inBytes\": N}, found %s: %w", excerpt(data), err)
	}
	switch {
	case w.InBytes != nil:
		*m = memory(*w.InBytes)
	case w.InBytes2 != nil:
		*m = memory(*w.InBytes2)
	default:
		return fmt.Errorf("expected a Memory object with inBytes or in_bytes, found %s", excerpt(data))
	}
	return nil
}

// pick returns the first non-empty of its arguments: exo's two casings of
// one field.
func pick[T comparable](vs ...T) T {
	var zero T
	for _, v := range vs {
		if v != zero {
			return v
		}
	}
	return zero
}

// An Instance is a model instance as exo describes it: a tagged
// MlxRingInstance or MlxJacclInstance with its shard assignments.
// It decodes either casing and re-encodes exactly the JSON it was decoded
// from, so a preview's instance can be submitted to CreateInstance as is.
type Instance struct {
	// Tag is the instance's type: "MlxRingInstance" or "MlxJacclInstance".
	Tag string
	// ID is the instanceId.
	ID string
	// ModelID is shardAssignments.modelId, the model's full id.
	ModelID string
	// NodeToRunner maps each node of the placement to its runner id.
	NodeToRunner map[string]string
	// Shards maps each runner id to its shard.
	Shards map[string]Shard
	// Raw is the tagged JSON the instance was decoded from.
	Raw json.RawMessage
}

type instanceWire struct {
	InstanceID        string           `json:"instanceId"`
	InstanceID2       string           `json:"instance_id"`
	ShardAssignments  *assignmentsWire `json:"shardAssignments"`
	ShardAssignments2 *assignmentsWire `json:"shard_assignments"`
}

type assignmentsWire struct {
	ModelID        string                     `json:"modelId"`
	ModelID2       string                     `json:"model_id"`
	NodeToRunner   map[string]string          `json:"nodeToRunner"`
	NodeToRunner2  map[string]string          `json:"node_to_runner"`
	RunnerToShard  map[string]json.RawMessage `json:"runnerToShard"`
	RunnerToShard2 map[string]json.RawMessage `json:"runner_to_shard"`
}

// UnmarshalJSON decodes a tagged instance.
func (in *Instance) UnmarshalJSON(data []byte) error {
	tag, body, err := untag(data)
	if err != nil {
		return fmt.Errorf("exo: instance: %w", err)
	}
	var w instanceWire
	if err := json.Unmarshal(body, &w); err != nil {
		return fmt.Errorf("exo: instance %s: %w", tag, err)
	}
	a := w.ShardAssignments
	if a == nil {
		a = w.ShardAssignments2
	}
	if a == nil {
		return fmt.Errorf("exo: instance %s: expected shardAssignments, found none", tag)
	}
	out := Instance{
		Tag:          tag,
		ID:           pick(w.InstanceID, w.InstanceID2),
		ModelID:      pick(a.ModelID, a.ModelID2),
		NodeToRunner: a.NodeToRunner,
		Raw:          append(json.RawMessage(nil), data...),
	}
	if out.NodeToRunner == nil {
		out.NodeToRunner = a.NodeToRunner2
	}
	rs := a.RunnerToShard
	if rs == nil {
		rs = a.RunnerToShard2
	}
	out.Shards = make(map[string]Shard, len(rs))
	for rid, raw := range rs {
		var s Shard
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Errorf("exo: instance %s: runner %s: %w", out.ID, rid, err)
		}
		out.Shards[rid] = s
	}
	*in = out
	return nil
}

// MarshalJSON encodes the instance as the JSON it was decoded from.
func (in Instance) MarshalJSON() ([]byte, error) {
	if len(in.Raw) == 0 {
		return nil, fmt.Errorf("exo: instance %q has no raw JSON to encode: only decoded instances can be submitted", in.ID)
	}
	return in.Raw, nil
}

// Nodes returns the ids of the instance's nodes, sorted.
func (in Instance) Nodes() []string {
	ns := make([]string, 0, len(in.NodeToRunner))
	for n := range in.NodeToRunner {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// InstanceMeta is the instance's communication backend derived from its
// tag: "MlxRing" for MlxRingInstance, "MlxJaccl" for MlxJacclInstance,
// else the tag without its "Instance" suffix.
func (in Instance) InstanceMeta() string {
	if len(in.Tag) > len("Instance") && in.Tag[len(in.Tag)-len("Instance"):] == "Instance" {
		return in.Tag[:len(in.Tag)-len("Instance")]
	}
	return in.Tag
}

// Sharding is the instance's sharding derived from its shard tags:
// "Pipeline" when every shard is a PipelineShardMetadata, "Tensor" for
// TensorShardMetadata, "Cfg" for CfgShardMetadata, "Mixed" when they
// differ, "" when there are none.
func (in Instance) Sharding() string {
	s := ""
	for _, sh := range in.Shards {
		k := sh.Sharding()
		switch {
		case s == "":
			s = k
		case s != k:
			return "Mixed"
		}
	}
	return s
}

// A Shard is one runner's part of an instance: a tagged
// PipelineShardMetadata, TensorShardMetadata or CfgShardMetadata.
type Shard struct {
	// Tag is the shard's type.
	Tag string
	// ModelID is modelCard.modelId.
	ModelID string
	// ModelBytes is modelCard.storageSize, the whole model's size.
	ModelBytes int64
	// DeviceRank and WorldSize place the runner among the instance's.
	DeviceRank, WorldSize int
	// StartLayer, EndLayer and NLayers are the layer range [StartLayer,
	// EndLayer) of NLayers.
	StartLayer, EndLayer, NLayers int
	// Raw is the tagged JSON the shard was decoded from (what
	// /download/start takes as shardMetadata).
	Raw json.RawMessage
}

type shardWire struct {
	ModelCard   *cardWire `json:"modelCard"`
	ModelCard2  *cardWire `json:"model_card"`
	DeviceRank  *int      `json:"deviceRank"`
	DeviceRank2 *int      `json:"device_rank"`
	WorldSize   *int      `json:"worldSize"`
	WorldSize2  *int      `json:"world_size"`
	StartLayer  *int      `json:"startLayer"`
	StartLayer2 *int      `json:"start_layer"`
	EndLayer    *int      `json:"endLayer"`
	EndLayer2   *int      `json:"end_layer"`
	NLayers     *int      `json:"nLayers"`
	NLayers2    *int      `json:"n_layers"`
}

type cardWire struct {
	ModelID      string `json:"modelId"`
	ModelID2     string `json:"model_id"`
	StorageSize  memory `json:"storageSize"`
	StorageSize2 memory `json:"storage_size"`
}

func intOf(ps ...*int) int {
	for _, p := range ps {
		if p != nil {
			return *p
		}
	}
	return 0
}

// UnmarshalJSON decodes a tagged shard.
func (s *Shard) UnmarshalJSON(data []byte) error {
	tag, body, err := untag(data)
	if err != nil {
		return fmt.Errorf("exo: shard: %w", err)
	}
	var w shardWire
	if err := json.Unmarshal(body, &w); err != nil {
		return fmt.Errorf("exo: shard %s: %w", tag, err)
	}
	out := Shard{
		Tag:        tag,
		DeviceRank: intOf(w.DeviceRank, w.DeviceRank2),
		WorldSize:  intOf(w.WorldSize, w.WorldSize2),
		StartLayer: intOf(w.StartLayer, w.StartLayer2),
		EndLayer:   intOf(w.EndLayer, w.EndLayer2),
		NLayers:    intOf(w.NLayers, w.NLayers2),
		Raw:        append(json.RawMessage(nil), data...),
	}
	if c := pick(w.ModelCard, w.ModelCard2); c != nil {
		out.ModelID = pick(c.ModelID, c.ModelID2)
		out.ModelBytes = int64(pick(c.StorageSize, c.StorageSize2))
	}
	*s = out
	return nil
}

// MarshalJSON encodes the shard as the JSON it was decoded from.
func (s Shard) MarshalJSON() ([]byte, error) {
	if len(s.Raw) == 0 {
		return []byte("null"), nil
	}
	return s.Raw, nil
}

// Sharding is the shard's kind: its tag without "ShardMetadata"
// ("Pipeline", "Tensor", "Cfg").
func (s Shard) Sharding() string {
	const suffix = "ShardMetadata"
	if len(s.Tag) > len(suffix) && s.Tag[len(s.Tag)-len(suffix):] == suffix {
		return s.Tag[:len(s.Tag)-len(suffix)]
	}
	return s.Tag
}

// A RunnerStatus is a runner's tagged status from /state/runners.
type RunnerStatus struct {
	// Tag is the status: RunnerIdle, RunnerConnecting, RunnerConnected,
	// RunnerLoading, RunnerLoaded, RunnerWarmingUp, RunnerReady,
	// RunnerRunning, RunnerShuttingDown, RunnerShutdown or RunnerFailed.
	Tag string
	// LayersLoaded and TotalLayers are RunnerLoading's progress.
	LayersLoaded, TotalLayers int
	// PrefillServerPort is RunnerReady's prefill server port, nil if none.
	PrefillServerPort *int
	// ErrorMessage and Diagnostics are RunnerFailed's ("<tag>: <message>").
	ErrorMessage string
	Diagnostics  []string
}

// UnmarshalJSON decodes a tagged runner status.
func (r *RunnerStatus) UnmarshalJSON(data []byte) error {
	tag, body, err := untag(data)
	if err != nil {
		return fmt.Errorf("exo: runner status: %w", err)
	}
	var w struct {
		LayersLoaded       *int              `json:"layersLoaded"`
		LayersLoaded2      *int              `json:"layers_loaded"`
		TotalLayers        *int              `json:"totalLayers"`
		TotalLayers2       *int              `json:"total_layers"`
		PrefillServerPort  *int              `json:"prefillServerPort"`
		PrefillServerPort2 *int              `json:"prefill_server_port"`
		ErrorMessage       string            `json:"errorMessage"`
		ErrorMessage2      string            `json:"error_message"`
		Diagnostics        []json.RawMessage `json:"diagnostics"`
	}
	if len(bytes.TrimSpace(body)) > 0 && !bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
		if err := json.Unmarshal(body, &w); err != nil {
			return fmt.Errorf("exo: runner status %s: %w", tag, err)
		}
	}
	out := RunnerStatus{
		Tag:               tag,
		LayersLoaded:      intOf(w.LayersLoaded, w.LayersLoaded2),
		TotalLayers:       intOf(w.TotalLayers, w.TotalLayers2),
		PrefillServerPort: pick(w.PrefillServerPort, w.PrefillServerPort2),
		ErrorMessage:      pick(w.ErrorMessage, w.ErrorMessage2),
	}
	for _, d := range w.Diagnostics {
		dt, db, err := untag(d)
		if err != nil {
			out.Diagnostics = append(out.Diagnostics, string(d))
			continue
		}
		var m struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(db, &m)
		out.Diagnostics = append(out.Diagnostics, dt+": "+m.Message)
	}
	*r = out
	return nil
}

// String returns the tag, with RunnerLoading's progress as "12/48".
func (r RunnerStatus) String() string {
	if r.Tag == "RunnerLoading" {
		return fmt.Sprintf("RunnerLoading %d/%d", r.LayersLoaded, r.TotalLayers)
	}
	return r.Tag
}
