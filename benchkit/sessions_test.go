package benchkit

import (
	"context"
	"errors"
	"math"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/metrics/view"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
	"github.com/inferbench/inferbench/workload"
)

// faultOnTurn injects a server fault into one session's given turn, named
// by the session header the driver sends.
type faultOnTurn struct {
	engine.Engine
	session string
	turn    int
	fault   sim.FaultKind

	mu    sync.Mutex
	seen  map[string]int
	heads []http.Header
}

func (f *faultOnTurn) Complete(ctx context.Context, req engine.Request) (engine.Result, error) {
	id := req.Header.Get("X-Session-ID")
	f.mu.Lock()
	if f.seen == nil {
		f.seen = map[string]int{}
	}
	f.seen[id]++
	n := f.seen[id]
	f.heads = append(f.heads, req.Header)
	f.mu.Unlock()
	if id == f.session && n == f.turn {
		req.Header = req.Header.Clone()
		req.Header.Set(sim.FaultHeader, string(f.fault))
	}
	return f.Engine.Complete(ctx, req)
}

func simSessions(t *testing.T, mode sim.PrefixCacheMode) (*sim.Server, *openai.Client) {
	t.Helper()
	srv := sim.NewServer(sim.Options{Preset: sim.Fast(), PrefixCache: mode})
	c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter(), Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseIdleConnections(); srv.Close() })
	return srv, c
}

// TestSessionsExactAndCached: every turn of every session is counted by
// the client as the embedded engine counts it, history included; the
// replies go back into the next turn (the prompts grow by more than the
// new user tokens); with the prefix cache on the server's cached tokens
// grow with the history, and ByTurn summaries give each turn's TTFT and
// a theoretical hit rate beside the measured one.
func TestSessionsExactAndCached(t *testing.T) {
	srv, c := simSessions(t, sim.PrefixCacheRadix)
	s := &Sessions{Engine: c, Model: srv.Model(),
		Builder: &promptsize.Builder{Counter: srv.Counter(), System: "You are a careful assistant who answers briefly."},
		Count:   3, Turns: 4, UserTokens: 40, Output: 24, MaxActive: 2}
	rows, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 12 {
		t.Fatalf("%d rows, want 12", len(rows))
	}
	for _, r := range rows {
		if r.Failed() {
			t.Fatalf("%s turn %d failed: %s %s", r.Session, r.Turn, r.ErrorKind, r.Error)
		}
		if r.ServerPromptTokens == nil || *r.ServerPromptTokens != r.PPTokens || r.PPTokens != r.PPTarget {
			t.Errorf("%s turn %d: target %d, client %d, server %v", r.Session, r.Turn, r.PPTarget, r.PPTokens, r.ServerPromptTokens)
		}
		for _, w := range r.Warnings {
			t.Errorf("%s turn %d: warning %s", r.Session, r.Turn, w.Message)
		}
	}
	for i := 0; i < len(rows); i += 4 {
		for k := 1; k < 4; k++ {
			prev, r := rows[i+k-1], rows[i+k]
			if r.Session != prev.Session || r.Turn != k+1 {
				t.Fatalf("row order: %s/%d after %s/%d", r.Session, r.Turn, prev.Session, prev.Turn)
			}
			// the reply of 24 tokens is in the history
			if r.PPTarget < prev.PPTarget+s.UserTokens+20 {
				t.Errorf("%s turn %d: %d prompt tokens after %d; the reply is not in the history", r.Session, r.Turn, r.PPTarget, prev.PPTarget)
			}
			if r.CachedTokens == nil || *r.CachedTokens < prev.PPTarget-16 {
				t.Errorf("%s turn %d: cached %v of a history of %d", r.Session, r.Turn, r.CachedTokens, s.HistoryTokens(r))
			}
		}
	}
	// at most MaxActive sessions were under way at once
	for i := 0; i < len(rows); i += 4 {
		at, active := rows[i].SendOffsetS, 0
		for j := 0; j < len(rows); j += 4 {
			if rows[j].SendOffsetS <= at && at < rows[j+3].DoneS {
				active++
			}
		}
		if active > s.MaxActive {
			t.Errorf("%d sessions under way when %s began, over the cap of %d", active, rows[i].Session, s.MaxActive)
		}
	}
	sums := s.Summarize(rows, ByTurn, timing.SLO{})
	if len(sums) != 4 {
		t.Fatalf("%d turn summaries, want 4", len(sums))
	}
	for k, sum := range sums {
		if sum.Labels.Turn != k+1 || sum.TTFT.N != 3 || sum.TTFT.P50 == nil || sum.TheoreticalHitRate == nil {
			t.Errorf("turn %d summary: turn %d, ttft %+v, theoretical %v", k+1, sum.Labels.Turn, sum.TTFT, sum.TheoreticalHitRate)
		}
		if k > 0 && (sum.PrefixHitRate == nil || *sum.PrefixHitRate < 0.8**sum.TheoreticalHitRate) {
			t.Errorf("turn %d: measured hit rate %v, theoretical %v", k+1, derefFloat(sum.PrefixHitRate), *sum.TheoreticalHitRate)
		}
	}
}

// TestSessionsFault: a server fault on one session's turn 3 leaves the
// other sessions complete, that session's turns 1-2 measured, its turn 3
// failed with the fault and turns 4-5 not sent with the reason; every
// request names its session in the session header.
func TestSessionsFault(t *testing.T) {
	srv, c := simSessions(t, sim.PrefixCacheRadix)
	e := &faultOnTurn{Engine: c, session: "s1", turn: 3, fault: sim.FaultStatus500}
	s := &Sessions{Engine: e, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()},
		Count: 3, Turns: 5, UserTokens: 30, Output: 8}
	rows, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 15 {
		t.Fatalf("%d rows, want 15", len(rows))
	}
	for _, r := range rows {
		switch {
		case r.Session != "s1" || r.Turn < 3:
			if r.Failed() || r.TTFTS == nil || r.ServerPromptTokens == nil || *r.ServerPromptTokens != r.PPTokens {
				t.Errorf("%s turn %d: %s %s, ttft %v", r.Session, r.Turn, r.ErrorKind, r.Error, r.TTFTS)
			}
		case r.Turn == 3:
			if !r.Failed() || r.ErrorKind == "not_sent" {
				t.Errorf("s1 turn 3: kind %q, want the fault's", r.ErrorKind)
			}
		default:
			if r.ErrorKind != "not_sent" || r.Error == "" || r.PPTokens != 0 {
				t.Errorf("s1 turn %d: kind %q (%s), want not_sent with a reason", r.Turn, r.ErrorKind, r.Error)
			}
		}
	}
	if len(e.heads) != 13 {
		t.Errorf("%d requests sent, want 13", len(e.heads))
	}
	for _, h := range e.heads {
		if h.Get("X-Session-ID") == "" {
			t.Error("a request without its session header")
		}
	}
}

// cancelAfter cancels the run once n requests have come back.
type cancelAfter struct {
	engine.Engine
	n      int
	cancel context.CancelFunc
	mu     sync.Mutex
}

func (c *cancelAfter) Complete(ctx context.Context, req engine.Request) (engine.Result, error) {
	res, err := c.Engine.Complete(ctx, req)
	c.mu.Lock()
	if c.n--; c.n == 0 {
		c.cancel()
	}
	c.mu.Unlock()
	return res, err
}

// TestSessionsInterrupted: a run stopped mid-way returns every turn it
// measured and the others as not sent, with the context's error; the
// think time paces the turns after the first.
func TestSessionsInterrupted(t *testing.T) {
	srv, c := simSessions(t, sim.PrefixCacheRadix)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &Sessions{Engine: &cancelAfter{Engine: c, n: 4, cancel: cancel}, Model: srv.Model(),
		Builder: &promptsize.Builder{Counter: srv.Counter()}, Count: 2, Turns: 4, UserTokens: 20, Output: 4,
		Think: 20 * time.Millisecond, Rate: 1000, Seed: 1}
	rows, err := s.Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want the cancellation", err)
	}
	if len(rows) != 8 {
		t.Fatalf("%d rows, want 8", len(rows))
	}
	measured, notSent := 0, 0
	for i, r := range rows {
		switch {
		case !r.Failed():
			measured++
			if r.Turn > 1 && r.IntendedSendS < rows[i-1].DoneS+0.019 {
				t.Errorf("%s turn %d intended at %.3f s, %.3f s after the reply before it", r.Session, r.Turn, r.IntendedSendS, r.IntendedSendS-rows[i-1].DoneS)
			}
		case r.ErrorKind == "not_sent":
			notSent++
		}
	}
	if measured < 3 || notSent == 0 || measured+notSent < 7 {
		t.Errorf("%d measured and %d not sent of 8", measured, notSent)
	}
}

// TestSessionsFromTrace: the sessions of a Bailian-format trace (rows
// linked by parent_chat_id) run turn by turn: every turn's prompt is its
// row's own length by the server's count (no history added on top), a
// child goes only after its parent's reply, and the per-turn summary gives
// the trace's theoretical hit rate beside the server's.
func TestSessionsFromTrace(t *testing.T) {
	rows, bs := bailianSample(t, 80)
	tb, err := promptsize.NewTokenBlocks(sim.Counter{}, promptsize.BlockOptions{Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer srv.Close()
	c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	s := &Sessions{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()},
		Trace: &Trace{Rows: rows, BlockSize: bs, Blocks: tb, Completions: true}}
	got, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("%d rows recorded for %d trace rows", len(got), len(rows))
	}
	bySession := map[string][]Request{}
	multi := 0
	for _, r := range got {
		row := rows[r.Index]
		if r.Failed() || r.ServerPromptTokens == nil || *r.ServerPromptTokens != row.Input {
			t.Errorf("session %s turn %d: %+v; want the row's %d tokens, counted by the server", r.Session, r.Turn, r, row.Input)
		}
		bySession[r.Session] = append(bySession[r.Session], r)
	}
	for name, turns := range bySession {
		if len(turns) > 1 {
			multi++
		}
		for k := 1; k < len(turns); k++ {
			if turns[k].Turn != k+1 || turns[k].SendOffsetS < turns[k-1].DoneS {
				t.Errorf("session %s: turn %d sent at %g s, before its parent's reply ended at %g s", name, turns[k].Turn, turns[k].SendOffsetS, turns[k-1].DoneS)
			}
		}
	}
	if multi == 0 {
		t.Fatal("the sample's first rows hold no session of more than one turn")
	}
	sums := s.Summarize(got, ByTurn, timing.SLO{})
	for _, sm := range sums {
		if sm.TheoreticalHitRate == nil || sm.TTFT.P50 == nil {
			t.Errorf("turn %d: summary %+v", sm.Labels.Turn, sm)
			continue
		}
		t.Logf("turn %d: %d requests, TTFT p50 %.2f ms, prompt %d tokens, hit rate server %s, trace %.3f", sm.Labels.Turn, sm.Requests,
			*sm.TTFT.P50*1e3, sm.TotalInputTokens, hitRate(sm.PrefixHitRate, nil), *sm.TheoreticalHitRate)
	}
}

// TestSessionsBarrier: with a round barrier no session sends turn k+1
// before every session's turn k has ended, though the sessions' replies
// differ in length.
func TestSessionsBarrier(t *testing.T) {
	srv, c := simSessions(t, sim.PrefixCacheRadix)
	s := &Sessions{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()},
		Count: 3, Turns: 3, UserTokens: 30, Output: 8, Barrier: true}
	rows, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ended := map[int]float64{} // the last end of each round
	for _, r := range rows {
		ended[r.Turn] = max(ended[r.Turn], r.DoneS)
	}
	for _, r := range rows {
		if r.Failed() {
			t.Fatalf("%s turn %d failed: %s", r.Session, r.Turn, r.Error)
		}
		if r.Turn > 1 && r.SendOffsetS < ended[r.Turn-1] {
			t.Errorf("%s turn %d sent at %g s, before round %d ended at %g s", r.Session, r.Turn, r.SendOffsetS, r.Turn-1, ended[r.Turn-1])
		}
	}
}

// TestSessionsFromConversations: a ShareGPT dataset read with every turn
// runs as sessions whose turns carry the server's replies (or, with
// RecordedReplies, the dataset's), each prompt counted as the server
// counts it and each longer than the last.
func TestSessionsFromConversations(t *testing.T) {
	f, err := os.Open("../workload/testdata/synthetic_sharegpt.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, _, err := workload.ReadAll(f, f.Name(), &workload.Options{AllTurns: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, recorded := range []bool{false, true} {
		srv, c := simSessions(t, sim.PrefixCacheRadix)
		s := &Sessions{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()},
			Trace: &Trace{Rows: rows, Output: 12}, RecordedReplies: recorded}
		got, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(rows) {
			t.Fatalf("%d turns recorded for %d rows", len(got), len(rows))
		}
		last := map[string]int{}
		if countIf(got, func(r Request) bool { return r.Turn > 1 }) == 0 {
			t.Fatal("the sample holds no conversation of more than one turn")
		}
		for _, r := range got {
			if r.Failed() || r.ServerPromptTokens == nil || *r.ServerPromptTokens != r.PPTokens {
				t.Errorf("recorded %t: %s turn %d: %+v", recorded, r.Session, r.Turn, r)
			}
			if r.Turn > 1 && r.PPTokens <= last[r.Session] {
				t.Errorf("recorded %t: %s turn %d has %d tokens, no more than turn %d's %d", recorded, r.Session, r.Turn, r.PPTokens, r.Turn-1, last[r.Session])
			}
			last[r.Session] = r.PPTokens
		}
	}
}

// TestSessionsDistributions: turns, user tokens and outputs drawn from
// ranges vary across sessions and turns, and every turn's prompt is still
// exact and the server's count.
func TestSessionsDistributions(t *testing.T) {
	srv, c := simSessions(t, sim.PrefixCacheRadix)
	s := &Sessions{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()},
		Count: 4, Turns: 1, TurnsMax: 4, UserTokens: 20, UserTokensMax: 60, Output: 4, OutputMax: 12, Seed: 3}
	rows, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	turns, outs := map[string]int{}, map[int]bool{}
	for _, r := range rows {
		if r.Failed() || r.ServerPromptTokens == nil || *r.ServerPromptTokens != r.PPTarget {
			t.Errorf("%s turn %d: %+v", r.Session, r.Turn, r)
		}
		if n := r.PPTarget - s.HistoryTokens(r); n < 20 || n > 60 {
			t.Errorf("%s turn %d: %d new tokens, outside [20, 60]", r.Session, r.Turn, n)
		}
		turns[r.Session] = max(turns[r.Session], r.Turn)
		outs[r.TGTarget] = true
	}
	distinct := map[int]bool{}
	for _, n := range turns {
		distinct[n] = true
	}
	if len(turns) != 4 || len(distinct) < 2 || len(outs) < 2 {
		t.Errorf("turns per session %v, outputs %v; want them drawn, not fixed", turns, outs)
	}
}

// TestSessionsFromMessagesFile: a JSONL file of OpenAI messages, one line
// a whole conversation, runs as sessions of its user turns.
func TestSessionsFromMessagesFile(t *testing.T) {
	conv := `{"messages": [{"role": "user", "content": "Name a prime."}, {"role": "assistant", "content": "Seven."}, {"role": "user", "content": "And the next one?"}, {"role": "assistant", "content": "Eleven."}, {"role": "user", "content": "Why is it prime?"}]}`
	rows, _, err := workload.ReadAll(strings.NewReader(conv+"\n"+conv+"\n"), "conv.jsonl", nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, c := simSessions(t, sim.PrefixCacheRadix)
	s := &Sessions{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()},
		Trace: &Trace{Rows: rows, Output: 6}}
	got, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Fatalf("%d turns, want 2 conversations × 3 user turns", len(got))
	}
	for _, r := range got {
		if r.Failed() || r.ServerPromptTokens == nil || *r.ServerPromptTokens != r.PPTokens || r.Turn < 1 || r.Turn > 3 {
			t.Errorf("%s turn %d: %+v", r.Session, r.Turn, r)
		}
	}
}

// TestSessionsSinks: every turn's row reaches the sinks as it ends, and a
// sink that fails ends the sessions with its error, the rest not sent.
func TestSessionsSinks(t *testing.T) {
	srv, c := simSessions(t, sim.PrefixCacheRadix)
	var col Collector
	s := &Sessions{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()},
		Count: 2, Turns: 3, UserTokens: 20, Output: 4, Sinks: []Sink{&col}}
	rows, err := s.Run(context.Background())
	if err != nil || len(col.Requests()) != len(rows) || len(rows) != 6 {
		t.Fatalf("%v: %d rows, %d collected", err, len(rows), len(col.Requests()))
	}
	boom := errors.New("disk full")
	n := 0
	s.Sinks = []Sink{SinkFunc(func(Request) error {
		if n++; n == 2 {
			return boom
		}
		return nil
	})}
	rows, err = s.Run(context.Background())
	if !errors.Is(err, boom) || !errors.Is(err, ErrSink) || len(rows) != 6 || countIf(rows, func(r Request) bool { return r.ErrorKind == errNotSent }) == 0 {
		t.Errorf("a failing sink: %v, %d rows", err, len(rows))
	}
}

// TestSessionsServerView: with ServerMetrics, the run's ByRun summary
// carries the server's own view of all the sessions: every turn counted,
// its prompt tokens the turns' own, and the measured prefix hit rate
// beside the theoretical one; ByTurn groups carry none, the window
// covering every turn.
func TestSessionsServerView(t *testing.T) {
	srv, c := simSessions(t, sim.PrefixCacheRadix)
	s := &Sessions{Engine: c, Model: srv.Model(),
		Builder: &promptsize.Builder{Counter: srv.Counter()},
		Count:   2, Turns: 3, UserTokens: 40, Output: 8,
		ServerMetrics: &view.Scraper{URL: srv.VLLMURL + "/metrics", Settle: -1}}
	rows, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	all := s.Summarize(rows, ByRun, timing.SLO{})
	v := all[0].Server
	if v == nil || len(v.Warnings) != 0 || v.Requests == nil || *v.Requests != 6 || v.TTFT == nil || v.TTFT.Count != 6 {
		t.Fatalf("server view %+v; want 6 turns and no warning", v)
	}
	prompt, cached := 0, 0
	for _, r := range rows {
		prompt += *r.ServerPromptTokens
		if r.CachedTokens != nil {
			cached += *r.CachedTokens
		}
	}
	if *v.PromptTokens != float64(prompt) || v.PrefixHitRate == nil || math.Abs(*v.PrefixHitRate-float64(cached)/float64(prompt)) > 1e-12 {
		t.Errorf("server prompt tokens %v, hit rate %v; want %d and %d/%d", *v.PromptTokens, v.PrefixHitRate, prompt, cached, prompt)
	}
	if len(v.Beside) == 0 || v.Beside[0].Client != *all[0].TTFT.Mean {
		t.Errorf("beside %+v; want the run's client TTFT mean %v", v.Beside, *all[0].TTFT.Mean)
	}
	for _, sum := range s.Summarize(rows, ByTurn, timing.SLO{}) {
		if sum.Server != nil {
			t.Errorf("turn %d carries the whole run's server view", sum.Labels.Turn)
		}
	}
}

func derefFloat(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestSessionsTrimReplies: a reply goes back into the history as it came,
// or, with TrimReplies, without the white space around it; either way the
// next turn is exact as the server counts it.
func TestSessionsTrimReplies(t *testing.T) {
	for _, trim := range []bool{false, true} {
		srv, c := simSessions(t, sim.PrefixCacheRadix)
		var mu sync.Mutex
		replies := map[string]string{} // the reply each history's last user message got
		var sent [][]engine.Message
		e := engine.Func(func(ctx context.Context, req engine.Request) (engine.Result, error) {
			res, err := c.Complete(ctx, req)
			mu.Lock()
			defer mu.Unlock()
			sent = append(sent, req.Messages)
			// A reply with white space around it, as some models write.
			res.Text = "  " + res.Text + "\n"
			replies[req.Messages[len(req.Messages)-1].Content] = res.Text
			return res, err
		})
		s := &Sessions{Engine: e, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()},
			Count: 2, Turns: 3, UserTokens: 32, Output: 8, TrimReplies: trim}
		rows, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Failed() || r.ServerPromptTokens == nil || *r.ServerPromptTokens != r.PPTokens {
				t.Errorf("trim %v: %s turn %d: client %d, server %v (%s)", trim, r.Session, r.Turn, r.PPTokens, r.ServerPromptTokens, r.Error)
			}
		}
		carried := 0
		for _, msgs := range sent {
			for i, m := range msgs {
				if m.Role != "assistant" {
					continue
				}
				want := replies[msgs[i-1].Content]
				if trim {
					want = strings.TrimSpace(want)
				}
				if m.Content != want {
					t.Errorf("trim %v: history carries %q; want %q", trim, m.Content, want)
				}
				carried++
			}
		}
		if carried == 0 {
			t.Errorf("trim %v: no reply carried into a history", trim)
		}
	}
}
