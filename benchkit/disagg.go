package benchkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/inferbench/inferbench/engine/exo"
)

// RemotePrefillMinTokens is exo's REMOTE_PREFILL_MIN_TOKENS: a decode
// instance hands a prompt's prefill to a linked prefill instance only when
// more than this many of its tokens are not in the prefix cache.
const RemotePrefillMinTokens = 1000

// The phases of a disaggregation benchmark, as exo's
// bench/prefill_decode_bench.py names them.
const (
	// PhaseDisaggregated: requests for the decode model go to the decode
	// instance, which hands each prefill to the linked prefill instance.
	PhaseDisaggregated = "disaggregated"
	// PhaseDecodeAlone: the link and the prefill instance are gone; the
	// decode instance prefills and decodes by itself.
	PhaseDecodeAlone = "decode_alone"
	// PhasePrefillAlone: before the decode instance exists, requests for
	// the prefill model are served by the prefill instance by itself.
	PhasePrefillAlone = "prefill_alone"
)

// Defaults of a Disagg.
const (
	// DefaultLinkTimeout bounds the wait for a new link to be listed and
	// for a deleted one to disappear.
	DefaultLinkTimeout = 30 * time.Second
	// DefaultCleanupTimeout bounds the whole cleanup: deleting the link
	// and both instances and waiting until they are gone.
	DefaultCleanupTimeout = 2 * time.Minute
)

var (
	// ErrNoDistinctPlacements: no prefill placement and decode placement
	// share no node, so the two instances cannot run side by side.
	ErrNoDistinctPlacements = errors.New("benchkit: no prefill and decode placements on distinct nodes")
	// ErrNodeNotFound: a node name matched no node of the cluster, or
	// several.
	ErrNodeNotFound = errors.New("benchkit: node not found")
	// ErrPrefillNotRemote: the engine reports that a request of the
	// disaggregated phase was prefilled by the decode instance itself (exo
	// falls back to local prefill without saying so; the embedded engine
	// says so), or that another instance than the run's served it.
	ErrPrefillNotRemote = errors.New("benchkit: the disaggregated phase's prefill did not run on the prefill instance")
	// ErrCleanup: the link or an instance the run created could not be
	// removed; the message names what is left on the cluster.
	ErrCleanup = errors.New("benchkit: cleanup failed")
)

// CheckDisaggPlan checks that every prompt length of plan exceeds
// RemotePrefillMinTokens, so that each request of the disaggregated phase
// is eligible for remote prefill, and that plan is otherwise valid
// (Plan.Validate without the template overhead). The error wraps
// ErrBadPlan and names the length at fault and the threshold.
func CheckDisaggPlan(plan Plan) error {
	for _, pp := range plan.PP {
		if pp <= RemotePrefillMinTokens {
			return fmt.Errorf("%w: pp=%d must exceed %d: exo prefills remotely only when more than %d prompt tokens are uncached", ErrBadPlan, pp, RemotePrefillMinTokens, RemotePrefillMinTokens)
		}
	}
	if plan.UsePrefixCache {
		return fmt.Errorf("%w: use_prefix_cache with disaggregation: a repeated prompt would be a cache hit with at most 1 uncached token, below the %d-token remote prefill threshold", ErrBadPlan, RemotePrefillMinTokens)
	}
	return plan.Validate(-1)
}

// ResolveNode finds the node id that name designates among the cluster's
// identities: a node id, else the node whose friendly name equals name
// case-insensitively, else the only node whose friendly name contains it.
// No match, or several substring matches, give an error wrapping
// ErrNodeNotFound that lists the friendly names.
func ResolveNode(ids map[string]exo.NodeIdentity, name string) (string, error) {
	if _, ok := ids[name]; ok {
		return name, nil
	}
	keys := make([]string, 0, len(ids))
	for id := range ids {
		keys = append(keys, id)
	}
	sort.Strings(keys)
	var sub, names []string
	low := strings.ToLower(name)
	for _, id := range keys {
		fn := ids[id].FriendlyName
		names = append(names, fmt.Sprintf("%q", fn))
		if strings.EqualFold(fn, name) {
			return id, nil
		}
		if low != "" && strings.Contains(strings.ToLower(fn), low) {
			sub = append(sub, id)
		}
	}
	switch len(sub) {
	case 1:
		return sub[0], nil
	case 0:
		return "", fmt.Errorf("%w: no node is named %q; the cluster's nodes are %s", ErrNodeNotFound, name, strings.Join(names, ", "))
	}
	return "", fmt.Errorf("%w: %q is part of %d node names (%s); give one exactly", ErrNodeNotFound, name, len(sub), strings.Join(names, ", "))
}

// A DisaggSide says how to place one side of a disaggregation benchmark.
type DisaggSide struct {
	// Card is the side's model.
	Card exo.ModelCard
	// Node, when set, is a node (friendly name or id, see ResolveNode)
	// the side's placement must include.
	Node string
	// Filter selects the side's placements; its NodeIDs are replaced by
	// Node's id.
	Filter exo.Filter
}

// A DisaggPair is the two placements of a disaggregation benchmark, on
// disjoint sets of nodes.
type DisaggPair struct {
	Prefill, Decode exo.Placement
	// PrefillCard and DecodeCard are the two sides' models.
	PrefillCard, DecodeCard exo.ModelCard
	// DecodeDeferred is true when the engine offered no decode placement
	// off the prefill placement's nodes before anything runs: previews
	// place a model on the nodes with the most free memory, so on
	// identical idle nodes every small placement lands on the same node.
	// Decode is then empty and Disagg.Run chooses it from DecodeSide once
	// the prefill instance holds its node's memory.
	DecodeDeferred bool
	// DecodeSide is the decode side as asked for, its Node resolved to an
	// id in Filter.NodeIDs.
	DecodeSide DisaggSide
	// NodeNames maps node ids to friendly names, where the cluster gave
	// them.
	NodeNames map[string]string
}

// Describe writes one side as exo's benchmark logs it: instance meta,
// sharding, node ids with friendly names, the model and the instance id.
// side is "prefill" or "decode".
func (p DisaggPair) Describe(side string) string {
	pl, card := p.Decode, p.DecodeCard
	if side == "prefill" {
		pl, card = p.Prefill, p.PrefillCard
	} else if p.DecodeDeferred && pl.Instance.ID == "" {
		return fmt.Sprintf("%s (%s) on nodes other than the prefill instance's, chosen once the prefill instance runs (the engine places every small placement on the node with the most free memory, so it offers none elsewhere yet)", card.ShortID(), card.FullID())
	}
	nodes := pl.Instance.Nodes()
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n
		if fn := p.NodeNames[n]; fn != "" {
			names[i] = fmt.Sprintf("%s (%s)", n, fn)
		}
	}
	return fmt.Sprintf("%s / %s / nodes=[%s] / %s (%s) / instance_id=%s",
		pl.InstanceMeta, pl.Sharding, strings.Join(names, ", "), card.ShortID(), card.FullID(), pl.Instance.ID)
}

// SelectDisaggPair chooses a prefill and a decode placement that share no
// node. Each side's placements are fetched with its Filter (restricted to
// its Node when set): the prefill side's waiting up to settle for at least
// one, as Client.Placements does, the decode side's with one look; the
// pair is the first, in the order Placements sorts them (prefill major),
// whose node sets are disjoint. exo's previews
// cover only some of the cycles, so when no pair is disjoint the previews
// of each side without a Node are fetched again restricted to each node
// of the cluster in turn (one look each).
//
// When still no pair is disjoint but some prefill placement leaves a node
// of the cluster free (and not the decode side's Node), the pair is
// returned with that prefill placement and DecodeDeferred set, for
// Disagg.Run to choose the decode placement once the prefill instance
// runs. Otherwise the error wraps ErrNoDistinctPlacements.
//
// exo's own benchmark looks for a "nodes" field previews do not have and so
// never finds two placements unless both nodes are named.
func SelectDisaggPair(ctx context.Context, c *exo.Client, prefill, decode DisaggSide, settle time.Duration) (DisaggPair, error) {
	pair := DisaggPair{PrefillCard: prefill.Card, DecodeCard: decode.Card, NodeNames: map[string]string{}}
	ids, err := c.NodeIdentities(ctx)
	if err != nil && (prefill.Node != "" || decode.Node != "") {
		return pair, fmt.Errorf("benchkit: read node names to find the named nodes: %w", err)
	}
	nodes := make([]string, 0, len(ids))
	for id, n := range ids {
		pair.NodeNames[id] = n.FriendlyName
		nodes = append(nodes, id)
	}
	sort.Strings(nodes)
	sides := []*DisaggSide{&prefill, &decode}
	for i, name := range [...]string{"prefill", "decode"} {
		s := sides[i]
		s.Filter.NodeIDs = nil
		if s.Node != "" {
			id, err := ResolveNode(ids, s.Node)
			if err != nil {
				return pair, fmt.Errorf("--%s-node: %w", name, err)
			}
			s.Filter.NodeIDs = []string{id}
		}
	}
	pair.DecodeSide = decode
	pc, err := c.Placements(ctx, prefill.Card.FullID(), prefill.Filter, settle)
	if err != nil {
		return pair, fmt.Errorf("benchkit: no placement for the prefill side (%s): %w", prefill.Card.FullID(), err)
	}
	// One look for the decode side: the prefill side has settled the
	// previews, and a decode side with none yet may get one once the
	// prefill instance holds its memory (below).
	dc, derr := c.Placements(ctx, decode.Card.FullID(), decode.Filter, 0)
	var np *exo.NoPlacementError
	if derr != nil && !errors.As(derr, &np) {
		return pair, fmt.Errorf("benchkit: placements of the decode side (%s): %w", decode.Card.FullID(), derr)
	}
	if p, d, ok := firstDisjoint(pc, dc); ok {
		pair.Prefill, pair.Decode = p, d
		return pair, nil
	}
	if pc, err = perNode(ctx, c, prefill, nodes, pc); err != nil {
		return pair, fmt.Errorf("benchkit: placements of the prefill side per node: %w", err)
	}
	if dc, err = perNode(ctx, c, decode, nodes, dc); err != nil {
		return pair, fmt.Errorf("benchkit: placements of the decode side per node: %w", err)
	}
	if p, d, ok := firstDisjoint(pc, dc); ok {
		pair.Prefill, pair.Decode = p, d
		return pair, nil
	}
	for _, p := range pc {
		pn := p.Instance.Nodes()
		free := false
		for _, n := range nodes {
			if !slices.Contains(pn, n) && (len(decode.Filter.NodeIDs) == 0 || decode.Filter.NodeIDs[0] == n) {
				free = true
			}
		}
		if free {
			pair.Prefill, pair.DecodeDeferred = p, true
			return pair, nil
		}
	}
	if derr != nil {
		return pair, fmt.Errorf("benchkit: no placement for the decode side (%s): %w", decode.Card.FullID(), derr)
	}
	return pair, fmt.Errorf("%w: %d prefill and %d decode placements, every pair shares a node; the cluster needs two nodes that can each hold a placement (name them with --prefill-node and --decode-node, or widen --min-nodes/--max-nodes)", ErrNoDistinctPlacements, len(pc), len(dc))
}

// perNode adds to have the placements of side restricted to each node in
// turn, one look each, unless the side names its node.
func perNode(ctx context.Context, c *exo.Client, s DisaggSide, nodes []string, have []exo.Placement) ([]exo.Placement, error) {
	if s.Node != "" {
		return have, nil
	}
	for _, n := range nodes {
		f := s.Filter
		f.NodeIDs = []string{n}
		ps, err := c.Placements(ctx, s.Card.FullID(), f, 0)
		var np *exo.NoPlacementError
		if errors.As(err, &np) {
			continue
		}
		if err != nil {
			return have, err
		}
		have = append(have, ps...)
	}
	return have, nil
}

func firstDisjoint(pc, dc []exo.Placement) (exo.Placement, exo.Placement, bool) {
	for _, p := range pc {
		pn := p.Instance.Nodes()
		for _, d := range dc {
			if p.Instance.ID != d.Instance.ID && disjoint(pn, d.Instance.Nodes()) {
				return p, d, true
			}
		}
	}
	return exo.Placement{}, exo.Placement{}, false
}

func disjoint(a, b []string) bool {
	return !slices.ContainsFunc(a, func(n string) bool { return slices.Contains(b, n) })
}

// A DisaggRow is one measured request of a disaggregation benchmark: a Row
// with the phase it belongs to and both sides' instances, the fields exo's
// bench/prefill_decode_bench.py writes beside each run.
type DisaggRow struct {
	Row
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

// A PrefillCheck says where the engine reports that a phase's prefill ran,
// from one extra request (a probe) sent after the phase's measured
// requests.
type PrefillCheck struct {
	// Reported is true when the engine said where the probe's prefill ran
	// (the embedded engine does, in its "sim" block; exo says nothing and
	// falls back to local prefill silently).
	Reported bool `json:"reported"`
	// Remote is whether the probe's prefill ran on a linked prefill
	// instance; ServedBy the instance that answered it. Both are empty
	// when not reported.
	Remote   *bool  `json:"remote_prefill,omitempty"`
	ServedBy string `json:"served_by,omitempty"`
	// WantRemote and WantServedBy are what the phase should show.
	WantRemote   bool   `json:"want_remote_prefill"`
	WantServedBy string `json:"want_served_by"`
	// OK is whether the report matches what the phase should show; null
	// when not reported.
	OK *bool `json:"ok"`
	// Note says in words what was found.
	Note string `json:"note"`
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
	// when no probe was made (Disagg.NoProbe, or the phase stopped).
	Check *PrefillCheck `json:"check,omitempty"`
}

// A Disagg runs exo's prefill/decode disaggregation benchmark on a pair of
// placements: it creates the prefill instance, optionally measures it
// alone (PhasePrefillAlone), creates the decode instance, links the two
// (the prefill instance as prefill, the decode instance as decode),
// measures requests for the decode model (PhaseDisaggregated), and,
// optionally, removes the link and the prefill instance and measures the
// decode instance alone (PhaseDecodeAlone). That is the order of exo's
// bench/prefill_decode_bench.py, which it must be: requests name a model,
// not an instance, so a baseline can only be measured while its instance is
// the model's only one that takes requests.
//
// Unlike exo's script it knows the link's id for sure (Client.CreateLink),
// never deletes a link or instance it did not create, checks after each
// phase where the engine reports the prefill ran, returns the rows measured
// even when it fails, and always removes what it created (the link and
// both instances, waiting until they are gone) before Run returns: on
// success, on failure and when ctx is cancelled, with a context of its own.
type Disagg struct {
	// Client talks to the cluster. Required.
	Client *exo.Client
	// Pair is what to run, from SelectDisaggPair. Required.
	Pair DisaggPair
	// CompareBaseline adds PhasePrefillAlone and PhaseDecodeAlone.
	CompareBaseline bool
	// PlanOptions configure the planning phase (downloads, disk checks)
	// run for each placement before its instance is created.
	PlanOptions exo.PlanOptions
	// Settle is how long to wait for a decode placement off the prefill
	// instance's nodes when the pair's was deferred (zero: one look).
	Settle time.Duration
	// ReadyTimeout and GoneTimeout bound the waits for an instance to be
	// ready and gone (zero: DefaultReadyTimeout, DefaultGoneTimeout);
	// LinkTimeout the waits for a link to appear and disappear
	// (DefaultLinkTimeout); CleanupTimeout the whole cleanup
	// (DefaultCleanupTimeout).
	ReadyTimeout, GoneTimeout, LinkTimeout, CleanupTimeout time.Duration
	// Runner is the template of each phase's Runner: its Engine, Model,
	// ModelShortID and Placement are set per phase; Builder is required.
	Runner Runner
	// OnRow, when set, receives each row as it is measured (a JSONL file,
	// so an interrupted run keeps its rows).
	OnRow func(DisaggRow) error
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

// DisaggResult is what a Disagg measured.
type DisaggResult struct {
	// Pair is the pair run, its decode placement chosen when it was
	// deferred.
	Pair DisaggPair
	// Rows are every measured request of every phase, in order.
	Rows []DisaggRow
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

// simHeader is the embedded engine's response header (engine/sim's
// SimHeader), by which it labels itself simulated.
const simHeader = "X-Inferbench-Sim"

// disaggState is what the run has created and not yet removed.
type disaggState struct {
	prefill, decode bool // instance created (or its creation attempted)
	link            string
}

// Run runs the phases; see Disagg. It checks plan with CheckDisaggPlan and
// that the API node has disaggregation enabled before creating anything.
// It returns the rows measured even when it fails; the error says why it
// stopped, joined with a cleanup failure if there was one.
func (d *Disagg) Run(ctx context.Context, plan Plan) (res DisaggResult, err error) {
	if d.Client == nil || d.Runner.Builder == nil {
		return res, errors.New("benchkit: Disagg needs a Client and a Runner with a Builder")
	}
	pi := d.Pair.Prefill.Instance
	if pi.ID == "" || (d.Pair.Decode.Instance.ID == "" && !d.Pair.DecodeDeferred) || pi.ID == d.Pair.Decode.Instance.ID {
		return res, fmt.Errorf("benchkit: Disagg needs two placements with distinct instance ids, got %q and %q", pi.ID, d.Pair.Decode.Instance.ID)
	}
	if err := CheckDisaggPlan(plan); err != nil {
		return res, err
	}
	on, err := d.Client.Disaggregation(ctx)
	if err != nil {
		return res, fmt.Errorf("benchkit: read the cluster's feature flags: %w", err)
	}
	if !on {
		return res, fmt.Errorf("%w: the API node reports disaggregation off; start exo with ENABLE_DISAGGREGATION=true on every node", exo.ErrDisaggregationDisabled)
	}
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

	st := &disaggState{}
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
		return res, fmt.Errorf("benchkit: link prefill instance %s to decode instance %s: %w", pi.ID, di.ID, err)
	}
	st.link, res.LinkID = id, id
	lctx, cancel := context.WithTimeout(ctx, d.linkTimeout())
	_, err = d.Client.WaitLink(lctx, id)
	cancel()
	if err != nil {
		return res, fmt.Errorf("benchkit: link %s did not appear in the cluster state within %v: %w", id, d.linkTimeout(), err)
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
func (d *Disagg) selectDecode(ctx context.Context) error {
	s := d.Pair.DecodeSide
	taken := d.Pair.Prefill.Instance.Nodes()
	deadline := time.Now().Add(d.Settle)
	wait := exo.DefaultSettleBackoff
	for {
		ps, err := d.Client.Placements(ctx, s.Card.FullID(), s.Filter, 0)
		var np *exo.NoPlacementError
		if err != nil && !errors.As(err, &np) {
			return fmt.Errorf("benchkit: placements of the decode side: %w", err)
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

func (d *Disagg) linkTimeout() time.Duration {
	if d.LinkTimeout > 0 {
		return d.LinkTimeout
	}
	return DefaultLinkTimeout
}

// start prepares the nodes of p, creates its instance and waits until it
// is ready.
func (d *Disagg) start(ctx context.Context, side string, p exo.Placement, card exo.ModelCard, res *DisaggResult) error {
	opts := d.PlanOptions
	pr, err := d.Client.Plan(ctx, p, card, &opts)
	for _, w := range pr.Warnings {
		res.Warnings = append(res.Warnings, fmt.Sprintf("planning the %s placement: %v", side, w))
	}
	if err != nil {
		return fmt.Errorf("benchkit: prepare the %s nodes for %s: %w", side, card.FullID(), err)
	}
	d.log(ctx, "creating the "+side+" instance", "instance", p.Instance.ID, "nodes", p.Instance.Nodes())
	if _, err := d.Client.CreateInstance(ctx, p.Instance); err != nil {
		return fmt.Errorf("benchkit: create the %s instance: %w", side, err)
	}
	ready := d.ReadyTimeout
	if ready == 0 {
		ready = DefaultReadyTimeout
	}
	if err := d.Client.WaitReady(ctx, p.Instance.ID, ready); err != nil {
		return fmt.Errorf("benchkit: the %s instance %s is not ready: %w", side, p.Instance.ID, err)
	}
	d.log(ctx, side+" instance ready", "instance", p.Instance.ID)
	return nil
}

// checkPrefillServer warns when no runner of the prefill instance reports
// a prefill server port: exo then never routes a prefill to it.
func (d *Disagg) checkPrefillServer(ctx context.Context, res *DisaggResult) {
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
func (d *Disagg) phase(ctx context.Context, phase string, plan Plan, res *DisaggResult) error {
	card, p, wantRemote := d.Pair.DecodeCard, d.Pair.Decode, phase == PhaseDisaggregated
	if phase == PhasePrefillAlone {
		card, p = d.Pair.PrefillCard, d.Pair.Prefill
	}
	r := d.Runner
	r.Engine, r.Model, r.ModelShortID = d.Client, card.FullID(), card.ShortID()
	r.Placement = Placement{Sharding: p.Sharding, InstanceMeta: p.InstanceMeta, Nodes: p.Nodes, InstanceID: p.Instance.ID}
	if d.OnRow != nil {
		r.Sinks = append(slices.Clip(r.Sinks), SinkFunc(func(row Row) error { return d.OnRow(d.row(phase, card, row)) }))
	}
	d.log(ctx, "phase "+phase, "model", card.FullID(), "instance", p.Instance.ID)
	rep, err := r.Run(ctx, plan)
	pr := PhaseReport{Phase: phase, Model: card.FullID(), InstanceID: p.Instance.ID}
	for _, row := range rep.Rows {
		res.Rows = append(res.Rows, d.row(phase, card, row))
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
		return fmt.Errorf("benchkit: phase %s: %w", phase, err)
	}
	return nil
}

func (d *Disagg) row(phase string, card exo.ModelCard, r Row) DisaggRow {
	p, q := d.Pair.Prefill, d.Pair.Decode
	return DisaggRow{
		Row: r, Phase: phase, PhaseModelID: card.FullID(),
		PrefillModelID: d.Pair.PrefillCard.FullID(), PrefillInstanceID: p.Instance.ID,
		PrefillInstanceMeta: p.InstanceMeta, PrefillNodes: p.Instance.Nodes(),
		DecodeModelID: d.Pair.DecodeCard.FullID(), DecodeInstanceID: q.Instance.ID,
		DecodeInstanceMeta: q.InstanceMeta, DecodeNodes: q.Instance.Nodes(),
	}
}

// probe asks the engine where a prompt of pp tokens for model is
// prefilled; see Disagg.NoProbe.
func (d *Disagg) probe(ctx context.Context, model string, pp int, wantRemote bool, wantID string) (PrefillCheck, error) {
	chk := PrefillCheck{WantRemote: wantRemote, WantServedBy: wantID}
	hc := d.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: time.Minute}
	}
	base := d.Client.BaseURL()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/node_id", nil)
	if err != nil {
		return chk, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return chk, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Header.Get(simHeader) == "" {
		chk.Note = "the engine does not report where a request's prefill ran (exo falls back to local prefill without saying so): compare this phase's TTFT and prompt TPS with decode_alone's (--compare-baseline)"
		return chk, nil
	}
	p, err := d.Runner.Builder.Build(ctx, pp)
	if err != nil {
		return chk, fmt.Errorf("build a %d-token probe: %w", pp, err)
	}
	body, err := json.Marshal(map[string]any{"model": model, "messages": p.Messages, "max_tokens": 1, "stream": false})
	if err != nil {
		return chk, err
	}
	req, err = http.NewRequestWithContext(ctx, http.MethodPost, base+exo.BenchPath, bytes.NewReader(body))
	if err != nil {
		return chk, err
	}
	req.Header.Set("Content-Type", "application/json")
	// The embedded engine's fault injection must not hit the probe.
	req.Header.Set("X-Sim-Fault", "none")
	resp, err = hc.Do(req)
	if err != nil {
		return chk, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return chk, err
	}
	if resp.StatusCode != http.StatusOK {
		return chk, fmt.Errorf("POST %s: status %d, want 200: %.200s", exo.BenchPath, resp.StatusCode, b)
	}
	return parseSimReport(b, chk)
}

// parseSimReport reads the "sim" block of an embedded engine's bench
// response into chk.
func parseSimReport(body []byte, chk PrefillCheck) (PrefillCheck, error) {
	var out struct {
		Sim *struct {
			RemotePrefill *bool  `json:"remote_prefill"`
			InstanceID    string `json:"instance_id"`
		} `json:"sim"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return chk, fmt.Errorf("decode the probe's response: %w", err)
	}
	if out.Sim == nil || out.Sim.RemotePrefill == nil {
		chk.Note = "the engine labels itself simulated but its response has no sim.remote_prefill: it cannot tell where prefill ran"
		return chk, nil
	}
	chk.Reported, chk.Remote, chk.ServedBy = true, out.Sim.RemotePrefill, out.Sim.InstanceID
	ok := *chk.Remote == chk.WantRemote && chk.ServedBy == chk.WantServedBy
	chk.OK = &ok
	where := "locally on the serving instance"
	if *chk.Remote {
		where = "remotely, on a linked prefill instance"
	}
	want := "locally"
	if chk.WantRemote {
		want = "remotely"
	}
	switch {
	case ok:
		chk.Note = fmt.Sprintf("the engine reports the prefill ran %s, served by instance %s, as expected", where, chk.ServedBy)
	case chk.ServedBy != chk.WantServedBy:
		chk.Note = fmt.Sprintf("the engine reports instance %s served the request, not %s (prefill ran %s): the phase measured another instance", chk.ServedBy, chk.WantServedBy, where)
	default:
		chk.Note = fmt.Sprintf("the engine reports the prefill ran %s; it should have run %s", where, want)
	}
	return chk, nil
}

// removeLink deletes the run's link and waits until it is no longer listed.
func (d *Disagg) removeLink(ctx context.Context, st *disaggState) error {
	if st.link == "" {
		return nil
	}
	if _, err := d.Client.DeleteLink(ctx, st.link); err != nil {
		return fmt.Errorf("benchkit: delete link %s: %w", st.link, err)
	}
	if err := d.waitLinksGone(ctx, func(l exo.InstanceLink) bool { return l.LinkID == st.link }); err != nil {
		return err
	}
	d.log(ctx, "link deleted", "link", st.link)
	st.link = ""
	return nil
}

// waitLinksGone polls the links until none matches.
func (d *Disagg) waitLinksGone(ctx context.Context, match func(exo.InstanceLink) bool) error {
	ctx, cancel := context.WithTimeout(ctx, d.linkTimeout())
	defer cancel()
	tick := time.NewTicker(exo.DefaultPollInterval)
	defer tick.Stop()
	for {
		links, err := d.Client.Links(ctx)
		if err == nil && !slices.ContainsFunc(links, match) {
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return fmt.Errorf("benchkit: a link of this run is still listed after %v: %w", d.linkTimeout(), err)
		case <-tick.C:
		}
	}
}

// removeInstance deletes instance id and waits until it is gone; an
// instance that no longer exists is not an error.
func (d *Disagg) removeInstance(ctx context.Context, id string) error {
	gone := d.GoneTimeout
	if gone == 0 {
		gone = DefaultGoneTimeout
	}
	if _, err := d.Client.DeleteInstance(ctx, id); err != nil && !errors.Is(err, exo.ErrNotFound) {
		return fmt.Errorf("benchkit: delete instance %s: %w", id, err)
	}
	if err := d.Client.WaitGone(ctx, id, gone); err != nil {
		return fmt.Errorf("benchkit: instance %s not gone: %w", id, err)
	}
	d.log(ctx, "instance deleted", "instance", id)
	return nil
}

// cleanup removes every link that names one of the run's instances (the
// run's own, and one whose creation may have half succeeded), then the
// decode and the prefill instance, with a context that outlives ctx.
func (d *Disagg) cleanup(ctx context.Context, st *disaggState, res *DisaggResult) error {
	if !st.prefill && !st.decode && st.link == "" {
		return nil
	}
	timeout := d.CleanupTimeout
	if timeout <= 0 {
		timeout = DefaultCleanupTimeout
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	ours := []string{d.Pair.Prefill.Instance.ID, d.Pair.Decode.Instance.ID}
	mine := func(l exo.InstanceLink) bool {
		if l.LinkID == st.link {
			return true
		}
		for _, id := range append(slices.Clip(l.PrefillInstances), l.DecodeInstances...) {
			if slices.Contains(ours, id) {
				return true
			}
		}
		return false
	}
	var errs []error
	links, err := d.Client.Links(cctx)
	if err != nil {
		errs = append(errs, fmt.Errorf("list links: %w", err))
	}
	deleted := false
	for _, l := range links {
		if mine(l) {
			if _, err := d.Client.DeleteLink(cctx, l.LinkID); err != nil {
				errs = append(errs, fmt.Errorf("delete link %s: %w", l.LinkID, err))
				continue
			}
			deleted = true
			d.log(cctx, "link deleted", "link", l.LinkID)
		}
	}
	if deleted {
		if err := d.waitLinksGone(cctx, mine); err != nil {
			errs = append(errs, err)
		}
	}
	st.link = ""
	if st.decode {
		if err := d.removeInstance(cctx, d.Pair.Decode.Instance.ID); err != nil {
			errs = append(errs, err)
		} else {
			st.decode = false
		}
	}
	if st.prefill {
		if err := d.removeInstance(cctx, d.Pair.Prefill.Instance.ID); err != nil {
			errs = append(errs, err)
		} else {
			st.prefill = false
		}
	}
	if len(errs) == 0 {
		return nil
	}
	for _, e := range errs {
		res.Warnings = append(res.Warnings, "cleanup: "+e.Error())
	}
	return fmt.Errorf("%w: remove them by hand (DELETE /v1/instance-links/{id}, DELETE /instance/{id}): %w", ErrCleanup, errors.Join(errs...))
}

func (d *Disagg) log(ctx context.Context, msg string, args ...any) {
	if d.Logger != nil {
		d.Logger.InfoContext(ctx, msg, args...)
	}
}

// PhaseFigures are one phase's means over its successful requests of one
// (pp, tg, concurrency) cell. A figure no request had is null.
type PhaseFigures struct {
	Phase string `json:"phase"`
	// Requests counts the successful requests; Failed the others.
	Requests int `json:"requests"`
	Failed   int `json:"failed"`
	// ElapsedS is the mean of elapsed_s (exo's client-side wall time of a
	// request); TTFTS the mean client TTFT (streamed requests only).
	ElapsedS *float64 `json:"elapsed_s"`
	TTFTS    *float64 `json:"ttft_s"`
	// PromptTPS is the mean of the server's prompt_tps; GenerationTPS the
	// mean of the server's generation_tps, else the client's.
	PromptTPS     *float64 `json:"prompt_tps"`
	GenerationTPS *float64 `json:"generation_tps"`
}

// A Speedup compares the disaggregated phase with one baseline; each
// figure is above 1 when the disaggregated setup did better. See
// CompareDisagg for the formulas.
type Speedup struct {
	Baseline      string   `json:"baseline"`
	Elapsed       *float64 `json:"elapsed"`
	TTFT          *float64 `json:"ttft"`
	PromptTPS     *float64 `json:"prompt_tps"`
	GenerationTPS *float64 `json:"generation_tps"`
}

// A DisaggComparison is one cell measured in every phase.
type DisaggComparison struct {
	PP          int `json:"pp"`
	TG          int `json:"tg"`
	Concurrency int `json:"concurrency"`
	// Phases are the phases' figures in the order disaggregated,
	// decode_alone, prefill_alone; a phase not run is left out.
	Phases []PhaseFigures `json:"phases"`
	// Speedups compare disaggregated with decode_alone and with
	// prefill_alone, when both phases of a comparison were run.
	Speedups []Speedup `json:"speedups,omitempty"`
}

// CompareDisagg groups rows by (pp target, tg, concurrency), in the order
// cells first appear, takes each phase's means over its successful
// requests, and compares the disaggregated phase D with each baseline B
// (decode_alone, prefill_alone):
//
//	elapsed speedup        = mean elapsed_s(B) / mean elapsed_s(D)   (exo's "speedup vs B")
//	TTFT speedup           = mean TTFT(B) / mean TTFT(D)             (streamed requests only)
//	prompt TPS speedup     = mean prompt_tps(D) / mean prompt_tps(B)
//	generation TPS speedup = mean generation_tps(D) / mean generation_tps(B)
//
// so that every speedup is above 1 when the disaggregated setup did
// better. A speedup whose two means are not both defined and positive is
// null. Means are exo's choice for this benchmark (its exo_bench reports
// the max of generation TPS instead).
func CompareDisagg(rows []DisaggRow) []DisaggComparison {
	type key struct{ pp, tg, conc int }
	var order []key
	byCell := map[key]map[string][]Row{}
	for _, r := range rows {
		k := key{r.PPTarget, r.TG, r.Concurrency}
		if byCell[k] == nil {
			byCell[k] = map[string][]Row{}
			order = append(order, k)
		}
		byCell[k][r.Phase] = append(byCell[k][r.Phase], r.Row)
	}
	var out []DisaggComparison
	for _, k := range order {
		c := DisaggComparison{PP: k.pp, TG: k.tg, Concurrency: k.conc}
		figs := map[string]PhaseFigures{}
		for _, ph := range [...]string{PhaseDisaggregated, PhaseDecodeAlone, PhasePrefillAlone} {
			if rs, ok := byCell[k][ph]; ok {
				f := phaseFigures(ph, rs)
				figs[ph] = f
				c.Phases = append(c.Phases, f)
			}
		}
		if dis, ok := figs[PhaseDisaggregated]; ok {
			for _, b := range [...]string{PhaseDecodeAlone, PhasePrefillAlone} {
				if base, ok := figs[b]; ok {
					c.Speedups = append(c.Speedups, Speedup{
						Baseline:      b,
						Elapsed:       ratio(base.ElapsedS, dis.ElapsedS),
						TTFT:          ratio(base.TTFTS, dis.TTFTS),
						PromptTPS:     ratio(dis.PromptTPS, base.PromptTPS),
						GenerationTPS: ratio(dis.GenerationTPS, base.GenerationTPS),
					})
				}
			}
		}
		out = append(out, c)
	}
	return out
}

func phaseFigures(phase string, rows []Row) PhaseFigures {
	f := PhaseFigures{Phase: phase}
	var el, ttft, ptps, gtps []float64
	for _, r := range rows {
		if r.Failed() {
			f.Failed++
			continue
		}
		f.Requests++
		el = append(el, r.ElapsedS)
		if r.TTFTS != nil {
			ttft = append(ttft, *r.TTFTS)
		}
		if r.Stats != nil && r.Stats.PromptTPS > 0 {
			ptps = append(ptps, r.Stats.PromptTPS)
		}
		switch {
		case r.Stats != nil && r.Stats.GenerationTPS > 0:
			gtps = append(gtps, r.Stats.GenerationTPS)
		case r.ClientGenerationTPS != nil:
			gtps = append(gtps, *r.ClientGenerationTPS)
		}
	}
	f.ElapsedS, f.TTFTS, f.PromptTPS, f.GenerationTPS = mean(el), mean(ttft), mean(ptps), mean(gtps)
	return f
}

// mean is the arithmetic mean of xs, nil when xs is empty.
func mean(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return finite(s / float64(len(xs)))
}

// ratio is a / b, nil unless both are defined and positive.
func ratio(a, b *float64) *float64 {
	if a == nil || b == nil || *a <= 0 || *b <= 0 {
		return nil
	}
	return finite(*a / *b)
}

// DisaggMeta describes a disaggregation run.
type DisaggMeta struct {
	// Tool names the program; Engine the adapter ("exo") and BaseURL the
	// API's address.
	Tool    string `json:"tool"`
	Engine  string `json:"engine"`
	BaseURL string `json:"base_url,omitempty"`
	// Simulated is true against the embedded engine: every figure is then
	// a model's, not a machine's. Preset names its hardware preset.
	Simulated bool   `json:"simulated"`
	Preset    string `json:"preset,omitempty"`
	// The two sides, as DisaggPair.Describe writes them, and the link.
	Prefill string `json:"prefill"`
	Decode  string `json:"decode"`
	LinkID  string `json:"link_id,omitempty"`
	// Tokenizer says how prompts were counted.
	Tokenizer       string `json:"tokenizer,omitempty"`
	Plan            Plan   `json:"plan"`
	CompareBaseline bool   `json:"compare_baseline"`
	// Started and Finished are RFC 3339 wall-clock times.
	Started     string   `json:"started,omitempty"`
	Finished    string   `json:"finished,omitempty"`
	Interrupted bool     `json:"interrupted,omitempty"`
	Warnings    []string `json:"warnings,omitempty"`
}

// A DisaggDocument is the results file of a disaggregation run: exo's
// "runs" (a bare array in exo's prefill_decode_bench.py, here under the key
// exo_bench.py uses, with its "cluster"), and inferbench's "meta",
// "phases" with their remote-prefill checks, and "comparison".
type DisaggDocument struct {
	Runs       []DisaggRow        `json:"runs"`
	Cluster    json.RawMessage    `json:"cluster,omitempty"`
	Meta       DisaggMeta         `json:"meta"`
	Phases     []PhaseReport      `json:"phases"`
	Comparison []DisaggComparison `json:"comparison"`
}

// NewDisaggDocument lays a result out for a file: meta (its LinkID,
// Interrupted and Warnings completed from res, its Decode from res.Pair
// when the run chose the decode placement), the rows, the phases and
// CompareDisagg of the rows.
func NewDisaggDocument(meta DisaggMeta, res DisaggResult) DisaggDocument {
	if res.Pair.Decode.Instance.ID != "" {
		meta.Decode = res.Pair.Describe("decode")
	}
	if meta.LinkID == "" {
		meta.LinkID = res.LinkID
	}
	meta.Interrupted = meta.Interrupted || res.Interrupted
	meta.Warnings = append(slices.Clip(meta.Warnings), res.Warnings...)
	return DisaggDocument{Runs: res.Rows, Cluster: res.Cluster, Meta: meta, Phases: res.Phases, Comparison: CompareDisagg(res.Rows)}
}

// WriteDisaggJSON writes d as indented JSON.
func WriteDisaggJSON(w io.Writer, d DisaggDocument) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}

// WriteDisaggTable writes d for a terminal, or as Markdown when markdown
// is set: the two placements and the link, one table per cell with each
// phase's elapsed time, TTFT, prompt TPS and generation TPS (means) and the
// speedups of the disaggregated phase over each baseline, then each
// phase's remote-prefill check and the warnings. The layout is for people
// and may change: parse the JSON instead.
func WriteDisaggTable(w io.Writer, d DisaggDocument, markdown bool) error {
	ew := &errWriter{w: w}
	title := "prefill/decode disaggregation"
	if d.Meta.Simulated {
		title = fmt.Sprintf("SIMULATED (%s): %s; every figure below is simulated, not measured on hardware", d.Meta.Preset, title)
	}
	h := func(s string) string {
		if markdown {
			return "### " + s
		}
		return s
	}
	ew.printf("%s\n", h(title))
	ew.printf("%sprefill: %s\n", bullet(markdown), d.Meta.Prefill)
	ew.printf("%sdecode:  %s\n", bullet(markdown), d.Meta.Decode)
	if d.Meta.LinkID != "" {
		ew.printf("%slink:    %s\n", bullet(markdown), d.Meta.LinkID)
	}
	for _, c := range d.Comparison {
		ew.printf("\n%s\n", h(fmt.Sprintf("pp=%d tg=%d concurrency=%d", c.PP, c.TG, c.Concurrency)))
		head := []string{"phase", "requests", "failed", "elapsed (s)", "TTFT (ms)", "prompt TPS", "gen TPS"}
		var lines [][]string
		for _, f := range c.Phases {
			lines = append(lines, []string{f.Phase, fmt.Sprint(f.Requests), fmt.Sprint(f.Failed),
				fmtNum(f.ElapsedS, 1, "%.3f"), fmtNum(f.TTFTS, 1000, "%.1f"), fmtNum(f.PromptTPS, 1, "%.1f"), fmtNum(f.GenerationTPS, 1, "%.2f")})
		}
		ew.table(head, lines, markdown)
		if len(c.Speedups) > 0 {
			ew.printf("\n")
			head = []string{"disaggregated vs", "elapsed", "TTFT", "prompt TPS", "gen TPS"}
			lines = nil
			for _, s := range c.Speedups {
				lines = append(lines, []string{s.Baseline, fmtX(s.Elapsed), fmtX(s.TTFT), fmtX(s.PromptTPS), fmtX(s.GenerationTPS)})
			}
			ew.table(head, lines, markdown)
			ew.printf("(speedup > 1: disaggregated did better; elapsed and TTFT are baseline/disaggregated, the rates disaggregated/baseline)\n")
		}
	}
	if len(d.Phases) > 0 {
		ew.printf("\n%s\n", h("where prefill ran"))
		for _, p := range d.Phases {
			switch {
			case p.Check == nil:
				ew.printf("%s%s: not checked\n", bullet(markdown), p.Phase)
			case p.Check.OK == nil:
				ew.printf("%s%s: unknown: %s\n", bullet(markdown), p.Phase, p.Check.Note)
			case *p.Check.OK:
				ew.printf("%s%s: ok: %s\n", bullet(markdown), p.Phase, p.Check.Note)
			default:
				ew.printf("%s%s: WRONG: %s\n", bullet(markdown), p.Phase, p.Check.Note)
			}
		}
	}
	if len(d.Meta.Warnings) > 0 {
		ew.printf("\n%s\n", h("warnings"))
		for _, wn := range d.Meta.Warnings {
			ew.printf("%s%s\n", bullet(markdown), wn)
		}
	}
	return ew.err
}

func bullet(markdown bool) string {
	if markdown {
		return "- "
	}
	return "  "
}

func fmtNum(v *float64, scale float64, format string) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf(format, *v*scale)
}

func fmtX(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.2fx", *v)
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// table writes an aligned table, or a Markdown one.
func (e *errWriter) table(head []string, lines [][]string, markdown bool) {
	if markdown {
		e.printf("| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		for _, l := range lines {
			e.printf("| %s |\n", strings.Join(l, " | "))
		}
		return
	}
	width := make([]int, len(head))
	for _, l := range append([][]string{head}, lines...) {
		for i, c := range l {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for _, l := range append([][]string{head}, lines...) {
		var b strings.Builder
		for i, c := range l {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		e.printf("  %s\n", strings.TrimRight(b.String(), " "))
	}
}
