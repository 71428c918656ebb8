package benchkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/exo"
)

// Timings of exo's benchmark: an ExoSweep's defaults, and its pauses.
const (
	DefaultReadyTimeout = 10 * time.Minute
	DefaultGoneTimeout  = time.Minute
	// ExoPauseBetweenRepeats and ExoPauseBetweenGroups are the pauses
	// exo's benchmark makes against a real cluster: before every measured
	// request or burst, and after every (pp, tg, concurrency) group. They
	// let a cluster's memory and thermals settle; against the embedded
	// engine they only cost time, so a zero Plan pauses for neither.
	ExoPauseBetweenRepeats = 3 * time.Second
	ExoPauseBetweenGroups  = 2 * time.Second
)

// An ExoSweep measures a Plan on an exo cluster as exo's benchmark does:
// for each placement the filter selects, it prepares the nodes (downloads,
// disk), creates the instance, waits until every runner is ready, runs the
// plan through a Runner with power sampled from the cluster, then deletes
// the instance and waits until it is gone. Unlike exo's benchmark it never
// deletes instances it did not create, and it deletes the ones it created
// also when the run fails or is interrupted.
type ExoSweep struct {
	// Client talks to the cluster. Required.
	Client *exo.Client
	// Card is the model, from Client.ResolveModel. Required.
	Card exo.ModelCard
	// Filter selects placements; Settle is how long to wait for at least
	// one (0: one look).
	Filter exo.Filter
	Settle time.Duration
	// Reuse runs on an instance of the model that already exists, without
	// creating or deleting one.
	Reuse bool
	// Plan configures the planning phase (downloads, disk checks).
	PlanOptions exo.PlanOptions
	// ReadyTimeout and GoneTimeout bound the waits for an instance to be
	// ready and gone; zero means DefaultReadyTimeout, DefaultGoneTimeout.
	ReadyTimeout, GoneTimeout time.Duration
	// Sources are polled for power and system metrics while the plan runs
	// (exo's node metrics: the exo package's energy source); nil samples
	// nothing. MetricsInterval is their period (0: energy.DefaultInterval).
	Sources         []energy.Source
	MetricsInterval time.Duration
	// Runner is the template of each placement's Runner: its Engine, Model
	// and Placement are set by the sweep; the rest is copied, its Sinks
	// included, so that they receive the requests of every placement.
	Runner Runner
	// WrapEngine, when set, wraps the engine each placement's requests go
	// to (a test's slowed client); nil sends them to Client.
	WrapEngine func(engine.Engine) engine.Engine
	// Logger receives progress records; nil logs nothing.
	Logger *slog.Logger
}

// ExoResult is what a sweep measured.
type ExoResult struct {
	// Requests are every measured request of every placement.
	Requests []Request
	// Cluster is the cluster snapshot taken before the first placement.
	Cluster json.RawMessage
	// SystemMetrics summarises the sampled metrics of every placement's
	// run, node → metric → summary. A node measured in several placements
	// keeps its samples of all of them, merged.
	SystemMetrics map[string]map[string]energy.MetricSummary
	// Placements are the placements measured, in order.
	Placements []exo.Placement
	// Power holds each node's sampled power (sysPower) over every
	// placement's run, and Windows when each burst ran, for plotting them
	// together.
	Power   []energy.PowerTrace
	Windows []Window
	// Interrupted is true when the sweep stopped before its plan was done.
	Interrupted bool
	// Warnings are the sweep's own (planning, relabelled placements,
	// cleanup failures) and each run's.
	Warnings []string
}

// Placements lists what the sweep would measure, for a dry run: the
// placements the filter selects, or the existing instance when Reuse is set.
func (s *ExoSweep) Placements(ctx context.Context) ([]exo.Placement, error) {
	if s.Reuse {
		in, ok, err := s.Client.FindInstance(ctx, s.Card.FullID())
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("benchkit: --reuse-instance: no instance of %s runs on the cluster", s.Card.FullID())
		}
		return []exo.Placement{{ModelID: in.ModelID, Sharding: in.Sharding(), InstanceMeta: in.InstanceMeta(), Nodes: len(in.Nodes()), Instance: in}}, nil
	}
	return s.Client.Placements(ctx, s.Card.FullID(), s.Filter, s.Settle)
}

// Run measures plan on every placement. It returns the rows measured even
// when it fails; the error says why it stopped. The instances it created
// are deleted before it returns, with a context of their own when ctx is
// already done.
func (s *ExoSweep) Run(ctx context.Context, plan Plan) (ExoResult, error) {
	var res ExoResult
	if s.Client == nil || s.Card.FullID() == "" {
		return res, errors.New("benchkit: ExoSweep needs a Client and a model Card")
	}
	placements, err := s.Placements(ctx)
	if err != nil {
		return res, err
	}
	if snap, err := s.Client.Snapshot(ctx); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("cluster snapshot: %v", err))
	} else if !snap.Empty() {
		if b, err := json.Marshal(snap); err == nil {
			res.Cluster = b
		}
	}
	merged := map[string]map[string][]energy.Sample{}
	for _, p := range placements {
		if ctx.Err() != nil {
			break
		}
		res.Placements = append(res.Placements, p)
		if p.Relabelled() {
			res.Warnings = append(res.Warnings, fmt.Sprintf("placement preview labels differ from its instance; measured as %s/%s on %d nodes", p.Sharding, p.InstanceMeta, p.Nodes))
		}
		rep, rec, err := s.runPlacement(ctx, p, plan, &res)
		res.Requests = append(res.Requests, rep.Requests...)
		res.Windows = append(res.Windows, rep.Windows...)
		for _, w := range rep.Warnings {
			// Every placement runs the same plan: its cautions once.
			if !slices.Contains(res.Warnings, w) {
				res.Warnings = append(res.Warnings, w)
			}
		}
		if rec != nil {
			res.Power = appendPower(res.Power, rec.Power())
			for _, ser := range rec.Series {
				if merged[ser.Node] == nil {
					merged[ser.Node] = map[string][]energy.Sample{}
				}
				merged[ser.Node][ser.Metric] = append(merged[ser.Node][ser.Metric], ser.Samples...)
			}
			for _, w := range rec.Warnings {
				res.Warnings = append(res.Warnings, w.Error())
			}
		}
		if err != nil {
			res.Interrupted = rep.Interrupted || ctx.Err() != nil
			res.SystemMetrics = summarizeMetrics(merged)
			return res, err
		}
	}
	res.SystemMetrics = summarizeMetrics(merged)
	if err := ctx.Err(); err != nil {
		res.Interrupted = true
		return res, fmt.Errorf("benchkit: sweep interrupted: %w", err)
	}
	return res, nil
}

// appendPower adds each node's samples of more to the node's trace in
// traces; placements run one after the other, so samples stay in order.
func appendPower(traces, more []energy.PowerTrace) []energy.PowerTrace {
	for _, m := range more {
		i := slices.IndexFunc(traces, func(t energy.PowerTrace) bool { return t.Node == m.Node })
		if i < 0 {
			traces = append(traces, energy.PowerTrace{Node: m.Node})
			i = len(traces) - 1
		}
		traces[i].Samples = append(traces[i].Samples, m.Samples...)
	}
	return traces
}

func summarizeMetrics(m map[string]map[string][]energy.Sample) map[string]map[string]energy.MetricSummary {
	if len(m) == 0 {
		return nil
	}
	out := map[string]map[string]energy.MetricSummary{}
	for node, metrics := range m {
		out[node] = map[string]energy.MetricSummary{}
		for metric, samples := range metrics {
			out[node][metric] = energy.Summarize(samples)
		}
	}
	return out
}

// runPlacement measures plan on one placement, creating and deleting its
// instance unless Reuse is set.
func (s *ExoSweep) runPlacement(ctx context.Context, p exo.Placement, plan Plan, res *ExoResult) (Report, *energy.Recording, error) {
	meta := Placement{Sharding: p.Sharding, InstanceMeta: p.InstanceMeta, Nodes: p.Nodes, InstanceID: p.Instance.ID}
	if !s.Reuse {
		pr, err := s.Client.Plan(ctx, p, s.Card, &s.PlanOptions)
		for _, w := range pr.Warnings {
			res.Warnings = append(res.Warnings, "planning: "+w.Error())
		}
		if err != nil {
			return Report{}, nil, fmt.Errorf("benchkit: prepare nodes for %s: %w", p.ModelID, err)
		}
		if pr.DownloadDuration > 0 {
			d := pr.DownloadDuration.Seconds()
			meta.DownloadDurationS = &d
		}
		if _, err := s.Client.CreateInstance(ctx, p.Instance); err != nil {
			return Report{}, nil, fmt.Errorf("benchkit: create instance: %w", err)
		}
		s.log(ctx, "instance created", "id", p.Instance.ID, "sharding", p.Sharding, "meta", p.InstanceMeta, "nodes", p.Nodes)
		defer s.deleteInstance(ctx, p.Instance.ID, res)
		ready := s.ReadyTimeout
		if ready == 0 {
			ready = DefaultReadyTimeout
		}
		if err := s.Client.WaitReady(ctx, p.Instance.ID, ready); err != nil {
			return Report{}, nil, fmt.Errorf("benchkit: instance %s not ready: %w", p.Instance.ID, err)
		}
	}
	r := s.Runner
	r.Engine, r.Model, r.Placement = s.Client, s.Card.FullID(), meta
	if s.WrapEngine != nil {
		r.Engine = s.WrapEngine(r.Engine)
	}
	if r.ModelShortID == "" {
		r.ModelShortID = s.Card.ShortID()
	}
	var sampler *energy.Sampler
	if len(s.Sources) > 0 {
		var opts []energy.Option
		if s.MetricsInterval > 0 {
			opts = append(opts, energy.WithInterval(s.MetricsInterval))
		}
		var err error
		if sampler, err = energy.NewSampler(s.Sources, opts...); err != nil {
			return Report{}, nil, fmt.Errorf("benchkit: power sampler: %w", err)
		}
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		if err := sampler.Start(sctx); err != nil {
			return Report{}, nil, fmt.Errorf("benchkit: start power sampler: %w", err)
		}
		r.Sampler = sampler
	}
	rep, err := r.Run(ctx, plan)
	var rec *energy.Recording
	if sampler != nil {
		rc := sampler.Stop()
		rec = &rc
	}
	return rep, rec, err
}

// deleteInstance removes an instance the sweep created and waits until it
// is gone, with a context of its own when ctx is done, so an interrupted
// run still cleans up.
func (s *ExoSweep) deleteInstance(ctx context.Context, id string, res *ExoResult) {
	gone := s.GoneTimeout
	if gone == 0 {
		gone = DefaultGoneTimeout
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), gone)
	defer cancel()
	if _, err := s.Client.DeleteInstance(dctx, id); err != nil && !errors.Is(err, exo.ErrNotFound) {
		res.Warnings = append(res.Warnings, fmt.Sprintf("delete instance %s: %v", id, err))
		return
	}
	if err := s.Client.WaitGone(dctx, id, gone); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("instance %s not gone: %v", id, err))
		return
	}
	s.log(dctx, "instance deleted", "id", id)
}

func (s *ExoSweep) log(ctx context.Context, msg string, args ...any) {
	if s.Logger != nil {
		s.Logger.InfoContext(ctx, msg, args...)
	}
}
