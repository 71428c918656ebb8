package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// The download statuses of exo's DownloadProgress tagged union
// (src/exo/shared/types/worker/downloads.py).
const (
	dlPending   = "DownloadPending"
	dlOngoing   = "DownloadOngoing"
	dlCompleted = "DownloadCompleted"
	dlFailed    = "DownloadFailed"
)

// simFilesPerModel is how many files a simulated download counts.
const simFilesPerModel = 4

// A download is one node's copy of one model, as exo's download
// coordinator tracks it. A DownloadOngoing becomes DownloadCompleted when
// the server's clock passes done (see settleDownloads).
type download struct {
	status string
	model  Model
	shard  json.RawMessage // the tagged shard metadata it was asked for
	// started and done bound an ongoing download on the server's clock;
	// downloaded is what a cancelled (pending) download kept.
	started, done time.Duration
	downloaded    int64
	errMsg        string
}

// nodeDownloads returns node n's downloads by model id, creating every
// node's list on first use with the preset model completed on each (the
// sim starts with the model on disk everywhere). s.mu is held.
func (s *Server) nodeDownloads(n int) map[string]*download {
	if s.downloads == nil {
		s.downloads = make([]map[string]*download, len(s.nodes))
		for i := range s.nodes {
			sp := spec{model: s.preset.Model, nodes: []int{i}, runners: []string{"download"}, sharding: "Pipeline", meta: "MlxRing"}
			s.downloads[i] = map[string]*download{s.preset.Model.ID: {status: dlCompleted, model: s.preset.Model, shard: s.shardJSON(sp, 0)}}
		}
	}
	return s.downloads[n]
}

// shardJSON is the tagged shard metadata of rank in sp. s.mu may be held.
func (s *Server) shardJSON(sp spec, rank int) json.RawMessage {
	inst := s.instanceJSON(sp)
	for _, body := range inst {
		shards := body.(map[string]any)["shardAssignments"].(map[string]any)["runnerToShard"].(map[string]any)
		b, _ := json.Marshal(shards[sp.runners[rank]])
		return b
	}
	return nil
}

// settleDownloads completes the ongoing downloads whose time has come.
// s.mu is held.
func (s *Server) settleDownloads(now time.Duration) {
	for i := range s.nodes {
		for _, d := range s.nodeDownloads(i) {
			if d.status == dlOngoing && now >= d.done {
				d.status = dlCompleted
			}
		}
	}
}

// downloadsJSON is node n's download list by alias, exo-api.md §3.4, and
// the bytes its downloads hold on disk. s.mu is held.
func (s *Server) downloadsJSON(n int, now time.Duration) ([]any, int64) {
	s.settleDownloads(now)
	ds := s.nodeDownloads(n)
	ids := make([]string, 0, len(ds))
	for id := range ds {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := []any{}
	var used int64
	for _, id := range ids {
		d := ds[id]
		total := int64(d.model.WeightBytes())
		body := map[string]any{
			"nodeId": s.nodes[n].id, "shardMetadata": d.shard, "modelDirectory": "/sim/models/" + id,
		}
		switch d.status {
		case dlCompleted:
			body["total"], body["readOnly"] = inBytes(total), false
			used += total
		case dlPending:
			body["total"], body["downloaded"] = inBytes(total), inBytes(d.downloaded)
			used += d.downloaded
		case dlFailed:
			body["errorMessage"] = d.errMsg
		case dlOngoing:
			frac := 1.0
			if span := d.done - d.started; span > 0 {
				frac = min(max(float64(now-d.started)/float64(span), 0), 1)
			}
			got := int64(frac * float64(total))
			speed := 0.0
			if span := (d.done - d.started).Seconds(); span > 0 {
				speed = float64(total) / span
			}
			body["downloadProgress"] = map[string]any{
				"total": inBytes(total), "downloaded": inBytes(got), "downloadedThisSession": inBytes(got),
				"completedFiles": int(frac * simFilesPerModel), "totalFiles": simFilesPerModel,
				"speed": speed, "etaMs": max(d.done-now, 0).Milliseconds(), "files": map[string]any{},
			}
			used += got
		}
		out = append(out, map[string]any{d.status: body})
	}
	return out, used
}

// downloadedModels is the set of model ids some node has completed.
func (s *Server) downloadedModels() map[string]bool {
	now := s.elapsed()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleDownloads(now)
	have := map[string]bool{}
	for i := range s.nodes {
		for id, d := range s.nodeDownloads(i) {
			if d.status == dlCompleted {
				have[id] = true
			}
		}
	}
	return have
}

// unprocessable writes FastAPI's 422 body-validation error.
func unprocessable(w http.ResponseWriter, loc []string, msg string) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []map[string]any{{
		"type": "value_error", "loc": loc, "msg": msg}}})
}

// strictBody decodes a FrozenModel request body (exo's strict=True,
// extra="forbid", validate_by_name=True): every key must be one of the
// fields under its camelCase alias or its snake_case name; fields maps
// each alias to its name. It writes the 422 and reports false on failure.
func strictBody(w http.ResponseWriter, r *http.Request, fields map[string]string) (map[string]json.RawMessage, bool) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(io.LimitReader(r.Body, 16<<20))
	if err := dec.Decode(&raw); err != nil || raw == nil {
		unprocessable(w, []string{"body"}, "expected a JSON object")
		return nil, false
	}
	out := map[string]json.RawMessage{}
	for k, v := range raw {
		name := k
		if n, ok := fields[k]; ok {
			name = n
		} else if !slices.Contains(mapValues(fields), k) {
			unprocessable(w, []string{"body", k}, "Extra inputs are not permitted")
			return nil, false
		}
		out[name] = v
	}
	for alias, name := range fields {
		if _, ok := out[name]; !ok {
			unprocessable(w, []string{"body", alias}, "Field required")
			return nil, false
		}
	}
	return out, true
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// strictString decodes a JSON string (strict mode: no coercion).
func strictString(w http.ResponseWriter, raw json.RawMessage, loc string) (string, bool) {
	var v string
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) && json.Unmarshal(raw, &v) == nil {
		return v, true
	}
	unprocessable(w, []string{"body", loc}, "Input should be a valid string")
	return "", false
}

// shardModelID returns the model id of a tagged shard metadata,
// {"PipelineShardMetadata": {"modelCard": {"modelId": ...}}}, either
// casing.
func shardModelID(raw json.RawMessage) (string, bool) {
	var probe map[string]map[string]json.RawMessage
	if json.Unmarshal(raw, &probe) != nil || len(probe) != 1 {
		return "", false
	}
	for tag, body := range probe {
		if tag != "PipelineShardMetadata" && tag != "TensorShardMetadata" && tag != "CfgShardMetadata" {
			return "", false
		}
		card := body["modelCard"]
		if card == nil {
			card = body["model_card"]
		}
		var c struct {
			A string `json:"modelId"`
			B string `json:"model_id"`
		}
		if json.Unmarshal(card, &c) != nil {
			return "", false
		}
		if c.A != "" {
			return c.A, true
		}
		return c.B, c.B != ""
	}
	return "", false
}

func (s *Server) nodeIndex(id string) int {
	return slices.IndexFunc(s.nodes, func(n simNode) bool { return n.id == id })
}

// handleStartDownload serves POST /download/start {"targetNodeId",
// "shardMetadata"}: like exo's download coordinator, a node that already
// has the model (completed, ongoing or failed) ignores it; otherwise the
// download runs for Options.LoadDelay and completes. A model the sim does
// not know fails. The answer is {"commandId"} whether or not a node acts,
// as exo's API only broadcasts the command.
func (s *Server) handleStartDownload(w http.ResponseWriter, r *http.Request) {
	body, ok := strictBody(w, r, map[string]string{"targetNodeId": "target_node_id", "shardMetadata": "shard_metadata"})
	if !ok {
		return
	}
	node, ok := strictString(w, body["target_node_id"], "targetNodeId")
	if !ok {
		return
	}
	modelID, ok := shardModelID(body["shard_metadata"])
	if !ok {
		unprocessable(w, []string{"body", "shardMetadata"}, "expected a tagged shard {\"PipelineShardMetadata\"|\"TensorShardMetadata\": {\"modelCard\": {\"modelId\": ...}, ...}}")
		return
	}
	m, known := s.model(modelID)
	now := s.elapsed()
	s.mu.Lock()
	if n := s.nodeIndex(node); n >= 0 {
		ds := s.nodeDownloads(n)
		if d := ds[modelID]; d == nil || d.status == dlPending {
			nd := &download{status: dlOngoing, model: m, shard: body["shard_metadata"], started: now, done: now + s.opts.loadDelay()}
			if !known {
				nd = &download{status: dlFailed, model: Model{ID: modelID}, shard: body["shard_metadata"],
					errMsg: fmt.Sprintf("simulated engine has no model %s (it knows %s and the cards added with /models/add)", modelID, s.preset.Model.ID)}
			}
			ds[modelID] = nd
			s.events++
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"commandId": s.newID()})
}

// handleDeleteDownload serves DELETE /download/{node}/{model...}: the
// node's copy of the model is deleted (a running download cancelled
// first), unless it is read-only. The answer is {"commandId"}.
func (s *Server) handleDeleteDownload(w http.ResponseWriter, r *http.Request) {
	node, modelID := r.PathValue("node"), r.PathValue("model")
	s.mu.Lock()
	if n := s.nodeIndex(node); n >= 0 {
		if _, ok := s.nodeDownloads(n)[modelID]; ok {
			delete(s.nodeDownloads(n), modelID)
			s.events++
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"commandId": s.newID()})
}

// handleCancelDownload serves POST /download/cancel {"targetNodeId",
// "modelId"}: an ongoing download becomes pending, keeping what it has.
func (s *Server) handleCancelDownload(w http.ResponseWriter, r *http.Request) {
	body, ok := strictBody(w, r, map[string]string{"targetNodeId": "target_node_id", "modelId": "model_id"})
	if !ok {
		return
	}
	node, ok := strictString(w, body["target_node_id"], "targetNodeId")
	if !ok {
		return
	}
	modelID, ok := strictString(w, body["model_id"], "modelId")
	if !ok {
		return
	}
	now := s.elapsed()
	s.mu.Lock()
	s.settleDownloads(now)
	if n := s.nodeIndex(node); n >= 0 {
		if d := s.nodeDownloads(n)[modelID]; d != nil && d.status == dlOngoing {
			frac := float64(now-d.started) / float64(max(d.done-d.started, 1))
			d.status, d.downloaded = dlPending, int64(min(frac, 1)*float64(d.model.WeightBytes()))
			s.events++
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"commandId": s.newID()})
}

// placeParams are exo's PlaceInstanceParams, from a JSON body or a query.
type placeParams struct {
	ModelID      string `json:"model_id"`
	Sharding     string `json:"sharding"`
	InstanceMeta string `json:"instance_meta"`
	MinNodes     int    `json:"min_nodes"`
}

// check fills the defaults and validates the enums; it returns the
// 422 location and message of the first problem.
func (p *placeParams) check() (string, string) {
	if p.ModelID == "" {
		return "model_id", "Field required"
	}
	if p.Sharding == "" {
		p.Sharding = "Pipeline"
	}
	if p.InstanceMeta == "" {
		p.InstanceMeta = "MlxRing"
	}
	if p.Sharding != "Pipeline" && p.Sharding != "Tensor" {
		return "sharding", "Input should be 'Pipeline' or 'Tensor'"
	}
	if p.InstanceMeta != "MlxRing" && p.InstanceMeta != "MlxJaccl" {
		return "instance_meta", "Input should be 'MlxRing' or 'MlxJaccl'"
	}
	return "", ""
}

// placeSmallest finds the smallest placement of at least minNodes nodes
// that fits, as exo's placer prefers the smallest cycles; a single node is
// placed as MlxRing + Pipeline whatever was asked.
func (s *Server) placeSmallest(m Model, p placeParams) (spec, error) {
	var firstErr error
	for k := max(p.MinNodes, 1); k <= len(s.nodes); k++ {
		sharding, meta := p.Sharding, p.InstanceMeta
		if k == 1 {
			sharding, meta = "Pipeline", "MlxRing"
		}
		nodes, err := s.place(m, k, sharding, meta)
		if err == nil {
			return s.newSpec(m, nodes, sharding, meta), nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("no placement of at least %d nodes: the cluster has %d", p.MinNodes, len(s.nodes))
	}
	return spec{}, firstErr
}

// handlePlaceInstance serves POST /place_instance {"model_id", "sharding",
// "instance_meta", "min_nodes"}: the server places and creates the
// instance itself and answers {"message", "command_id", "model_card"}
// without the instance id (clients diff /state's instances to find it).
// As in exo, a placement that does not fit creates nothing and the answer
// is the same: the master drops the command.
func (s *Server) handlePlaceInstance(w http.ResponseWriter, r *http.Request) {
	var p placeParams
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&p); err != nil {
		unprocessable(w, []string{"body"}, "expected {model_id, sharding, instance_meta, min_nodes}: "+err.Error())
		return
	}
	if loc, msg := p.check(); loc != "" {
		unprocessable(w, []string{"body", loc}, msg)
		return
	}
	m, ok := s.model(p.ModelID)
	if !ok {
		exoError(w, http.StatusBadRequest, fmt.Sprintf("Failed to load model card for %q: the sim knows %s and the cards added with /models/add", p.ModelID, s.preset.Model.ID))
		return
	}
	if sp, err := s.placeSmallest(m, p); err != nil {
		s.log.Warn("sim: place_instance dropped: no placement fits", "model", m.ID, "err", err)
	} else {
		s.mu.Lock()
		s.startInstance(sp, s.opts.loadDelay())
		s.mu.Unlock()
		s.log.Info("sim: instance placed", "instance", sp.id, "model", m.ID, "nodes", len(sp.nodes), "sharding", sp.sharding, "meta", sp.meta)
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": "Command received.", "command_id": s.newID(), "model_card": cardJSON(m)})
}

// handlePlacement serves GET /instance/placement?model_id=&sharding=
// &instance_meta=&min_nodes=: the instance a placement would create, not
// created; 400 when none fits.
func (s *Server) handlePlacement(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := placeParams{ModelID: q.Get("model_id"), Sharding: q.Get("sharding"), InstanceMeta: q.Get("instance_meta"), MinNodes: 1}
	if v := q.Get("min_nodes"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			unprocessable(w, []string{"query", "min_nodes"}, "Input should be a valid integer")
			return
		}
		p.MinNodes = n
	}
	if loc, msg := p.check(); loc != "" {
		unprocessable(w, []string{"query", loc}, msg)
		return
	}
	m, ok := s.model(p.ModelID)
	if !ok {
		exoError(w, http.StatusBadRequest, fmt.Sprintf("Failed to load model card for %q: the sim knows %s and the cards added with /models/add", p.ModelID, s.preset.Model.ID))
		return
	}
	sp, err := s.placeSmallest(m, p)
	if err != nil {
		exoError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, s.instanceJSON(sp))
}

// harnessRoutes adds the routes exo's own tooling (exo_tools' harness and
// bench/exo_bench.py) calls besides the ones of routes: downloads, server
// side placement.
func (s *Server) harnessRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /download/start", s.handleStartDownload)
	mux.HandleFunc("DELETE /download/{node}/{model...}", s.handleDeleteDownload)
	mux.HandleFunc("POST /download/cancel", s.handleCancelDownload)
	mux.HandleFunc("POST /place_instance", s.handlePlaceInstance)
	mux.HandleFunc("GET /instance/placement", s.handlePlacement)
}
