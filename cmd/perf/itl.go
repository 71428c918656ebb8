package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// chunkTokens is how many tokens chunk j (from 0) of an accuracy stream
// carries: every fourth carries three, as a server does when it emits
// several tokens per step (speculative decoding, held-back UTF-8).
func chunkTokens(j int) int {
	if j%4 == 3 {
		return 3
	}
	return 1
}

// runITL compares the client's chunk instants with the server's flushes.
// The server knows each flush only as an interval, from just before its
// Flush call to just after it returned; a chunk's flush instant is the
// point of that interval nearest the client's instant for it (the client's
// instant itself when it falls inside). TTFT error is the first chunk's
// client instant − its flush instant; ITL error is each per-token gap of
// the client's Trace.ITL − the same gap computed from the flush instants
// with the same token counts.
// The server is this binary started again (startPace), so that its
// goroutines do not share the measuring process's scheduler: in one
// process the server's flushes of a burst's first chunks ran before any
// reader was scheduled and the figure measured that. Both processes read
// CLOCK_REALTIME, the server's instants come back as wall-clock times.
func runITL(ctx context.Context, cfg config, rep *report) error {
	srv, err := startPace(ctx)
	if err != nil {
		return err
	}
	defer srv.Close()
	paceHeader := func(sh shape) http.Header {
		return http.Header{"X-Shape": {string(sh)}, "X-Chunks": {strconv.Itoa(cfg.itlChunks)}, "X-Gap": {cfg.itlGap.String()}}
	}
	maxConc := 0
	for _, c := range cfg.itlConc {
		maxConc = max(maxConc, c)
	}
	ex, err := exo.New(srv.URL, &exo.Options{MaxBurst: maxConc})
	if err != nil {
		return err
	}
	defer ex.CloseIdleConnections()
	oa, err := openai.New(srv.URL, &openai.Options{MaxBurst: maxConc})
	if err != nil {
		return err
	}
	defer oa.CloseIdleConnections()

	var nextID atomic.Int64
	for _, a := range []struct {
		sh  shape
		eng interface {
			engine.Engine
			engine.Prewarmer
		}
	}{{"exo", ex}, {"openai", oa}} {
		for _, conc := range cfg.itlConc {
			if err := a.eng.Prewarm(ctx, conc); err != nil {
				return err
			}
			rounds := max(1, 64/conc/8) // about as many samples at every concurrency
			var ttft, itl, spans []time.Duration
			for range rounds {
				type out struct {
					id  string
					res engine.Result
				}
				res := concurrency.Burst(ctx, conc, func(ctx context.Context, i int, mark func(time.Time)) (out, error) {
					id := strconv.FormatInt(nextID.Add(1), 10)
					h := paceHeader(a.sh)
					h.Set("X-Req", id)
					req := engine.Request{Model: "perf", Messages: []engine.Message{{Role: "user", Content: "pace"}},
						MaxTokens: 1 << 20, Stream: true, Header: h}
					r, err := a.eng.Complete(engine.WithSendHook(ctx, mark), req)
					return out{id, r}, err
				}, nil)
				if res.Failed > 0 {
					return fmt.Errorf("%s conc=%d: %d of %d streams failed, first: %v", a.sh, conc, res.Failed, conc, firstErr(res.Requests))
				}
				flushes, err := srv.takeFlushes(ctx)
				if err != nil {
					return err
				}
				for _, r := range res.Requests {
					t, i, err := accuracy(r.Value.res.Trace, flushes[r.Value.id])
					if err != nil {
						return fmt.Errorf("%s conc=%d: %w", a.sh, conc, err)
					}
					ttft = append(ttft, t)
					itl = append(itl, i...)
					spans = append(spans, flushSpans(flushes[r.Value.id])...)
				}
			}
			name := fmt.Sprintf("%s, %d stream(s) of %d chunks %v apart", a.sh, conc, cfg.itlChunks, cfg.itlGap)
			addErrRow(rep, name+": TTFT error", ttft, spans, "")
			addErrRow(rep, name+": per-token ITL error", itl, spans, "< 1ms")
		}
	}
	return runITLLoad(ctx, cfg, srv, paceHeader("openai"), rep)
}

// runITLLoad measures the same errors through benchkit.Load, the code
// serve-load runs, in serve-load's two ways of sending cfg.itlLoad
// concurrent streams: --burst N (16 bursts) and --rate inf
// --max-concurrency N (16N requests, so that all but the first N start
// when an earlier one ends). 16N first chunks in each make the p99 a
// percentile, not the largest of a few dozen. Each
// run builds its prompts, prewarms and prepares as serve-load does; a
// recorder (engine.Observe) keeps each Result by response id, after Send
// returns, to compare its trace with the server's flushes.
func runITLLoad(ctx context.Context, cfg config, srv *paceProcess, header http.Header, rep *report) error {
	n := cfg.itlLoad
	if n <= 0 {
		return nil
	}
	tokens := 0
	for j := range cfg.itlChunks {
		tokens += chunkTokens(j)
	}
	for _, mode := range []struct {
		name    string
		traffic benchkit.Traffic
		runs    int
	}{
		{fmt.Sprintf("--burst %d", n), benchkit.Traffic{Burst: n}, 16},
		{fmt.Sprintf("--rate inf --max-concurrency %d", n), benchkit.Traffic{Rate: math.Inf(1), NumRequests: 16 * n, MaxConcurrency: n}, 1},
	} {
		oa, err := openai.New(srv.URL, &openai.Options{MaxBurst: n})
		if err != nil {
			return err
		}
		rec := &recorder{res: map[string]engine.Result{}}
		load := &benchkit.Load{Engine: engine.Observe(oa, rec.keep), Model: "perf", Builder: &promptsize.Builder{Counter: wordCounter},
			GCPercent: cli.DefaultGCPercent, // as serve-load runs
			Request:   engine.Request{Header: header}}
		var ttft, itl, spans []time.Duration
		dialed := 0
		for range mode.runs {
			run, err := load.Run(ctx, benchkit.Lengths{Input: 64, Output: tokens}, mode.traffic, timing.SLO{})
			if err != nil {
				oa.CloseIdleConnections()
				return fmt.Errorf("serve-load %s: %w", mode.name, err)
			}
			if run.Summary.Failed > 0 {
				oa.CloseIdleConnections()
				return fmt.Errorf("serve-load %s: %d of %d requests failed: %v", mode.name, run.Summary.Failed, run.Summary.Requests, run.Summary.Warnings)
			}
			dialed += run.Summary.Dialed
			flushes, err := srv.takeFlushes(ctx)
			if err != nil {
				oa.CloseIdleConnections()
				return err
			}
			rec.mu.Lock()
			for _, row := range run.Requests {
				t, i, err := accuracy(rec.res[row.ResponseID].Trace, flushes[row.ResponseID])
				if err != nil {
					rec.mu.Unlock()
					oa.CloseIdleConnections()
					return fmt.Errorf("serve-load %s, response %q: %w", mode.name, row.ResponseID, err)
				}
				ttft = append(ttft, t)
				itl = append(itl, i...)
				spans = append(spans, flushSpans(flushes[row.ResponseID])...)
			}
			rec.mu.Unlock()
		}
		oa.CloseIdleConnections()
		name := fmt.Sprintf("serve-load %s, streams of %d chunks %v apart (%d dials)", mode.name, cfg.itlChunks, cfg.itlGap, dialed)
		addErrRow(rep, name+": TTFT error", ttft, spans, "< 1ms")
		addErrRow(rep, name+": per-token ITL error", itl, spans, "< 1ms")
	}
	return nil
}

// wordCounter counts a prompt as benchkit's tests do: five tokens of
// template, two a message, one a word. The pace server ignores prompts.
var wordCounter = promptsize.CounterFunc(func(_ context.Context, ms []promptsize.Message) (int, error) {
	n := 5
	for _, m := range ms {
		n += 2 + len(strings.Fields(m.Content))
	}
	return n, nil
})

// recorder keeps every Result by response id once its request has ended
// (engine.Observe calls keep), outside the measured part.
type recorder struct {
	mu  sync.Mutex
	res map[string]engine.Result
}

func (r *recorder) keep(res engine.Result) {
	r.mu.Lock()
	r.res[res.ResponseID] = res
	r.mu.Unlock()
}

// accuracy returns the TTFT error and the per-token ITL errors of a client
// trace against the server's flushes of the same chunks. A chunk's flush
// instant is the point of its flush interval nearest the client's instant.
func accuracy(tr timing.Trace, flushes []flush) (time.Duration, []time.Duration, error) {
	if len(tr.Chunks) != len(flushes) {
		return 0, nil, fmt.Errorf("the client read %d chunks, the server flushed %d", len(tr.Chunks), len(flushes))
	}
	srvTr := timing.Trace{Start: tr.Start, Chunks: make([]timing.Chunk, len(flushes))}
	for j, f := range flushes {
		if tr.Chunks[j].Tokens != chunkTokens(j) {
			return 0, nil, fmt.Errorf("chunk %d: the client counted %d tokens, the server sent %d", j, tr.Chunks[j].Tokens, chunkTokens(j))
		}
		if f.After.Before(f.Before) {
			return 0, nil, fmt.Errorf("chunk %d: the server's flush ended %v before it began", j, f.Before.Sub(f.After))
		}
		at := tr.Chunks[j].At
		switch {
		case at.Before(f.Before):
			at = f.Before
		case at.After(f.After):
			at = f.After
		}
		srvTr.Chunks[j] = timing.Chunk{At: at, Tokens: chunkTokens(j)}
	}
	ci, si := tr.ITL(), srvTr.ITL()
	if len(ci) != len(si) {
		return 0, nil, fmt.Errorf("client ITL has %d gaps, server's %d", len(ci), len(si))
	}
	errs := make([]time.Duration, len(ci))
	for i := range ci {
		errs[i] = ci[i] - si[i]
	}
	return tr.Chunks[0].At.Sub(srvTr.Chunks[0].At), errs, nil
}

// flushSpans returns how long each of the server's Flush calls took: the
// resolution of the reference.
func flushSpans(fs []flush) []time.Duration {
	out := make([]time.Duration, len(fs))
	for i, f := range fs {
		out[i] = f.After.Sub(f.Before)
	}
	return out
}

// addErrRow adds a row of the p99 of |errors|, with p50, max and the
// signed extremes in its note, and the p50 and p99 of the server's flush
// spans, the width of the reference instants.
func addErrRow(rep *report, name string, errs, spans []time.Duration, tgt string) {
	abs := make([]time.Duration, len(errs))
	lo, hi := time.Duration(math.MaxInt64), time.Duration(math.MinInt64)
	for i, e := range errs {
		abs[i] = max(e, -e)
		lo, hi = min(lo, e), max(hi, e)
	}
	st := concurrency.SummarizeDurations(abs)
	sp := concurrency.SummarizeDurations(spans)
	row := Row{Section: "itl", Name: name + " |p99|", Value: float64(st.P99), Unit: "ns",
		Note: fmt.Sprintf("%d samples; |error| p50 %v, p99 %v, max %v; signed from %v to %v; server's flush spans p50 %v, p99 %v",
			st.N, st.P50, st.P99, st.Max, lo, hi, sp.P50, sp.P99)}
	if tgt != "" {
		row.Target, row.Met = target(tgt, st.P99 < time.Millisecond)
	}
	rep.add(row)
}

func firstErr[T any](rs []concurrency.Result[T]) error {
	for _, r := range rs {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}
