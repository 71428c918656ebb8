package exo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseDownloads(t *testing.T) {
	var ds []Download
	if err := json.Unmarshal(fixture(t, "downloads.json"), &ds); err != nil {
		t.Fatal(err)
	}
	type row struct {
		Tag, ModelID string
		Total        int64
		ReadOnly     bool
		Error        string
	}
	var got []row
	for _, d := range ds {
		got = append(got, row{d.Tag, d.ModelID, d.Total, d.ReadOnly, d.ErrorMessage})
		if d.NodeID != nodeA {
			t.Errorf("%s: node %q", d.Tag, d.NodeID)
		}
	}
	want := []row{
		{"DownloadCompleted", "mlx-community/Qwen3-30B-A3B-8bit", 32516145152, false, ""},
		{"DownloadCompleted", "mlx-community/gemma-3-1b-it-4bit", 800000000, false, ""},
		{"DownloadCompleted", "mlx-community/SmolLM-135M-4bit", 100000000, true, ""},
		{"DownloadOngoing", "mlx-community/Phi-4-mini-4bit", 2000000000, false, ""},
		{"DownloadFailed", "mlx-community/broken-model", 0, false, "HTTP 401 from huggingface.co"},
		{"DownloadPending", "mlx-community/Mistral-7B-Instruct-v0.3-4bit", 0, false, ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("downloads (-want +got):\n%s", diff)
	}
	wantP := DownloadProgress{Total: 2000000000, Downloaded: 500000000, DownloadedThisSession: 400000000,
		CompletedFiles: 2, TotalFiles: 7, Speed: 5e7, ETA: 30 * time.Second}
	if diff := cmp.Diff(&wantP, ds[3].Progress); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

// planCluster is a control plane for Plan: per-node download lists, disk
// readings and instances, and a record of what was started and deleted.
type planCluster struct {
	mu        sync.Mutex
	downloads map[string][]string // node → tagged download JSON entries
	disk      map[string]string   // node → nodeDisk JSON, absent → 404
	instances string
	started   []map[string]json.RawMessage
	deleted   []string
	// finishAfter makes a started download complete after this many
	// polls of the node's list (0: at the first poll); fail makes it fail.
	finishAfter int
	fail        bool
	polls       map[string]int
}

func downloadEntry(tag, node, model string, extra string) string {
	return fmt.Sprintf(`{%q:{"nodeId":%q,"shardMetadata":{"PipelineShardMetadata":{"modelCard":{"modelId":%q,"storageSize":{"inBytes":1}},"deviceRank":0,"worldSize":1,"startLayer":0,"endLayer":16,"nLayers":16}},"modelDirectory":"/d"%s}}`,
		tag, node, model, extra)
}

func (p *planCluster) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /state/downloads/{node}", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		n := r.PathValue("node")
		entries := append([]string(nil), p.downloads[n]...)
		for _, s := range p.started {
			var node string
			_ = json.Unmarshal(s["targetNodeId"], &node)
			if node != n {
				continue
			}
			// The started download's one entry, as of this poll.
			p.polls[n]++
			switch {
			case p.fail:
				entries = append(entries, downloadEntry("DownloadFailed", n, llama, `,"errorMessage":"disk full"`))
			case p.polls[n] > p.finishAfter:
				entries = append(entries, downloadEntry("DownloadCompleted", n, llama, `,"total":{"inBytes":729808896},"readOnly":false`))
			default:
				entries = append(entries, downloadEntry("DownloadOngoing", n, llama,
					`,"downloadProgress":{"total":{"inBytes":100},"downloaded":{"inBytes":50},"downloadedThisSession":{"inBytes":50},"completedFiles":1,"totalFiles":2,"speed":10.0,"etaMs":5000,"files":{}}`))
			}
		}
		writeJSON(w, 200, []byte("["+strings.Join(entries, ",")+"]"))
	})
	mux.HandleFunc("GET /state/nodeDisk/{node}", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		d, ok := p.disk[r.PathValue("node")]
		p.mu.Unlock()
		if !ok {
			notFound(w, "nodeDisk")
			return
		}
		writeJSON(w, 200, []byte(d))
	})
	mux.HandleFunc("GET /state/instances", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, []byte(p.instances))
	})
	mux.HandleFunc("POST /download/start", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]json.RawMessage
		_ = json.NewDecoder(r.Body).Decode(&body)
		p.mu.Lock()
		p.started = append(p.started, body)
		p.mu.Unlock()
		writeJSON(w, 200, []byte(`{"commandId":"dl-1"}`))
	})
	mux.HandleFunc("DELETE /download/{node}/{model...}", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.deleted = append(p.deleted, r.PathValue("node")+" "+r.PathValue("model"))
		p.mu.Unlock()
		writeJSON(w, 200, []byte(`{"message":"Command received.","command_id":"del"}`))
	})
	return mux
}

func disk(avail int64) string {
	return fmt.Sprintf(`{"total":{"inBytes":1000000000000},"available":{"inBytes":%d}}`, avail)
}

// twoNodePlacement is the fixture's i-pr2 (nodes A and B).
func twoNodePlacement(t *testing.T) Placement {
	pvs, err := parsePreviews(fixture(t, "previews.json"))
	if err != nil {
		t.Fatal(err)
	}
	ps, _, err := Select(pvs, Filter{InstanceMeta: Ring, Sharding: Pipeline, MinNodes: 2})
	if err != nil || len(ps) != 1 {
		t.Fatalf("placement: %v %v", ps, err)
	}
	return ps[0]
}

var llamaCard = ModelCard{ID: llama, HuggingFaceID: llama, Name: "Llama-3.2-1B-Instruct-4bit", StorageSizeMegabytes: 696}

func TestPlanAlreadyDownloaded(t *testing.T) {
	pc := &planCluster{
		downloads: map[string][]string{
			nodeA: {downloadEntry("DownloadCompleted", nodeA, llama, `,"total":{"inBytes":729808896}`)},
			nodeB: {downloadEntry("DownloadCompleted", nodeB, llama, `,"total":{"inBytes":729808896}`)},
		},
		polls: map[string]int{},
	}
	c, _ := newTestClient(t, pc.handler(), nil)
	res, err := c.Plan(context.Background(), twoNodePlacement(t), llamaCard, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := PlanResult{ModelBytes: 696 << 20}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if len(pc.started) != 0 {
		t.Errorf("started %d downloads, want none", len(pc.started))
	}
}

func TestPlanDownloads(t *testing.T) {
	pc := &planCluster{
		downloads: map[string][]string{
			nodeA: {downloadEntry("DownloadCompleted", nodeA, llama, `,"total":{"inBytes":729808896}`)},
		},
		disk:        map[string]string{nodeB: disk(10 << 30)},
		instances:   `{}`,
		finishAfter: 2,
		polls:       map[string]int{},
	}
	c, _ := newTestClient(t, pc.handler(), nil)
	var progress []DownloadProgress
	p := twoNodePlacement(t)
	res, err := c.Plan(context.Background(), p, llamaCard, &PlanOptions{PollInterval: time.Millisecond,
		OnProgress: func(node string, pr DownloadProgress) { progress = append(progress, pr) }})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{nodeB}, res.Downloaded); diff != "" {
		t.Errorf("downloaded (-want +got):\n%s", diff)
	}
	if res.DownloadDuration <= 0 {
		t.Errorf("download duration %v, want > 0", res.DownloadDuration)
	}
	if len(pc.started) != 1 {
		t.Fatalf("started %d downloads, want 1 (node B only)", len(pc.started))
	}
	var node string
	_ = json.Unmarshal(pc.started[0]["targetNodeId"], &node)
	rid := p.Instance.NodeToRunner[nodeB]
	if node != nodeB || string(pc.started[0]["shardMetadata"]) != string(p.Instance.Shards[rid].Raw) {
		t.Errorf("download/start body = %s %s, want node B and its own shard", node, pc.started[0]["shardMetadata"])
	}
	if len(progress) != 2 || progress[0].Downloaded != 50 {
		t.Errorf("progress callbacks = %+v, want 2", progress)
	}
}

func TestPlanDownloadFails(t *testing.T) {
	pc := &planCluster{downloads: map[string][]string{}, disk: map[string]string{nodeA: disk(10 << 30), nodeB: disk(10 << 30)},
		instances: `{}`, fail: true, polls: map[string]int{}}
	c, _ := newTestClient(t, pc.handler(), nil)
	_, err := c.Plan(context.Background(), twoNodePlacement(t), llamaCard, &PlanOptions{PollInterval: time.Millisecond})
	var df *DownloadFailedError
	if !errors.As(err, &df) || df.Message != "disk full" || df.ModelID != llama {
		t.Errorf("error = %v, want *DownloadFailedError with exo's message", err)
	}
}

func TestPlanDownloadTimeout(t *testing.T) {
	pc := &planCluster{downloads: map[string][]string{}, disk: map[string]string{nodeA: disk(10 << 30), nodeB: disk(10 << 30)},
		instances: `{}`, finishAfter: 1 << 30, polls: map[string]int{}}
	c, _ := newTestClient(t, pc.handler(), nil)
	_, err := c.Plan(context.Background(), twoNodePlacement(t), llamaCard, &PlanOptions{PollInterval: time.Millisecond, Timeout: 20 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want a deadline", err)
	}
}

// fullDisk is node A of the fixture's downloads.json with too little
// free disk for the model (696 MiB = 729808896 bytes).
func fullDisk(t *testing.T, instances string) *planCluster {
	var entries []json.RawMessage
	if err := json.Unmarshal(fixture(t, "downloads.json"), &entries); err != nil {
		t.Fatal(err)
	}
	var a []string
	for _, e := range entries {
		a = append(a, string(e))
	}
	return &planCluster{
		downloads: map[string][]string{
			nodeA: a,
			nodeB: {downloadEntry("DownloadCompleted", nodeB, llama, `,"total":{"inBytes":729808896}`)},
		},
		disk:      map[string]string{nodeA: disk(500_000_000)},
		instances: instances,
		polls:     map[string]int{},
	}
}

func TestPlanDiskSpace(t *testing.T) {
	ctx := context.Background()
	opts := &PlanOptions{PollInterval: time.Millisecond}

	t.Run("refused without DeleteDownloads", func(t *testing.T) {
		pc := fullDisk(t, `{}`)
		c, _ := newTestClient(t, pc.handler(), nil)
		_, err := c.Plan(ctx, twoNodePlacement(t), llamaCard, opts)
		var de *DiskSpaceError
		if !errors.As(err, &de) {
			t.Fatalf("error = %v, want *DiskSpaceError", err)
		}
		// Deletable: Qwen (32516145152) + gemma (800000000); SmolLM is
		// read-only, Phi is still downloading.
		want := DiskSpaceError{NodeID: nodeA, Need: 729808896, Available: 500_000_000, Deletable: 33316145152}
		if diff := cmp.Diff(want, *de); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
		if len(pc.deleted) != 0 || len(pc.started) != 0 {
			t.Errorf("deleted %v and started %d downloads, want nothing", pc.deleted, len(pc.started))
		}
	})
	t.Run("deletes the smallest candidate first", func(t *testing.T) {
		pc := fullDisk(t, `{}`)
		c, _ := newTestClient(t, pc.handler(), nil)
		o := *opts
		o.DeleteDownloads = true
		res, err := c.Plan(ctx, twoNodePlacement(t), llamaCard, &o)
		if err != nil {
			t.Fatal(err)
		}
		// 500 MB free + gemma's 800 MB ≥ 729.8 MB: gemma alone goes.
		if diff := cmp.Diff([]string{nodeA + " mlx-community/gemma-3-1b-it-4bit"}, pc.deleted); diff != "" {
			t.Errorf("deleted (-want +got):\n%s", diff)
		}
		if len(res.Deleted) != 1 || res.Deleted[0].Total != 800000000 || len(res.Warnings) != 1 {
			t.Errorf("result deleted %+v, warnings %v", res.Deleted, res.Warnings)
		}
		if diff := cmp.Diff([]string{nodeA}, res.Downloaded); diff != "" {
			t.Errorf("downloaded (-want +got):\n%s", diff)
		}
	})
	t.Run("never deletes a model an instance serves", func(t *testing.T) {
		// gemma is served by an instance: only Qwen may go.
		pc := fullDisk(t, `{"i-g":{"MlxRingInstance":{"instanceId":"i-g","shardAssignments":{"modelId":"mlx-community/gemma-3-1b-it-4bit","nodeToRunner":{},"runnerToShard":{}}}}}`)
		c, _ := newTestClient(t, pc.handler(), nil)
		o := *opts
		o.DeleteDownloads = true
		if _, err := c.Plan(ctx, twoNodePlacement(t), llamaCard, &o); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{nodeA + " mlx-community/Qwen3-30B-A3B-8bit"}, pc.deleted); diff != "" {
			t.Errorf("deleted (-want +got):\n%s", diff)
		}
	})
	t.Run("deletes nothing when deleting cannot free enough", func(t *testing.T) {
		pc := fullDisk(t, `{}`)
		c, _ := newTestClient(t, pc.handler(), nil)
		o := *opts
		o.DeleteDownloads = true
		big := llamaCard
		big.StorageSizeMegabytes = 1 << 20 // 1 TiB
		_, err := c.Plan(ctx, twoNodePlacement(t), big, &o)
		var de *DiskSpaceError
		if !errors.As(err, &de) || len(pc.deleted) != 0 {
			t.Errorf("error = %v, deleted %v; want *DiskSpaceError and nothing deleted", err, pc.deleted)
		}
	})
	t.Run("no disk reading: checked skipped with a warning", func(t *testing.T) {
		pc := fullDisk(t, `{}`)
		pc.disk = map[string]string{}
		c, _ := newTestClient(t, pc.handler(), nil)
		o := *opts
		o.SettleTimeout = 10 * time.Millisecond
		res, err := c.Plan(ctx, twoNodePlacement(t), llamaCard, &o)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Warnings) != 1 || len(res.Downloaded) != 1 {
			t.Errorf("result %+v, want one warning and node A downloaded", res)
		}
	})
	t.Run("unknown size: nothing checked", func(t *testing.T) {
		pc := fullDisk(t, `{}`)
		c, _ := newTestClient(t, pc.handler(), nil)
		unknown := llamaCard
		unknown.StorageSizeMegabytes = 0
		res, err := c.Plan(ctx, twoNodePlacement(t), unknown, &o0)
		if err != nil || len(res.Warnings) != 1 || len(pc.started) != 0 {
			t.Errorf("result %+v, %v; want one warning and no download", res, err)
		}
	})
}

var o0 PlanOptions

func TestDeleteDownloadPath(t *testing.T) {
	var got string
	mux := http.NewServeMux()
	mux.HandleFunc("DELETE /download/", func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.EscapedPath()
		writeJSON(w, 200, []byte(`{}`))
	})
	c, _ := newTestClient(t, mux, nil)
	if err := c.DeleteDownload(context.Background(), nodeA, "org/model name"); err != nil {
		t.Fatal(err)
	}
	if want := "/download/" + nodeA + "/org/" + url.PathEscape("model name"); got != want {
		t.Errorf("path = %q, want %q", got, want)
	}
}

// A download of the model already under way is waited for, not started
// again.
func TestPlanWaitsForOngoingDownload(t *testing.T) {
	var polls, starts int
	var mu sync.Mutex
	mux := http.NewServeMux()
	mux.HandleFunc("GET /state/downloads/{node}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		n := r.PathValue("node")
		if n == nodeB {
			writeJSON(w, 200, []byte("["+downloadEntry("DownloadCompleted", n, llama, "")+"]"))
			return
		}
		polls++
		tag := "DownloadOngoing"
		if polls > 2 {
			tag = "DownloadCompleted"
		}
		writeJSON(w, 200, []byte("["+downloadEntry(tag, n, llama, "")+"]"))
	})
	mux.HandleFunc("POST /download/start", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		starts++
		mu.Unlock()
		writeJSON(w, 200, []byte(`{"commandId":"x"}`))
	})
	c, _ := newTestClient(t, mux, nil)
	res, err := c.Plan(context.Background(), twoNodePlacement(t), llamaCard, &PlanOptions{PollInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if starts != 0 || polls != 3 {
		t.Errorf("started %d downloads after %d polls of node A, want 0 after 3", starts, polls)
	}
	if diff := cmp.Diff([]string{nodeA}, res.Downloaded); diff != "" {
		t.Errorf("downloaded (-want +got):\n%s", diff)
	}
}
