package workload_test

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/inferbench/inferbench/workload"
)

// A Mooncake trace, read as a driver would: every row first, then the
// schedule. The second request shares the first block (512 tokens) of the
// first; the third repeats the first whole.
func Example() {
	trace := `{"timestamp": 0, "input_length": 700, "output_length": 20, "hash_ids": [0, 1]}
{"timestamp": 1500, "input_length": 600, "output_length": 30, "hash_ids": [0, 2]}
{"timestamp": 4000, "input_length": 700, "output_length": 10, "hash_ids": [0, 1]}
`
	rows, stats, err := workload.ReadAll(strings.NewReader(trace), "trace.jsonl", &workload.Options{Speedup: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rows {
		fmt.Printf("at %v: %d tokens in, %d out, blocks %v\n", r.At, r.Input, r.Output, r.HashIDs)
	}
	fmt.Println(stats)
	rate, hit, input := workload.PrefixHitRate(rows, workload.DefaultMooncakeBlock)
	fmt.Printf("theoretical prefix hit rate %.3f (%d of %d tokens)\n", rate, hit, input)
	// Output:
	// at 0s: 700 tokens in, 20 out, blocks [0 1]
	// at 750ms: 600 tokens in, 30 out, blocks [0 2]
	// at 2s: 700 tokens in, 10 out, blocks [0 1]
	// 3 rows
	// theoretical prefix hit rate 0.606 (1212 of 2000 tokens)
}

// A bad row refuses the trace, and the error says where and why; with
// SkipBad it is counted instead.
func ExampleReader_skipBad() {
	trace := `{"timestamp": 0, "input_length": 700, "output_length": 20, "hash_ids": [0, 1]}
{"timestamp": 10, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2]}
{"timestamp": 20, "input_length": 100, "output_length": 5, "hash_ids": [3]}
`
	_, _, err := workload.ReadAll(strings.NewReader(trace), "trace.jsonl", nil)
	var re *workload.RowError
	if errors.As(err, &re) {
		fmt.Println(err)
		fmt.Println("rule:", re.Rule)
	}

	r, err := workload.NewReader(strings.NewReader(trace), "trace.jsonl", &workload.Options{SkipBad: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for r.Next() {
		fmt.Println("line", r.Row().Line)
	}
	fmt.Println(r.Stats())
	// Output:
	// trace.jsonl line 2: hash_ids has 3 ids for input_length 6758 at block 512; want 14
	// rule: hash-ids
	// line 1
	// line 3
	// 2 rows; skipped 1 bad (hash-ids 1)
}

// Bailian conversations are chains of parent links; LinkSessions names
// each row's session by its root.
func ExampleLinkSessions() {
	f, err := os.Open("testdata/synthetic_bailian.jsonl")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	rows, _, err := workload.ReadAll(f, "synthetic_bailian.jsonl", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	workload.LinkSessions(rows)
	for _, r := range rows {
		if r.Session == "0" {
			fmt.Printf("at %v chat %s (parent %q): session %s, turn %d, %d tokens in %d blocks of 16\n",
				r.At, r.ID, r.Parent, r.Session, r.Turn, r.Input, len(r.HashIDs))
		}
	}
	// Output:
	// at 0s chat 0 (parent ""): session 0, turn 1, 653 tokens in 41 blocks of 16
	// at 46.188s chat 7 (parent "0"): session 0, turn 2, 1087 tokens in 68 blocks of 16
}
