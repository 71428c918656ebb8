package predict

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// TestPredictSessions runs multi-turn sessions live against the embedded
// engine and predicts the same Sessions: 5 sessions of 3 turns starting
// at 40/s, at most 3 under way, 10 ms of thought between turns, a shared
// system prompt; and 3 sessions of 3 turns held by a round barrier. The
// same rows in the same order, each turn's prompt, cached tokens (the
// history the prefix cache serves, which holds only if the predicted
// replies are the live ones; first turns: their sum) and reply text
// equal, and the timing within agree's tolerances; each turn's send
// instant within two steps and 2 ms, plus 2 ms a turn (the client's own
// time per turn, which the prediction does not have).
func TestPredictSessions(t *testing.T) {
	opts := slowSteps()
	system := "You are a careful assistant who answers briefly."
	for name, shape := range map[string]func() *benchkit.Sessions{
		"rate": func() *benchkit.Sessions {
			return &benchkit.Sessions{Count: 5, Turns: 3, UserTokens: 60, Output: 16, MaxActive: 3, Rate: 40, Seed: 2, Think: 10 * time.Millisecond}
		},
		"barrier": func() *benchkit.Sessions {
			return &benchkit.Sessions{Count: 3, Turns: 3, UserTokens: 40, Output: 12, Barrier: true, Think: 5 * time.Millisecond, OutputMax: 24, Seed: 3}
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := sim.NewServer(opts)
			defer srv.Close()
			c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseIdleConnections()
			mk := func(e *openai.Client) *benchkit.Sessions {
				s := shape()
				s.Engine, s.Model, s.Nonce = e, srv.Model(), "n1"
				s.Builder = &promptsize.Builder{Counter: srv.Counter(), System: system}
				return s
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			liveRows, err := mk(c).Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			got, err := (&Predictor{Options: opts, BurstGap: time.Microsecond}).Sessions(ctx, mk(nil))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("predicted %d turns in %v", len(got), time.Since(start))
			compareSessions(t, got, liveRows, shape().Count*shape().Turns, opts.Preset.DecodeStep([]int{1024}))
		})
	}
	for name, s := range map[string]*benchkit.Sessions{
		"trace":            {Model: "m", Builder: &promptsize.Builder{Counter: sim.Counter{}}, Count: 1, Turns: 1, UserTokens: 8, Output: 2, Trace: &benchkit.Trace{}},
		"barrier and slot": {Model: "m", Builder: &promptsize.Builder{Counter: sim.Counter{}}, Count: 3, Turns: 1, UserTokens: 8, Output: 2, Barrier: true, MaxActive: 2},
		"no model":         {Builder: &promptsize.Builder{Counter: sim.Counter{}}, Count: 1, Turns: 1, UserTokens: 8, Output: 2},
	} {
		if _, err := (&Predictor{Options: opts}).Sessions(context.Background(), s); !errors.Is(err, ErrUnpredictable) {
			t.Errorf("%s: error %v, want ErrUnpredictable", name, err)
		}
	}
}

// compareSessions holds predicted session rows against live ones (n of
// each, in the same order).
func compareSessions(t *testing.T, got, liveRows []benchkit.Request, n int, step time.Duration) {
	t.Helper()
	if len(got) != n || len(liveRows) != n {
		t.Fatalf("%d predicted rows, %d live; want %d", len(got), len(liveRows), n)
	}
	var sent []time.Duration
	// Sessions that start together may reach the live server in either
	// order; the first to arrive finds the system prompt uncached, so
	// first turns agree on their sum.
	var firstCached [2]int
	for n, p := range got {
		l := liveRows[n]
		switch {
		case p.Session != l.Session || p.Turn != l.Turn || p.Index != l.Index:
			t.Fatalf("row %d: predicted %s/%d (%d), live %s/%d (%d)", n, p.Session, p.Turn, p.Index, l.Session, l.Turn, l.Index)
		case l.Failed() || p.Failed():
			t.Fatalf("row %d: live %s, predicted %s", n, l.Error, p.Error)
		case p.PPTokens != l.PPTokens || (p.Turn > 1 && deref(p.CachedTokens) != deref(l.CachedTokens)):
			t.Errorf("%s turn %d: predicted %d prompt tokens, %v cached; live %d, %v", p.Session, p.Turn, p.PPTokens, deref(p.CachedTokens), l.PPTokens, deref(l.CachedTokens))
		case p.Preview != l.Preview:
			t.Errorf("%s turn %d: predicted reply %q, live %q", p.Session, p.Turn, p.Preview, l.Preview)
		}
		if p.Turn > 1 && (p.CachedTokens == nil || *p.CachedTokens < p.PPTokens/2) {
			t.Errorf("%s turn %d: %v of %d prompt tokens cached: the history should be", p.Session, p.Turn, deref(p.CachedTokens), p.PPTokens)
		}
		if p.Turn == 1 {
			firstCached[0] += cmpOr(p.CachedTokens)
			firstCached[1] += cmpOr(l.CachedTokens)
		}
		d := time.Duration(math.Abs(p.SendOffsetS-l.SendOffsetS)*1e9) - time.Duration(p.Turn)*slack
		sent = append(sent, max(d, 0))
	}
	if firstCached[0] != firstCached[1] {
		t.Errorf("first turns: %d tokens cached predicted, %d live", firstCached[0], firstCached[1])
	}
	run := func(rows []benchkit.Request) benchkit.LoadRun {
		return benchkit.LoadRun{Summary: benchkit.Summarize(rows, benchkit.ByRun, timing.SLO{})[0], Requests: rows}
	}
	agree(t, run(got), run(liveRows), step)
	slices.Sort(sent)
	check := t.Errorf
	if raceEnabled {
		check = t.Logf
	}
	if med := sent[len(sent)/2]; med > 2*step+slack {
		check("send instants differ by %v (less 2 ms a turn) at the median, want at most %v", med, 2*step+slack)
	}
	t.Logf("|Δ send| less 2 ms a turn: median %v, largest %v", sent[len(sent)/2], sent[len(sent)-1])
}

func cmpOr(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
