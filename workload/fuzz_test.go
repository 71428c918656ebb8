package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fuzzRead reads data as format under options the flags pick and checks
// that the reader never panics, that every row keeps the bounds, that
// every error is a *RowError naming the file and a line (or record) from
// 1, and that reading allocates in proportion to the input, not to what
// the input claims.
func fuzzRead(t *testing.T, format Format, data []byte, flags uint8) {
	o := Options{
		Format:    format,
		SkipBad:   flags&1 != 0,
		Sort:      flags&2 != 0 && format.timed(),
		AllTurns:  flags&4 != 0 && format == ShareGPT,
		MaxOutput: int(flags>>4) * 100,
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := NewReader(bytes.NewReader(data), "fuzz.in", &o)
	rows := 0
	if err == nil {
		for r.Next() {
			row := r.Row()
			rows++
			switch {
			case row.Line < 1:
				t.Fatalf("row %d: line %d", rows, row.Line)
			case len(row.HashIDs) > MaxHashIDs, row.Input > MaxTokens, row.Output > MaxTokens, row.Input < 0, row.Output < 0:
				t.Fatalf("row %d out of bounds: %d ids, input %d, output %d", rows, len(row.HashIDs), row.Input, row.Output)
			case row.At > MaxTime || (row.At < 0 && row.At != Untimed):
				t.Fatalf("row %d: At %v", rows, row.At)
			case format.timed() != row.Timed():
				t.Fatalf("row %d: Timed %v for %s", rows, row.Timed(), format)
			case o.MaxOutput > 0 && row.Output > o.MaxOutput:
				t.Fatalf("row %d: output %d over MaxOutput %d", rows, row.Output, o.MaxOutput)
			}
			for _, id := range row.HashIDs {
				if id < 0 {
					t.Fatalf("row %d: negative id %d", rows, id)
				}
			}
			if format.blocks() && len(row.HashIDs) != ceilDiv(row.Input, r.BlockSize()) {
				t.Fatalf("row %d: %d ids for input %d", rows, len(row.HashIDs), row.Input)
			}
		}
		err = r.Err()
	}
	if err != nil {
		var re *RowError
		if !errors.As(err, &re) {
			t.Fatalf("error %q is not a *RowError", err)
		}
		where := "fuzz.in line "
		if re.Record {
			where = "fuzz.in record "
		}
		if re.Line < 1 || !strings.HasPrefix(err.Error(), where) || re.Rule == "" {
			t.Fatalf("error %q (line %d, rule %q) does not name the file, a line and a rule", err, re.Line, re.Rule)
		}
	}
	runtime.ReadMemStats(&after)
	if got, bound := after.TotalAlloc-before.TotalAlloc, uint64(1<<20+64*len(data)); got > bound {
		t.Fatalf("reading %d bytes allocated %d bytes; the bound is %d", len(data), got, bound)
	}
}

// addSeeds adds the sample files of the format and hostile inputs.
func addSeeds(f *testing.F, sample string, seeds ...string) {
	if sample != "" {
		b, err := os.ReadFile(filepath.Join("testdata", sample))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(0))
		f.Add(b, uint8(3))
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint8(i%8))
	}
}

var traceSeeds = []string{
	mcGood,
	`{"timestamp": 0, "input_length": 10000000, "output_length": 1, "hash_ids": [0]}`,
	`{"timestamp": 0, "input_length": 1000000000000, "output_length": 1, "hash_ids": [0]}`,
	`{"timestamp": 1e300, "input_length": 1, "output_length": 1, "hash_ids": [0]}`,
	`{"timestamp": -1, "input_length": 1, "output_length": 1, "hash_ids": [0]}`,
	`{"hash_ids": [` + strings.Repeat("0,", 5000) + `0], "timestamp": 0, "input_length": 3}`,
	"\xEF\xBB\xBF" + strings.ReplaceAll(mcGood, "\n", "\r\n"),
	mcGood + `{"timestamp": 1, "input_len`,
	`{"timestamp": 2, "input_length": 1, "output_length": 1, "hash_ids": [0]}` + "\n" + mcGood,
	`{"x": ` + strings.Repeat("[", 70) + `}`,
	`{"chat_id": 1, "parent_chat_id": -1, "timestamp": 0.5, "input_length": 17, "output_length": 5, "type": "te\u0078t", "turn": 1, "hash_ids": [0, 1]}`,
	`{"chat_id": "a\"b", "parent_chat_id": "x", "timestamp": 0, "input_length": 1, "hash_ids": [1], "session_id": 7}`,
}

func FuzzMooncake(f *testing.F) {
	addSeeds(f, "synthetic_mooncake.jsonl", traceSeeds...)
	f.Fuzz(func(t *testing.T, data []byte, flags uint8) { fuzzRead(t, Mooncake, data, flags) })
}

func FuzzBailian(f *testing.F) {
	addSeeds(f, "synthetic_bailian.jsonl", traceSeeds...)
	f.Fuzz(func(t *testing.T, data []byte, flags uint8) { fuzzRead(t, Bailian, data, flags) })
}

func FuzzBurstGPT(f *testing.F) {
	h := "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
	addSeeds(f, "synthetic_burstgpt.csv",
		h+"5,ChatGPT,472,18,490,Conversation log\n",
		h+"NaN,ChatGPT,472,18,490,Conversation log\n",
		h+"1e300,ChatGPT,99999999999,18,490,Conversation log\n",
		h+"5,ChatGPT,-1,-1,490,Conversation log\n",
		h+`5,"Chat""GPT",1,1,2,"a,b"`+"\r\n"+`6,"open`,
		h+strings.Repeat(",", 3000)+"\n",
		"Timestamp,Request tokens\n",
		"\xEF\xBB\xBF"+h,
	)
	f.Fuzz(func(t *testing.T, data []byte, flags uint8) { fuzzRead(t, BurstGPT, data, flags) })
}

func FuzzAzure(f *testing.F) {
	h := "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	addSeeds(f, "synthetic_azure.csv",
		h+"2023-11-16 18:15:46.6805900,374,44\n",
		h+"2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:46.68059,1,1\n",
		h+"1969-12-31 23:59:59,1,1\n",
		h+"2262-04-11 23:47:16.854775808,1,1\n",
		h+"2023-11-16T18:15:46Z,1,1\n",
		h+"2023-11-16 18:15:46.6805900,0,0",
	)
	f.Fuzz(func(t *testing.T, data []byte, flags uint8) { fuzzRead(t, Azure, data, flags) })
}

func FuzzShareGPT(f *testing.F) {
	c := `{"id": "a", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "yo"}]}`
	addSeeds(f, "synthetic_sharegpt.json",
		`[`+c+`,`+c+`]`,
		`[`+c+`, 7, {"conversation": [{"from": "user", "value": "x"}]}, {"id": 3}]`,
		`[{"id": {}, "conversations": [{"from": "robot"}]}]`,
		`[`+strings.Repeat(`{"conversations": []},`, 200)+c+`]`,
		`[`+c,
		`[`+c+`] x`,
		`{}`,
		``,
		`[`+strings.Repeat("[", 100),
	)
	f.Fuzz(func(t *testing.T, data []byte, flags uint8) { fuzzRead(t, ShareGPT, data, flags) })
}

func FuzzJSONL(f *testing.F) {
	addSeeds(f, "synthetic_custom.jsonl",
		`{"prompt": "hi", "output_tokens": 3}`,
		`{"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}], "output_tokens": 1e12}`,
		`{"messages": [{"role": "tool", "content": 1}]}`,
		`{"prompt": "a", "messages": []}`,
		`{"prompt": "a`,
		"\xEF\xBB\xBF{\"prompt\": \"\\u00e9\"}\r\n",
	)
	f.Fuzz(func(t *testing.T, data []byte, flags uint8) { fuzzRead(t, JSONL, data, flags) })
}

// FuzzJSONScan checks the in-place JSON scanner against encoding/json:
// what it accepts, json.Valid accepts; what json.Valid accepts, it
// accepts unless nested deeper than its bound.
func FuzzJSONScan(f *testing.F) {
	for _, s := range append(traceSeeds, `"\u12`, `[1,]`, `{"a":1,}`, `-01`, `1.e5`, `[true, false, null, "x\ty"]`, "\"\x01\"", `{"a" 1}`) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := jscan{b: data}
		s.ws()
		err := s.skip(0)
		s.ws()
		ok := err == nil && s.i == len(data)
		valid := json.Valid(data)
		if ok && !valid {
			t.Fatalf("scanner accepts %q, which json.Valid refuses", data)
		}
		if valid && !ok && bytes.Count(data, []byte("["))+bytes.Count(data, []byte("{")) <= maxDepth {
			t.Fatalf("scanner refuses %q (%v), which json.Valid accepts", data, err)
		}
	})
}
