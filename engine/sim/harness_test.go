package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/internal/testkit"
)

// call sends one request with exo_tools' client habits (JSON body,
// Accept: application/json) and returns the status and body.
func call(t *testing.T, method, u, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := testkit.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// firstPreview returns the instance and one node's tagged shard of the
// first preview of model on n nodes with the given sharding.
func firstPreview(t *testing.T, s *Server, model, sharding string, n int) (inst json.RawMessage, node string, shard json.RawMessage) {
	t.Helper()
	var pv struct {
		Previews []struct {
			Sharding     string          `json:"sharding"`
			InstanceMeta string          `json:"instance_meta"`
			Instance     json.RawMessage `json:"instance"`
		} `json:"previews"`
	}
	if code := getJSON(t, s.URL+"/instance/previews?model_id="+url.QueryEscape(model), &pv); code != 200 {
		t.Fatalf("previews: %d", code)
	}
	for _, p := range pv.Previews {
		if p.Sharding != sharding || p.InstanceMeta != "MlxRing" || p.Instance == nil {
			continue
		}
		var tagged map[string]struct {
			SA struct {
				NodeToRunner  map[string]string                     `json:"nodeToRunner"`
				RunnerToShard map[string]map[string]json.RawMessage `json:"runnerToShard"`
			} `json:"shardAssignments"`
		}
		if err := json.Unmarshal(p.Instance, &tagged); err != nil {
			t.Fatal(err)
		}
		for _, body := range tagged {
			if len(body.SA.NodeToRunner) != n {
				continue
			}
			for nd, rid := range body.SA.NodeToRunner {
				b, _ := json.Marshal(body.SA.RunnerToShard[rid])
				return p.Instance, nd, b
			}
		}
	}
	t.Fatalf("no %s preview of %s on %d nodes", sharding, model, n)
	return nil, "", nil
}

// stateInstanceIDs is exo_tools' get_instance_ids: the ids of /state's
// instances.
func stateInstanceIDs(t *testing.T, s *Server) []string {
	t.Helper()
	var st struct {
		Instances map[string]json.RawMessage `json:"instances"`
	}
	getJSON(t, s.URL+"/state", &st)
	var ids []string
	for id := range st.Instances {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// TestExoToolsRoutes calls, in the order exo's tooling does, every route
// that exo_tools (tools/src/exo_tools/client.py, harness.py) and
// bench/exo_bench.py call, as shared/reference/exo-api.md §2–§6 lists
// them: each must be answered with its documented status and shape, none
// with the sim's "no route" 404.
func TestExoToolsRoutes(t *testing.T) {
	s := newFast(t, Options{NoInstance: true, LoadDelay: -1})
	model := s.Model()
	node := s.nodes[0].id
	inst, _, shard := firstPreview(t, s, model, "Pipeline", 1)
	var instID string
	for _, body := range mustTagged(t, inst) {
		instID = body["instanceId"].(string)
	}
	routes := []struct {
		method, path, body string
		want               int
		// key is a JSON key the answer must have ("" for any JSON).
		key string
	}{
		// resolve_model_short_id, run_planning_phase, is_model_downloaded
		{"GET", "/models", "", 200, "data"},
		{"GET", "/models?status=downloaded", "", 200, "data"},
		{"POST", "/models/add", `{"model_id":"org/added-model"}`, 200, "hugging_face_id"},
		// fetch_and_filter_placements
		{"GET", "/instance/previews?model_id=" + url.QueryEscape(model), "", 200, "previews"},
		// run_planning_phase
		{"GET", "/state/downloads/" + node, "", 200, ""},
		{"GET", "/state/nodeDisk/" + node, "", 200, "available"},
		{"DELETE", "/download/" + node + "/org/added-model", "", 200, "commandId"},
		{"POST", "/download/start", `{"targetNodeId":"` + node + `","shardMetadata":` + string(shard) + `}`, 200, "commandId"},
		// capture_cluster_snapshot
		{"GET", "/state/nodeIdentities", "", 200, ""},
		{"GET", "/state/topology", "", 200, "nodes"},
		{"GET", "/state/nodeMemory", "", 200, ""},
		{"GET", "/state/nodeSystem", "", 200, ""},
		// exo_bench's placement loop: clean up, create, wait ready
		{"GET", "/state", "", 200, "instances"},
		{"POST", "/instance", `{"instance":` + string(inst) + `}`, 200, "command_id"},
		{"GET", "/state/instances/" + instID, "", 200, ""},
		{"GET", "/instance/" + instID, "", 200, ""},
		// SystemMetricsSampler
		{"GET", "/state/nodeSystem/" + node, "", 200, "sysPower"},
		// run_one_completion
		{"POST", "/bench/chat/completions", chatBody(model, prompt(8), 4, `,"logprobs":false,"use_prefix_cache":false,"stream":false`), 200, "generation_stats"},
		{"DELETE", "/instance/" + instID, "", 200, "instance_id"},
		// place_instance, get_placement
		{"POST", "/place_instance", `{"model_id":"` + model + `","sharding":"Pipeline","instance_meta":"MlxRing","min_nodes":1}`, 200, "command_id"},
		{"GET", "/instance/placement?model_id=" + url.QueryEscape(model), "", 200, ""},
		// prefill_decode_bench
		{"GET", "/v1/instance-links", "", 200, ""},
	}
	for _, r := range routes {
		code, body := call(t, r.method, s.URL+r.path, r.body)
		if code != r.want || bytes.Contains(body, []byte("no route")) {
			t.Errorf("%s %s: %d %s, want %d", r.method, r.path, code, body, r.want)
			continue
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Errorf("%s %s: not JSON: %s", r.method, r.path, body)
			continue
		}
		if r.key != "" {
			if m, ok := v.(map[string]any); !ok || m[r.key] == nil {
				t.Errorf("%s %s: answer lacks %q: %s", r.method, r.path, r.key, body)
			}
		}
	}
	// The streamed bench request exo_bench sends with --stream.
	resp := post(t, s.URL+"/bench/chat/completions", chatBody(model, prompt(8), 4, `,"logprobs":false,"use_prefix_cache":false,"stream":true`))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte(": generation_stats ")) || !bytes.Contains(b, []byte("data: [DONE]")) {
		t.Errorf("streamed bench: %d %s", resp.StatusCode, b)
	}
}

func mustTagged(t *testing.T, raw json.RawMessage) map[string]map[string]any {
	t.Helper()
	var m map[string]map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || len(m) != 1 {
		t.Fatalf("not a tagged object: %s", raw)
	}
	return m
}

// downloadsOf returns node's download list as status → model ids.
func downloadsOf(t *testing.T, s *Server, node string) map[string][]string {
	t.Helper()
	var dl []map[string]struct {
		Shard json.RawMessage `json:"shardMetadata"`
	}
	if code := getJSON(t, s.URL+"/state/downloads/"+node, &dl); code != 200 {
		t.Fatalf("downloads of %s: %d", node, code)
	}
	out := map[string][]string{}
	for _, d := range dl {
		for status, body := range d {
			id, ok := shardModelID(body.Shard)
			if !ok {
				t.Fatalf("download without a model id: %s", body.Shard)
			}
			out[status] = append(out[status], id)
		}
	}
	return out
}

// downloadEntry returns the body of node's download of model with the
// given status, failing the test when there is none.
func downloadEntry(t *testing.T, s *Server, node, status, model string) map[string]any {
	t.Helper()
	var dl []map[string]map[string]any
	getJSON(t, s.URL+"/state/downloads/"+node, &dl)
	for _, d := range dl {
		if body, ok := d[status]; ok {
			b, _ := json.Marshal(body["shardMetadata"])
			if id, _ := shardModelID(b); id == model {
				return body
			}
		}
	}
	t.Fatalf("node %s has no %s of %s: %v", node, status, model, dl)
	return nil
}

func downloadedIDs(t *testing.T, s *Server) []string {
	t.Helper()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	getJSON(t, s.URL+"/models?status=downloaded", &list)
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids
}

// TestDownloadStartOfDownloadedModel is what exo_tools' planning does on
// every run: POST /download/start for every node even when the model is
// already there. The node keeps its completed copy and nothing else.
func TestDownloadStartOfDownloadedModel(t *testing.T) {
	s := newFast(t, Options{NoInstance: true})
	_, node, shard := firstPreview(t, s, s.Model(), "Pipeline", 1)
	before := downloadsOf(t, s, node)
	code, body := call(t, "POST", s.URL+"/download/start", `{"targetNodeId":"`+node+`","shardMetadata":`+string(shard)+`}`)
	var got map[string]string
	if code != 200 || json.Unmarshal(body, &got) != nil || got["commandId"] == "" || len(got) != 1 {
		t.Fatalf("download/start: %d %s, want 200 {\"commandId\": ...}", code, body)
	}
	if after := downloadsOf(t, s, node); !slices.Equal(after[dlCompleted], before[dlCompleted]) || len(after) != 1 {
		t.Errorf("downloads changed from %v to %v", before, after)
	}
}

// TestDownloadLifecycle follows a model that no node has: not in
// ?status=downloaded, started (ongoing, with progress), cancelled back to
// pending, started again, completed (now downloaded, using disk), deleted.
func TestDownloadLifecycle(t *testing.T) {
	s := newFast(t, Options{NoInstance: true, LoadDelay: time.Hour})
	if code, b := call(t, "POST", s.URL+"/models/add", `{"model_id":"org/new-model"}`); code != 200 {
		t.Fatalf("models/add: %d %s", code, b)
	}
	if ids := downloadedIDs(t, s); !slices.Equal(ids, []string{s.Model()}) {
		t.Fatalf("?status=downloaded = %v, want only the preset model", ids)
	}
	_, node, shard := firstPreview(t, s, "org/new-model", "Pipeline", 1)
	start := `{"target_node_id":"` + node + `","shard_metadata":` + string(shard) + `}` // snake_case is accepted too
	if code, b := call(t, "POST", s.URL+"/download/start", start); code != 200 {
		t.Fatalf("download/start: %d %s", code, b)
	}
	ongoing := downloadEntry(t, s, node, dlOngoing, "org/new-model")
	prog, _ := ongoing["downloadProgress"].(map[string]any)
	if prog["totalFiles"] != float64(simFilesPerModel) || prog["total"] == nil || prog["etaMs"] == nil {
		t.Fatalf("ongoing download = %v, want downloadProgress with total, totalFiles, etaMs", ongoing)
	}
	if code, b := call(t, "POST", s.URL+"/download/cancel", `{"targetNodeId":"`+node+`","modelId":"org/new-model"}`); code != 200 {
		t.Fatalf("download/cancel: %d %s", code, b)
	}
	if d := downloadsOf(t, s, node); !slices.Equal(d[dlPending], []string{"org/new-model"}) {
		t.Fatalf("after cancel: %v, want the new model pending", d)
	}
	// Completion: the download's time passes.
	call(t, "POST", s.URL+"/download/start", start)
	s.mu.Lock()
	s.nodeDownloads(s.nodeIndex(node))["org/new-model"].done = 0
	s.mu.Unlock()
	var disk struct{ Available map[string]int64 }
	getJSON(t, s.URL+"/state/nodeDisk/"+node, &disk)
	weights := int64(s.preset.Model.WeightBytes())
	if want := Fast().Hardware.Disk - 2*weights; disk.Available["inBytes"] != want {
		t.Errorf("disk available %d, want %d (two models on disk)", disk.Available["inBytes"], want)
	}
	if ids := downloadedIDs(t, s); !slices.Contains(ids, "org/new-model") {
		t.Errorf("?status=downloaded = %v, want the new model too", ids)
	}
	if code, b := call(t, "DELETE", s.URL+"/download/"+node+"/org/new-model", ""); code != 200 {
		t.Fatalf("delete download: %d %s", code, b)
	}
	if d := downloadsOf(t, s, node); len(d) != 1 || slices.Contains(d[dlCompleted], "org/new-model") {
		t.Errorf("after delete: %v", d)
	}
	if ids := downloadedIDs(t, s); slices.Contains(ids, "org/new-model") {
		t.Errorf("?status=downloaded = %v after the delete", ids)
	}
	// Deleting the preset model everywhere leaves nothing downloaded.
	for _, n := range s.nodes {
		call(t, "DELETE", s.URL+"/download/"+n.id+"/"+s.Model(), "")
	}
	if ids := downloadedIDs(t, s); len(ids) != 0 {
		t.Errorf("?status=downloaded = %v, want none", ids)
	}
}

// TestDownloadStartUnknownModelFails: the node reports DownloadFailed
// with a message, as exo's coordinator does when a download fails.
func TestDownloadStartUnknownModelFails(t *testing.T) {
	s := newFast(t, Options{NoInstance: true})
	_, node, shard := firstPreview(t, s, s.Model(), "Pipeline", 1)
	other := bytes.Replace(shard, []byte(s.Model()), []byte("org/unknown"), -1)
	call(t, "POST", s.URL+"/download/start", `{"targetNodeId":"`+node+`","shardMetadata":`+string(other)+`}`)
	failed := downloadEntry(t, s, node, dlFailed, "org/unknown")
	if msg, _ := failed["errorMessage"].(string); !strings.Contains(msg, "org/unknown") {
		t.Errorf("DownloadFailed = %v, want an errorMessage naming the model", failed)
	}
}

// TestDownloadBodiesAreStrict: exo's download bodies are FrozenModels
// (strict, extra="forbid"): unknown keys, missing fields and non-string
// ids are 422 with FastAPI's detail.
func TestDownloadBodiesAreStrict(t *testing.T) {
	s := newFast(t, Options{NoInstance: true})
	_, node, shard := firstPreview(t, s, s.Model(), "Pipeline", 1)
	for _, c := range []struct{ path, body string }{
		{"/download/start", `{"targetNodeId":"` + node + `","shardMetadata":` + string(shard) + `,"extra":1}`},
		{"/download/start", `{"targetNodeId":"` + node + `"}`},
		{"/download/start", `{"targetNodeId":7,"shardMetadata":` + string(shard) + `}`},
		{"/download/start", `{"targetNodeId":"` + node + `","shardMetadata":{"Nope":{}}}`},
		{"/download/start", `[]`},
		{"/download/cancel", `{"targetNodeId":"` + node + `"}`},
	} {
		code, b := call(t, "POST", s.URL+c.path, c.body)
		if code != http.StatusUnprocessableEntity || !bytes.Contains(b, []byte(`"detail"`)) {
			t.Errorf("POST %s %s: %d %s, want 422 with detail", c.path, c.body, code, b)
		}
	}
}

// TestPlaceInstance: the server places and creates the instance; the
// answer has no instance id, so a client diffs /state's instance ids as
// exo_tools' place_instance does.
func TestPlaceInstance(t *testing.T) {
	s := newFast(t, Options{NoInstance: true, LoadDelay: -1})
	before := stateInstanceIDs(t, s)
	code, b := call(t, "POST", s.URL+"/place_instance", `{"model_id":"`+s.Model()+`","sharding":"Tensor","instance_meta":"MlxRing","min_nodes":2}`)
	var ans map[string]any
	if code != 200 || json.Unmarshal(b, &ans) != nil || ans["message"] != "Command received." || ans["command_id"] == nil || ans["model_card"] == nil {
		t.Fatalf("place_instance: %d %s", code, b)
	}
	if _, ok := ans["instance_id"]; ok {
		t.Errorf("place_instance answered an instance id: %s", b)
	}
	after := stateInstanceIDs(t, s)
	if len(after) != len(before)+1 {
		t.Fatalf("instances %v → %v, want one more", before, after)
	}
	id := after[slices.IndexFunc(after, func(x string) bool { return !slices.Contains(before, x) })]
	var inst map[string]map[string]any
	getJSON(t, s.URL+"/instance/"+id, &inst)
	body := inst["MlxRingInstance"]
	if body == nil {
		t.Fatalf("instance %s = %v, want an MlxRingInstance", id, inst)
	}
	sa := body["shardAssignments"].(map[string]any)
	if n := len(sa["nodeToRunner"].(map[string]any)); n != 2 {
		t.Errorf("placed on %d nodes, want 2", n)
	}
	for _, sh := range sa["runnerToShard"].(map[string]any) {
		if _, ok := sh.(map[string]any)["TensorShardMetadata"]; !ok {
			t.Errorf("shard %v, want TensorShardMetadata", sh)
		}
	}
	// It serves requests once ready.
	bench(t, s, prompt(8), 4, "")

	// Defaults: Pipeline, MlxRing, one node.
	call(t, "POST", s.URL+"/place_instance", `{"model_id":"`+s.Model()+`"}`)
	if n := len(stateInstanceIDs(t, s)); n != 2 {
		t.Errorf("%d instances after a second placement, want 2", n)
	}
	// Bad enum: 422; unknown model: 400; a placement that does not fit
	// (more nodes than the cluster has) creates nothing, as exo's master
	// drops it, yet the command is received.
	if code, b := call(t, "POST", s.URL+"/place_instance", `{"model_id":"`+s.Model()+`","sharding":"Diagonal"}`); code != 422 {
		t.Errorf("bad sharding: %d %s, want 422", code, b)
	}
	if code, b := call(t, "POST", s.URL+"/place_instance", `{"model_id":"org/unknown"}`); code != 400 {
		t.Errorf("unknown model: %d %s, want 400", code, b)
	}
	if code, b := call(t, "POST", s.URL+"/place_instance", `{"model_id":"`+s.Model()+`","min_nodes":3}`); code != 200 {
		t.Errorf("unplaceable: %d %s, want 200 (the command is received and dropped)", code, b)
	}
	if n := len(stateInstanceIDs(t, s)); n != 2 {
		t.Errorf("%d instances after an unplaceable command, want 2", n)
	}
}

// TestInstancePlacement: GET /instance/placement computes an instance
// without creating it, and is not taken for GET /instance/{id}.
func TestInstancePlacement(t *testing.T) {
	s := newFast(t, Options{NoInstance: true})
	q := "/instance/placement?model_id=" + url.QueryEscape(s.Model())
	code, b := call(t, "GET", s.URL+q+"&sharding=Tensor&instance_meta=MlxJaccl&min_nodes=2", "")
	if code != 200 {
		t.Fatalf("placement: %d %s", code, b)
	}
	inst := mustTagged(t, b)
	body := inst["MlxJacclInstance"]
	if body == nil || body["jacclDevices"] == nil {
		t.Fatalf("placement = %s, want an MlxJacclInstance with jacclDevices", b)
	}
	if n := len(body["shardAssignments"].(map[string]any)["nodeToRunner"].(map[string]any)); n != 2 {
		t.Errorf("placement on %d nodes, want 2", n)
	}
	if ids := stateInstanceIDs(t, s); len(ids) != 0 {
		t.Errorf("placement created instances %v", ids)
	}
	// One node is forced to ring + pipeline, as exo's placer does.
	_, b = call(t, "GET", s.URL+q+"&sharding=Tensor", "")
	if inst := mustTagged(t, b); inst["MlxRingInstance"] == nil || !bytes.Contains(b, []byte("PipelineShardMetadata")) {
		t.Errorf("one-node placement = %s, want ring + pipeline", b)
	}
	for _, c := range []struct {
		q    string
		want int
	}{
		{"/instance/placement", 422},
		{q + "&min_nodes=x", 422},
		{q + "&sharding=Diagonal", 422},
		{q + "&min_nodes=3", 400},
		{"/instance/placement?model_id=org%2Funknown", 400},
	} {
		if code, b := call(t, "GET", s.URL+c.q, ""); code != c.want || bytes.Contains(b, []byte("Instance not found")) {
			t.Errorf("GET %s: %d %s, want %d", c.q, code, b, c.want)
		}
	}
}

// FuzzHarnessBodies feeds arbitrary bodies and queries to the download and
// placement routes: each answers 200, 400 or 422 with JSON, never panics,
// and the state stays readable.
func FuzzHarnessBodies(f *testing.F) {
	s := NewServer(Options{Preset: Fast(), NoInstance: true, LoadDelay: -1})
	f.Cleanup(s.Close)
	node := s.nodes[0].id
	shard := string(s.shardJSON(spec{model: s.preset.Model, nodes: []int{0}, runners: []string{"r"}, sharding: "Pipeline", meta: "MlxRing"}, 0))
	f.Add("/download/start", `{"targetNodeId":"`+node+`","shardMetadata":`+shard+`}`)
	f.Add("/download/start", `{"target_node_id":"x","shard_metadata":{"TensorShardMetadata":{"model_card":{"model_id":"a/b"}}}}`)
	f.Add("/download/cancel", `{"targetNodeId":"`+node+`","modelId":"a/b"}`)
	f.Add("/place_instance", `{"model_id":"`+s.Model()+`","min_nodes":2}`)
	f.Add("/place_instance", `{"model_id":"`+s.Model()+`","min_nodes":-5,"sharding":"Tensor"}`)
	f.Add("/instance/placement", `model_id=`+s.Model()+`&min_nodes=99`)
	f.Add("/download/start", `{"targetNodeId":null,"shardMetadata":[]}`)
	h := s.routes()
	f.Fuzz(func(t *testing.T, path, body string) {
		var req *http.Request
		switch path {
		case "/download/start", "/download/cancel", "/place_instance":
			req = httptest.NewRequest("POST", path, strings.NewReader(body))
		default:
			req = httptest.NewRequest("GET", "/instance/placement", nil)
			req.URL.RawQuery = body
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 && rec.Code != 400 && rec.Code != 422 {
			t.Fatalf("%s %q: status %d %s", path, body, rec.Code, rec.Body.Bytes())
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %q: answer is not JSON: %s", path, body, rec.Body.Bytes())
		}
		if _, err := json.Marshal(s.state()); err != nil {
			t.Fatalf("state after %s %q: %v", path, body, err)
		}
		// Keep the instance count bounded across fuzz inputs.
		s.mu.Lock()
		var ids []string
		for _, in := range s.instances {
			ids = append(ids, in.id)
		}
		s.mu.Unlock()
		for _, id := range ids {
			s.deleteInstance(id)
		}
	})
}
