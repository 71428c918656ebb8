package exo

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/enginetest"
	"github.com/inferbench/inferbench/engine/internal/adaptertest"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/internal/testkit"
)

func newSim(t testing.TB, o sim.Options) *sim.Server { return adaptertest.NewSim(t, o) }

func simClient(t testing.TB, s *sim.Server) *Client {
	return adaptertest.NewClient(t, New, s.URL, fastOptions())
}

// TestConformance runs the engine conformance kit against the simulated
// exo API over loopback HTTP.
func TestConformance(t *testing.T) {
	s := newSim(t, sim.Options{})
	c := simClient(t, s)
	faults := adaptertest.SimFaults()
	enginetest.Run(t, enginetest.Config{
		Engine:      c,
		Model:       s.Model(),
		Stream:      true,
		ChunkTokens: true,
		Bench:       true,
		Stats:       enginetest.Both,
		Usage:       enginetest.Streamed,
		SendHook:    true,
		NewAt:       adaptertest.NewAt(t, New, fastOptions()),
		Faults:      faults,
	})
}

// TestSimLifecycle drives a whole placement against the sim: resolve,
// place, plan, create, wait, run streamed and unstreamed bench requests,
// snapshot, metrics, links, delete, wait gone.
func TestSimLifecycle(t *testing.T) {
	s := newSim(t, sim.Options{NoInstance: true, LoadDelay: 20 * time.Millisecond})
	c := simClient(t, s)
	ctx := context.Background()

	card, err := c.ResolveModel(ctx, s.Model()[len("sim/"):], false)
	if err != nil {
		t.Fatal(err)
	}
	if card.FullID() != s.Model() {
		t.Fatalf("resolved %q, want %q", card.FullID(), s.Model())
	}
	ps, err := c.Placements(ctx, card.FullID(), Filter{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Sharding != p.Instance.Sharding() || p.InstanceMeta != p.Instance.InstanceMeta() {
			t.Errorf("placement labels %s/%s differ from its instance", p.InstanceMeta, p.Sharding)
		}
		if p.Nodes == 1 && (p.Sharding != "Pipeline" || p.InstanceMeta != "MlxRing") {
			t.Errorf("1-node placement labelled %s/%s; exo forces MlxRing/Pipeline", p.InstanceMeta, p.Sharding)
		}
	}
	if _, found, err := c.FindInstance(ctx, card.FullID()); err != nil || found {
		t.Fatalf("FindInstance before creation = %v, %v", found, err)
	}
	p := ps[len(ps)-1]
	plan, err := c.Plan(ctx, p, card, &PlanOptions{PollInterval: time.Millisecond, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("plan: %+v", plan)
	if _, err := c.CreateInstance(ctx, p.Instance); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, p.Instance.ID, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	in, found, err := c.FindInstance(ctx, card.FullID())
	if err != nil || !found || in.ID != p.Instance.ID {
		t.Fatalf("FindInstance after creation = %v %v %v, want %s", in.ID, found, err, p.Instance.ID)
	}

	msgs := []engine.Message{{Role: "user", Content: "Count to ten, slowly."}}
	wantPrompt, err := s.Counter().Count(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		res, err := c.Complete(ctx, engine.Request{Model: card.FullID(), Messages: msgs, MaxTokens: 12, IgnoreEOS: true, Stream: stream})
		if err != nil {
			t.Fatalf("stream=%v: %v", stream, err)
		}
		if len(res.Warnings) != 0 {
			t.Errorf("stream=%v: warnings %v", stream, res.Warnings)
		}
		st := res.ServerStats
		if st == nil || st.GenerationTokens != 12 || st.PromptTokens != wantPrompt {
			t.Fatalf("stream=%v: stats %+v, want 12 generated and %d prompt tokens", stream, st, wantPrompt)
		}
		if stream && res.Trace.Tokens() != 12 {
			t.Errorf("streamed %d tokens, want 12", res.Trace.Tokens())
		}
		if !stream && (res.Power == nil || res.Power.TotalEnergyJoules <= 0) {
			t.Errorf("unstreamed: power %+v, want energy", res.Power)
		}
	}

	snap, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.NodeIdentities == nil || snap.Topology == nil || snap.NodeMemory == nil || snap.NodeSystem == nil {
		t.Errorf("snapshot lacks parts: %s", mustJSON(t, snap))
	}
	metrics, err := c.NodeSystems(ctx)
	if err != nil || len(metrics) == 0 {
		t.Fatalf("NodeSystems = %v, %v", metrics, err)
	}
	for node, m := range metrics {
		one, err := c.NodeSystem(ctx, node)
		if err != nil || one.SysPower <= 0 {
			t.Errorf("NodeSystem(%s) = %+v, %v; want positive sysPower", node, one, err)
		}
		_ = m
	}

	id, err := c.CreateLink(ctx, []string{p.Instance.ID}, []string{p.Instance.ID})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	link, err := c.WaitLink(wctx, id)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(InstanceLink{LinkID: id, PrefillInstances: []string{p.Instance.ID}, DecodeInstances: []string{p.Instance.ID}}, link); diff != "" {
		t.Errorf("link (-want +got):\n%s", diff)
	}
	if _, err := c.DeleteLink(ctx, id); err != nil {
		t.Fatal(err)
	}

	if _, err := c.DeleteInstance(ctx, p.Instance.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitGone(ctx, p.Instance.ID, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteInstance(ctx, p.Instance.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting a deleted instance = %v, want ErrNotFound", err)
	}
}

func TestSimLinksDisabled(t *testing.T) {
	s := newSim(t, sim.Options{NoDisaggregation: true})
	c := simClient(t, s)
	_, err := c.CreateLink(context.Background(), []string{"a"}, []string{"b"})
	if !errors.Is(err, ErrDisaggregationDisabled) || !errors.Is(err, ErrNotFound) {
		t.Errorf("CreateLink with disaggregation off = %v, want ErrDisaggregationDisabled", err)
	}
	if on, err := c.Disaggregation(context.Background()); err != nil || on {
		t.Errorf("Disaggregation = %v, %v; want false", on, err)
	}
}

// TestSimCancel cancels a running non-streaming bench request by the
// command id found in /state/tasks: the request then ends early, with
// generation_stats null.
func TestSimCancel(t *testing.T) {
	s := newSim(t, sim.Options{})
	c := simClient(t, s)
	ctx := context.Background()
	type outcome struct {
		res engine.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := c.Complete(ctx, engine.Request{Model: s.Model(), Messages: []engine.Message{{Role: "user", Content: "go on"}},
			MaxTokens: 1 << 20, IgnoreEOS: true})
		done <- outcome{res, err}
	}()
	var id string
	for id == "" {
		tasks, err := c.Tasks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			if task.Tag == "TextGeneration" && task.Status == "Running" {
				id = task.CommandID
			}
		}
		if id == "" {
			if err := sleep(ctx, time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	o := testkit.RecvWithin(t, done, testkit.Patience)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res.ResponseID != id || o.res.ServerStats != nil || len(o.res.Warnings) != 1 || !errors.Is(o.res.Warnings[0], engine.ErrNoStats) {
		t.Errorf("cancelled result: id %q (want %q), stats %+v, warnings %v", o.res.ResponseID, id, o.res.ServerStats, o.res.Warnings)
	}
	if err := c.Cancel(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Errorf("cancelling a finished command = %v, want ErrNotFound", err)
	}
}
