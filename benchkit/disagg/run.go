package disagg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine/exo"
)

// Defaults of a Benchmark.
const (
	// DefaultLinkTimeout bounds the wait for a new link to be listed and
	// for a deleted one to disappear.
	DefaultLinkTimeout = 30 * time.Second
	// DefaultCleanupTimeout bounds the whole cleanup: deleting the link
	// and both instances and waiting until they are gone.
	DefaultCleanupTimeout = 2 * time.Minute
)

// A Row is one measured request of a disaggregation benchmark as its
// results file writes it: the request as exo's row ([benchkit.ExoRun])
// with the phase it belongs to and both sides' instances,
// the fields exo's bench/prefill_decode_bench.py writes beside each run.
type Row struct {
	benchkit.ExoRun
	// Phase is PhaseDisaggregated, PhaseDecodeAlone or PhasePrefillAlone;
	// PhaseModelID the model its requests named.
	Phase        string `json:"phase"`
	PhaseModelID string `json:"phase_model_id"`
	// The two sides' models, instances and nodes.
	PrefillModelID      string   `json:"prefill_model_id"`
	PrefillInstanceID   string   `json:"prefill_instance_id"`
	PrefillInstanceMeta string   `json:"prefill_instance_meta"`
	PrefillNodes        []string `json:"prefill_nodes"`
	DecodeModelID       string   `json:"decode_model_id"`
	DecodeInstanceID    string   `json:"decode_instance_id"`
	DecodeInstanceMeta  string   `json:"decode_instance_meta"`
	DecodeNodes         []string `json:"decode_nodes"`
}

// A PhaseReport is one phase as run.
type PhaseReport struct {
	Phase string `json:"phase"`
	// Model is the model the phase's requests named; InstanceID the
	// instance meant to serve them.
	Model      string `json:"model"`
	InstanceID string `json:"instance_id"`
	// Requests and Failed count the phase's rows.
	Requests int `json:"requests"`
	Failed   int `json:"failed"`
	// Check says where the engine reports the phase's prefill ran; nil
	// when no probe was made (Benchmark.NoProbe, or the phase stopped).
	Check *PrefillCheck `json:"check,omitempty"`
}

// A Benchmark runs exo's prefill/decode disaggregation benchmark on a pair
// of placements: it creates the prefill instance, optionally measures it
// alone (PhasePrefillAlone), creates the decode instance, links the two
// (the prefill instance as prefill, the decode instance as decode),
// measures requests for the decode model (PhaseDisaggregated), and,
// optionally, removes the link and the prefill instance and measures the
// decode instance alone (PhaseDecodeAlone). That is the order of exo's
// bench/prefill_decode_bench.py, which it must be: requests name a model,
// not an instance, so a baseline can only be measured while its instance is
// the model's only one that takes requests.
//
// Unlike exo's script it knows the link's id for sure ([exo.Client.CreateLink]),
// never deletes a link or instance it did not create, checks after each
// phase where the engine reports the prefill ran, returns the rows measured
// even when it fails, and always removes what it created (the link and
// both instances, waiting until they are gone) before Run returns: on
// success, on failure and when ctx is cancelled, with a context of its own.
type Benchmark struct {
	// Client talks to the cluster. Required.
	Client *exo.Client
	// Pair is what to run, from SelectPair. Required.
	Pair Pair
	// CompareBaseline adds PhasePrefillAlone and PhaseDecodeAlone.
	CompareBaseline bool
	// PlanOptions configure the planning phase (downloads, disk checks)
	// run for each placement before its instance is created.
	PlanOptions exo.PlanOptions
	// Settle is how long to wait for a decode placement off the prefill
	// instance's nodes when the pair's was deferred (zero: one look).
	Settle time.Duration
	// ReadyTimeout and GoneTimeout bound the waits for an instance to be
	// ready and gone (zero: [benchkit.DefaultReadyTimeout],
	// [benchkit.DefaultGoneTimeout]); LinkTimeout the waits for a link to
	// appear and disappear (DefaultLinkTimeout); CleanupTimeout the whole
	// cleanup (DefaultCleanupTimeout).
	ReadyTimeout, GoneTimeout, LinkTimeout, CleanupTimeout time.Duration
	// Runner is the template of each phase's [benchkit.Runner]: its
	// Engine, Model, ModelShortID and Placement are set per phase; Builder
	// is required.
	Runner benchkit.Runner
	// Sinks receive each request as it is measured, its phase in its
	// labels (a JSONL file, so an interrupted run keeps them: Row gives
	// the file's view of it).
	Sinks []benchkit.Sink
	// NoProbe skips the probe request after each phase. By default, when
	// the engine labels itself simulated (the embedded engine's
	// X-Inferbench-Sim header on GET /node_id), one bench request of the
	// phase's first pp and max_tokens 1 is sent after the phase and its
	// report read; an engine that does not label itself gets no probe, and
	// its checks say that it cannot tell.
	NoProbe bool
	// HTTPClient sends the probes; nil means a client of its own.
	HTTPClient *http.Client
	// Logger receives progress records (instances created, link, phases);
	// nil logs nothing.
	Logger *slog.Logger
}

// Result is what a Benchmark measured.
type Result struct {
	// Pair is the pair run, its decode placement chosen when it was
	// deferred.
	Pair Pair
	// Requests are every measured request of every phase, in order,
	// each with its phase in its labels.
	Requests []benchkit.Request
	// Phases are the phases run, in order.
	Phases []PhaseReport
	// LinkID is the id of the link the run created, "" if none.
	LinkID string
	// Cluster is the cluster snapshot taken before anything was created.
	Cluster json.RawMessage
	// Interrupted is true when ctx ended the run early.
	Interrupted bool
	// Warnings are the run's own and its phases' runners'.
	Warnings []string
}

// survey takes the cluster's snapshot and warns of instances of the pair's
// models already running, before anything is created.
func (d *Benchmark) survey(ctx context.Context, res *Result) {
	if snap, err := d.Client.Snapshot(ctx); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("cluster snapshot: %v", err))
	} else if !snap.Empty() {
		if b, err := json.Marshal(snap); err == nil {
			res.Cluster = b
		}
	}
	if ins, err := d.Client.Instances(ctx); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("list instances: %v", err))
	} else {
		for _, in := range ins {
			if in.ModelID == d.Pair.PrefillCard.FullID() || in.ModelID == d.Pair.DecodeCard.FullID() {
				res.Warnings = append(res.Warnings, fmt.Sprintf("instance %s of %s already runs on the cluster: exo may route this run's requests to it, mixing its figures into a phase's", in.ID, in.ModelID))
			}
		}
	}
}

// state is what the run has created and not yet removed.
type state struct {
	prefill, decode bool // instance created (or its creation attempted)
	link            string
}

// Run runs the phases; see Benchmark. It checks plan with CheckPlan and
// that the API node has disaggregation enabled before creating anything.
// It returns the rows measured even when it fails; the error says why it
// stopped, joined with a cleanup failure if there was one.
func (d *Benchmark) Run(ctx context.Context, plan benchkit.Plan) (res Result, err error) {
	if d.Client == nil || d.Runner.Builder == nil {
		return res, errors.New("disagg: Benchmark needs a Client and a Runner with a Builder")
	}
	pi := d.Pair.Prefill.Instance
	if pi.ID == "" || (d.Pair.Decode.Instance.ID == "" && !d.Pair.DecodeDeferred) || pi.ID == d.Pair.Decode.Instance.ID {
		return res, fmt.Errorf("disagg: Benchmark needs two placements with distinct instance ids, got %q and %q", pi.ID, d.Pair.Decode.Instance.ID)
	}
	if err := CheckPlan(plan); err != nil {
		return res, err
	}
	on, err := d.Client.Disaggregation(ctx)
	if err != nil {
		return res, fmt.Errorf("disagg: read the cluster's feature flags: %w", err)
	}
	if !on {
		return res, fmt.Errorf("%w: the API node reports disaggregation off; start exo with ENABLE_DISAGGREGATION=true on every node", exo.ErrDisaggregationDisabled)
	}
	d.survey(ctx, &res)

	st := &state{}
	defer func() {
		if cerr := d.cleanup(ctx, st, &res); cerr != nil {
			err = errors.Join(err, cerr)
		}
		if ctx.Err() != nil {
			res.Interrupted = true
		}
	}()

	st.prefill = true
	if err := d.start(ctx, "prefill", d.Pair.Prefill, d.Pair.PrefillCard, &res); err != nil {
		return res, err
	}
	d.checkPrefillServer(ctx, &res)
	if d.Pair.Decode.Instance.ID == "" {
		if err := d.selectDecode(ctx); err != nil {
			return res, err
		}
		d.log(ctx, "DECODE: "+d.Pair.Describe("decode"))
	}
	res.Pair = d.Pair
	di := d.Pair.Decode.Instance
	if d.CompareBaseline {
		if err := d.phase(ctx, PhasePrefillAlone, plan, &res); err != nil {
			return res, err
		}
	}
	st.decode = true
	if err := d.start(ctx, "decode", d.Pair.Decode, d.Pair.DecodeCard, &res); err != nil {
		return res, err
	}
	id, err := d.Client.CreateLink(ctx, []string{pi.ID}, []string{di.ID})
	if err != nil {
		return res, fmt.Errorf("disagg: link prefill instance %s to decode instance %s: %w", pi.ID, di.ID, err)
	}
	st.link, res.LinkID = id, id
	lctx, cancel := context.WithTimeout(ctx, d.linkTimeout())
	_, err = d.Client.WaitLink(lctx, id)
	cancel()
	if err != nil {
		return res, fmt.Errorf("disagg: link %s did not appear in the cluster state within %v: %w", id, d.linkTimeout(), err)
	}
	d.log(ctx, "link created", "link", id, "prefill", pi.ID, "decode", di.ID)
	if err := d.phase(ctx, PhaseDisaggregated, plan, &res); err != nil {
		return res, err
	}
	if d.CompareBaseline {
		d.log(ctx, "removing the link and the prefill instance to measure decode_alone")
		if err := d.removeLink(ctx, st); err != nil {
			return res, err
		}
		if err := d.removeInstance(ctx, pi.ID); err != nil {
			return res, err
		}
		st.prefill = false
		if err := d.phase(ctx, PhaseDecodeAlone, plan, &res); err != nil {
			return res, err
		}
	}
	for _, ph := range res.Phases {
		if ph.Phase == PhaseDisaggregated && ph.Check != nil && ph.Check.OK != nil && !*ph.Check.OK {
			return res, fmt.Errorf("%w: %s", ErrPrefillNotRemote, ph.Check.Note)
		}
	}
	return res, ctx.Err()
}

// selectDecode chooses the decode placement of a deferred pair: the first
// placement of the decode side off the prefill instance's nodes, retrying
// with exo's settle backoff until Settle has passed.
func (d *Benchmark) selectDecode(ctx context.Context) error {
	s := d.Pair.DecodeSide
	taken := d.Pair.Prefill.Instance.Nodes()
	deadline := time.Now().Add(d.Settle)
	wait := exo.DefaultSettleBackoff
	for {
		ps, err := d.Client.Placements(ctx, s.Card.FullID(), s.Filter, 0)
		var np *exo.NoPlacementError
		if err != nil && !errors.As(err, &np) {
			return fmt.Errorf("disagg: placements of the decode side: %w", err)
		}
		for _, p := range ps {
			if p.Instance.ID != d.Pair.Prefill.Instance.ID && disjoint(taken, p.Instance.Nodes()) {
				d.Pair.Decode = p
				return nil
			}
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%w: with the prefill instance on %v, the engine offers %d decode placements of %s and every one uses its nodes", ErrNoDistinctPlacements, taken, len(ps), s.Card.FullID())
		}
		t := time.NewTimer(min(wait, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, exo.MaxSettleBackoff)
	}
}

func (d *Benchmark) linkTimeout() time.Duration {
	if d.LinkTimeout > 0 {
		return d.LinkTimeout
	}
	return DefaultLinkTimeout
}

// start prepares the nodes of p, creates its instance and waits until it
// is ready.
func (d *Benchmark) start(ctx context.Context, side string, p exo.Placement, card exo.ModelCard, res *Result) error {
	opts := d.PlanOptions
	pr, err := d.Client.Plan(ctx, p, card, &opts)
	for _, w := range pr.Warnings {
		res.Warnings = append(res.Warnings, fmt.Sprintf("planning the %s placement: %v", side, w))
	}
	if err != nil {
		return fmt.Errorf("disagg: prepare the %s nodes for %s: %w", side, card.FullID(), err)
	}
	d.log(ctx, "creating the "+side+" instance", "instance", p.Instance.ID, "nodes", p.Instance.Nodes())
	if _, err := d.Client.CreateInstance(ctx, p.Instance); err != nil {
		return fmt.Errorf("disagg: create the %s instance: %w", side, err)
	}
	ready := d.ReadyTimeout
	if ready == 0 {
		ready = benchkit.DefaultReadyTimeout
	}
	if err := d.Client.WaitReady(ctx, p.Instance.ID, ready); err != nil {
		return fmt.Errorf("disagg: the %s instance %s is not ready: %w", side, p.Instance.ID, err)
	}
	d.log(ctx, side+" instance ready", "instance", p.Instance.ID)
	return nil
}

// checkPrefillServer warns when no runner of the prefill instance reports
// a prefill server port: exo then never routes a prefill to it.
func (d *Benchmark) checkPrefillServer(ctx context.Context, res *Result) {
	in := d.Pair.Prefill.Instance
	runners, err := d.Client.Runners(ctx)
	if err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("read the prefill instance's runners: %v", err))
		return
	}
	for _, rid := range in.NodeToRunner {
		if st, ok := runners[rid]; ok && st.PrefillServerPort != nil {
			return
		}
	}
	res.Warnings = append(res.Warnings, fmt.Sprintf("no runner of the prefill instance %s reports a prefill server port: exo routes no prefill to it unless its node runs with ENABLE_DISAGGREGATION=true", in.ID))
}

// phase measures plan for one phase, then probes where its prefill ran.
func (d *Benchmark) phase(ctx context.Context, phase string, plan benchkit.Plan, res *Result) error {
	card, p, wantRemote := d.Pair.DecodeCard, d.Pair.Decode, phase == PhaseDisaggregated
	if phase == PhasePrefillAlone {
		card, p = d.Pair.PrefillCard, d.Pair.Prefill
	}
	r := d.Runner
	r.Engine, r.Model, r.ModelShortID = d.Client, card.FullID(), card.ShortID()
	r.Placement = benchkit.Placement{Sharding: p.Sharding, InstanceMeta: p.InstanceMeta, Nodes: p.Nodes, InstanceID: p.Instance.ID}
	// The template's sinks and the benchmark's hear every phase's
	// requests, each labelled with its phase.
	sinks := append(slices.Clone(r.Sinks), d.Sinks...)
	r.Sinks = []benchkit.Sink{benchkit.SinkFunc(func(row benchkit.Request) error {
		row.Phase = phase
		for _, s := range sinks {
			if err := s.Add(row); err != nil {
				return err
			}
		}
		return nil
	})}
	d.log(ctx, "phase "+phase, "model", card.FullID(), "instance", p.Instance.ID)
	rep, err := r.Run(ctx, plan)
	pr := PhaseReport{Phase: phase, Model: card.FullID(), InstanceID: p.Instance.ID}
	for _, row := range rep.Requests {
		row.Phase = phase
		res.Requests = append(res.Requests, row)
		pr.Requests++
		if row.Failed() {
			pr.Failed++
		}
	}
	for _, w := range rep.Warnings {
		res.Warnings = append(res.Warnings, phase+": "+w)
	}
	if err == nil && !d.NoProbe {
		chk, perr := d.probe(ctx, card.FullID(), plan.PP[0], wantRemote, p.Instance.ID)
		if perr != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s: could not check where prefill ran: %v", phase, perr))
		} else {
			pr.Check = &chk
			if chk.OK != nil && !*chk.OK {
				res.Warnings = append(res.Warnings, phase+": "+chk.Note)
			}
		}
	}
	res.Phases = append(res.Phases, pr)
	if err != nil {
		return fmt.Errorf("disagg: phase %s: %w", phase, err)
	}
	return nil
}

// Row returns r, a request of the benchmark's, as its results file
// writes it.
func (d *Benchmark) Row(r benchkit.Request) Row { return rowOf(d.Pair, r) }

func rowOf(pair Pair, r benchkit.Request) Row {
	p, q := pair.Prefill, pair.Decode
	return Row{
		ExoRun: r.Exo(), Phase: r.Phase, PhaseModelID: r.Model,
		PrefillModelID: pair.PrefillCard.FullID(), PrefillInstanceID: p.Instance.ID,
		PrefillInstanceMeta: p.InstanceMeta, PrefillNodes: p.Instance.Nodes(),
		DecodeModelID: pair.DecodeCard.FullID(), DecodeInstanceID: q.Instance.ID,
		DecodeInstanceMeta: q.InstanceMeta, DecodeNodes: q.Instance.Nodes(),
	}
}

func (d *Benchmark) log(ctx context.Context, msg string, args ...any) {
	if d.Logger != nil {
		d.Logger.InfoContext(ctx, msg, args...)
	}
}
