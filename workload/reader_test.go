package workload

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// readString reads text as a file named f.jsonl (or whatever name says).
func readString(name, text string, o *Options) ([]Row, Stats, error) {
	return ReadAll(strings.NewReader(text), name, o)
}

// expected is testdata/synthetic_expected.json: figures the generator
// computed with Python's json and csv modules.
type expected struct {
	Rows      int   `json:"rows"`
	Input     int64 `json:"input"`
	Output    int64 `json:"output"`
	HitTokens int64 `json:"hit_tokens"`
	HitInput  int64 `json:"hit_input"`
	LastAtNS  int64 `json:"last_at_ns"`
	Sessions  int   `json:"sessions"`
	Failed    int   `json:"failed"`
	GPT4Rows  int   `json:"gpt4_rows"`
	GPT4Other int   `json:"gpt4_other"`
	NoUser    int   `json:"no_user"`
	TurnRows  int   `json:"turn_rows"`
}

func loadExpected(t *testing.T) map[string]expected {
	t.Helper()
	b, err := os.ReadFile("testdata/synthetic_expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var e map[string]expected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

func readFile(t *testing.T, name string, o *Options) ([]Row, Stats, *Reader) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := NewReader(f, name, o)
	if err != nil {
		t.Fatal(err)
	}
	var rows []Row
	for r.Next() {
		rows = append(rows, r.Row())
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return rows, r.Stats(), r
}

// TestSamples reads every synthetic sample with inferred formats and
// default options and checks the generator's figures.
func TestSamples(t *testing.T) {
	exp := loadExpected(t)
	for _, c := range []struct {
		file   string
		format Format
	}{
		{"synthetic_mooncake.jsonl", Mooncake},
		{"synthetic_bailian.jsonl", Bailian},
		{"synthetic_bailian_1k.jsonl", Bailian},
		{"synthetic_burstgpt.csv", BurstGPT},
		{"synthetic_azure.csv", Azure},
		{"synthetic_sharegpt.json", ShareGPT},
		{"synthetic_custom.jsonl", JSONL},
	} {
		t.Run(c.file, func(t *testing.T) {
			e, ok := exp[c.file]
			if !ok {
				t.Fatalf("no expected figures for %s", c.file)
			}
			rows, st, r := readFile(t, c.file, nil)
			if r.Format() != c.format {
				t.Errorf("inferred %s; want %s", r.Format(), c.format)
			}
			if len(rows) != e.Rows || st.Rows != e.Rows {
				t.Errorf("%d rows (Stats %d); want %d", len(rows), st.Rows, e.Rows)
			}
			var in, out int64
			for i, row := range rows {
				in += int64(row.Input)
				out += int64(row.Output)
				if i > 0 && row.Line <= rows[i-1].Line && c.format != ShareGPT {
					t.Errorf("row %d: line %d after line %d", i, row.Line, rows[i-1].Line)
				}
				if c.format.timed() != row.Timed() {
					t.Errorf("row %d: Timed %v for %s", i, row.Timed(), c.format)
				}
			}
			if in != e.Input || out != e.Output {
				t.Errorf("input %d, output %d; want %d, %d", in, out, e.Input, e.Output)
			}
			if c.format.timed() {
				if got := rows[len(rows)-1].At; got != time.Duration(e.LastAtNS) {
					t.Errorf("last At %v; want %v", got, time.Duration(e.LastAtNS))
				}
				if rows[0].At != 0 {
					t.Errorf("first At %v; want 0 (zero at the first row)", rows[0].At)
				}
			}
			if c.format.blocks() {
				_, hit, total := PrefixHitRate(rows, r.BlockSize())
				if hit != e.HitTokens || total != e.HitInput {
					t.Errorf("PrefixHitRate hit %d of %d; the generator computed %d of %d", hit, total, e.HitTokens, e.HitInput)
				}
			}
			if c.format == Bailian {
				if n := LinkSessions(rows); n != 0 {
					t.Errorf("LinkSessions: %d orphans; want 0", n)
				}
				sessions := map[string]bool{}
				for _, row := range rows {
					sessions[row.Session] = true
				}
				if len(sessions) != e.Sessions {
					t.Errorf("%d sessions; want %d", len(sessions), e.Sessions)
				}
			}
			if st.Failed != e.Failed || st.NoUser != e.NoUser {
				t.Errorf("Stats %+v; want %d failed, %d without a user message", st, e.Failed, e.NoUser)
			}
		})
	}
}

func TestBurstGPTModel(t *testing.T) {
	e := loadExpected(t)["synthetic_burstgpt.csv"]
	rows, st, _ := readFile(t, "synthetic_burstgpt.csv", &Options{Model: "gpt-4"})
	if len(rows) != e.GPT4Rows || st.OtherModel != e.GPT4Other || st.Failed != e.Failed {
		t.Errorf("%d rows, %v; want %d rows, %d of other models, %d failed", len(rows), st, e.GPT4Rows, e.GPT4Other, e.Failed)
	}
}

func TestShareGPTTurns(t *testing.T) {
	e := loadExpected(t)["synthetic_sharegpt.json"]
	rows, _, _ := readFile(t, "synthetic_sharegpt.json", &Options{AllTurns: true})
	if len(rows) != e.TurnRows {
		t.Fatalf("%d rows; want %d", len(rows), e.TurnRows)
	}
	first, _, _ := readFile(t, "synthetic_sharegpt.json", nil)
	want := []Row{
		{Line: 1, At: Untimed, ID: "synthetic_0", Messages: []Message{{"user", "What is a KV cache?"}}},
		{Line: 2, At: Untimed, ID: "synthetic_1", Messages: []Message{{"system", "You answer in one sentence."}, {"user", "Name a prime above 100."}}},
		{Line: 4, At: Untimed, ID: "synthetic_3", Messages: []Message{{"user", "Summarise: tokens arrive in chunks."}}},
		{Line: 5, At: Untimed, ID: "synthetic_4", Messages: []Message{{"assistant", "Hello! How can I help?"}, {"user", "Tell me about ünicode — and \"quotes\"."}}},
	}
	if d := cmp.Diff(want, first); d != "" {
		t.Errorf("first exchanges (-want +got):\n%s", d)
	}
	wantTurns := []Row{
		{Line: 1, At: Untimed, Session: "synthetic_0", Turn: 1, Messages: []Message{{"user", "What is a KV cache?"}}},
		{Line: 1, At: Untimed, Session: "synthetic_0", Turn: 2, Messages: []Message{
			{"assistant", "It keeps the attention keys and values of earlier tokens."}, {"user", "Why does prefix sharing help?"}}},
		{Line: 2, At: Untimed, Session: "synthetic_1", Turn: 1, Messages: []Message{{"system", "You answer in one sentence."}, {"user", "Name a prime above 100."}}},
		{Line: 4, At: Untimed, Session: "synthetic_3", Turn: 1, Messages: []Message{{"user", "Summarise: tokens arrive in chunks."}}},
		{Line: 4, At: Untimed, Session: "synthetic_3", Turn: 2, Messages: []Message{{"assistant", "Output is streamed."}, {"user", "Shorter?"}}},
		{Line: 4, At: Untimed, Session: "synthetic_3", Turn: 3, Messages: []Message{{"assistant", "Streaming."}, {"user", "One word again?"}}},
		{Line: 5, At: Untimed, Session: "synthetic_4", Turn: 1, Messages: []Message{{"assistant", "Hello! How can I help?"}, {"user", "Tell me about ünicode — and \"quotes\"."}}},
	}
	if d := cmp.Diff(wantTurns, rows); d != "" {
		t.Errorf("all turns (-want +got):\n%s", d)
	}
}

func TestCustomJSONL(t *testing.T) {
	rows, _, _ := readFile(t, "synthetic_custom.jsonl", nil)
	want := []Row{
		{Line: 1, At: Untimed, Output: 32, Messages: []Message{{"user", "Write a haiku about latency."}}},
		{Line: 2, At: Untimed, Messages: []Message{{"user", "Explain prefill and decode."}}},
		{Line: 3, At: Untimed, Output: 64, Messages: []Message{{"system", "Be brief."}, {"user", "What is TTFT?"}}},
		{Line: 4, At: Untimed, Output: 8, Messages: []Message{{"user", "Two parts."}}},
		{Line: 5, At: Untimed, Messages: []Message{{"user", "Hi"}, {"assistant", "Hello."}, {"user", "Bye"}}},
	}
	if d := cmp.Diff(want, rows); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestBailianRow checks every field of one Bailian row and its parent.
func TestBailianRow(t *testing.T) {
	text := `{"chat_id": 159, "parent_chat_id": -1, "timestamp": 61.114, "input_length": 20, "output_length": 132, "type": "text", "turn": 1, "hash_ids": [1089, 1090]}
{"chat_id": "160", "parent_chat_id": 159, "timestamp": 62.5, "input_length": 32, "output_length": 80, "type": "search", "hash_ids": [1089, 7]}
`
	rows, _, err := readString("b.jsonl", text, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{
		{Line: 1, At: 0, Input: 20, Output: 132, HashIDs: []int64{1089, 1090}, ID: "159", Turn: 1, Type: "text"},
		{Line: 2, At: 1386 * time.Millisecond, Input: 32, Output: 80, HashIDs: []int64{1089, 7}, ID: "160", Parent: "159", Turn: 1, Type: "search"},
	}
	if d := cmp.Diff(want, rows); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// A bad case is one file with one bad row and what the error must say.
type badCase struct {
	name string
	text string
	opts Options
	line int
	rule Rule
	msg  string // a substring of the message
}

func runBad(t *testing.T, cases []badCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows, _, err := readString("trace.x", c.text, &c.opts)
			var re *RowError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v (%d rows); want a *RowError", err, len(rows))
			}
			if !errors.Is(err, ErrBadRow) {
				t.Errorf("errors.Is(%v, ErrBadRow) is false", err)
			}
			if re.Line != c.line || re.Rule != c.rule || !strings.Contains(re.Msg, c.msg) || re.File != "trace.x" {
				t.Errorf("got %q (line %d, rule %s); want line %d, rule %s, message with %q", err, re.Line, re.Rule, c.line, c.rule, c.msg)
			}
			if !strings.HasPrefix(err.Error(), "trace.x ") {
				t.Errorf("%q does not start with the file name", err)
			}
			if re.fatal {
				return
			}
			// With SkipBad the same row is skipped and counted, and the
			// rows around it are read.
			o := c.opts
			o.SkipBad = true
			rows, st, err := readString("trace.x", c.text, &o)
			if err != nil {
				t.Fatalf("SkipBad: %v", err)
			}
			if st.Bad[c.rule] != 1 || st.BadRows() != 1 {
				t.Errorf("SkipBad: Stats.Bad %v; want %s 1", st.Bad, c.rule)
			}
			for _, r := range rows {
				if r.Line == c.line {
					t.Errorf("SkipBad: row of line %d returned", c.line)
				}
			}
		})
	}
}

const mcGood = `{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}` + "\n"

func TestMooncakeRules(t *testing.T) {
	mc := func(bad string) string {
		return mcGood + bad + "\n" + `{"timestamp": 9, "input_length": 1, "output_length": 1, "hash_ids": [9]}` + "\n"
	}
	o := Options{Format: Mooncake}
	runBad(t, []badCase{
		{"too few ids", mc(`{"timestamp": 1, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2]}`), o, 2, RuleHashIDs,
			"hash_ids has 3 ids for input_length 6758 at block 512; want 14"},
		{"too many ids", mc(`{"timestamp": 1, "input_length": 512, "output_length": 5, "hash_ids": [0, 1]}`), o, 2, RuleHashIDs,
			"hash_ids has more than 1 ids for input_length 512 at block 512; want 1"},
		{"too many ids, input after", mc(`{"timestamp": 1, "hash_ids": [0, 1], "input_length": 512, "output_length": 5}`), o, 2, RuleHashIDs,
			"hash_ids has 2 ids for input_length 512 at block 512; want 1"},
		{"no ids", mc(`{"timestamp": 1, "input_length": 5, "output_length": 5, "hash_ids": []}`), o, 2, RuleHashIDs, "has 0 ids"},
		{"negative id", mc(`{"timestamp": 1, "input_length": 5, "output_length": 5, "hash_ids": [-1]}`), o, 2, RuleHashIDs, "hash_ids[0] is -1"},
		{"float id", mc(`{"timestamp": 1, "input_length": 5, "output_length": 5, "hash_ids": [1.5]}`), o, 2, RuleHashIDs, "hash_ids[0] is 1.5"},
		{"huge id", mc(`{"timestamp": 1, "input_length": 5, "output_length": 5, "hash_ids": [9223372036854775808]}`), o, 2, RuleHashIDs, "hash_ids[0] is 9223372036854775808"},
		{"string id", mc(`{"timestamp": 1, "input_length": 5, "output_length": 5, "hash_ids": ["a"]}`), o, 2, RuleField, "hash_ids[0] is a string"},
		{"ids not array", mc(`{"timestamp": 1, "input_length": 5, "output_length": 5, "hash_ids": 3}`), o, 2, RuleField, "hash_ids is a number"},
		{"missing ids", mc(`{"timestamp": 1, "input_length": 5, "output_length": 5}`), o, 2, RuleField, "missing hash_ids"},
		{"missing input", mc(`{"timestamp": 1, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleField, "missing input_length"},
		{"missing timestamp", mc(`{"input_length": 5, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleField, "missing timestamp"},
		{"input 0", mc(`{"timestamp": 1, "input_length": 0, "output_length": 5, "hash_ids": []}`), o, 2, RuleInput, "input_length 0 is below 1"},
		{"input negative", mc(`{"timestamp": 1, "input_length": -5, "output_length": 5, "hash_ids": []}`), o, 2, RuleInput, "input_length -5 is below 1"},
		{"input 1e12", mc(`{"timestamp": 1, "input_length": 1000000000000, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleInput, "exceeds the bound of 10000000 tokens"},
		{"input float", mc(`{"timestamp": 1, "input_length": 5.5, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleInput, "input_length 5.5 is not an integer"},
		{"input string", mc(`{"timestamp": 1, "input_length": "5", "output_length": 5, "hash_ids": [1]}`), o, 2, RuleField, "input_length is a string; want an integer"},
		{"output 0", mc(`{"timestamp": 1, "input_length": 5, "output_length": 0, "hash_ids": [1]}`), o, 2, RuleOutput, "output_length 0 is below 1"},
		{"output huge", mc(`{"timestamp": 1, "input_length": 5, "output_length": 10000001, "hash_ids": [1]}`), o, 2, RuleOutput, "exceeds the bound"},
		{"timestamp negative", mc(`{"timestamp": -1, "input_length": 5, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleTimestamp, "timestamp -1 is negative"},
		{"timestamp 1e300", mc(`{"timestamp": 1e300, "input_length": 5, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleTimestamp, "exceeds the bound of 100 years"},
		{"timestamp huge int", mc(`{"timestamp": 99999999999999999999999, "input_length": 5, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleTimestamp, "exceeds the bound"},
		{"timestamp NaN", mc(`{"timestamp": NaN, "input_length": 5, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleSyntax, "not valid JSON"},
		{"timestamp string", mc(`{"timestamp": "0", "input_length": 5, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleField, "timestamp is a string; want a number"},
		{"order", `{"timestamp": 10, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}` + "\n" +
			`{"timestamp": 9, "input_length": 5, "output_length": 5, "hash_ids": [1]}` + "\n" +
			`{"timestamp": 11, "input_length": 5, "output_length": 5, "hash_ids": [1]}` + "\n", o, 2, RuleOrder, "timestamp 9ms is before the previous row's 10ms"},
		{"syntax", mc(`{"timestamp": 1, "input_length": 5,, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleSyntax, "not valid JSON"},
		{"trailing data", mc(`{"timestamp": 1, "input_length": 5, "output_length": 5, "hash_ids": [1]} x`), o, 2, RuleSyntax, "data after the object"},
		{"not an object", mc(`[1, 2]`), o, 2, RuleSyntax, "want '{'"},
		{"leading zero", mc(`{"timestamp": 01, "input_length": 5, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleSyntax, "leading zero"},
		{"deep nesting", mc(`{"timestamp": 1, "x": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `, "input_length": 5, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleSyntax, "nested deeper than 64"},
		{"truncated last line", mcGood + `{"timestamp": 1, "input_length": 5, "output_le`, o, 2, RuleTruncated, "is the file truncated?"},
		{"block 64", `{"timestamp": 1, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}` + "\n",
			Options{Format: Mooncake, BlockSize: 64}, 1, RuleHashIDs, "at block 64; want 10"},
		{"ts bound after unit", mcGood + `{"timestamp": 3200000000, "input_length": 5, "output_length": 5, "hash_ids": [1]}` + "\n",
			Options{Format: Mooncake, Unit: time.Second}, 2, RuleTimestamp, "exceeds the bound"},
		{"speedup bound", mcGood + `{"timestamp": 3000000000, "input_length": 5, "output_length": 5, "hash_ids": [1]}` + "\n",
			Options{Format: Mooncake, Unit: time.Second, Speedup: 1e-9}, 2, RuleTimestamp, "at speedup 1e-09 exceeds"},
	})
}

func TestBailianRules(t *testing.T) {
	good := `{"chat_id": 1, "parent_chat_id": -1, "timestamp": 0.5, "input_length": 17, "output_length": 5, "type": "text", "turn": 1, "hash_ids": [0, 1]}` + "\n"
	b := func(bad string) string { return good + bad + "\n" + good }
	o := Options{Format: Bailian}
	runBad(t, []badCase{
		{"block 16", b(`{"chat_id": 2, "timestamp": 1, "input_length": 33, "output_length": 5, "hash_ids": [0, 1]}`), o, 2, RuleHashIDs,
			"hash_ids has 2 ids for input_length 33 at block 16; want 3"},
		{"missing chat_id", b(`{"timestamp": 1, "input_length": 5, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleField, "missing chat_id"},
		{"parent -2", b(`{"chat_id": 2, "parent_chat_id": -2, "timestamp": 1, "input_length": 5, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleField, "parent_chat_id -2 is negative"},
		{"chat_id object", b(`{"chat_id": {}, "timestamp": 1, "input_length": 5, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleField, "chat_id is an object"},
		{"turn negative", b(`{"chat_id": 2, "turn": -1, "timestamp": 1, "input_length": 5, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleField, "turn -1 is not an integer"},
		{"turn 0", b(`{"chat_id": 2, "turn": 0, "timestamp": 1, "input_length": 5, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleField, "Bailian turns count from 1"},
		{"turn string", b(`{"chat_id": 2, "turn": "2", "timestamp": 1, "input_length": 5, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleField, "turn is a string"},
		{"type number", b(`{"chat_id": 2, "type": 3, "timestamp": 1, "input_length": 5, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleField, "type is a number"},
		{"bad escape", b(`{"chat_id": 2, "type": "\x", "timestamp": 1, "input_length": 5, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleSyntax, "bad escape"},
		{"timestamp float negative", b(`{"chat_id": 2, "timestamp": -0.001, "input_length": 5, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleTimestamp, "negative"},
		{"order", b(`{"chat_id": 2, "timestamp": 0.25, "input_length": 5, "output_length": 5, "hash_ids": [1]}`), o, 2, RuleOrder, "timestamp 250ms is before the previous row's 500ms"},
	})
}

func TestBurstGPTRules(t *testing.T) {
	head := "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
	good := "5,ChatGPT,472,18,490,Conversation log\n"
	b := func(bad string) string { return head + good + bad + "\n" + "9,GPT-4,1,1,2,API log\n" }
	o := Options{Format: BurstGPT}
	runBad(t, []badCase{
		{"request 0", b("6,ChatGPT,0,18,18,Conversation log"), o, 3, RuleInput, "Request tokens 0 is below 1"},
		{"request negative", b("6,ChatGPT,-3,18,18,Conversation log"), o, 3, RuleInput, "Request tokens -3 is below 1"},
		{"request text", b("6,ChatGPT,many,18,18,Conversation log"), o, 3, RuleInput, `Request tokens "many" is not an integer`},
		{"response negative", b("6,ChatGPT,3,-1,2,Conversation log"), o, 3, RuleOutput, "Response tokens -1 is below 1"},
		{"timestamp NaN", b("NaN,ChatGPT,3,1,4,Conversation log"), o, 3, RuleTimestamp, `timestamp "NaN" is not a number`},
		{"timestamp Inf", b("+Inf,ChatGPT,3,1,4,Conversation log"), o, 3, RuleTimestamp, "is not a number"},
		{"timestamp hex", b("0x10,ChatGPT,3,1,4,Conversation log"), o, 3, RuleTimestamp, "is not a number"},
		{"timestamp negative", b("-6,ChatGPT,3,1,4,Conversation log"), o, 3, RuleTimestamp, "negative"},
		{"order", b("4,ChatGPT,3,1,4,Conversation log"), o, 3, RuleOrder, "timestamp 4s is before the previous row's 5s"},
		{"too few fields", b("6,ChatGPT,3,1"), o, 3, RuleField, "has 4 fields; the header has 6"},
		{"too many fields", b("6,ChatGPT,3,1,4,API log,x"), o, 3, RuleField, "has more fields than the header's 6"},
		{"open quote", b(`6,"ChatGPT,3,1,4,API log`), o, 3, RuleSyntax, "runs past the line end"},
		{"truncated", head + good + "6,ChatGPT,3", o, 3, RuleTruncated, "is the file truncated?"},
		{"no header column", "Timestamp,Model,Response tokens\n1,a,2\n", o, 1, RuleHeader, `no "Request tokens" column`},
		{"duplicate column", "Timestamp,Timestamp,Request tokens,Response tokens\n1,1,2,3\n", o, 1, RuleHeader, `column "Timestamp" appears twice`},
		{"model filter without column", "Timestamp,Request tokens,Response tokens\n1,2,3\n", Options{Format: BurstGPT, Model: "GPT-4"}, 1, RuleHeader, `no "Model" column`},
		{"empty", "", o, 1, RuleHeader, "the file is empty"},
	})
}

func TestBurstGPTColumns(t *testing.T) {
	// BurstGPT_3's columns, in another order, quoted, with a failure.
	text := "\"Session ID\",Timestamp,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\r\n" +
		"\"a,b\",10.5,3,GPT-4,100,0,100,API log\r\n" +
		"s1,10.5,3,GPT-4,100,20,120,API log\r\n" +
		"s1,12,3,ChatGPT,50,5,55,\"Conversation log\"\r\n"
	rows, st, err := readString("b3.csv", text, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{
		{Line: 3, At: 0, Input: 100, Output: 20, Session: "s1", Type: "API log"},
		{Line: 4, At: 1500 * time.Millisecond, Input: 50, Output: 5, Session: "s1", Type: "Conversation log"},
	}
	if d := cmp.Diff(want, rows); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if st.Failed != 1 {
		t.Errorf("Failed %d; want 1", st.Failed)
	}
}

func TestAzureRules(t *testing.T) {
	head := "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	good := "2023-11-16 18:15:46.6805900,374,44\n"
	b := func(bad string) string { return head + good + bad + "\n" + "2023-11-16 18:15:50.9951690,396,109\n" }
	o := Options{Format: Azure}
	runBad(t, []badCase{
		{"date", b("yesterday,374,44"), o, 3, RuleTimestamp, `TIMESTAMP "yesterday" is not a date`},
		{"before 1970", b("1969-12-31 23:59:59.0000000,374,44"), o, 3, RuleTimestamp, "outside 1970 to 2069"},
		{"order", b("2023-11-16 18:15:46.6805899,374,44"), o, 3, RuleOrder, "timestamp 2023-11-16 18:15:46.6805899 is before the previous row's 2023-11-16 18:15:46.6805900"},
		{"context 0", b("2023-11-16 18:15:47.0000000,0,44"), o, 3, RuleInput, "ContextTokens 0 is below 1"},
		{"generated 0", b("2023-11-16 18:15:47.0000000,5,0"), o, 3, RuleOutput, "GeneratedTokens 0 is below 1"},
		{"generated huge", b("2023-11-16 18:15:47.0000000,5,99999999999"), o, 3, RuleOutput, "exceeds the bound"},
		{"header", "TIMESTAMP,ContextTokens\n2023-11-16 18:15:47,5\n", o, 1, RuleHeader, `no "GeneratedTokens" column`},
	})
}

func TestAzureTimes(t *testing.T) {
	text := "TIMESTAMP,ContextTokens,GeneratedTokens\n" +
		"2023-11-16 18:15:46.6805900,374,44\n" +
		"2023-11-16 18:15:46.6805901,1,1\n" + // seven digits: 100 ns
		"2023-11-16T18:15:47,1,1\n" + // no fraction, T separator
		"2023-11-16 18:16:46.680590012,1,1\n" // nine digits
	rows, _, err := readString("a.csv", text, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := []time.Duration{rows[0].At, rows[1].At, rows[2].At, rows[3].At}
	want := []time.Duration{0, 100, 319410000, time.Minute + 12}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	rows, _, err = readString("a.csv", text, &Options{Absolute: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Duration(time.Date(2023, 11, 16, 18, 15, 46, 680590000, time.UTC).UnixNano()); rows[0].At != want {
		t.Errorf("absolute At %v; want %v since the Unix epoch", rows[0].At, want)
	}
}

func TestShareGPTRules(t *testing.T) {
	o := Options{Format: ShareGPT}
	conv := `{"id": "a", "conversations": [{"from": "human", "value": "hi"}]}`
	runBad(t, []badCase{
		{"role", `[` + conv + `, {"id": "b", "conversations": [{"from": "robot", "value": "x"}]}, ` + conv + `]`, o, 2, RuleRole, `conversations[0].from is "robot"`},
		{"value type", `[` + conv + `, {"id": "b", "conversations": [{"from": "human", "value": 3}]}, ` + conv + `]`, o, 2, RuleField, "value is a JSON number; want a string"},
		{"id type", `[` + conv + `, {"id": {}, "conversations": [{"from": "human", "value": "x"}]}, ` + conv + `]`, o, 2, RuleField, "id is a JSON object"},
		{"element type", `[` + conv + `, 7, ` + conv + `]`, o, 2, RuleField, "the record is a JSON number; want an object"},
		{"not an array", `{"id": "a"}`, o, 1, RuleSyntax, "want a JSON array of conversations"},
		{"syntax", `[` + conv + `, {"id": "b",, }]`, o, 2, RuleSyntax, "not valid JSON"},
		{"truncated", `[` + conv + `, {"id": "b", "conv`, o, 2, RuleTruncated, "is it truncated?"},
		{"no closing bracket", `[` + conv, o, 2, RuleTruncated, "is it truncated?"},
		{"data after", `[` + conv + `] [`, o, 1, RuleSyntax, "data after the array"},
		{"empty", ``, o, 1, RuleSyntax, "the file is empty"},
	})
}

func TestJSONLRules(t *testing.T) {
	good := `{"prompt": "hi", "output_tokens": 3}` + "\n"
	b := func(bad string) string { return good + bad + "\n" + good }
	o := Options{Format: JSONL}
	runBad(t, []badCase{
		{"both", b(`{"prompt": "a", "messages": [{"role": "user", "content": "b"}]}`), o, 2, RuleField, "has both prompt and messages"},
		{"neither", b(`{"text": "a"}`), o, 2, RuleField, "missing prompt or messages"},
		{"empty messages", b(`{"messages": []}`), o, 2, RuleField, "messages is empty"},
		{"role", b(`{"messages": [{"role": "tool", "content": "b"}]}`), o, 2, RuleRole, `messages[0].role is "tool"`},
		{"image part", b(`{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]}`), o, 2, RuleField, `content[0] is of type "image_url"`},
		{"content number", b(`{"messages": [{"role": "user", "content": 5}]}`), o, 2, RuleField, "content is a number"},
		{"prompt number", b(`{"prompt": 5}`), o, 2, RuleField, "prompt is a JSON number; want a string"},
		{"output 0", b(`{"prompt": "a", "output_tokens": 0}`), o, 2, RuleOutput, "output_tokens 0 is below 1"},
		{"output float", b(`{"prompt": "a", "output_tokens": 2.5}`), o, 2, RuleOutput, "output_tokens 2.5 is not an integer"},
		{"output huge", b(`{"prompt": "a", "output_tokens": 1e12}`), o, 2, RuleOutput, "exceeds the bound"},
		{"syntax", b(`{"prompt": "a"`), o, 2, RuleSyntax, "not valid JSON"},
		{"array", b(`["a"]`), o, 2, RuleSyntax, "not a JSON object"},
		{"truncated", good + `{"prompt": "a`, o, 2, RuleTruncated, "is the file truncated?"},
	})
}

// TestLineEnds checks a byte order mark, CRLF, blank lines and a last line
// without a line end.
func TestLineEnds(t *testing.T) {
	text := "\xEF\xBB\xBF" + strings.ReplaceAll(mcGood, "\n", "\r\n") + "\r\n  \n" +
		`{"timestamp": 7, "input_length": 1, "output_length": 1, "hash_ids": [3]}`
	rows, _, err := readString("t.jsonl", text, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[1].Line != 4 || rows[1].At != 7*time.Millisecond {
		t.Errorf("rows %+v; want 2, the second on line 4 at 7ms", rows)
	}
	csvText := "\xEF\xBB\xBFTIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:15:46.6805900,374,44"
	rows, _, err = readString("a.csv", csvText, nil)
	if err != nil || len(rows) != 1 || rows[0].Input != 374 {
		t.Errorf("CSV with BOM and CRLF: %+v, %v", rows, err)
	}
	sg := "\xEF\xBB\xBF\r\n [{\"id\": \"x\", \"conversations\": [{\"from\": \"human\", \"value\": \"a\"}]}]\r\n"
	rows, _, err = readString("s.json", sg, nil)
	if err != nil || len(rows) != 1 {
		t.Errorf("ShareGPT with BOM and CRLF: %+v, %v", rows, err)
	}
}

// bigReader yields head, then n bytes of fill, then tail, without holding
// the fill.
type bigReader struct {
	head, tail []byte
	fill       byte
	n          int64
	stage      int
}

func (b *bigReader) Read(p []byte) (int, error) {
	for {
		switch b.stage {
		case 0:
			if len(b.head) > 0 {
				n := copy(p, b.head)
				b.head = b.head[n:]
				return n, nil
			}
			b.stage++
		case 1:
			if b.n > 0 {
				k := min(int64(len(p)), b.n)
				for i := range k {
					p[i] = b.fill
				}
				b.n -= k
				return int(k), nil
			}
			b.stage++
		case 2:
			if len(b.tail) > 0 {
				n := copy(p, b.tail)
				b.tail = b.tail[n:]
				return n, nil
			}
			return 0, io.EOF
		}
	}
}

// TestLongLine reads a line of 20 MiB: a bad row that is read past, not
// held, and with SkipBad the next line is read.
func TestLongLine(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 20 MiB")
	}
	mk := func() *bigReader {
		return &bigReader{
			head: []byte(mcGood + `{"timestamp": 1, "x": "`), fill: 'a', n: 20 << 20,
			tail: []byte(`"}` + "\n" + `{"timestamp": 2, "input_length": 1, "output_length": 1, "hash_ids": [3]}` + "\n"),
		}
	}
	_, _, err := ReadAll(mk(), "long.jsonl", nil)
	var re *RowError
	if !errors.As(err, &re) || re.Line != 2 || re.Rule != RuleLineLength {
		t.Fatalf("err = %v; want line 2, rule line-length", err)
	}
	rows, st, err := ReadAll(mk(), "long.jsonl", &Options{SkipBad: true})
	if err != nil || len(rows) != 2 || rows[1].Line != 3 || st.Bad[RuleLineLength] != 1 {
		t.Errorf("SkipBad: %d rows, %v, %v; want 2 rows, the second on line 3", len(rows), st, err)
	}
	// A ShareGPT record over the bound ends the read.
	sg := &bigReader{head: []byte(`[{"id": "`), fill: 'a', n: 20 << 20, tail: []byte(`"}]`)}
	_, _, err = ReadAll(sg, "big.json", &Options{SkipBad: true})
	if !errors.As(err, &re) || re.Line != 1 || !re.Record || re.Rule != RuleLineLength {
		t.Errorf("ShareGPT: err = %v; want record 1, rule line-length", err)
	}
}

// TestHostileClaims reads rows that claim more than they hold: each is
// refused, and reading it allocates in proportion to its bytes, not to
// its claims.
func TestHostileClaims(t *testing.T) {
	ids := func(n int) string { return strings.TrimSuffix(strings.Repeat("0,", n), ",") }
	for _, c := range []struct {
		name, line string
		opts       Options
		msg        string
	}{
		{"10^7 tokens at block 1, three ids", `{"timestamp": 0, "input_length": 10000000, "output_length": 1, "hash_ids": [1, 2, 3]}`,
			Options{BlockSize: 1}, "hash_ids has 3 ids for input_length 10000000 at block 1; want 10000000"},
		{"10^12 tokens", `{"timestamp": 0, "input_length": 1000000000000, "output_length": 1, "hash_ids": [1]}`,
			Options{}, "exceeds the bound of 10000000 tokens"},
		{"2^20+1 ids before the input length", `{"timestamp": 0, "hash_ids": [` + ids(MaxHashIDs+1) + `], "input_length": 5}`,
			Options{}, "hash_ids has more than 1048576 ids"},
		{"8 MiB of ids for a short input", `{"timestamp": 0, "input_length": 5, "hash_ids": [` + ids(4<<20) + `]}`,
			Options{}, "hash_ids has more than 1 ids for input_length 5 at block 512; want 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			c.opts.Format = Mooncake
			_, _, err := readString("h.jsonl", c.line+"\n", &c.opts)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("err = %v; want %q", err, c.msg)
			}
			if got, bound := after.TotalAlloc-before.TotalAlloc, uint64(1<<20+12*len(c.line)); got > bound {
				t.Errorf("allocated %d bytes for a line of %d; want at most %d", got, len(c.line), bound)
			}
		})
	}
}
