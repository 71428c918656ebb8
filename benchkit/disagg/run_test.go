package disagg

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
)

// simCluster starts the embedded engine with two nodes and no instance,
// and a client of it.
func simCluster(t *testing.T, opts sim.Options) (*sim.Server, *exo.Client) {
	t.Helper()
	opts.Preset, opts.Nodes, opts.NoInstance = sim.Fast(), 2, true
	if opts.LoadDelay == 0 {
		opts.LoadDelay = -1
	}
	s := sim.NewServer(opts)
	t.Cleanup(s.Close)
	c, err := exo.New(s.URL, &exo.Options{PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// newBenchmark selects a pair on the sim and returns a Benchmark of it.
func newBenchmark(t *testing.T, s *sim.Server, c *exo.Client) *Benchmark {
	t.Helper()
	ctx := context.Background()
	card, err := c.ResolveModel(ctx, s.Model(), false)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := SelectPair(ctx, c, Side{Card: card}, Side{Card: card}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &Benchmark{Client: c, Pair: pair, Runner: benchkit.Runner{Builder: &promptsize.Builder{Counter: s.Counter()}, Simulated: true}}
}

// assertClean fails unless the cluster holds no instance and no link.
func assertClean(t *testing.T, c *exo.Client) {
	t.Helper()
	ctx := context.Background()
	ins, err := c.Instances(ctx)
	if err != nil || len(ins) != 0 {
		t.Errorf("instances left: %v (%v)", ins, err)
	}
	links, err := c.Links(ctx)
	if err != nil || len(links) != 0 {
		t.Errorf("links left: %v (%v)", links, err)
	}
}

func TestRunOnSim(t *testing.T) {
	s, c := simCluster(t, sim.Options{})
	d := newBenchmark(t, s, c)
	if !d.Pair.DecodeDeferred {
		// The sim places each 1-node preview on its emptiest node, node 1
		// while both are idle; when it learns to honour node_ids this
		// test only loses the deferred path.
		t.Logf("the decode placement was chosen up front: %s", d.Pair.Describe("decode"))
	}
	d.CompareBaseline = true
	var streamed []Row
	d.Sinks = []benchkit.Sink{benchkit.SinkFunc(func(r benchkit.Request) error { streamed = append(streamed, d.Row(r)); return nil })}
	const pp, tg = 4096, 4
	res, err := d.Run(context.Background(), benchkit.Plan{PP: []int{pp}, TG: []int{tg}})
	if err != nil {
		t.Fatalf("Run: %v (warnings %v)", err, res.Warnings)
	}
	assertClean(t, c)
	var phases []string
	for _, ph := range res.Phases {
		phases = append(phases, ph.Phase)
		if ph.Check == nil || ph.Check.OK == nil || !*ph.Check.OK {
			t.Errorf("%s: check %+v", ph.Phase, ph.Check)
		}
	}
	if diff := cmp.Diff([]string{PhasePrefillAlone, PhaseDisaggregated, PhaseDecodeAlone}, phases); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	if len(res.Requests) != 3 || len(streamed) != 3 {
		t.Fatalf("%d rows, %d streamed; want 3", len(res.Requests), len(streamed))
	}
	pn, dn := res.Pair.Prefill.Instance.Nodes(), res.Pair.Decode.Instance.Nodes()
	if !disjoint(pn, dn) || res.LinkID == "" {
		t.Errorf("prefill on %v, decode on %v, link %q", pn, dn, res.LinkID)
	}
	byPhase := map[string]Row{}
	for _, q := range res.Requests {
		r := d.Row(q)
		if q.Failed() || r.Stats == nil || r.Stats.PromptTokens != pp || r.Stats.GenerationTokens != tg {
			t.Fatalf("row %+v", q)
		}
		byPhase[r.Phase] = r
	}
	if got := byPhase[PhasePrefillAlone].InstanceID; got != res.Pair.Prefill.Instance.ID {
		t.Errorf("prefill_alone measured instance %s", got)
	}
	if got := byPhase[PhaseDisaggregated].InstanceID; got != res.Pair.Decode.Instance.ID {
		t.Errorf("disaggregated measured instance %s", got)
	}
	// The sim's prompt_tps is (u − 1) / prefill seconds locally and
	// (u − 1) / (prefill + KV transfer seconds) remotely, the transfer
	// carrying kv bytes per token over the link: check both from the
	// preset's own cost model.
	p := sim.Fast()
	prefill := p.PrefillTime(pp-1, 0, 0).Seconds()
	transfer := p.Model.KVBytesPerToken() * pp / p.Hardware.LinkBandwidth
	local := float64(pp-1) / prefill
	remote := float64(pp-1) / (prefill + transfer)
	for phase, want := range map[string]float64{PhaseDecodeAlone: local, PhasePrefillAlone: local, PhaseDisaggregated: remote} {
		if got := byPhase[phase].Stats.PromptTPS; math.Abs(got-want)/want > 0.01 {
			t.Errorf("%s prompt_tps %.1f, want %.1f within 1%%", phase, got, want)
		}
	}
}

func TestRunRemovesEverythingWhenRequestsFail(t *testing.T) {
	s, c := simCluster(t, sim.Options{Fault: sim.Fault{Kind: sim.FaultStatus500}})
	d := newBenchmark(t, s, c)
	res, err := d.Run(context.Background(), benchkit.Plan{PP: []int{2000}, TG: []int{4}, Repeat: 2})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	assertClean(t, c)
	if len(res.Requests) != 2 {
		t.Fatalf("%d rows, want 2", len(res.Requests))
	}
	for _, r := range res.Requests {
		if !r.Failed() || r.ErrorKind != string(engine.KindStatus) {
			t.Errorf("row error %q kind %q, want a status error", r.Error, r.ErrorKind)
		}
	}
	// The probe is exempt from the injected fault, so the check still ran.
	if ph := res.Phases[0]; ph.Failed != 2 || ph.Check == nil || ph.Check.OK == nil || !*ph.Check.OK {
		t.Errorf("phase %+v", ph)
	}
}

func TestRunInterruptedRemovesEverything(t *testing.T) {
	// Cancel once the first measured request reaches the engine, which
	// stalls it for a minute.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, c := simCluster(t, sim.Options{Fault: sim.Fault{Kind: sim.FaultStall, After: -1, Duration: time.Minute},
		Logger: slog.New(onMessage{"sim: injecting a fault", cancel})})
	d := newBenchmark(t, s, c)
	res, err := d.Run(ctx, benchkit.Plan{PP: []int{2000}, TG: []int{4}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if !res.Interrupted || cli.ExitCode(err) != cli.ExitInterrupted {
		t.Errorf("interrupted %v, exit %d", res.Interrupted, cli.ExitCode(err))
	}
	assertClean(t, c)
}

// onMessage is a slog.Handler that calls fn on every record with message
// msg, at any level.
type onMessage struct {
	msg string
	fn  func()
}

func (h onMessage) Enabled(context.Context, slog.Level) bool { return true }

func (h onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.fn()
	}
	return nil
}

func (h onMessage) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h onMessage) WithGroup(string) slog.Handler { return h }

func TestRunRefusesWithoutDisaggregation(t *testing.T) {
	s, c := simCluster(t, sim.Options{NoDisaggregation: true})
	d := newBenchmark(t, s, c)
	_, err := d.Run(context.Background(), benchkit.Plan{PP: []int{2000}, TG: []int{4}})
	if !errors.Is(err, exo.ErrDisaggregationDisabled) {
		t.Fatalf("err = %v, want ErrDisaggregationDisabled", err)
	}
	assertClean(t, c)
}

func TestRunRefusesShortPrompts(t *testing.T) {
	s, c := simCluster(t, sim.Options{})
	d := newBenchmark(t, s, c)
	_, err := d.Run(context.Background(), benchkit.Plan{PP: []int{800}, TG: []int{4}})
	if !errors.Is(err, benchkit.ErrBadPlan) || !strings.Contains(err.Error(), "pp=800 must exceed 1000") {
		t.Fatalf("err = %v", err)
	}
	assertClean(t, c)
}
