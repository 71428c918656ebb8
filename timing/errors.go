package timing

import "errors"

// Sentinel errors callers can branch on with errors.Is. The functions of
// this package wrap them with the values that caused them.
var (
	// ErrUndefined marks a rate or latency that has no value for the
	// input: fewer than two tokens, a zero or negative span, no chunks.
	ErrUndefined = errors.New("timing: undefined")
	// ErrInvalidTrace marks a Trace that breaks its invariants (instants
	// out of order, missing start, negative token counts).
	ErrInvalidTrace = errors.New("timing: invalid trace")
	// ErrFewSamples marks a statistic computed over too few samples to
	// mean much (a confidence interval over fewer than two repeats).
	ErrFewSamples = errors.New("timing: too few samples")
)
