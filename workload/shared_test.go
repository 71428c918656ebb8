package workload

import "testing"

// TestSharedPrefixRows: every prompt of a group shares exactly its System
// leading blocks with the others and nothing after them; prompts of other
// groups share nothing; a Zipf load draws the first group most often.
func TestSharedPrefixRows(t *testing.T) {
	rows, bs, err := SharedPrefix{Groups: 3, PerGroup: 4, System: 120, Question: 30, Output: 8}.Rows()
	if err != nil {
		t.Fatal(err)
	}
	if bs != 60 || len(rows) != 12 {
		t.Fatalf("block size %d, %d rows; want 60 (the largest divisor of 120 up to 64) and 12", bs, len(rows))
	}
	shared := func(a, b Row) int {
		k := 0
		for k < len(a.HashIDs) && k < len(b.HashIDs) && a.HashIDs[k] == b.HashIDs[k] {
			k++
		}
		return k
	}
	for i, a := range rows {
		if a.Input != 150 || a.Output != 8 || len(a.HashIDs) != 3 || a.Timed() {
			t.Fatalf("row %d: %+v", i, a)
		}
		for j, b := range rows[:i] {
			want := 0
			if i%3 == j%3 {
				want = 2
			}
			if got := shared(a, b); got != want {
				t.Errorf("rows %d and %d share %d blocks, want %d", i, j, got, want)
			}
		}
	}
	if rate, _, _ := PrefixHitRate(rows, bs); rate != float64(9*120)/float64(12*150) {
		t.Errorf("hit rate %v, want 9 of 12 prompts' 120 of 150 tokens", rate)
	}
	z, _, err := SharedPrefix{Groups: 8, System: 64, Question: 8, Output: 1, Zipf: 1.5, Requests: 400, Seed: 1}.Rows()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, r := range z {
		count[r.Session]++
	}
	if len(z) != 400 || count["group-0"] <= count["group-7"] || count["group-0"] < 100 {
		t.Errorf("Zipf draws %v of %d", count, len(z))
	}
	r, bs, err := SharedPrefix{Groups: 2, PerGroup: 2, Output: 4, Ratio: 0.75, Input: 1000}.Rows()
	if err != nil || r[0].Input != 1000 || shared(r[0], r[2])*bs != 750 || shared(r[0], r[1]) != 0 {
		t.Errorf("a prefix ratio of 0.75 of 1000 tokens: %v, block %d, rows %+v", err, bs, r)
	}
	for _, bad := range []SharedPrefix{{Groups: 1, PerGroup: 1, Output: 1, Ratio: 1, Input: 10}, {}, {Groups: 1, PerGroup: 1, System: 1, Question: 1, Output: 1, Zipf: 0.5}, {Groups: 1, System: 1, Question: 1, Output: 1, Zipf: 2}} {
		if _, _, err := bad.Rows(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
