package benchkit

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// wordCounter counts whitespace-separated words plus a template overhead
// of 5 tokens per request and 2 per message: a stand-in for a tokenizer.
var wordCounter = promptsize.CounterFunc(func(ctx context.Context, ms []promptsize.Message) (int, error) {
	n := 5
	for _, m := range ms {
		n += 2 + len(strings.Fields(m.Content))
	}
	return n, nil
})

// fakeEngine answers with tg tokens and server stats that count the prompt
// with wordCounter; requests whose prompt contains "FAIL" fail.
type fakeEngine struct {
	calls    atomic.Int64
	mu       sync.Mutex
	requests []engine.Request
	block    chan struct{} // when set, Complete waits on it or ctx
	started  chan struct{} // when set, receives once per call
}

func (f *fakeEngine) Complete(ctx context.Context, req engine.Request) (engine.Result, error) {
	f.calls.Add(1)
	if f.started != nil {
		f.started <- struct{}{}
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	start := time.Now()
	engine.NotifySend(ctx, start)
	res := engine.Result{Trace: timing.Trace{Start: start}}
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return res, &engine.Error{Kind: engine.KindCanceled, Op: "fake", Err: ctx.Err()}
		}
	}
	var ms []promptsize.Message
	for _, m := range req.Messages {
		ms = append(ms, m)
		if strings.Contains(m.Content, "FAIL") {
			return res, engine.NewStatusError(503, []byte(`{"error":{"message":"overloaded"}}`))
		}
	}
	pt, _ := wordCounter(ctx, ms)
	// Chunks 1 ms apart on a constructed clock: exact expectations.
	for i := 0; i < req.MaxTokens; i++ {
		res.Trace.Chunks = append(res.Trace.Chunks, timing.Chunk{At: start.Add(time.Duration(10+i) * time.Millisecond), Tokens: 1})
	}
	res.Trace.End = start.Add(time.Duration(10+req.MaxTokens) * time.Millisecond)
	if !req.Stream {
		res.Trace.Chunks = nil
	}
	res.ServerStats = &engine.ServerStats{PromptTPS: 1000, GenerationTPS: 1000, PromptTokens: pt, GenerationTokens: req.MaxTokens, PrefixCacheHit: engine.PrefixCacheNone}
	res.Text = strings.Repeat("w ", req.MaxTokens)
	return res, nil
}

func TestRunnerMeasuresEveryCell(t *testing.T) {
	fe := &fakeEngine{}
	var col Collector
	var seen []Request
	r := &Runner{
		Engine: fe, Model: "m", Builder: &promptsize.Builder{Counter: wordCounter},
		Sinks: []Sink{&col, SinkFunc(func(q Request) error { seen = append(seen, q); return nil })},
	}
	plan := Plan{PP: []int{20, 40}, TG: []int{4}, Concurrency: []int{1, 3}, Repeat: 2, Warmup: 1, Stream: true}
	rep, err := r.Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	// 2 pp × (1 + 3) requests × 2 repeats = 16 rows, plus 1 warmup sent.
	if len(rep.Requests) != 16 || len(col.Requests()) != 16 || fe.calls.Load() != 17 {
		t.Fatalf("rows %d, collected %d, calls %d; want 16, 16, 17", len(rep.Requests), len(col.Requests()), fe.calls.Load())
	}
	if len(seen) != 16 || plan.Requests() != 16 || seen[15].Concurrency != 3 || seen[15].Repeat != 1 || seen[15].PPTarget != 40 {
		t.Errorf("sink: %d calls of %d planned, last %+v; want 16, the last of pp=40 conc=3 repeat 1", len(seen), plan.Requests(), seen[len(seen)-1])
	}
	if rep.Overhead != 7 {
		t.Errorf("overhead %d, want 7", rep.Overhead)
	}
	for _, row := range rep.Requests {
		if row.PPTokens != row.PPTarget || row.Tokens() != row.TGTarget || row.Failed() {
			t.Errorf("row pp %d/%d, tokens %d/%d, error %q", row.PPTokens, row.PPTarget, row.Tokens(), row.TGTarget, row.Error)
		}
		if len(row.Warnings) != 0 {
			t.Errorf("unexpected warnings %v", row.Warnings)
		}
		// TTFT 10 ms, 4 tokens 1 ms apart: TPOT = (14 − 10) / 3 ms.
		if row.TTFTS == nil || math.Abs(*row.TTFTS-0.010) > 1e-9 || row.TPOTS == nil || math.Abs(*row.TPOTS-0.004/3) > 1e-9 {
			t.Errorf("TTFT %v TPOT %v, want 10 ms and 1.333 ms", deref(row.TTFTS), deref(row.TPOTS))
		}
		if row.GenerationTPS == nil || math.Abs(*row.GenerationTPS-1000) > 1e-6 {
			t.Errorf("client gen TPS %v, want 1000", row.GenerationTPS)
		}
		if (row.Concurrency > 1) != (row.ConcurrentIndex != nil) {
			t.Errorf("concurrency %d with concurrent_index %v", row.Concurrency, row.ConcurrentIndex)
		}
	}
	fe.mu.Lock()
	defer fe.mu.Unlock()
	for _, req := range fe.requests {
		if !req.IgnoreEOS || req.Model != "m" || req.MaxTokens != 4 || !req.Stream {
			t.Errorf("request %+v lacks bench semantics", req)
		}
	}
}

func TestRunnerValidatesBeforeSending(t *testing.T) {
	fe := &fakeEngine{}
	r := &Runner{Engine: fe, Model: "m", Builder: &promptsize.Builder{Counter: wordCounter}}
	_, err := r.Run(context.Background(), Plan{PP: []int{3}, TG: []int{0}})
	if !errors.Is(err, ErrBadPlan) {
		t.Fatalf("err = %v, want ErrBadPlan", err)
	}
	for _, want := range []string{"pp=3 is below the chat template's overhead of 7 tokens", "tg=0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if fe.calls.Load() != 0 {
		t.Errorf("%d requests sent for a bad plan", fe.calls.Load())
	}
}

func TestRunnerRecordsFailuresAndMismatches(t *testing.T) {
	fe := &fakeEngine{}
	// A system message the fake engine does not see in its count would be
	// a mismatch; here the Builder adds one that says FAIL, so every
	// request fails with a 503 and becomes a row.
	r := &Runner{Engine: fe, Model: "m", Builder: &promptsize.Builder{Counter: wordCounter, System: "FAIL"}}
	rep, err := r.Run(context.Background(), Plan{PP: []int{30}, TG: []int{4}, Concurrency: []int{2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Requests) != 2 || rep.Failed() != 2 {
		t.Fatalf("rows %d failed %d, want 2 and 2", len(rep.Requests), rep.Failed())
	}
	if k := rep.Requests[0].ErrorKind; k != string(engine.KindStatus) {
		t.Errorf("error kind %q, want status", k)
	}

	// A server that counts the prompt differently is reported loudly.
	off := engine.Func(func(ctx context.Context, req engine.Request) (engine.Result, error) {
		res, err := fe.Complete(ctx, req)
		if res.ServerStats != nil {
			res.ServerStats.PromptTokens++
		}
		return res, err
	})
	r = &Runner{Engine: off, Model: "m", Builder: &promptsize.Builder{Counter: wordCounter}}
	rep, err = r.Run(context.Background(), Plan{PP: []int{30}, TG: []int{4}})
	if err != nil {
		t.Fatal(err)
	}
	if w := rep.Requests[0].Warnings; len(w) != 1 || w[0].Code != WarnPromptMismatch || !strings.Contains(w[0].Message, "server counted 31 prompt tokens, the client 30") {
		t.Errorf("warnings %v, want a prompt-count mismatch", w)
	}
}

func TestRunnerSaltsEveryRequest(t *testing.T) {
	fe := &fakeEngine{}
	r := &Runner{Engine: fe, Model: "m", Builder: &promptsize.Builder{Counter: wordCounter}}
	rep, err := r.Run(context.Background(), Plan{PP: []int{25}, TG: []int{2}, Concurrency: []int{4}, Salt: true})
	if err != nil {
		t.Fatal(err)
	}
	fe.mu.Lock()
	defer fe.mu.Unlock()
	firsts := map[string]bool{}
	for _, req := range fe.requests {
		c := req.Messages[len(req.Messages)-1].Content
		firsts[strings.Fields(c)[0]] = true
	}
	if len(firsts) != 4 {
		t.Errorf("requests share a first word: %v", firsts)
	}
	for _, row := range rep.Requests {
		if row.PPTokens != 25 {
			t.Errorf("salted prompt of %d tokens, want 25", row.PPTokens)
		}
	}
}

func TestRunnerInterrupted(t *testing.T) {
	fe := &fakeEngine{block: make(chan struct{}), started: make(chan struct{}, 16)}
	var col Collector
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runner{Engine: fe, Model: "m", Builder: &promptsize.Builder{Counter: wordCounter}, Sinks: []Sink{&col}}
	go func() {
		// Cancel once the first burst's requests are in flight.
		for range 3 {
			<-fe.started
		}
		cancel()
	}()
	rep, err := r.Run(ctx, Plan{PP: []int{20}, TG: []int{4}, Concurrency: []int{3}, Repeat: 5})
	if !errors.Is(err, context.Canceled) || !rep.Interrupted {
		t.Fatalf("err %v interrupted %v, want context.Canceled and true", err, rep.Interrupted)
	}
	if len(col.Requests()) != 3 || fe.calls.Load() != 3 {
		t.Fatalf("rows %d calls %d, want the 3 in flight recorded and nothing more sent", len(col.Requests()), fe.calls.Load())
	}
	for _, row := range col.Requests() {
		if row.ErrorKind != string(engine.KindCanceled) {
			t.Errorf("in-flight row kind %q, want canceled", row.ErrorKind)
		}
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// cancelOnPrepare is an engine whose Prepare cancels the run, as a signal
// arriving while a burst is being prepared does.
type cancelOnPrepare struct {
	fakeEngine
	cancel context.CancelFunc
}

func (c *cancelOnPrepare) Prepare(ctx context.Context, req engine.Request) (engine.Prepared, error) {
	c.cancel()
	return engine.PreparedFunc(func(ctx context.Context) (engine.Result, error) { return c.Complete(ctx, req) }), nil
}

func TestRunnerUnsentRequestsAreNotRows(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e := &cancelOnPrepare{cancel: cancel}
	var col Collector
	r := &Runner{Engine: e, Model: "m", Builder: &promptsize.Builder{Counter: wordCounter}, Sinks: []Sink{&col}}
	rep, err := r.Run(ctx, Plan{PP: []int{20}, TG: []int{4}, Concurrency: []int{3}})
	if !errors.Is(err, context.Canceled) || !rep.Interrupted {
		t.Fatalf("err %v interrupted %v, want context.Canceled and true", err, rep.Interrupted)
	}
	if n := e.calls.Load(); n != 0 || len(rep.Requests) != 0 || len(col.Requests()) != 0 {
		t.Errorf("%d requests sent, %d rows, %d collected; want none: a request stopped before the release was never attempted", n, len(rep.Requests), len(col.Requests()))
	}
}
