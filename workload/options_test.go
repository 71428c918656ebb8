package workload

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// timeTrace is a Mooncake trace at 1000, 1000, 3000, 6000 and 10000 ms
// with inputs 100 … 500 and outputs 10 … 50.
const timeTrace = `{"timestamp": 1000, "input_length": 100, "output_length": 10, "hash_ids": [1]}
{"timestamp": 1000, "input_length": 200, "output_length": 20, "hash_ids": [2]}
{"timestamp": 3000, "input_length": 300, "output_length": 30, "hash_ids": [3]}
{"timestamp": 6000, "input_length": 400, "output_length": 40, "hash_ids": [4]}
{"timestamp": 10000, "input_length": 500, "output_length": 50, "hash_ids": [5]}
`

func TestTimeOptions(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name string
		opts Options
		at   []time.Duration // At of the rows returned
		in   []int           // their inputs
		out  []int           // their outputs, when checked
		st   Stats
	}{
		{name: "defaults: zero at the first row", at: []time.Duration{0, 0, 2000 * ms, 5000 * ms, 9000 * ms}, in: []int{100, 200, 300, 400, 500}},
		{name: "absolute", opts: Options{Absolute: true}, at: []time.Duration{1000 * ms, 1000 * ms, 3000 * ms, 6000 * ms, 10000 * ms}},
		{name: "unit s", opts: Options{Unit: time.Second}, at: []time.Duration{0, 0, 2000 * time.Second, 5000 * time.Second, 9000 * time.Second}},
		{name: "speedup 2", opts: Options{Speedup: 2}, at: []time.Duration{0, 0, 1000 * ms, 2500 * ms, 4500 * ms}},
		{name: "speedup 0.5 (slowdown 2)", opts: Options{Speedup: 0.5}, at: []time.Duration{0, 0, 4000 * ms, 10000 * ms, 18000 * ms}},
		{name: "start inclusive", opts: Options{Start: 2000 * ms}, at: []time.Duration{0, 3000 * ms, 7000 * ms}, in: []int{300, 400, 500},
			st: Stats{BeforeStart: 2}},
		{name: "end inclusive stops", opts: Options{End: 5000 * ms}, at: []time.Duration{0, 0, 2000 * ms, 5000 * ms}, in: []int{100, 200, 300, 400},
			st: Stats{Stopped: true}},
		{name: "window and speedup", opts: Options{Start: 2000 * ms, End: 5000 * ms, Speedup: 2}, at: []time.Duration{0, 1500 * ms}, in: []int{300, 400},
			st: Stats{BeforeStart: 2, Stopped: true}},
		{name: "absolute window", opts: Options{Absolute: true, Start: 3000 * ms, End: 6000 * ms}, at: []time.Duration{0, 3000 * ms}, in: []int{300, 400},
			st: Stats{BeforeStart: 2, Stopped: true}},
		{name: "limit", opts: Options{Limit: 2}, at: []time.Duration{0, 0}, in: []int{100, 200}, st: Stats{Stopped: true}},
		{name: "max input skips", opts: Options{MaxInput: 250}, at: []time.Duration{0, 0}, in: []int{100, 200}, st: Stats{OverInput: 3}},
		{name: "max input keeps the zero", opts: Options{MaxInput: 150, Absolute: false}, at: []time.Duration{0}, in: []int{100}, st: Stats{OverInput: 4}},
		{name: "min input skips and keeps the zero", opts: Options{MinInput: 250}, at: []time.Duration{2000 * ms, 5000 * ms, 9000 * ms}, in: []int{300, 400, 500},
			st: Stats{UnderInput: 2}},
		{name: "max output caps", opts: Options{MaxOutput: 25}, in: []int{100, 200, 300, 400, 500}, out: []int{10, 20, 25, 25, 25}, st: Stats{Capped: 3}},
		{name: "limit after max input", opts: Options{MaxInput: 350, Limit: 2, Start: 1 * ms}, at: []time.Duration{1999 * ms}, in: []int{300},
			st: Stats{BeforeStart: 2, OverInput: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows, st, err := readString("t.jsonl", timeTrace, &c.opts)
			if err != nil {
				t.Fatal(err)
			}
			var at []time.Duration
			var in, out []int
			for _, r := range rows {
				at, in, out = append(at, r.At), append(in, r.Input), append(out, r.Output)
			}
			if c.at != nil {
				if d := cmp.Diff(c.at, at); d != "" {
					t.Errorf("At (-want +got):\n%s", d)
				}
			}
			if c.in != nil {
				if d := cmp.Diff(c.in, in); d != "" {
					t.Errorf("Input (-want +got):\n%s", d)
				}
			}
			if c.out != nil {
				if d := cmp.Diff(c.out, out); d != "" {
					t.Errorf("Output (-want +got):\n%s", d)
				}
			}
			c.st.Rows = len(rows)
			if d := cmp.Diff(c.st, st); d != "" {
				t.Errorf("Stats (-want +got):\n%s", d)
			}
		})
	}
}

// TestFirstRowZero: the zero point is the first row that passes the
// rules, even one a filter drops.
func TestFirstRowZero(t *testing.T) {
	text := "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n" +
		"100,GPT-4,5,0,5,API log\n" + // a failure
		"103,ChatGPT,5,5,10,API log\n" + // another model
		"107,GPT-4,5,5,10,API log\n"
	rows, st, err := readString("b.csv", text, &Options{Model: "GPT-4"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].At != 7*time.Second || st.Failed != 1 || st.OtherModel != 1 {
		t.Errorf("rows %+v, %v; want one row at 7s, one failure, one other model", rows, st)
	}
}

func TestSort(t *testing.T) {
	text := `{"timestamp": 5000, "input_length": 1, "output_length": 1, "hash_ids": [1]}
{"timestamp": 2000, "input_length": 2, "output_length": 1, "hash_ids": [2]}
{"timestamp": 5000, "input_length": 3, "output_length": 1, "hash_ids": [3]}
{"timestamp": 1000, "input_length": 4, "output_length": 1, "hash_ids": [4]}
{"timestamp": 9000, "input_length": 5, "output_length": 1, "hash_ids": [5]}
`
	if _, _, err := readString("u.jsonl", text, nil); !errors.Is(err, ErrBadRow) || !strings.Contains(err.Error(), "line 2: timestamp 2s is before the previous row's 5s") {
		t.Errorf("unsorted without Sort: %v", err)
	}
	ms := time.Millisecond
	for _, c := range []struct {
		name string
		opts Options
		in   []int
		at   []time.Duration
		st   Stats
	}{
		{"sorted, stable", Options{Sort: true}, []int{4, 2, 1, 3, 5}, []time.Duration{0, 1000 * ms, 4000 * ms, 4000 * ms, 8000 * ms}, Stats{}},
		{"window after sorting", Options{Sort: true, Start: 1000 * ms, End: 4000 * ms}, []int{2, 1, 3}, []time.Duration{0, 3000 * ms, 3000 * ms},
			Stats{BeforeStart: 1, AfterEnd: 1}},
		{"limit in time order", Options{Sort: true, Limit: 2, End: 4000 * ms}, []int{4, 2}, []time.Duration{0, 1000 * ms},
			Stats{OverLimit: 2, AfterEnd: 1}},
		{"max input before sorting", Options{Sort: true, MaxInput: 3}, []int{2, 1, 3}, []time.Duration{1000 * ms, 4000 * ms, 4000 * ms},
			Stats{OverInput: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows, st, err := readString("u.jsonl", text, &c.opts)
			if err != nil {
				t.Fatal(err)
			}
			var in []int
			var at []time.Duration
			for _, r := range rows {
				in, at = append(in, r.Input), append(at, r.At)
			}
			if d := cmp.Diff(c.in, in); d != "" {
				t.Errorf("Input (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.at, at); d != "" {
				t.Errorf("At (-want +got):\n%s", d)
			}
			c.st.Rows = len(rows)
			if d := cmp.Diff(c.st, st); d != "" {
				t.Errorf("Stats (-want +got):\n%s", d)
			}
		})
	}
}

func TestSkipBadOrder(t *testing.T) {
	text := `{"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [1]}
{"timestamp": 2, "input_length": 2, "output_length": 1, "hash_ids": [2]}
{"timestamp": 6, "input_length": 3, "output_length": 1, "hash_ids": [3]}
`
	rows, st, err := readString("o.jsonl", text, &Options{SkipBad: true})
	if err != nil || len(rows) != 2 || rows[1].Input != 3 || st.Bad[RuleOrder] != 1 {
		t.Errorf("%+v, %v, %v; want rows 1 and 3, one order skip", rows, st, err)
	}
	if got := st.String(); got != "2 rows; skipped 1 bad (order 1)" {
		t.Errorf("String() = %q", got)
	}
}

func TestOptionErrors(t *testing.T) {
	for _, c := range []struct {
		text string
		opts Options
		msg  string
	}{
		{`{"prompt": "a"}`, Options{Speedup: 2}, "jsonl: the format has no timestamps"},
		{`[]`, Options{Sort: true}, "sharegpt: the format has no timestamps"},
		{"TIMESTAMP,ContextTokens,GeneratedTokens\n", Options{Unit: time.Second}, "azure: timestamps are dates"},
		{"TIMESTAMP,ContextTokens,GeneratedTokens\n", Options{BlockSize: 16}, "azure: the format has no hash ids"},
		{mcGood, Options{Model: "GPT-4"}, "mooncake: Model filters only burstgpt rows"},
		{mcGood, Options{AllTurns: true}, "mooncake: AllTurns applies only to sharegpt"},
		{mcGood, Options{Speedup: -1}, "Speedup -1 must be a positive finite number"},
		{mcGood, Options{End: time.Second, Start: 2 * time.Second}, "End 1s is before Start 2s"},
		{mcGood, Options{Limit: -1}, "must not be negative"},
		{mcGood, Options{Unit: -time.Second}, "Unit -1s must be positive"},
		{mcGood, Options{Format: "parquet"}, `unknown format "parquet"`},
	} {
		_, err := NewReader(strings.NewReader(c.text), "x", &c.opts)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: err = %v; want %q", c.opts, err, c.msg)
		}
	}
}

func TestDetect(t *testing.T) {
	for _, c := range []struct {
		text   string
		format Format
		err    string
	}{
		{mcGood, Mooncake, ""},
		{"\n\n  \n" + mcGood, Mooncake, ""},
		{`{"hash_ids": [1], "chat_id": 3, "timestamp": 1, "input_length": 1}`, Bailian, ""},
		{`{"input_length": 1, "turn": 2}`, Bailian, ""},
		{`{"prompt": "hi"}`, JSONL, ""},
		{`{"messages": []}`, JSONL, ""},
		{"Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n", BurstGPT, ""},
		{"timestamp, request tokens ,response tokens\n", BurstGPT, ""},
		{"TIMESTAMP,ContextTokens,GeneratedTokens\r\n", Azure, ""},
		{"  \n\t[", ShareGPT, ""},
		{"\xEF\xBB\xBF[]", ShareGPT, ""},
		{"", "", "empty file"},
		{"\n\n", "", "empty file"},
		{`{"a": 1}`, "", "line 1: cannot infer the format: a JSON object with keys a is no format"},
		{`{"a": `, "", "not valid JSON"},
		{"a,b,c\n", "", `the first line "a,b,c" is neither`},
	} {
		r, err := NewReader(strings.NewReader(c.text), "in", nil)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err = %v; want %q", c.text, err, c.err)
			}
		case err != nil:
			t.Errorf("%q: %v", c.text, err)
		case r.Format() != c.format:
			t.Errorf("%q: %s; want %s", c.text, r.Format(), c.format)
		}
	}
	// ParseFormat names every format, case-insensitively.
	for _, f := range Formats() {
		if g, err := ParseFormat(strings.ToUpper(string(f))); g != f || err != nil {
			t.Errorf("ParseFormat(%q) = %q, %v", strings.ToUpper(string(f)), g, err)
		}
	}
}

// TestDetectKeepsFirstLine: the line detection reads is the first row.
func TestDetectKeepsFirstLine(t *testing.T) {
	rows, _, err := readString("t.jsonl", timeTrace, nil)
	if err != nil || len(rows) != 5 || rows[0].Line != 1 || rows[0].Input != 100 {
		t.Errorf("%+v, %v", rows, err)
	}
}

// TestDropUnder: rows read before the bound was known lose the same rows
// MinInput would have dropped, counted and named by line; rows of text
// (Input 0) stay.
func TestDropUnder(t *testing.T) {
	rows, st, err := readString("t.jsonl", timeTrace, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows = append(rows, Row{Line: 9, Messages: []Message{{Role: "user", Content: "hi"}}})
	st.Rows++
	kept, lines := DropUnder(rows, 300, &st)
	var in []int
	for _, r := range kept {
		in = append(in, r.Input)
	}
	if d := cmp.Diff([]int{300, 400, 500, 0}, in); d != "" {
		t.Errorf("kept inputs (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int{1, 2}, lines); d != "" {
		t.Errorf("dropped lines (-want +got):\n%s", d)
	}
	if st.UnderInput != 2 || st.Rows != 4 {
		t.Errorf("stats %+v, want 2 under MinInput and 4 rows", st)
	}
	if got, want := st.String(), "4 rows; skipped 2 under MinInput"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	direct, st2, err := readString("t.jsonl", timeTrace, &Options{MinInput: 300})
	if err != nil || len(direct) != 3 || st2.UnderInput != 2 {
		t.Errorf("MinInput while reading: %d rows, %+v, %v; want the same 3 rows and 2 dropped", len(direct), st2, err)
	}
}
