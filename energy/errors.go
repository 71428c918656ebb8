package energy

import "errors"

// Sentinel errors callers can branch on with errors.Is. The functions of
// this package wrap them with the values that caused them; the ones marked
// "warning" arrive in Warnings beside a value rather than as the error.
var (
	// ErrInvalidTrace marks a trace that cannot be integrated: no samples,
	// instants not strictly increasing, a negative, NaN or infinite value,
	// a counter that goes backwards with no wraparound maximum.
	ErrInvalidTrace = errors.New("energy: invalid trace")
	// ErrInvalidWindow marks a window whose end is before its start, or
	// whose instants are zero.
	ErrInvalidWindow = errors.New("energy: invalid window")
	// ErrTooFewSamples marks a computation that needs more samples than
	// it was given (a counter trace of one reading has no difference).
	ErrTooFewSamples = errors.New("energy: too few samples")
	// ErrUnavailable marks a source that cannot work on this machine
	// (no powercap zones, not Linux, no nvidia-smi).
	ErrUnavailable = errors.New("energy: source unavailable")
	// ErrParse marks output of an outside tool that could not be read.
	ErrParse = errors.New("energy: cannot parse")
	// ErrInterval marks a sampling interval below MinInterval.
	ErrInterval = errors.New("energy: sampling interval too short")

	// ErrExtrapolated (warning) marks a window that reaches past the
	// first or last sample: the edge value was held over the uncovered
	// part.
	ErrExtrapolated = errors.New("energy: window extends past the trace")
	// ErrSingleSample (warning) marks an estimate from one sample:
	// power × duration, with no bound.
	ErrSingleSample = errors.New("energy: one sample")
	// ErrNoSamplesInWindow (warning) marks exo's method finding no sample
	// inside the window, so it counts 0 J.
	ErrNoSamplesInWindow = errors.New("energy: no sample inside the window")
	// ErrGap (warning) marks an interval between samples much longer than
	// the trace's typical one.
	ErrGap = errors.New("energy: gap in the trace")
	// ErrMissedWrap (warning) marks a counter interval long enough that
	// the counter could have wrapped more than once, which no reading can
	// reveal.
	ErrMissedWrap = errors.New("energy: counter may have wrapped more than once")
	// ErrUndefined (warning) marks a figure with no value for the input
	// (J per token with zero tokens or no phase split); the figure is NaN.
	ErrUndefined = errors.New("energy: undefined")
	// ErrBelowIdle (warning) marks energy that came out negative after
	// the idle baseline was subtracted: the run drew less than idle.
	ErrBelowIdle = errors.New("energy: below the idle baseline")
)
