package workload

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRealTraces reads public trace files from the directory named by
// INFERBENCH_TRACES, when it is set, and checks the figures their
// publishers give (Mooncake's README: 12,031 and 3,993 requests, mean
// inputs 12,035 and 15,325) and the ones computed from the files with
// Python's json and csv modules (spans, theoretical hit tokens). Files
// that are not there are skipped. The files:
//
//	conversation_trace.jsonl, synthetic_trace.jsonl   kvcache-ai/Mooncake FAST25-release/traces
//	AzureLLMInferenceTrace_{code,conv}.csv             Azure/AzurePublicDataset data/
func TestRealTraces(t *testing.T) {
	dir := os.Getenv("INFERBENCH_TRACES")
	if dir == "" {
		t.Skip("INFERBENCH_TRACES is not set")
	}
	for _, c := range []struct {
		file       string
		format     Format
		rows       int
		meanIn     float64
		hit, input int64
		last       time.Duration
	}{
		{"conversation_trace.jsonl", Mooncake, 12031, 12035.06, 54098411, 144793823, 3536999 * time.Millisecond},
		{"synthetic_trace.jsonl", Mooncake, 3993, 15325.48, 39852661, 61194628, 1022025 * time.Millisecond},
		{"AzureLLMInferenceTrace_code.csv", Azure, 8819, 2047.85, 0, 0, 3435948056 * time.Microsecond},
		{"AzureLLMInferenceTrace_conv.csv", Azure, 19366, 1154.70, 0, 0, 3501721937 * time.Microsecond},
	} {
		t.Run(c.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join(dir, c.file))
			if os.IsNotExist(err) {
				t.Skip("not there")
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r, err := NewReader(f, c.file, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Format() != c.format {
				t.Errorf("inferred %s; want %s", r.Format(), c.format)
			}
			var rows []Row
			for r.Next() {
				rows = append(rows, r.Row())
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			if len(rows) != c.rows {
				t.Fatalf("%d rows; want %d", len(rows), c.rows)
			}
			var in int64
			for _, row := range rows {
				in += int64(row.Input)
			}
			if mean := float64(in) / float64(len(rows)); math.Abs(mean-c.meanIn) > 0.005 {
				t.Errorf("mean input %.2f; want %.2f", mean, c.meanIn)
			}
			if last := rows[len(rows)-1].At; last != c.last {
				t.Errorf("last At %v; want %v", last, c.last)
			}
			if c.format.blocks() {
				rate, hit, input := PrefixHitRate(rows, r.BlockSize())
				if hit != c.hit || input != c.input {
					t.Errorf("PrefixHitRate %d of %d tokens; want %d of %d", hit, input, c.hit, c.input)
				}
				t.Logf("theoretical prefix hit rate %.4f", rate)
			}
		})
	}
}
