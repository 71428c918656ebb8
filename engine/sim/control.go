package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferbench/inferbench/promptsize"
)

// modelListEntry is exo's ModelListModel (snake_case).
func (s *Server) modelListEntry(m Model, custom bool) map[string]any {
	return map[string]any{
		"id": m.ID, "object": "model", "created": time.Now().Unix(), "owned_by": "exo",
		"hugging_face_id": m.ID, "name": m.Name(),
		"description":            "simulated model (" + s.preset.Name + ")",
		"context_length":         m.ContextLength,
		"tags":                   []string{"simulated"},
		"storage_size_megabytes": int64(m.WeightBytes()/(1<<20) + 0.5),
		"supports_tensor":        m.SupportsTensor,
		"tasks":                  []string{"TextGeneration"},
		"is_custom":              custom,
		"family":                 m.Family, "quantization": m.Quantization, "base_model": m.BaseModel,
		"capabilities": []string{"text"}, "reasoning_dialect": "none",
	}
}

// handleModels serves GET /models and /v1/models: every card, or with
// ?status=downloaded only those some node has a DownloadCompleted of, as
// exo filters them.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	keep := func(string) bool { return true }
	if r.URL.Query().Get("status") == "downloaded" {
		have := s.downloadedModels()
		keep = func(id string) bool { return have[id] }
	}
	data := []any{}
	if keep(s.preset.Model.ID) {
		data = append(data, s.modelListEntry(s.preset.Model, false))
	}
	s.mu.Lock()
	cards := slices.Clone(s.cards)
	s.mu.Unlock()
	for _, m := range cards {
		if keep(m.ID) {
			data = append(data, s.modelListEntry(m, true))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *Server) handleVLLMModels(w http.ResponseWriter, r *http.Request) {
	m := s.preset.Model
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{map[string]any{
		"id": m.ID, "object": "model", "created": time.Now().Unix(), "owned_by": "vllm",
		"root": m.ID, "parent": nil, "max_model_len": m.ContextLength, "permission": []any{},
	}}})
}

// handleAddModel adds a custom card. The sim cannot fetch from Hugging
// Face: the card takes the preset model's shape under the new id.
func (s *Server) handleAddModel(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ModelID string `json:"model_id"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.ModelID == "" {
		exoError(w, http.StatusBadRequest, "Failed to fetch model: expected a body {\"model_id\": \"org/repo\"}")
		return
	}
	m := s.preset.Model
	m.ID = req.ModelID
	if _, ok := s.model(m.ID); !ok {
		s.mu.Lock()
		s.cards = append(s.cards, m)
		s.events++
		s.mu.Unlock()
	}
	e := s.modelListEntry(m, true)
	writeJSON(w, http.StatusOK, map[string]any{
		"id": e["id"], "hugging_face_id": e["hugging_face_id"], "name": e["name"],
		"storage_size_megabytes": e["storage_size_megabytes"], "supports_tensor": e["supports_tensor"],
		"tasks": e["tasks"], "is_custom": true,
	})
}

// handleTokenize is vLLM's POST /tokenize: {model, messages,
// add_generation_prompt} or {model, prompt} → {count, max_model_len, tokens}.
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages            []chatMessage   `json:"messages"`
		Prompt              *string         `json:"prompt"`
		AddGenerationPrompt *bool           `json:"add_generation_prompt"`
		ChatTemplateKwargs  json.RawMessage `json:"chat_template_kwargs"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxRequestBody)).Decode(&req); err != nil {
		vllmError(w, http.StatusBadRequest, "expected a JSON body {model, messages} or {model, prompt}: "+err.Error())
		return
	}
	mlen := s.preset.Model.ContextLength
	if req.Prompt != nil {
		if _, builtin := s.counter.(Counter); !builtin {
			vllmError(w, http.StatusBadRequest, "prompt tokenization needs the built-in tokenizer; this server counts chat messages with a caller's Counter")
			return
		}
		ids := []int{}
		for _, t := range Tokenize(*req.Prompt) {
			ids = append(ids, tokenID(t))
		}
		writeJSON(w, http.StatusOK, map[string]any{"count": len(ids), "max_model_len": mlen, "tokens": ids})
		return
	}
	if len(req.Messages) == 0 {
		vllmError(w, http.StatusBadRequest, "expected messages or prompt, found neither")
		return
	}
	msgs := make([]promptsize.Message, len(req.Messages))
	for i, m := range req.Messages {
		t, err := m.text()
		if err != nil || !validRole(m.Role) {
			vllmError(w, http.StatusBadRequest, fmt.Sprintf("messages[%d]: expected a known role and text content", i))
			return
		}
		msgs[i] = promptsize.Message{Role: m.Role, Content: t}
	}
	vars, err := reasoningFields{ChatTemplateKwargs: req.ChatTemplateKwargs}.kwargs()
	if err != nil {
		vllmError(w, http.StatusBadRequest, err.Error())
		return
	}
	gen := req.AddGenerationPrompt == nil || *req.AddGenerationPrompt
	if !gen {
		// The template writes its empty thinking block only after the
		// generation prompt.
		vars = nil
	}
	n, err := s.countChat(r.Context(), msgs, vars)
	if err != nil {
		vllmError(w, http.StatusBadRequest, "counting tokens: "+err.Error())
		return
	}
	var ids []int
	if _, builtin := s.counter.(Counter); builtin {
		ids = chatIDs(msgs, vars)
	}
	if !gen {
		n -= GenerationPromptTokens
		if ids != nil {
			ids = ids[:len(ids)-GenerationPromptTokens]
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": n, "max_model_len": mlen, "tokens": ids})
}

// cardJSON is a model card by alias (camelCase).
func cardJSON(m Model) map[string]any {
	return map[string]any{
		"modelId": m.ID, "storageSize": map[string]int64{"inBytes": int64(m.WeightBytes())},
		"nLayers": m.Layers, "hiddenSize": m.HiddenSize, "supportsTensor": m.SupportsTensor,
		"tasks": []string{"TextGeneration"}, "family": m.Family, "quantization": m.Quantization,
		"baseModel": m.BaseModel, "capabilities": []string{"text"},
	}
}

// instanceJSON renders a placement as exo's tagged instance.
func (s *Server) instanceJSON(sp spec) map[string]any {
	k := len(sp.nodes)
	meta, sharding := sp.meta, sp.sharding
	if k == 1 {
		// exo's placer forces single-node placements to ring + pipeline.
		meta, sharding = "MlxRing", "Pipeline"
	}
	nodeToRunner := map[string]string{}
	runnerToShard := map[string]any{}
	for rank, n := range sp.nodes {
		id := s.nodes[n].id
		rid := sp.runners[rank]
		nodeToRunner[id] = rid
		start, end := 0, sp.model.Layers
		if sharding == "Pipeline" {
			start, end = rank*sp.model.Layers/k, (rank+1)*sp.model.Layers/k
		}
		runnerToShard[rid] = map[string]any{sharding + "ShardMetadata": map[string]any{
			"modelCard": cardJSON(sp.model), "deviceRank": rank, "worldSize": k,
			"immediateException": false, "shouldTimeout": nil,
			"startLayer": start, "endLayer": end, "nLayers": sp.model.Layers,
		}}
	}
	body := map[string]any{
		"instanceId": sp.id,
		"shardAssignments": map[string]any{
			"modelId": sp.model.ID, "nodeToRunner": nodeToRunner, "runnerToShard": runnerToShard,
		},
	}
	if meta == "MlxJaccl" {
		devices := make([][]*string, k)
		coords := map[string]string{}
		for i := range k {
			devices[i] = make([]*string, k)
			for j := range k {
				if i != j {
					devices[i][j] = ptr(fmt.Sprintf("rdma_en%d", j+1))
				}
			}
			coords[s.nodes[sp.nodes[i]].id] = fmt.Sprintf("%s:%d", s.nodes[sp.nodes[0]].ip, sp.port)
		}
		body["jacclDevices"] = devices
		body["jacclCoordinators"] = coords
	} else {
		body["ephemeralPort"] = sp.port
		hosts := map[string]any{}
		for i, n := range sp.nodes {
			var list []map[string]any
			for j, m := range sp.nodes {
				switch {
				case i == j:
					list = append(list, map[string]any{"ip": "0.0.0.0", "port": sp.port})
				case j == (i+1)%k || i == (j+1)%k:
					list = append(list, map[string]any{"ip": s.nodes[m].ip, "port": sp.port})
				default:
					list = append(list, map[string]any{"ip": "198.51.100.1", "port": 0})
				}
			}
			hosts[s.nodes[n].id] = list
		}
		body["hostsByNode"] = hosts
	}
	return map[string]any{meta + "Instance": body}
}

func (in *instance) spec() spec {
	return spec{id: in.id, model: in.model, nodes: in.nodes, runners: in.runners, sharding: in.sharding, meta: in.meta, port: in.port}
}

// state builds exo's State by alias (camelCase), exo-api.md §4.
func (s *Server) state() map[string]any {
	now := s.elapsed()
	s.mu.Lock()
	defer s.mu.Unlock()
	instances := map[string]any{}
	runners := map[string]any{}
	for _, in := range s.instances {
		instances[in.id] = s.instanceJSON(in.spec())
		busy := in.load() > 0
		for rank, rid := range in.runners {
			layers := in.model.Layers
			if in.sharding == "Pipeline" || len(in.nodes) == 1 {
				k := len(in.nodes)
				layers = (rank+1)*in.model.Layers/k - rank*in.model.Layers/k
			}
			switch {
			case now < in.readyAt:
				frac := 0.0
				if d := s.opts.loadDelay().Seconds(); d > 0 {
					frac = 1 - (in.readyAt-now).Seconds()/d
				}
				runners[rid] = map[string]any{"RunnerLoading": map[string]any{
					"layersLoaded": int(float64(layers) * max(frac, 0)), "totalLayers": layers}}
			case busy:
				runners[rid] = map[string]any{"RunnerRunning": map[string]any{}}
			default:
				var port any
				if !s.opts.NoDisaggregation {
					port = in.port + 1
				}
				runners[rid] = map[string]any{"RunnerReady": map[string]any{"prefillServerPort": port}}
			}
		}
	}
	tasks := map[string]any{}
	for id, j := range s.jobs {
		st := [...]string{"Pending", "Running", "Complete"}[j.state.Load()]
		inst, _ := j.instID.Load().(string)
		tasks[id] = map[string]any{"TextGeneration": map[string]any{
			"taskId": id, "taskStatus": st, "instanceId": inst, "commandId": id,
			"taskParams": map[string]any{"maxOutputTokens": j.target},
		}}
	}
	ids := make([]string, len(s.nodes))
	lastSeen, identities, memory, disk, system := map[string]any{}, map[string]any{}, map[string]any{}, map[string]any{}, map[string]any{}
	downloads, rdma := map[string]any{}, map[string]any{}
	conns := map[string]any{}
	hw := s.preset.Hardware
	window := time.Second
	for i, n := range s.nodes {
		ids[i] = n.id
		lastSeen[n.id] = time.Now().UTC().Format(time.RFC3339Nano)
		identities[n.id] = map[string]any{"modelId": hw.MachineModel, "chipId": hw.Chip,
			"friendlyName": n.name, "osVersion": "simulated", "osBuildVersion": "sim"}
		used := s.ramUsed(i)
		memory[n.id] = map[string]any{"ramTotal": inBytes(hw.RAM), "ramAvailable": inBytes(hw.RAM - used),
			"swapTotal": inBytes(0), "swapAvailable": inBytes(0)}
		dls, onDisk := s.downloadsJSON(i, now)
		disk[n.id] = map[string]any{"total": inBytes(hw.Disk), "available": inBytes(max(hw.Disk-onDisk, 0))}
		from := max(now-window, 0)
		util := s.power.utilisation(i, from, now)
		// Mean power over the window: idle plus the dynamic energy over
		// the window's length (so an idle node reads exactly IdleWatts).
		watts := hw.IdleWatts
		if now > from {
			secs := (now - from).Seconds()
			watts += (s.power.energy(i, from, now) - hw.IdleWatts*secs) / secs
		}
		system[n.id] = map[string]any{"gpuUsage": util, "temp": 35 + 45*util, "sysPower": watts,
			"pcpuUsage": 0.03 + 0.1*util, "ecpuUsage": 0.05}
		downloads[n.id] = dls
		rdma[n.id] = map[string]any{"enabled": true}
		out := map[string]any{}
		for j, m := range s.nodes {
			if j != i {
				out[m.id] = []any{map[string]any{"sinkMultiaddr": map[string]any{
					"address": "/ip4/" + m.ip + "/tcp/52416", "address_type": "ip4"}}}
			}
		}
		conns[n.id] = out
	}
	links := map[string]any{}
	for _, l := range s.links {
		links[l.ID] = l
	}
	custom := map[string]any{}
	for _, m := range s.cards {
		custom[m.ID] = cardJSON(m)
	}
	return map[string]any{
		"instances": instances, "runners": runners, "downloads": downloads, "tasks": tasks,
		"lastSeen": lastSeen, "topology": map[string]any{"nodes": ids, "connections": conns},
		"lastEventAppliedIdx": s.events, "nodeIdentities": identities, "nodeMemory": memory,
		"nodeDisk": disk, "nodeSystem": system, "nodeNetwork": map[string]any{},
		"nodeThunderbolt": map[string]any{}, "nodeThunderboltBridge": map[string]any{},
		"nodeRdmaCtl": rdma, "nodeBackends": map[string]any{}, "thunderboltBridgeCycles": []any{},
		"instanceLinks": links, "prefillServerPorts": map[string]any{}, "customModelCards": custom,
	}
}

func inBytes(n int64) map[string]int64 { return map[string]int64{"inBytes": n} }

// handleState serves GET /state and GET /state/{path...}: the state by
// alias, then the path walked key by key (integers index lists).
func (s *Server) handleState(w http.ResponseWriter, r *http.Request) {
	b, err := json.Marshal(s.state())
	if err != nil {
		exoError(w, http.StatusInternalServerError, "encoding state: "+err.Error())
		return
	}
	path := strings.Trim(r.PathValue("path"), "/")
	if path == "" {
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
		return
	}
	var v any
	json.Unmarshal(b, &v)
	keys := strings.Split(path, "/")
	for _, k := range keys {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[k]; ok {
				continue
			}
		case []any:
			if i, err := strconv.Atoi(k); err == nil && i >= 0 && i < len(x) {
				v = x[i]
				continue
			}
		}
		exoError(w, http.StatusNotFound, fmt.Sprintf("unable to find path '%s' in state json", strings.Join(keys, ".")))
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// place chooses k nodes for model m: the nodes named in want first (exo's
// node_ids: a placement must contain them all), then the nodes with the most
// free memory (ties by index); each must hold its share of the weights.
func (s *Server) place(m Model, k int, sharding, meta string, want ...string) ([]int, error) {
	if len(want) > k {
		return nil, fmt.Errorf("a placement on %d nodes cannot contain the %d nodes asked for", k, len(want))
	}
	if k > len(s.nodes) {
		return nil, fmt.Errorf("need %d nodes, the cluster has %d", k, len(s.nodes))
	}
	if sharding == "Tensor" && k > 1 {
		if !m.SupportsTensor {
			return nil, fmt.Errorf("model %s does not support tensor parallelism", m.ID)
		}
		if m.HiddenSize%k != 0 || m.KVHeads%k != 0 {
			return nil, fmt.Errorf("hidden size %d and %d KV heads are not divisible by %d nodes", m.HiddenSize, m.KVHeads, k)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	free := make([]int64, len(s.nodes))
	order := make([]int, len(s.nodes))
	for i := range s.nodes {
		free[i] = s.preset.Hardware.RAM - s.ramUsed(i)
		order[i] = i
	}
	wanted := func(n int) bool { return slices.Contains(want, s.nodes[n].id) }
	for _, id := range want {
		if !slices.ContainsFunc(s.nodes, func(x simNode) bool { return x.id == id }) {
			return nil, fmt.Errorf("unknown node %s", id)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case wanted(a) && !wanted(b):
			return -1
		case wanted(b) && !wanted(a):
			return 1
		case free[a] > free[b]:
			return -1
		case free[a] < free[b]:
			return 1
		}
		return 0
	})
	nodes := slices.Clone(order[:k])
	slices.Sort(nodes)
	for i, n := range nodes {
		if need := memoryShare(int64(m.WeightBytes()), k, i); need > free[n] {
			return nil, fmt.Errorf("node %s has %d bytes free, the shard needs %d", s.nodes[n].id, free[n], need)
		}
	}
	return nodes, nil
}

// handlePreviews serves GET /instance/previews?model_id=...: one preview
// per (sharding, instance meta, node count), exo-api.md §3.1.
func (s *Server) handlePreviews(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("model_id")
	m, ok := s.model(id)
	if !ok {
		exoError(w, http.StatusBadRequest, fmt.Sprintf("Failed to load model card for %q: the sim knows %s and the cards added with /models/add", id, s.preset.Model.ID))
		return
	}
	want := r.URL.Query()["node_ids"]
	previews := []any{}
	for _, sharding := range []string{"Pipeline", "Tensor"} {
		for _, meta := range []string{"MlxRing", "MlxJaccl"} {
			var firstErr error
			for k := 1; k <= len(s.nodes); k++ {
				nodes, err := s.place(m, k, sharding, meta, want...)
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
					continue
				}
				sp := s.newSpec(m, nodes, sharding, meta)
				delta := map[string]int64{}
				for i, n := range nodes {
					delta[s.nodes[n].id] = memoryShare(int64(m.WeightBytes()), k, i)
				}
				previews = append(previews, map[string]any{"model_id": m.ID, "sharding": sharding,
					"instance_meta": meta, "instance": s.instanceJSON(sp), "memory_delta_by_node": delta, "error": nil})
			}
			if firstErr != nil && !slices.ContainsFunc(previews, func(p any) bool {
				pm := p.(map[string]any)
				return pm["sharding"] == sharding && pm["instance_meta"] == meta
			}) {
				previews = append(previews, map[string]any{"model_id": m.ID, "sharding": sharding,
					"instance_meta": meta, "instance": nil, "memory_delta_by_node": nil, "error": firstErr.Error()})
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"previews": previews})
}

// handleCreateInstance serves POST /instance {"instance": <tagged>}.
func (s *Server) handleCreateInstance(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Instance map[string]struct {
			InstanceID       string `json:"instanceId"`
			EphemeralPort    int    `json:"ephemeralPort"`
			ShardAssignments struct {
				ModelID       string                                `json:"modelId"`
				NodeToRunner  map[string]string                     `json:"nodeToRunner"`
				RunnerToShard map[string]map[string]json.RawMessage `json:"runnerToShard"`
			} `json:"shardAssignments"`
		} `json:"instance"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(&req); err != nil || len(req.Instance) != 1 {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []map[string]any{{
			"type": "value_error", "loc": []string{"body", "instance"},
			"msg": "expected {\"instance\": {\"MlxRingInstance\"|\"MlxJacclInstance\": {...}}}"}}})
		return
	}
	var tag string
	for t := range req.Instance {
		tag = t
	}
	body := req.Instance[tag]
	meta := strings.TrimSuffix(tag, "Instance")
	if meta != "MlxRing" && meta != "MlxJaccl" {
		exoError(w, http.StatusBadRequest, fmt.Sprintf("instance tag %q: expected MlxRingInstance or MlxJacclInstance", tag))
		return
	}
	m, ok := s.model(body.ShardAssignments.ModelID)
	if !ok {
		exoError(w, http.StatusBadRequest, fmt.Sprintf("unknown model %q", body.ShardAssignments.ModelID))
		return
	}
	sp := spec{id: body.InstanceID, model: m, meta: meta, sharding: "Pipeline", port: body.EphemeralPort}
	if sp.id == "" {
		sp.id = s.newID()
	}
	// Runners in rank order.
	type rr struct {
		node, rank int
		runner     string
	}
	var rs []rr
	for nodeID, rid := range body.ShardAssignments.NodeToRunner {
		n := slices.IndexFunc(s.nodes, func(x simNode) bool { return x.id == nodeID })
		if n < 0 {
			exoError(w, http.StatusBadRequest, fmt.Sprintf("unknown node %q", nodeID))
			return
		}
		rank := 0
		for shardTag, raw := range body.ShardAssignments.RunnerToShard[rid] {
			sp.sharding = strings.TrimSuffix(shardTag, "ShardMetadata")
			var sh struct {
				DeviceRank int `json:"deviceRank"`
			}
			json.Unmarshal(raw, &sh)
			rank = sh.DeviceRank
		}
		rs = append(rs, rr{n, rank, rid})
	}
	if len(rs) == 0 {
		exoError(w, http.StatusBadRequest, "instance has no runners: expected shardAssignments.nodeToRunner")
		return
	}
	slices.SortFunc(rs, func(a, b rr) int { return a.rank - b.rank })
	for _, x := range rs {
		sp.nodes = append(sp.nodes, x.node)
		sp.runners = append(sp.runners, x.runner)
	}
	s.mu.Lock()
	var avail int64
	for i := range s.nodes {
		avail += s.preset.Hardware.RAM - s.ramUsed(i)
	}
	if int64(m.WeightBytes()) > avail {
		s.mu.Unlock()
		exoError(w, http.StatusBadRequest, fmt.Sprintf("Insufficient memory to create instance: model needs %d bytes, the cluster has %d available", int64(m.WeightBytes()), avail))
		return
	}
	if slices.ContainsFunc(s.instances, func(in *instance) bool { return in.id == sp.id }) {
		s.mu.Unlock()
		exoError(w, http.StatusBadRequest, fmt.Sprintf("instance %s already exists", sp.id))
		return
	}
	s.startInstance(sp, s.opts.loadDelay())
	s.mu.Unlock()
	s.log.Info("sim: instance created", "instance", sp.id, "model", m.ID, "nodes", len(sp.nodes), "sharding", sp.sharding, "meta", sp.meta)
	writeJSON(w, http.StatusOK, map[string]any{"message": "Command received.", "command_id": s.newID(), "model_card": cardJSON(m)})
}

func (s *Server) handleGetInstance(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	i := slices.IndexFunc(s.instances, func(in *instance) bool { return in.id == id })
	var v map[string]any
	if i >= 0 {
		v = s.instanceJSON(s.instances[i].spec())
	}
	s.mu.Unlock()
	if i < 0 {
		exoError(w, http.StatusNotFound, "Instance not found")
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) handleDeleteInstance(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.deleteInstance(id) {
		exoError(w, http.StatusNotFound, "Instance not found")
		return
	}
	s.log.Info("sim: instance deleted", "instance", id)
	writeJSON(w, http.StatusOK, map[string]any{"message": "Command received.", "command_id": s.newID(), "instance_id": id})
}

const disaggregationOff = "Prefill/decode disaggregation is disabled. Set ENABLE_DISAGGREGATION=true to enable."

func (s *Server) handleListLinks(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	links := []instanceLink{}
	if !s.opts.NoDisaggregation {
		links = append(links, s.links...)
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, links)
}

// handlePutLink serves POST /v1/instance-links (mints an id) and PUT
// /v1/instance-links/{id} (upserts).
func (s *Server) handlePutLink(w http.ResponseWriter, r *http.Request) {
	if s.opts.NoDisaggregation {
		exoError(w, http.StatusNotFound, disaggregationOff)
		return
	}
	var req struct {
		Prefill []string `json:"prefill_instances"`
		Decode  []string `json:"decode_instances"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []map[string]any{{
			"type": "value_error", "loc": []string{"body"}, "msg": "expected {prefill_instances, decode_instances}: " + err.Error()}}})
		return
	}
	l := instanceLink{ID: r.PathValue("id"), Prefill: dedup(req.Prefill), Decode: dedup(req.Decode)}
	if l.ID == "" {
		l.ID = s.newID()
	}
	s.mu.Lock()
	if i := slices.IndexFunc(s.links, func(x instanceLink) bool { return x.ID == l.ID }); i >= 0 {
		s.links[i] = l
	} else {
		s.links = append(s.links, l)
	}
	s.events++
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"message": "Command received.", "command_id": s.newID()})
}

func dedup(ids []string) []string {
	out := []string{}
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func (s *Server) handleDeleteLink(w http.ResponseWriter, r *http.Request) {
	if s.opts.NoDisaggregation {
		exoError(w, http.StatusNotFound, disaggregationOff)
		return
	}
	id := r.PathValue("id")
	s.mu.Lock()
	s.links = slices.DeleteFunc(s.links, func(l instanceLink) bool { return l.ID == id })
	s.events++
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"message": "Command received.", "command_id": s.newID()})
}

// handleCancel serves POST /v1/cancel/{id}.
func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	j := s.jobs[id]
	s.mu.Unlock()
	// A cancelled command is no longer active, even while its handler is
	// still finishing the response it cut short.
	if j == nil || j.state.Load() == jobDone || j.cancelled.Load() {
		exoError(w, http.StatusNotFound, fmt.Sprintf("Command %s not found or not active", id))
		return
	}
	j.aborted.Store(true)
	j.cancelled.Store(true)
	select {
	case j.notify <- struct{}{}:
	default:
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": "Command cancelled.", "command_id": id})
}
