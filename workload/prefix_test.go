package workload

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPrefixHitRate(t *testing.T) {
	ids := func(v ...int64) []int64 { return v }
	for _, c := range []struct {
		name       string
		rows       []Row
		block      int
		hit, input int64
	}{
		{"one row hits nothing", []Row{{Input: 7, HashIDs: ids(1, 2)}}, 4, 0, 7},
		{"a shared first block", []Row{
			{Input: 7, HashIDs: ids(1, 2)},
			{Input: 6, HashIDs: ids(1, 3)}, // block 1 (4 tokens) hits
		}, 4, 4, 13},
		{"a whole hit counts the last block's real size", []Row{
			{Input: 7, HashIDs: ids(1, 2)},
			{Input: 7, HashIDs: ids(1, 2)}, // 4 + 3 tokens
		}, 4, 7, 14},
		{"only the leading run counts", []Row{
			{Input: 12, HashIDs: ids(1, 2, 3)},
			{Input: 12, HashIDs: ids(9, 2, 3)}, // 2 and 3 were seen, but not as a prefix
			{Input: 12, HashIDs: ids(1, 5, 3)}, // 1 hits, 5 breaks the run
		}, 4, 4, 36},
		{"a row's own ids count only for later rows; rows without ids are left out", []Row{
			{Input: 8, HashIDs: ids(1, 2)},     // 0
			{Input: 10, HashIDs: ids(1, 2, 3)}, // 8: blocks 1 and 2
			{Input: 10, HashIDs: ids(1, 2, 3)}, // 10: every block, the last of 2 tokens
			{Input: 3, HashIDs: ids(7)},        // 0
			{Input: 100},                       // not counted
		}, 4, 18, 31},
		{"the Mooncake README's example", []Row{
			{Input: 6955, HashIDs: ids(46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 2353, 2354)},
			{Input: 6472, HashIDs: ids(46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 2366)}, // 12 × 512
		}, 512, 6144, 6955 + 6472},
		{"no rows", nil, 16, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			rate, hit, input := PrefixHitRate(c.rows, c.block)
			want := 0.0
			if c.input > 0 {
				want = float64(c.hit) / float64(c.input)
			}
			if hit != c.hit || input != c.input || math.Abs(rate-want) > 1e-15 {
				t.Errorf("PrefixHitRate = %g, %d, %d; want %g, %d, %d", rate, hit, input, want, c.hit, c.input)
			}
		})
	}
}

func TestPrefixHitRatePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for block size 0")
		}
	}()
	PrefixHitRate(nil, 0)
}

func TestLinkSessions(t *testing.T) {
	rows := []Row{
		{ID: "1"},
		{ID: "2", Parent: "1"},
		{ID: "3"},
		{ID: "4", Parent: "2"},
		{ID: "5", Parent: "99"}, // the parent is not in the rows
		{ID: "6", Parent: "5"},
		{ID: "7", Parent: "1", Session: "kept"},
		{ID: "8", Parent: "7"},
		{},
	}
	orphans := LinkSessions(rows)
	var got []string
	for _, r := range rows {
		got = append(got, r.Session)
	}
	want := []string{"1", "1", "3", "1", "5", "5", "kept", "kept", ""}
	if d := cmp.Diff(want, got); d != "" || orphans != 1 {
		t.Errorf("orphans %d (want 1); sessions (-want +got):\n%s", orphans, d)
	}
}

func TestTimestamp(t *testing.T) {
	for _, c := range []struct {
		lit     string
		unit    time.Duration
		lenient bool
		want    time.Duration
		err     string
	}{
		{"61.114", time.Second, false, 61114 * time.Millisecond, ""},
		{"3000", time.Millisecond, false, 3 * time.Second, ""},
		{"3000.5", time.Millisecond, false, 3000500 * time.Microsecond, ""},
		{"0.0000000015", time.Second, false, 2, ""}, // 1.5 ns rounds half up
		{"0.0000000014", time.Second, false, 1, ""},
		{"1.5e-9", time.Second, false, 2, ""},
		{"1e3", time.Millisecond, false, time.Second, ""},
		{"1.7e9", time.Second, false, 1700000000 * time.Second, ""},
		{"1700000000.123456789", time.Second, false, 1700000000*time.Second + 123456789, ""},
		{"-0", time.Second, false, 0, ""},
		{"-0.000", time.Second, false, 0, ""},
		{"3153600000", time.Second, false, MaxTime, ""},
		{"3153600000.000000001", time.Second, false, 0, "exceeds the bound of 100 years"},
		{"9223372036854775807", time.Nanosecond, false, 0, "exceeds the bound"},
		{"99999999999999999999", time.Nanosecond, false, 0, "exceeds the bound"},
		{"1e300", time.Second, false, 0, "exceeds the bound"},
		{"1e400", time.Second, false, 0, "out of range"},
		{"-1", time.Second, false, 0, "negative"},
		{"-1e-300", time.Second, false, 0, "negative"},
		{"007", time.Second, false, 0, "not a number"},
		{"007", time.Second, true, 7 * time.Second, ""},
		{"NaN", time.Second, true, 0, "not a number"},
		{"Inf", time.Second, true, 0, "not a number"},
		{"1.", time.Second, true, 0, "not a number"},
		{".5", time.Second, true, 0, "not a number"},
		{"1e", time.Second, true, 0, "not a number"},
		{"", time.Second, true, 0, "not a number"},
		{"1_000", time.Second, true, 0, "not a number"},
	} {
		got, err := timestamp([]byte(c.lit), c.unit, c.lenient)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("timestamp(%q, %v) = %v, %v; want an error with %q", c.lit, c.unit, got, err, c.err)
			}
		case err != nil || got != c.want:
			t.Errorf("timestamp(%q, %v) = %v, %v; want %v", c.lit, c.unit, got, err, c.want)
		}
	}
}

func TestInteger(t *testing.T) {
	for _, c := range []struct {
		lit  string
		want int64
		ok   bool
	}{
		{"6758", 6758, true},
		{"6758.0", 6758, true},
		{"6.758e3", 6758, true},
		{"1E2", 100, true},
		{"-3", -3, true},
		{"0", 0, true},
		{"1.5", 0, false},
		{"9007199254740992", 1 << 53, true},
		{"9007199254740993", 0, false},
		{"1e20", 0, false},
		{"01", 0, false},
		{"x", 0, false},
	} {
		got, ok := integer([]byte(c.lit), false)
		if got != c.want || ok != c.ok {
			t.Errorf("integer(%q) = %d, %v; want %d, %v", c.lit, got, ok, c.want, c.ok)
		}
	}
}
