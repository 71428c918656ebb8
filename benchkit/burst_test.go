package benchkit

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
)

// warmPreparingEngine is preparingEngine with the Prewarmer capability: it
// records each Prewarm's n and how many Prepare calls had happened by
// then, and fails its prewarms with warmErr.
type warmPreparingEngine struct {
	preparingEngine
	warmErr error

	wmu       sync.Mutex
	warmed    []int
	preparedB []int // Prepare calls made before each Prewarm
}

func (w *warmPreparingEngine) Prewarm(_ context.Context, n int) error {
	w.preparingEngine.mu.Lock()
	k := len(w.prepares)
	w.preparingEngine.mu.Unlock()
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.warmed, w.preparedB = append(w.warmed, n), append(w.preparedB, k)
	return w.warmErr
}

func buildPrompts(t *testing.T, b *promptsize.Builder, n, pp int) []promptsize.Prompt {
	t.Helper()
	ps := make([]promptsize.Prompt, n)
	for i := range ps {
		var err error
		if ps[i], err = b.BuildSalted(context.Background(), pp, promptsize.Salt(i)); err != nil {
			t.Fatal(err)
		}
	}
	return ps
}

// TestSendPromptsPrewarmsPreparesAndMeasures: one call prewarms n
// connections before preparing, prepares every request before any is
// sent, sends each prompt whole (its system turn too) with bench
// semantics, and reports a refused request as a failed outcome beside the
// measured ones, with their client timing and the aggregates.
func TestSendPromptsPrewarmsPreparesAndMeasures(t *testing.T) {
	const n, pp, tg = 4, 30, 5
	e := &warmPreparingEngine{preparingEngine: preparingEngine{failAt: 3}}
	b := &promptsize.Builder{Counter: wordCounter, System: "You are terse."}
	ps := buildPrompts(t, b, n, pp)
	tmpl := engine.Request{Header: map[string][]string{"X-Test": {"1"}}}
	rep, err := SendPrompts(context.Background(), e, "m", tg, ps, &BurstOptions{Request: tmpl})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.warmed, []int{n}) || e.preparedB[0] != 0 || !rep.Prewarmed {
		t.Errorf("Prewarm calls %v after %v prepares, Prewarmed %t; want one of %d before any Prepare", e.warmed, e.preparedB, rep.Prewarmed, n)
	}
	for i, k := range e.seen {
		if k != n {
			t.Errorf("send %d began after %d Prepare calls, want all %d", i, k, n)
		}
	}
	if len(rep.Requests) != n || rep.Dispatched != n-1 || rep.Stats.Failed != 1 || rep.Stats.TotalTokens != (n-1)*tg {
		t.Fatalf("%d outcomes, %d dispatched, %d failed, %d tokens; want %d, %d, 1, %d",
			len(rep.Requests), rep.Dispatched, rep.Stats.Failed, rep.Stats.TotalTokens, n, n-1, (n-1)*tg)
	}
	failed := 0
	for i, q := range rep.Requests {
		if q.Index != i {
			t.Errorf("Requests[%d].Index = %d", i, q.Index)
		}
		if q.Failed() {
			failed++
			if q.ErrorKind != string(engine.KindOther) || !strings.Contains(q.Error, "refused to encode") {
				t.Errorf("failed outcome %d: %s %s; want the Prepare error", i, q.ErrorKind, q.Error)
			}
			continue
		}
		// The fake's chunks: the first at 10 ms, then 1 ms apart, and the
		// end 1 ms after the last: TPOT = (15 − 10) ms / 4.
		if m := q.Metrics(); m.TTFT != 10*time.Millisecond || m.TPOT != 1250*time.Microsecond || m.Tokens != tg || !m.GenerationTPSDefined {
			t.Errorf("outcome %d: TTFT %v TPOT %v tokens %d; want 10ms, 1.25ms, %d", i, m.TTFT, m.TPOT, m.Tokens, tg)
		}
	}
	if failed != 1 {
		t.Errorf("%d failed outcomes, want 1", failed)
	}
	for i, q := range rep.Requests {
		if len(rep.Warnings) != 0 || q.HasWarning(WarnPromptMismatch) {
			t.Errorf("request %d: warnings %v %v, want none: the engine counts as the builder does", i, rep.Warnings, q.Warnings)
		}
	}
	e.fakeEngine.mu.Lock()
	defer e.fakeEngine.mu.Unlock()
	for _, req := range e.fakeEngine.requests {
		if req.Model != "m" || req.MaxTokens != tg || !req.IgnoreEOS || !req.Stream || req.Header.Get("X-Test") != "1" ||
			len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[0].Content != b.System {
			t.Errorf("request %+v; want model m, %d tokens, bench semantics, streamed, the template's header and the system turn", req, tg)
		}
	}
}

// TestSendPromptsWarnsOnCountMismatch: prompts counted by a tokenizer that
// differs from the engine's carry a prompt-mismatch warning, on each
// request.
func TestSendPromptsWarnsOnCountMismatch(t *testing.T) {
	off := promptsize.CounterFunc(func(ctx context.Context, ms []promptsize.Message) (int, error) {
		n, err := wordCounter(ctx, ms)
		return n + 1, err
	})
	ps := buildPrompts(t, &promptsize.Builder{Counter: off}, 2, 30)
	rep, err := SendPrompts(context.Background(), &fakeEngine{}, "m", 3, ps, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range rep.Requests {
		if !q.HasWarning(WarnPromptMismatch) || !strings.Contains(q.Warnings[0].Message, "server counted 29 prompt tokens, the client 30") || q.PPTokens != 30 {
			t.Errorf("request %d: warnings %v, pp_tokens %d; want a prompt mismatch naming 29 against 30", i, q.Warnings, q.PPTokens)
		}
	}
}

// TestSendBurstPrewarm: a failed prewarm is a warning and the burst still
// runs; NoPrewarm skips it.
func TestSendBurstPrewarm(t *testing.T) {
	reqs := []engine.Request{{Model: "m", MaxTokens: 2, Stream: true}, {Model: "m", MaxTokens: 2, Stream: true}}
	e := &warmPreparingEngine{warmErr: errors.New("1 of 2 connections")}
	rep, err := SendBurst(context.Background(), e, reqs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Prewarmed || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0].Error(), "1 of 2 connections") || rep.Failed != 0 {
		t.Errorf("Prewarmed %t, warnings %v, failed %d; want false, the prewarm error, 0", rep.Prewarmed, rep.Warnings, rep.Failed)
	}
	e = &warmPreparingEngine{}
	if rep, err = SendBurst(context.Background(), e, reqs, &BurstOptions{NoPrewarm: true}); err != nil || rep.Prewarmed || len(e.warmed) != 0 {
		t.Errorf("NoPrewarm: err %v, Prewarmed %t, Prewarm calls %v; want none", err, rep.Prewarmed, e.warmed)
	}
}

// TestSendBurstErrors: no engine is an error; a context ended before the
// release sends nothing and the error wraps its cause.
func TestSendBurstErrors(t *testing.T) {
	if _, err := SendBurst(context.Background(), nil, nil, nil); err == nil {
		t.Error("SendBurst(nil engine) = nil error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fe := &fakeEngine{}
	rep, err := SendBurst(ctx, fe, []engine.Request{{Model: "m", MaxTokens: 2}}, &BurstOptions{NoPrewarm: true})
	if !errors.Is(err, context.Canceled) || fe.calls.Load() != 0 || len(rep.Requests) != 1 || !rep.Requests[0].Failed() {
		t.Errorf("err %v, %d calls, outcomes %+v; want context.Canceled, nothing sent, one failed outcome", err, fe.calls.Load(), rep.Requests)
	}
}
