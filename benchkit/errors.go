package benchkit

import (
	"errors"
	"fmt"
)

// Errors a caller branches on. Each error that rejects input before
// anything is sent wraps one of the first four; a program maps them to
// its usage status (nothing sent).
var (
	// ErrBadLoad is wrapped by every error that rejects a load test
	// before anything is sent: a bad workload, bad traffic, prompts that
	// cannot be built.
	ErrBadLoad = errors.New("benchkit: bad load")
	// ErrBadPlan is wrapped by every error Plan.Validate returns.
	ErrBadPlan = errors.New("benchkit: bad plan")
	// ErrBadSegment is wrapped by every error about a segment or a
	// shared start.
	ErrBadSegment = errors.New("benchkit: bad segment")
	// ErrSink is wrapped by the error a driver returns when a sink
	// fails: the run stops, since what it measured next could not be
	// kept.
	ErrSink = errors.New("benchkit: sink failed")

	// The errors of MergeSegments, each wrapping ErrBadMerge.

	// ErrBadMerge is wrapped by every error that refuses a merge.
	ErrBadMerge = errors.New("benchkit: cannot merge segments")
	// ErrMissingSegment: a segment of the plan has no rows.
	ErrMissingSegment = fmt.Errorf("%w: missing segment", ErrBadMerge)
	// ErrDuplicateSegment: a segment, or a request, appears twice.
	ErrDuplicateSegment = fmt.Errorf("%w: duplicated segment", ErrBadMerge)
	// ErrPlanMismatch: the rows belong to different plans, different
	// splits of one, or different shared starts.
	ErrPlanMismatch = fmt.Errorf("%w: different plans", ErrBadMerge)
	// ErrSegmentRows: a line is not a row, or a row contradicts its own
	// segment.
	ErrSegmentRows = fmt.Errorf("%w: bad rows", ErrBadMerge)
)
