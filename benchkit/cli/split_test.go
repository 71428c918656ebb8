package cli

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
)

// env is a getenv reading m.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestSegmentFromEnv(t *testing.T) {
	cases := []struct {
		flag  string
		count int
		env   map[string]string
		want  benchkit.Segment
		bad   bool
	}{
		{want: benchkit.Segment{}},
		{flag: "1/3", want: benchkit.Segment{Index: 1, Count: 3}},
		{flag: "1/3", count: 3, want: benchkit.Segment{Index: 1, Count: 3}},
		{flag: "1/3", count: 4, bad: true},
		{count: 4, env: map[string]string{EnvJobCompletionIndex: "2"}, want: benchkit.Segment{Index: 2, Count: 4}},
		{env: map[string]string{EnvSegments: "4", EnvJobCompletionIndex: "3"}, want: benchkit.Segment{Index: 3, Count: 4}},
		{count: 4, bad: true}, // no index
		{count: 4, env: map[string]string{EnvJobCompletionIndex: "4"}, bad: true},
		{env: map[string]string{EnvSegments: "many", EnvJobCompletionIndex: "0"}, bad: true},
		{env: map[string]string{EnvJobCompletionIndex: "3"}, want: benchkit.Segment{}}, // an index alone splits nothing
	}
	for _, c := range cases {
		got, err := SegmentFromEnv(c.flag, c.count, env(c.env))
		if c.bad {
			if !errors.Is(err, benchkit.ErrBadSegment) {
				t.Errorf("SegmentFromEnv(%q, %d, %v) = %v, %v; want benchkit.ErrBadSegment", c.flag, c.count, c.env, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("SegmentFromEnv(%q, %d, %v) = %v, %v; want %v", c.flag, c.count, c.env, got, err, c.want)
		}
	}
}

// TestResolveSplit: the split flags resolve to a segment and a shared
// start; a split needs --seed, and a bad --start-at is refused.
func TestResolveSplit(t *testing.T) {
	none := func(string) string { return "" }
	seg, at, err := ResolveSplit("1/4", 0, "2026-05-01T12:00:00Z", true, none)
	if err != nil || seg != (benchkit.Segment{Index: 1, Count: 4}) || !at.Equal(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("ResolveSplit = %v, %v, %v", seg, at, err)
	}
	if _, _, err := ResolveSplit("1/4", 0, "", false, none); !errors.Is(err, benchkit.ErrBadSegment) || !strings.Contains(err.Error(), "--seed") {
		t.Errorf("a split without --seed: %v; want benchkit.ErrBadSegment naming --seed", err)
	}
	if _, _, err := ResolveSplit("", 0, "noon", true, none); !errors.Is(err, benchkit.ErrBadSegment) {
		t.Errorf("a bad --start-at: %v", err)
	}
	if seg, _, err := ResolveSplit("", 0, "", false, none); err != nil || seg.Split() {
		t.Errorf("no split: %v, %v", seg, err)
	}
}
