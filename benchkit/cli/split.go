package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/inferbench/inferbench/benchkit"
)

// Environment variables a segment can be read from (SegmentFromEnv).
const (
	// EnvJobCompletionIndex is set by Kubernetes in each pod of an
	// Indexed Job to the pod's index, 0 … completions − 1.
	EnvJobCompletionIndex = "JOB_COMPLETION_INDEX"
	// EnvSegments holds the number of segments when no flag gives it.
	EnvSegments = "INFERBENCH_SEGMENTS"
)

// SegmentFromEnv resolves a program's segment: flag ("i/N", as
// --segment gives it) when set; else, when count (a --segments flag) or
// the environment's INFERBENCH_SEGMENTS is positive, that many segments
// with the index in JOB_COMPLETION_INDEX, so that the pods of an Indexed
// Job need no wrapper script. getenv is os.Getenv when nil. With neither,
// the segment is the whole plan.
func SegmentFromEnv(flag string, count int, getenv func(string) string) (benchkit.Segment, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if flag != "" {
		var seg benchkit.Segment
		if err := seg.UnmarshalText([]byte(flag)); err != nil {
			return benchkit.Segment{}, err
		}
		if count > 0 && count != max(seg.Count, 1) {
			return benchkit.Segment{}, fmt.Errorf("%w: --segment %s and a segment count of %d disagree", benchkit.ErrBadSegment, flag, count)
		}
		return seg, nil
	}
	if count < 0 {
		return benchkit.Segment{}, fmt.Errorf("%w: the number of segments must not be negative, got %d", benchkit.ErrBadSegment, count)
	}
	if count == 0 {
		if v := strings.TrimSpace(getenv(EnvSegments)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return benchkit.Segment{}, fmt.Errorf("%w: %s=%q is not a positive number of segments", benchkit.ErrBadSegment, EnvSegments, v)
			}
			count = n
		}
	}
	if count <= 1 {
		return benchkit.Segment{}, nil
	}
	v := strings.TrimSpace(getenv(EnvJobCompletionIndex))
	if v == "" {
		return benchkit.Segment{}, fmt.Errorf("%w: %d segments and no index: give --segment i/%d or set %s", benchkit.ErrBadSegment, count, count, EnvJobCompletionIndex)
	}
	i, err := strconv.Atoi(v)
	if err != nil {
		return benchkit.Segment{}, fmt.Errorf("%w: %s=%q is not a segment index", benchkit.ErrBadSegment, EnvJobCompletionIndex, v)
	}
	seg := benchkit.Segment{Index: i, Count: count}
	if err := seg.Validate(); err != nil {
		return benchkit.Segment{}, fmt.Errorf("%w (from %s)", err, EnvJobCompletionIndex)
	}
	return seg, nil
}

// ParseStartAt parses a shared start instant, RFC 3339 wall time
// ("2026-05-01T12:00:00Z"). An empty string is no shared start.
func ParseStartAt(v string) (time.Time, error) {
	if strings.TrimSpace(v) == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(v))
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: start instant %q is not RFC 3339 (e.g. 2026-05-01T12:00:00Z): %v", benchkit.ErrBadSegment, v, err)
	}
	return t, nil
}

// ResolveSplit reads a program's split flags: --segment (segFlag, "i/N"),
// --segments (count, with the index from JOB_COMPLETION_INDEX; see
// SegmentFromEnv, which getenv is handed to) and --start-at (startAt,
// RFC 3339). A split plan needs seeded (--seed given): the run nonce in
// every prompt is then drawn from the seed, so every segment sends the
// prompts the one plan holds; without it each segment would draw a nonce
// of its own. Each error wraps benchkit.ErrBadSegment.
func ResolveSplit(segFlag string, count int, startAt string, seeded bool, getenv func(string) string) (benchkit.Segment, time.Time, error) {
	seg, err := SegmentFromEnv(segFlag, count, getenv)
	if err != nil {
		return benchkit.Segment{}, time.Time{}, err
	}
	at, err := ParseStartAt(startAt)
	if err != nil {
		return benchkit.Segment{}, time.Time{}, err
	}
	if seg.Split() && !seeded {
		return benchkit.Segment{}, time.Time{}, fmt.Errorf("%w: segment %s needs --seed: every segment must draw the same lengths, schedule and run nonce", benchkit.ErrBadSegment, seg)
	}
	return seg, at, nil
}
