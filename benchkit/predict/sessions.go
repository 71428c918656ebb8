package predict

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
)

// Sessions predicts the multi-turn chats of s (benchkit.Sessions.Run)
// against the embedded engine: the same rows, one per turn in session and
// turn order, marked Predicted and Simulated. Each turn is built as Run
// builds it (Sessions.Turn: the history, then the turn's new user
// tokens), its history carrying the predicted reply's text, so that the
// engine's prefix cache serves the history as it serves a live session's.
// Sessions start at their SessionStarts; with MaxActive, the first
// MaxActive in order of start take a slot at their start and each later
// one takes the slot the first session to end frees, at its start or at
// that end, whichever is later. Turn k+1 is sent when turn k's reply ends
// plus its think time (ThinkTimes); its intended instant is that, the
// first turn's the session's start. Sessions that start together (no
// Rate) reach the server BurstGap apart, session i at i × BurstGap, as a
// burst's requests do (see BurstGap).
//
// s.Nonce is set when empty (a live run with the same Sessions then sends
// the same prompts). Its Engine is not used. With Barrier, every
// session's turn k+1 waits until every session has ended turn k (or all
// its turns), then goes at that instant plus its think time, BurstGap
// apart in session order. A Trace, a Request.Thinking, and a Barrier with
// MaxActive below Count (whose live sessions wait on sessions that cannot
// start) are refused (ErrUnpredictable).
func (p *Predictor) Sessions(ctx context.Context, s *benchkit.Sessions) ([]benchkit.Request, error) {
	if err := checkSessions(s); err != nil {
		return nil, err
	}
	if s.Nonce == "" {
		s.Nonce = promptsize.NewNonce(nil)
	}
	starts := p.sessionStarts(s)
	sess := newPredSessions(s)
	var turns []predTurn
	var buildErr error
	send := func(i, k int, intended, at time.Duration) []sim.PredictRequest {
		pr, out, index, err := s.Turn(ctx, s.Nonce, i, k, sess[i].history)
		if err != nil {
			buildErr = fmt.Errorf("predict: session s%d's turn %d: %w", i, k, err)
			return nil
		}
		turns = append(turns, predTurn{i: i, k: k, out: out, index: index, prompt: pr, intended: intended, sentAt: at})
		return []sim.PredictRequest{{At: at, API: p.API, Messages: pr.Messages, TokenIDs: pr.TokenIDs,
			MaxTokens: out, IgnoreEOS: !s.AllowEOS, Seed: s.Request.Seed}}
	}
	// Sessions take slots in order of start; next is the first waiting.
	slots := s.Count
	if s.MaxActive > 0 {
		slots = min(s.MaxActive, s.Count)
	}
	next := slots
	var first []sim.PredictRequest
	for i := range slots {
		first = append(first, send(i, 1, starts[i], starts[i])...)
	}
	if buildErr != nil {
		return nil, buildErr
	}
	// With a round barrier, progress is each session's last ended turn
	// (math.MaxInt once it has ended them all) and waiting the turn a
	// session ended and waits on the round of (0: none). When the last
	// session ends round k, every session waiting on it sends its next
	// turn at that instant plus its think time, BurstGap apart in
	// session order.
	progress, waiting := make([]int, s.Count), make([]int, s.Count)
	barrier := func(i, k int, now time.Duration) []sim.PredictRequest {
		progress[i] = k
		if k < sess[i].turns {
			waiting[i] = k
		} else {
			progress[i] = math.MaxInt
		}
		low := slices.Min(progress)
		var out []sim.PredictRequest
		for j, w := range waiting {
			if w > 0 && low >= w {
				waiting[j] = 0
				at := now + sess[j].thinks[w] + time.Duration(len(out))*p.BurstGap
				out = append(out, send(j, w+1, at, at)...)
			}
		}
		return out
	}
	pred, err := sim.PredictDynamic(ctx, p.Options, first, func(n int, r sim.Predicted) []sim.PredictRequest {
		if buildErr != nil {
			return nil
		}
		t := turns[n]
		reply := r.Text
		if s.TrimReplies {
			reply = strings.TrimSpace(reply)
		}
		se := &sess[t.i]
		se.history = append(t.prompt.Messages, promptsize.Message{Role: "assistant", Content: reply})
		if s.Barrier {
			return barrier(t.i, t.k, r.Last)
		}
		if t.k < se.turns {
			at := r.Last + se.thinks[t.k]
			return send(t.i, t.k+1, at, at)
		}
		// The session ends: its slot goes to the next waiting.
		if next >= s.Count {
			return nil
		}
		next++
		return send(next-1, 1, starts[next-1], max(starts[next-1], r.Last))
	})
	if err == nil {
		err = buildErr
	}
	if err != nil {
		return nil, err
	}
	return p.sessionRows(s, sess, turns, pred), nil
}

// sessionRows makes each predicted turn its row, as a live Sessions run
// records it, session by session.
func (p *Predictor) sessionRows(s *benchkit.Sessions, sess []predSession, turns []predTurn, pred []sim.Predicted) []benchkit.Request {
	for n, r := range pred {
		t := turns[n]
		asked := benchkit.Request{Labels: benchkit.Labels{Session: fmt.Sprintf("s%d", t.i), Turn: t.k}, Index: t.index,
			PPTarget: t.prompt.Target, TGTarget: t.out, Model: s.Model, Stream: !s.NoStream, Simulated: true, Predicted: true}
		if asked.PPTarget == 0 {
			asked.PPTarget = t.prompt.Tokens
		}
		q := p.result(t.index, t.intended, t.sentAt, t.prompt, r, s.Model, !s.NoStream)
		q.User = t.i
		sess[t.i].rows = append(sess[t.i].rows, benchkit.NewRequest(asked, t.prompt, q, s.AllowEOS))
	}
	var rows []benchkit.Request
	for _, se := range sess {
		rows = append(rows, se.rows...)
	}
	return rows
}

// sessionStarts are the sessions' start instants; sessions that start
// together reach the server BurstGap apart, as a burst's requests do.
func (p *Predictor) sessionStarts(s *benchkit.Sessions) []time.Duration {
	starts := s.SessionStarts()
	if s.Rate == 0 {
		for i := range starts {
			starts[i] += time.Duration(i) * p.BurstGap
		}
	}
	return starts
}

// newPredSessions readies each session: its turns, think times and the
// system message that opens its history.
func newPredSessions(s *benchkit.Sessions) []predSession {
	sess := make([]predSession, s.Count)
	var sys []promptsize.Message
	if s.Builder.System != "" {
		sys = []promptsize.Message{{Role: "system", Content: s.Builder.System}}
	}
	for i := range sess {
		t := s.SessionTurns(i)
		sess[i] = predSession{turns: t, thinks: s.ThinkTimes(i, t), history: sys}
	}
	return sess
}

// predSession is one session of a prediction: its turns, think times,
// history so far and rows.
type predSession struct {
	turns   int
	thinks  []time.Duration
	history []promptsize.Message
	rows    []benchkit.Request
}

// predTurn is request n of a prediction: session i's turn k, its prompt,
// output and index, meant for intended and sent at sentAt.
type predTurn struct {
	i, k, out, index int
	prompt           promptsize.Prompt
	intended, sentAt time.Duration
}

// checkSessions refuses what a prediction of sessions cannot follow, and
// sessions that are no load.
func checkSessions(s *benchkit.Sessions) error {
	switch {
	case s == nil || s.Builder == nil || s.Builder.Counter == nil || s.Model == "":
		return fmt.Errorf("%w: sessions with a Model and a Builder with a Counter are required", ErrUnpredictable)
	case s.Trace != nil:
		return fmt.Errorf("%w: sessions from a trace or a dataset are not predicted", ErrUnpredictable)
	case s.Barrier && s.MaxActive > 0 && s.MaxActive < s.Count:
		return fmt.Errorf("%w: a round barrier with fewer slots (MaxActive %d) than sessions (%d) waits for sessions that cannot start", ErrUnpredictable, s.MaxActive, s.Count)
	case s.Request.Thinking != nil:
		return fmt.Errorf("%w: a thinking control is not predicted", ErrUnpredictable)
	case s.Count <= 0 || s.Turns <= 0 || s.UserTokens <= 0 || s.Output <= 0:
		return fmt.Errorf("%w: sessions need positive Count, Turns, UserTokens and Output, got %d, %d, %d and %d", benchkit.ErrBadLoad, s.Count, s.Turns, s.UserTokens, s.Output)
	case s.MaxActive < 0 || s.Rate < 0 || s.Think < 0:
		return fmt.Errorf("%w: MaxActive, Rate and Think must not be negative", benchkit.ErrBadLoad)
	}
	return nil
}
