package predict

import (
	"bytes"
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
	"github.com/inferbench/inferbench/workload"
)

// mooncakeSpeedup compresses the 1,000-row trace's 155 s into about a
// minute of live replay.
const mooncakeSpeedup = 2.5

// BenchmarkMooncake1000LiveVsPredicted replays the 1,000-row
// Mooncake-format trace of BenchmarkPredictMooncake1000 (token ids,
// 512-token blocks, half sharing an earlier prompt's leading blocks), its
// gaps divided by mooncakeSpeedup, live through a Load against the
// embedded engine (fast preset, its HTTP server on loopback), then
// predicts the same plan (the same Load, its nonce, so the same prompts)
// on the virtual clock. It reports the wall time of each, the per-request
// |predicted − live| of TTFT and E2E (median, p90) and the two runs'
// summary quantiles side by side. One live run takes about a minute: run
// it with -benchtime 1x.
func BenchmarkMooncake1000LiveVsPredicted(b *testing.B) {
	rows, _, err := workload.ReadAll(bytes.NewReader(mooncake1k(b)), "mooncake1k.jsonl", &workload.Options{Speedup: mooncakeSpeedup})
	if err != nil {
		b.Fatal(err)
	}
	blocks, err := promptsize.NewTokenBlocks(sim.Counter{}, promptsize.BlockOptions{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	w := benchkit.Trace{Name: "mooncake1k.jsonl", Rows: rows, BlockSize: 512, Blocks: blocks, Completions: true}
	opts := sim.Options{Preset: sim.Fast()}
	for b.Loop() {
		srv := sim.NewServer(opts)
		c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
		if err != nil {
			b.Fatal(err)
		}
		l := &benchkit.Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}, Simulated: true, RequestTimeout: time.Minute}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		start := time.Now()
		live, err := l.Run(ctx, w, benchkit.Traffic{Replay: true}, timing.SLO{})
		liveWall := time.Since(start)
		cancel()
		c.CloseIdleConnections()
		srv.Close()
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		pred, err := (&Predictor{Load: l, Options: opts}).Run(context.Background(), w, benchkit.Traffic{Replay: true}, timing.SLO{})
		predWall := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if len(pred.Requests) != 1000 || len(live.Requests) != 1000 || live.Summary.Failed > 0 {
			b.Fatalf("%d predicted rows, %d live, %d live failed; want 1000, 1000, none", len(pred.Requests), len(live.Requests), live.Summary.Failed)
		}
		byIndex := map[int]benchkit.Request{}
		for _, r := range live.Requests {
			byIndex[r.Index] = r
		}
		var dTTFT, dE2E []float64
		cachedP, cachedL := 0, 0
		for _, p := range pred.Requests {
			l := byIndex[p.Index]
			if p.TTFTS == nil || l.TTFTS == nil || p.E2ES == nil || l.E2ES == nil {
				b.Fatalf("request %d: a TTFT or an E2E missing", p.Index)
			}
			dTTFT = append(dTTFT, math.Abs(*p.TTFTS-*l.TTFTS))
			dE2E = append(dE2E, math.Abs(*p.E2ES-*l.E2ES))
			if p.CachedTokens != nil {
				cachedP += *p.CachedTokens
			}
			if l.CachedTokens != nil {
				cachedL += *l.CachedTokens
			}
		}
		q := func(xs []float64, f float64) float64 {
			slices.Sort(xs)
			return xs[int(f*float64(len(xs)-1))]
		}
		b.Logf("wall time: live %.1f s (schedule %.1f s), predicted %.3f s", liveWall.Seconds(), rows[len(rows)-1].At.Seconds(), predWall.Seconds())
		b.Logf("cached prompt tokens: live %d, predicted %d", cachedL, cachedP)
		b.Logf("|predicted − live| TTFT median %.2f ms, p90 %.2f ms; E2E median %.2f ms, p90 %.2f ms",
			q(dTTFT, 0.5)*1e3, q(dTTFT, 0.9)*1e3, q(dE2E, 0.5)*1e3, q(dE2E, 0.9)*1e3)
		ms := func(p *float64) float64 {
			if p == nil {
				return math.NaN()
			}
			return *p * 1e3
		}
		for _, m := range []struct {
			name string
			l, p benchkit.Quantiles
		}{{"TTFT", live.Summary.TTFT, pred.Summary.TTFT}, {"TPOT", live.Summary.TPOT, pred.Summary.TPOT},
			{"ITL", live.Summary.ITL, pred.Summary.ITL}, {"E2E", live.Summary.E2E, pred.Summary.E2E}} {
			b.Logf("%-4s ms live / predicted: mean %.1f / %.1f, p50 %.1f / %.1f, p90 %.1f / %.1f, p99 %.1f / %.1f", m.name,
				ms(m.l.Mean), ms(m.p.Mean), ms(m.l.P50), ms(m.p.P50), ms(m.l.P90), ms(m.p.P90), ms(m.l.P99), ms(m.p.P99))
		}
		b.ReportMetric(liveWall.Seconds(), "live-s")
		b.ReportMetric(predWall.Seconds(), "predicted-s")
		b.ReportMetric(q(dTTFT, 0.5)*1e3, "dttft-p50-ms")
		b.ReportMetric(q(dTTFT, 0.9)*1e3, "dttft-p90-ms")
		b.ReportMetric(q(dE2E, 0.5)*1e3, "de2e-p50-ms")
		b.ReportMetric(q(dE2E, 0.9)*1e3, "de2e-p90-ms")
	}
}
