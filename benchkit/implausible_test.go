package benchkit

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
)

// lyingEngine is a fakeEngine whose every second answer reports a
// generation rate of 6.5e19 tok/s and 2e18 generated tokens, as a broken
// or hostile server did, and fails with the adapter's implausible_usage
// error, keeping what it received.
type lyingEngine struct {
	fakeEngine
	n atomic.Int64
}

func (e *lyingEngine) Complete(ctx context.Context, req engine.Request) (engine.Result, error) {
	res, err := e.fakeEngine.Complete(ctx, req)
	if err != nil || e.n.Add(1)%2 == 1 {
		return res, err
	}
	res.ServerStats.GenerationTPS, res.ServerStats.GenerationTokens = 6.5e19, 2e18
	res.Usage = &engine.Usage{CompletionTokens: 2e18}
	return res, engine.CheckRate("generation_stats.generation_tps", res.ServerStats.GenerationTPS)
}

// TestRunnerImplausibleRows: a request whose server reported an
// implausible number is a failed row whose figures that rest on the
// server's counts are null, whose error names the number and its bound,
// and which the summary leaves out; the run goes on, and the rows encode
// as valid JSON.
func TestRunnerImplausibleRows(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := "json"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			var col Collector
			r := &Runner{Engine: &lyingEngine{}, Model: "m", Builder: &promptsize.Builder{Counter: wordCounter}, Sinks: []Sink{&col}}
			plan := Plan{PP: []int{20}, TG: []int{4}, Concurrency: []int{1}, Repeat: 4, Stream: stream}
			rep, err := r.Run(context.Background(), plan)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Requests) != 4 || rep.Failed() != 2 {
				t.Fatalf("%d rows, %d failed; want 4 and 2", len(rep.Requests), rep.Failed())
			}
			for _, row := range rep.Requests {
				if !row.Failed() {
					if row.CompletionTokens == nil || *row.CompletionTokens != 4 || row.Stats == nil {
						t.Errorf("honest row: tokens %v, stats %v", row.CompletionTokens, row.Stats)
					}
					continue
				}
				if row.ErrorKind != string(engine.KindImplausibleUsage) || !strings.Contains(row.Error, "6.5e+19") || !strings.Contains(row.Error, "1e+07") {
					t.Errorf("row kind %q, error %q; want implausible_usage naming 6.5e+19 and 1e+07", row.ErrorKind, row.Error)
				}
				if row.Stats != nil || row.CompletionTokens != nil || row.TPOTS != nil || row.GenerationTPS != nil || row.ITLS != nil {
					t.Errorf("implausible row keeps figures: stats %v, tokens %v, tpot %v, client tps %v, itl %v",
						row.Stats, row.CompletionTokens, row.TPOTS, row.GenerationTPS, row.ITLS)
				}
				if row.AnswerTokens != nil || row.TPOTAnswerS != nil || row.HiddenTokens != 0 {
					t.Errorf("implausible row keeps the answer's counts: tokens %v, TPOT %v", val(row.AnswerTokens), val(row.TPOTAnswerS))
				}
				if row.E2ES == nil || stream != (row.TTFTS != nil) || stream != (row.TTFAS != nil) {
					t.Errorf("implausible row lost the client's own figures: e2e %v, ttft %v, ttfa %v", row.E2ES, row.TTFTS, row.TTFAS)
				}
				b, err := json.Marshal(row.Exo())
				if err != nil || !json.Valid(b) || !bytes.Contains(b, []byte(`"generated_tokens":null`)) || !bytes.Contains(b, []byte(`"stats":null`)) {
					t.Errorf("row JSON %s, %v", b, err)
				}
			}
			cells := rep.Cells()
			if len(cells) != 1 || cells[0].Failed != 2 {
				t.Fatalf("cells %+v", cells)
			}
			// The summary rests on the honest rows only: 1000 tok/s.
			if g := cells[0].GenerationTPS.Center; math.IsNaN(g) || g > 1e4 {
				t.Errorf("summary generation TPS %v, want the honest rows' rate", g)
			}
			if th := cells[0].ThroughputTPS.Center; th > 1e7 {
				t.Errorf("summary throughput %v counts the implausible tokens", th)
			}
		})
	}
}
