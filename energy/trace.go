package energy

import (
	"fmt"
	"math"
	"time"
)

// maxDuration is where time.Time.Sub saturates.
const maxDuration = time.Duration(math.MaxInt64)

// A Sample is one timestamped value: watts in a PowerTrace, cumulative
// joules in a CounterTrace, the metric's own unit in a Series.
type Sample struct {
	At    time.Time
	Value float64
}

// A PowerTrace is one node's power draw over time: Samples hold watts, in
// strictly increasing order of At. A node is whatever a source measures
// separately (a machine of a cluster, a GPU, a RAPL domain).
type PowerTrace struct {
	Node    string
	Samples []Sample
	// Kind says whether the values are instantaneous readings (the zero
	// value) or means over an interval ending at each instant; Integrate
	// treats each as what it is.
	Kind SampleKind
	// Range is the least and greatest power the node can draw, where its
	// source declares them (PowerRanger); the zero value declares none.
	// Integrate bounds the power that interval means leave unresolved by
	// it.
	Range PowerRange
	// StampError is the most a sample's instant may differ from the
	// instant its value was measured at (for a mean, the end of its
	// interval): the Sampler sets half the longest Read of the trace's
	// source, 0 for readings that carry their own instant. Integrate's
	// bound for interval means covers it.
	StampError time.Duration
}

// A Window is the span [Start, End] of a measurement.
type Window struct {
	Start, End time.Time
}

// Duration returns End − Start.
func (w Window) Duration() time.Duration { return w.End.Sub(w.Start) }

// String formats the window as its start and duration.
func (w Window) String() string {
	return fmt.Sprintf("[%s +%s]", w.Start.Format(time.RFC3339Nano), w.Duration())
}

func (w Window) validate() error {
	if w.Start.IsZero() || w.End.IsZero() {
		return fmt.Errorf("%w: expected both instants set, found start %v and end %v", ErrInvalidWindow, w.Start, w.End)
	}
	if w.End.Before(w.Start) {
		return fmt.Errorf("%w: expected end at or after start, found end %s before start", ErrInvalidWindow, w.Start.Sub(w.End))
	}
	if w.End.Sub(w.Start) == maxDuration {
		return fmt.Errorf("%w: expected a window shorter than %s, found one from %s to %s", ErrInvalidWindow, maxDuration, w.Start, w.End)
	}
	return nil
}

// An Estimate is energy over a window with what is known of its accuracy.
type Estimate struct {
	// Joules is the energy over Window.
	Joules float64
	// Bound is the largest error Joules can have under the assumptions
	// the function that made the estimate documents (see Integrate and
	// CounterTrace.Energy). It is +Inf when nothing bounds the error
	// (one sample) and NaN when the method computes none
	// (ExoWindowEnergy).
	Bound float64
	// Window is the span the energy is over.
	Window Window
	// Samples counts the samples that fell inside Window, edges included.
	Samples int
	// Warnings note what limits the estimate (extrapolation past the
	// trace, a single sample, a gap); nil when nothing does.
	Warnings []error
}

// Seconds returns the window's length in seconds.
func (e Estimate) Seconds() float64 { return e.Window.Duration().Seconds() }

// Watts returns the average power over the window:
//
//	W = Joules / Seconds
//
// NaN for a window of zero length.
func (e Estimate) Watts() float64 {
	s := e.Seconds()
	if s <= 0 {
		return math.NaN()
	}
	return e.Joules / s
}

// Validate reports whether the trace can be integrated: at least one
// sample, instants strictly increasing, values finite and non-negative, a
// valid Range (finite, ≥ 0, Max ≥ Min when known) and StampError ≥ 0.
// The errors wrap ErrInvalidTrace and name the offending sample.
func (p PowerTrace) Validate() error {
	if err := p.Range.validate(p.Node); err != nil {
		return err
	}
	if p.StampError < 0 {
		return fmt.Errorf("%w: node %q: stamp error %s: expected ≥ 0", ErrInvalidTrace, p.Node, p.StampError)
	}
	return validateSamples(p.Node, p.Samples, "W")
}

func validateSamples(node string, s []Sample, unit string) error {
	if len(s) == 0 {
		return fmt.Errorf("%w: node %q: expected at least one sample, found none", ErrInvalidTrace, node)
	}
	for i, x := range s {
		if x.At.IsZero() {
			return fmt.Errorf("%w: node %q: sample %d has no timestamp", ErrInvalidTrace, node, i)
		}
		if math.IsNaN(x.Value) || math.IsInf(x.Value, 0) || x.Value < 0 {
			return fmt.Errorf("%w: node %q: sample %d: expected a finite value ≥ 0, found %v %s", ErrInvalidTrace, node, i, x.Value, unit)
		}
		if i > 0 && x.At.Sub(s[i-1].At) == maxDuration {
			return fmt.Errorf("%w: node %q: sample %d is %s or more after sample %d; expected intervals a time.Duration can hold",
				ErrInvalidTrace, node, i, maxDuration, i-1)
		}
		if i > 0 && !x.At.After(s[i-1].At) {
			return fmt.Errorf("%w: node %q: sample %d at %s is not after sample %d at %s (expected strictly increasing instants)",
				ErrInvalidTrace, node, i, x.At.Format(time.RFC3339Nano), i-1, s[i-1].At.Format(time.RFC3339Nano))
		}
	}
	return nil
}

// inWindow counts the samples with Start ≤ At ≤ End.
func inWindow(s []Sample, w Window) int {
	n := 0
	for _, x := range s {
		if !x.At.Before(w.Start) && !x.At.After(w.End) {
			n++
		}
	}
	return n
}
