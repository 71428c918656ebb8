package energy

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Split returns the energy of the trace before and after the instant at,
// within the window: prefill = [Start, at], generation = [at, End], each
// by Integrate. at is normally the arrival of the first generated token.
// An at outside the window is clamped to it, as exo's server does, with an
// ErrExtrapolated warning on the phase it empties. Because Integrate
// interpolates on the lines between samples, prefill + generation equals
// Integrate over the whole window (up to rounding).
func Split(p PowerTrace, w Window, at time.Time) (prefill, generation Estimate, err error) {
	if err := w.validate(); err != nil {
		return Estimate{}, Estimate{}, err
	}
	c := clampTime(at, w)
	prefill, err = Integrate(p, Window{Start: w.Start, End: c})
	if err != nil {
		return Estimate{}, Estimate{}, err
	}
	generation, err = Integrate(p, Window{Start: c, End: w.End})
	if err != nil {
		return Estimate{}, Estimate{}, err
	}
	addClampWarning(&prefill, &generation, p.Node, at, w)
	return prefill, generation, nil
}

func clampTime(t time.Time, w Window) time.Time {
	return maxTime(w.Start, minTime(t, w.End))
}

func addClampWarning(prefill, generation *Estimate, node string, at time.Time, w Window) {
	switch {
	case at.Before(w.Start):
		prefill.Warnings = append(prefill.Warnings, fmt.Errorf("%w: node %q: phase boundary %.6gs before the window's start; clamped to it",
			ErrExtrapolated, node, w.Start.Sub(at).Seconds()))
	case at.After(w.End):
		generation.Warnings = append(generation.Warnings, fmt.Errorf("%w: node %q: phase boundary %.6gs after the window's end; clamped to it",
			ErrExtrapolated, node, at.Sub(w.End).Seconds()))
	}
}

// A Baseline holds each node's idle power in watts, measured before a run
// (see Idle) and subtracted from that node's energy by Measure.
type Baseline map[string]float64

// Idle measures a baseline: each trace's average power over the window,
// Integrate's Joules / Seconds. Take the window while the engine is idle
// (before a run, after a warm-up). Warnings of the integrations come back
// wrapped with their node. A window of zero length is an error.
func Idle(w Window, traces ...PowerTrace) (Baseline, []error, error) {
	if err := w.validate(); err != nil {
		return nil, nil, err
	}
	if w.Duration() <= 0 {
		return nil, nil, fmt.Errorf("%w: expected an idle window longer than zero, found %s", ErrInvalidWindow, w.Duration())
	}
	b := make(Baseline, len(traces))
	var warns []error
	for _, p := range traces {
		if _, dup := b[p.Node]; dup {
			return nil, nil, fmt.Errorf("%w: node %q has two idle traces; expected one per node", ErrInvalidTrace, p.Node)
		}
		e, err := Integrate(p, w)
		if err != nil {
			return nil, nil, fmt.Errorf("energy: idle baseline of node %q: %w", p.Node, err)
		}
		b[p.Node] = e.Watts()
		warns = append(warns, e.Warnings...)
	}
	return b, warns, nil
}

// A Run describes the measurement Measure computes energy for.
type Run struct {
	// Window is the span of the run (first request sent to last byte).
	Window Window
	// FirstToken, when set, splits the run into prefill [Start,
	// FirstToken] and generation [FirstToken, End].
	FirstToken time.Time
	// PromptTokens and GeneratedTokens are the token counts J/token is
	// computed with.
	PromptTokens, GeneratedTokens int
	// Idle, when not nil, is subtracted from each node's energy:
	// J − W_idle × seconds, per phase. A node absent from a non-nil
	// Idle gets a warning and nothing subtracted.
	Idle Baseline
}

// Method names how a node's energy was computed.
type Method string

// The methods of a NodeEnergy.
const (
	MethodPower   Method = "power"   // Integrate over a PowerTrace
	MethodCounter Method = "counter" // CounterTrace.Energy
)

// NodeEnergy is one node's share of a Report.
type NodeEnergy struct {
	Node   string
	Method Method
	// IdleWatts is the baseline subtracted (0 when none was).
	IdleWatts float64
	// Total, Prefill and Generation are the node's energy over the
	// window and its two phases; the phases are zero Estimates when the
	// Run has no FirstToken.
	Total, Prefill, Generation Estimate
}

// A Report is the energy of one run over all nodes.
type Report struct {
	// Nodes holds each node's figures, sorted by node.
	Nodes []NodeEnergy
	// Total, Prefill and Generation are sums over Nodes: Joules and Bound
	// add, Samples add, Window is the Run's.
	Total, Prefill, Generation Estimate
	// Split reports whether the run was split at FirstToken.
	Split bool
	// JoulesPerPromptToken = Prefill.Joules / PromptTokens and
	// JoulesPerGeneratedToken = Generation.Joules / GeneratedTokens;
	// NaN (with an ErrUndefined warning) without a split or tokens.
	JoulesPerPromptToken, JoulesPerGeneratedToken float64
	// Warnings gathers every node's warnings and the report's own.
	Warnings []error
}

// Watts returns the average power over the run summed over nodes,
// Total.Joules / Total.Seconds().
func (r Report) Watts() float64 { return r.Total.Watts() }

// Measure computes a run's energy over every node. A node with a
// CounterTrace is measured with CounterTrace.Energy (exact inside the
// window); a node with only a PowerTrace with Integrate; a node with both
// uses the counter. With FirstToken set each node is split as Split does
// (for counters, at the interpolated counter value). With Idle set each
// node's baseline × seconds is subtracted from each phase; a result below
// zero is kept, with an ErrBelowIdle warning. The sums over nodes add the
// bounds, the worst case.
func Measure(run Run, power []PowerTrace, counters []CounterTrace) (Report, error) {
	if err := run.Window.validate(); err != nil {
		return Report{}, err
	}
	rep := Report{Split: !run.FirstToken.IsZero()}
	w := run.Window
	at := clampTime(run.FirstToken, w)
	phases := [3]Window{w, {Start: w.Start, End: at}, {Start: at, End: w.End}}

	seen := map[string]bool{}
	for _, c := range counters {
		if seen[c.Node] {
			return Report{}, fmt.Errorf("%w: node %q has two counter traces; expected one per node", ErrInvalidTrace, c.Node)
		}
		seen[c.Node] = true
		ne := NodeEnergy{Node: c.Node, Method: MethodCounter}
		for k, dst := range []*Estimate{&ne.Total, &ne.Prefill, &ne.Generation} {
			if k > 0 && !rep.Split {
				break
			}
			e, err := c.Energy(phases[k])
			if err != nil {
				return Report{}, fmt.Errorf("energy: node %q: %w", c.Node, err)
			}
			*dst = e
		}
		rep.Nodes = append(rep.Nodes, ne)
	}
	powerSeen := map[string]bool{}
	for _, p := range power {
		if powerSeen[p.Node] {
			return Report{}, fmt.Errorf("%w: node %q has two power traces; expected one per node", ErrInvalidTrace, p.Node)
		}
		powerSeen[p.Node] = true
		if seen[p.Node] {
			continue
		}
		ne := NodeEnergy{Node: p.Node, Method: MethodPower}
		var err error
		if ne.Total, err = Integrate(p, w); err != nil {
			return Report{}, fmt.Errorf("energy: node %q: %w", p.Node, err)
		}
		if rep.Split {
			if ne.Prefill, err = Integrate(p, phases[1]); err != nil {
				return Report{}, fmt.Errorf("energy: node %q: %w", p.Node, err)
			}
			if ne.Generation, err = Integrate(p, phases[2]); err != nil {
				return Report{}, fmt.Errorf("energy: node %q: %w", p.Node, err)
			}
		}
		rep.Nodes = append(rep.Nodes, ne)
	}
	slices.SortFunc(rep.Nodes, func(a, b NodeEnergy) int {
		switch {
		case a.Node < b.Node:
			return -1
		case a.Node > b.Node:
			return 1
		}
		return 0
	})

	rep.Total = Estimate{Window: phases[0]}
	if rep.Split {
		rep.Prefill = Estimate{Window: phases[1]}
		rep.Generation = Estimate{Window: phases[2]}
		if run.FirstToken.Before(w.Start) || run.FirstToken.After(w.End) {
			rep.Warnings = append(rep.Warnings, fmt.Errorf("%w: first token at %s lies outside the window %s; split clamped to the window",
				ErrExtrapolated, run.FirstToken.Format(time.RFC3339Nano), w))
		}
	}
	for i := range rep.Nodes {
		ne := &rep.Nodes[i]
		if run.Idle != nil {
			watts, ok := run.Idle[ne.Node]
			if !ok {
				rep.Warnings = append(rep.Warnings, fmt.Errorf("%w: node %q has no idle baseline; nothing subtracted", ErrUndefined, ne.Node))
			} else {
				ne.IdleWatts = watts
				for _, e := range []*Estimate{&ne.Total, &ne.Prefill, &ne.Generation} {
					if e.Window.Start.IsZero() {
						continue
					}
					e.Joules -= watts * e.Seconds()
					if e.Joules < 0 {
						e.Warnings = append(e.Warnings, fmt.Errorf("%w: node %q: %.6g J after subtracting %g W idle over %.6gs",
							ErrBelowIdle, ne.Node, e.Joules, watts, e.Seconds()))
					}
				}
			}
		}
		addInto(&rep.Total, ne.Total)
		rep.Warnings = append(rep.Warnings, ne.Total.Warnings...)
		if rep.Split {
			addInto(&rep.Prefill, ne.Prefill)
			addInto(&rep.Generation, ne.Generation)
			rep.Warnings = append(rep.Warnings, ne.Prefill.Warnings...)
			rep.Warnings = append(rep.Warnings, ne.Generation.Warnings...)
		}
	}
	if len(rep.Nodes) == 0 {
		rep.Warnings = append(rep.Warnings, fmt.Errorf("%w: no traces: expected at least one power or counter trace, found none; total is 0 J", ErrUndefined))
	}

	rep.JoulesPerPromptToken, rep.JoulesPerGeneratedToken = math.NaN(), math.NaN()
	switch {
	case !rep.Split:
		rep.Warnings = append(rep.Warnings, fmt.Errorf("%w: J per token needs the first token's instant to split the run; none given", ErrUndefined))
	default:
		if run.PromptTokens > 0 {
			rep.JoulesPerPromptToken = rep.Prefill.Joules / float64(run.PromptTokens)
		} else {
			rep.Warnings = append(rep.Warnings, fmt.Errorf("%w: J per prompt token: expected prompt tokens > 0, found %d", ErrUndefined, run.PromptTokens))
		}
		if run.GeneratedTokens > 0 {
			rep.JoulesPerGeneratedToken = rep.Generation.Joules / float64(run.GeneratedTokens)
		} else {
			rep.Warnings = append(rep.Warnings, fmt.Errorf("%w: J per generated token: expected generated tokens > 0, found %d", ErrUndefined, run.GeneratedTokens))
		}
	}
	return rep, nil
}

func addInto(dst *Estimate, e Estimate) {
	dst.Joules += e.Joules
	dst.Bound += e.Bound
	dst.Samples += e.Samples
}
