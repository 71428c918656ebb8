package exo

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseInstancesKeepsOrder(t *testing.T) {
	ins, err := parseInstances(fixture(t, "state_instances.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range ins {
		got = append(got, in.ID+" "+in.ModelID)
	}
	want := []string{
		"i-zzz-qwen mlx-community/Qwen3-30B-A3B-8bit",
		"i-pr2 " + llama,
		"i-aaa-tr2 " + llama,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("instances (-want +got):\n%s", diff)
	}
}

func TestFindInstance(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /state/instances", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, fixture(t, "state_instances.json"))
	})
	c, _ := newTestClient(t, mux, nil)
	// The first instance of the model in exo's order, not in sorted order.
	in, ok, err := c.FindInstance(context.Background(), llama)
	if err != nil || !ok || in.ID != "i-pr2" {
		t.Errorf("FindInstance(llama) = %q %v %v, want i-pr2", in.ID, ok, err)
	}
	if _, ok, err := c.FindInstance(context.Background(), "no/such"); ok || err != nil {
		t.Errorf("FindInstance(no/such) = %v %v, want not found", ok, err)
	}
}

func TestRunnerStatuses(t *testing.T) {
	var m map[string]RunnerStatus
	if err := json.Unmarshal(fixture(t, "runners.json"), &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]RunnerStatus{
		"r-i-pr2-0":      {Tag: "RunnerReady"},
		"r-i-pr2-1":      {Tag: "RunnerLoading", LayersLoaded: 3, TotalLayers: 8},
		"r-i-zzz-qwen-0": {Tag: "RunnerFailed", ErrorMessage: "ring transport closed", Diagnostics: []string{"RunnerRingTransportError: peer reset"}},
	}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("runners (-want +got):\n%s", diff)
	}
	if s := m["r-i-pr2-1"].String(); s != "RunnerLoading 3/8" {
		t.Errorf("String = %q", s)
	}
	var idle RunnerStatus
	if err := json.Unmarshal([]byte(`{"RunnerIdle":{}}`), &idle); err != nil || idle.Tag != "RunnerIdle" {
		t.Errorf("RunnerIdle = %+v, %v", idle, err)
	}
}

// cluster is a scripted exo control plane: each poll of an instance or
// the runners takes the next state of its script, and the last one stays.
type cluster struct {
	mu        sync.Mutex
	instance  []string // per poll: "" for 404, else the instance JSON
	runners   []string
	polls     int
	created   []json.RawMessage
	deleted   []string
	runnerIdx int
}

func (c *cluster) next(script []string, i int) string {
	if i >= len(script) {
		return script[len(script)-1]
	}
	return script[i]
}

func (c *cluster) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /state/instances/{id}", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		s := c.next(c.instance, c.polls)
		c.polls++
		c.mu.Unlock()
		if s == "" {
			notFound(w, "instances."+r.PathValue("id"))
			return
		}
		writeJSON(w, 200, []byte(s))
	})
	mux.HandleFunc("GET /instance/{id}", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		s := c.next(c.instance, c.polls)
		c.polls++
		c.mu.Unlock()
		if s == "" {
			writeJSON(w, 404, []byte(`{"error":{"message":"Instance not found","type":"Not Found","param":null,"code":404}}`))
			return
		}
		writeJSON(w, 200, []byte(s))
	})
	mux.HandleFunc("GET /state/runners", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		s := c.next(c.runners, c.runnerIdx)
		c.runnerIdx++
		c.mu.Unlock()
		writeJSON(w, 200, []byte(s))
	})
	mux.HandleFunc("POST /instance", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Instance json.RawMessage `json:"instance"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		c.mu.Lock()
		c.created = append(c.created, body.Instance)
		c.mu.Unlock()
		writeJSON(w, 200, []byte(`{"message":"Command received.","command_id":"cmd-1","model_card":{"modelId":"`+llama+`"}}`))
	})
	mux.HandleFunc("DELETE /instance/{id}", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.deleted = append(c.deleted, r.PathValue("id"))
		c.mu.Unlock()
		writeJSON(w, 200, []byte(`{"message":"Command received.","command_id":"cmd-2","instance_id":"`+r.PathValue("id")+`"}`))
	})
	return mux
}

// twoRunner is the instance i-pr2 of the fixtures, with runners r-i-pr2-0
// and r-i-pr2-1.
func twoRunner(t *testing.T) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(fixture(t, "state_instances.json"), &m); err != nil {
		t.Fatal(err)
	}
	return string(m["i-pr2"])
}

const (
	loading = `{"r-i-pr2-0":{"RunnerLoading":{"layersLoaded":8,"totalLayers":8}},"r-i-pr2-1":{"RunnerLoading":{"layersLoaded":3,"totalLayers":8}}}`
	ready   = `{"r-i-pr2-0":{"RunnerReady":{"prefillServerPort":null}},"r-i-pr2-1":{"RunnerReady":{"prefillServerPort":51000}}}`
	oneUp   = `{"r-i-pr2-0":{"RunnerWarmingUp":{}}}`
	failed  = `{"r-i-pr2-0":{"RunnerReady":{}},"r-i-pr2-1":{"RunnerFailed":{"errorMessage":"out of memory","diagnostics":[{"RunnerMetalGpuTimeout":{"message":"GPU hang","evidence":[]}}]}}}`
)

func TestWaitReady(t *testing.T) {
	in := twoRunner(t)
	t.Run("absent, loading, then ready", func(t *testing.T) {
		cl := &cluster{instance: []string{"", "", in}, runners: []string{"{}", oneUp, loading, ready}}
		c, _ := newTestClient(t, cl.handler(), nil)
		if err := c.WaitReady(context.Background(), "i-pr2", 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if cl.runnerIdx != 4 {
			t.Errorf("runners polled %d times, want 4", cl.runnerIdx)
		}
	})
	t.Run("a failed runner", func(t *testing.T) {
		cl := &cluster{instance: []string{in}, runners: []string{loading, failed}}
		c, _ := newTestClient(t, cl.handler(), nil)
		err := c.WaitReady(context.Background(), "i-pr2", 5*time.Second)
		var rf *RunnerFailedError
		if !errors.As(err, &rf) {
			t.Fatalf("error = %v, want *RunnerFailedError", err)
		}
		want := RunnerFailedError{InstanceID: "i-pr2", RunnerID: "r-i-pr2-1", NodeID: nodeB, Message: "out of memory",
			Diagnostics: []string{"RunnerMetalGpuTimeout: GPU hang"}}
		if diff := cmp.Diff(want, *rf); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
	})
	t.Run("the instance vanishes", func(t *testing.T) {
		cl := &cluster{instance: []string{in, in, ""}, runners: []string{loading}}
		c, _ := newTestClient(t, cl.handler(), nil)
		err := c.WaitReady(context.Background(), "i-pr2", 5*time.Second)
		if !errors.Is(err, ErrInstanceGone) || !strings.Contains(err.Error(), "RunnerLoading 3/8") {
			t.Errorf("error = %v, want ErrInstanceGone naming the last statuses", err)
		}
	})
	t.Run("timeout names what was last seen", func(t *testing.T) {
		cl := &cluster{instance: []string{in}, runners: []string{loading}}
		c, _ := newTestClient(t, cl.handler(), nil)
		err := c.WaitReady(context.Background(), "i-pr2", 30*time.Millisecond)
		var nr *NotReadyError
		if !errors.As(err, &nr) {
			t.Fatalf("error = %v, want *NotReadyError", err)
		}
		if nr.Err != nil || nr.Seen != "present" || nr.Waited < 30*time.Millisecond {
			t.Errorf("NotReadyError = %+v", nr)
		}
		if diff := cmp.Diff(map[string]string{"r-i-pr2-0": "RunnerLoading 8/8", "r-i-pr2-1": "RunnerLoading 3/8"}, nr.Runners); diff != "" {
			t.Errorf("last seen (-want +got):\n%s", diff)
		}
		if !strings.Contains(err.Error(), "r-i-pr2-1=RunnerLoading 3/8") {
			t.Errorf("message %q does not name the statuses", err)
		}
	})
	t.Run("never appears, context ends", func(t *testing.T) {
		cl := &cluster{instance: []string{""}, runners: []string{"{}"}}
		c, _ := newTestClient(t, cl.handler(), nil)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		err := c.WaitReady(ctx, "i-pr2", 0)
		var nr *NotReadyError
		if !errors.As(err, &nr) || nr.Seen != "absent" || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error = %v, want a NotReadyError wrapping the context's deadline with the instance absent", err)
		}
	})
	t.Run("exo never answers", func(t *testing.T) {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /state/instances/{id}", func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // hang until the client gives up
		})
		c, _ := newTestClient(t, mux, nil)
		err := c.WaitReady(context.Background(), "i-pr2", 20*time.Millisecond)
		var nr *NotReadyError
		if !errors.As(err, &nr) || nr.Want != "ready" || nr.Seen != "unknown" || nr.Err != nil {
			t.Errorf("WaitReady on a silent exo = %v, want a NotReadyError for ready with the instance unknown", err)
		}
	})
}

func TestCreateDeleteWaitGone(t *testing.T) {
	in := twoRunner(t)
	cl := &cluster{instance: []string{in, in, ""}, runners: []string{"{}"}}
	c, _ := newTestClient(t, cl.handler(), nil)
	ctx := context.Background()
	var inst Instance
	if err := json.Unmarshal([]byte(in), &inst); err != nil {
		t.Fatal(err)
	}
	r, err := c.CreateInstance(ctx, inst)
	if err != nil || r.CommandID != "cmd-1" || r.Message != "Command received." {
		t.Fatalf("CreateInstance = %+v, %v", r, err)
	}
	if len(cl.created) != 1 || string(cl.created[0]) != in {
		t.Errorf("POST /instance body instance = %s, want the instance verbatim", cl.created)
	}
	if r, err := c.DeleteInstance(ctx, "i-pr2"); err != nil || r.CommandID != "cmd-2" {
		t.Fatalf("DeleteInstance = %+v, %v", r, err)
	}
	if err := c.WaitGone(ctx, "i-pr2", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if cl.polls != 3 {
		t.Errorf("polled %d times, want 3", cl.polls)
	}

	stuck := &cluster{instance: []string{in}, runners: []string{"{}"}}
	c2, _ := newTestClient(t, stuck.handler(), nil)
	err = c2.WaitGone(ctx, "i-pr2", 20*time.Millisecond)
	var nr *NotReadyError
	if !errors.As(err, &nr) || nr.Want != "gone" || nr.Err != nil {
		t.Errorf("WaitGone on a stuck instance = %v, want a NotReadyError for gone", err)
	}
}

// TestWaitGoneSeen checks what a wait for gone says it last saw: the
// instance present when exo answered with it, unknown when exo answered no
// poll at all.
func TestWaitGoneSeen(t *testing.T) {
	in := twoRunner(t)
	t.Run("present", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var mu sync.Mutex
		polls := 0
		mux := http.NewServeMux()
		mux.HandleFunc("GET /instance/{id}", func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			polls++
			first := polls == 1
			mu.Unlock()
			if first {
				writeJSON(w, 200, []byte(in))
				return
			}
			cancel() // the caller gives up during the second poll
			<-r.Context().Done()
		})
		c, _ := newTestClient(t, mux, nil)
		err := c.WaitGone(ctx, "i-pr2", 0)
		var nr *NotReadyError
		if !errors.As(err, &nr) || nr.Want != "gone" || nr.Seen != "present" || !errors.Is(err, context.Canceled) {
			t.Errorf("WaitGone cancelled after exo answered = %v, want a NotReadyError for gone with the instance present, wrapping context.Canceled", err)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /instance/{id}", func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // hang until the client gives up
		})
		c, _ := newTestClient(t, mux, nil)
		err := c.WaitGone(context.Background(), "i-pr2", 20*time.Millisecond)
		var nr *NotReadyError
		if !errors.As(err, &nr) || nr.Want != "gone" || nr.Seen != "unknown" || nr.Err != nil {
			t.Errorf("WaitGone on a silent exo = %v, want a NotReadyError for gone with the instance unknown", err)
		}
	})
}

func TestTasks(t *testing.T) {
	body := `{"t2":{"TextGeneration":{"taskId":"t2","taskStatus":"Running","instanceId":"i-pr2","commandId":"c2","taskParams":{"messages":[{"role":"user","content":"a a a"}]}}},` +
		`"t1":{"ImageGeneration":{"task_id":"t1","task_status":"Pending","instance_id":"i-x"}}}`
	mux := http.NewServeMux()
	mux.HandleFunc("GET /state/tasks", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, []byte(body)) })
	c, _ := newTestClient(t, mux, nil)
	ts, err := c.Tasks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Task{
		{Tag: "TextGeneration", TaskID: "t2", Status: "Running", InstanceID: "i-pr2", CommandID: "c2"},
		{Tag: "ImageGeneration", TaskID: "t1", Status: "Pending", InstanceID: "i-x"},
	}
	if diff := cmp.Diff(want, ts); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
}
