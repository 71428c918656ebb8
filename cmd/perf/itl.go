package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/openai"
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

// paceServer streams chunks on a schedule, one every gap, flushing each,
// and records the instant each Flush returned, by the request's X-Req.
type paceServer struct {
	chunks int
	gap    time.Duration

	mu      sync.Mutex
	flushes map[string][]time.Time
}

func (s *paceServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		io.WriteString(w, "{}")
		return
	}
	io.Copy(io.Discard, r.Body)
	sh := shape(r.Header.Get("X-Shape"))
	id := r.Header.Get("X-Req")
	fl, ok := w.(http.Flusher)
	if !ok || (sh != "exo" && sh != "openai") {
		http.Error(w, "need a flusher and X-Shape exo or openai", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	start := time.Now()
	done := 0
	for j := range s.chunks {
		time.Sleep(time.Until(start.Add(time.Duration(j+1) * s.gap)))
		k := chunkTokens(j)
		done += k
		io.WriteString(w, sh.chunkEvent(" tok", done, 64, true, j == s.chunks-1))
		fl.Flush()
		at := time.Now()
		s.mu.Lock() // stored before the next write, so before the client can have read [DONE]
		s.flushes[id] = append(s.flushes[id], at)
		s.mu.Unlock()
		if r.Context().Err() != nil {
			return
		}
	}
	io.WriteString(w, sh.tail(64, done))
	fl.Flush()
}

// runITL compares the client's chunk instants with the server's flush
// instants, on one clock (one process): TTFT error is the first chunk's
// client instant − its flush instant; ITL error is each per-token gap of
// the client's Trace.ITL − the same gap computed from the flush instants
// with the same token counts.
func runITL(ctx context.Context, cfg config, rep *report) error {
	ps := &paceServer{chunks: cfg.itlChunks, gap: cfg.itlGap, flushes: map[string][]time.Time{}}
	srv, err := listen(ps)
	if err != nil {
		return err
	}
	defer srv.Close()
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
			var ttft, itl []time.Duration
			for range rounds {
				type out struct {
					id  string
					res engine.Result
				}
				res := concurrency.Burst(ctx, conc, func(ctx context.Context, i int, mark func(time.Time)) (out, error) {
					id := strconv.FormatInt(nextID.Add(1), 10)
					req := engine.Request{Model: "perf", Messages: []engine.Message{{Role: "user", Content: "pace"}},
						MaxTokens: 1 << 20, Stream: true, Header: http.Header{"X-Shape": {string(a.sh)}, "X-Req": {id}}}
					r, err := a.eng.Complete(engine.WithSendHook(ctx, mark), req)
					return out{id, r}, err
				}, nil)
				if res.Failed > 0 {
					return fmt.Errorf("%s conc=%d: %d of %d streams failed, first: %v", a.sh, conc, res.Failed, conc, firstErr(res.Requests))
				}
				ps.mu.Lock()
				for _, r := range res.Requests {
					fl := ps.flushes[r.Value.id]
					t, i, err := accuracy(r.Value.res.Trace, fl)
					if err != nil {
						ps.mu.Unlock()
						return fmt.Errorf("%s conc=%d: %w", a.sh, conc, err)
					}
					ttft = append(ttft, t)
					itl = append(itl, i...)
				}
				ps.mu.Unlock()
			}
			name := fmt.Sprintf("%s, %d stream(s) of %d chunks %v apart", a.sh, conc, cfg.itlChunks, cfg.itlGap)
			addErrRow(rep, name+": TTFT error", ttft, "")
			addErrRow(rep, name+": per-token ITL error", itl, "< 1ms")
		}
	}
	return nil
}

// accuracy returns the TTFT error and the per-token ITL errors of a client
// trace against the server's flush instants of the same chunks.
func accuracy(tr timing.Trace, flushes []time.Time) (time.Duration, []time.Duration, error) {
	if len(tr.Chunks) != len(flushes) {
		return 0, nil, fmt.Errorf("the client read %d chunks, the server flushed %d", len(tr.Chunks), len(flushes))
	}
	srvTr := timing.Trace{Start: tr.Start, Chunks: make([]timing.Chunk, len(flushes))}
	for j, at := range flushes {
		if tr.Chunks[j].Tokens != chunkTokens(j) {
			return 0, nil, fmt.Errorf("chunk %d: the client counted %d tokens, the server sent %d", j, tr.Chunks[j].Tokens, chunkTokens(j))
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
	return tr.Chunks[0].At.Sub(flushes[0]), errs, nil
}

// addErrRow adds a row of the p99 of |errors|, with p50, max and the
// signed extremes in its note.
func addErrRow(rep *report, name string, errs []time.Duration, tgt string) {
	abs := make([]time.Duration, len(errs))
	lo, hi := time.Duration(math.MaxInt64), time.Duration(math.MinInt64)
	for i, e := range errs {
		abs[i] = max(e, -e)
		lo, hi = min(lo, e), max(hi, e)
	}
	st := concurrency.SummarizeDurations(abs)
	row := Row{Section: "itl", Name: name + " |p99|", Value: float64(st.P99), Unit: "ns",
		Note: fmt.Sprintf("%d samples; |error| p50 %v, p99 %v, max %v; signed from %v to %v", st.N, st.P50, st.P99, st.Max, lo, hi)}
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
