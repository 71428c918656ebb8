package benchkit

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/metrics/view"
	"github.com/inferbench/inferbench/internal/clock"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
	"github.com/inferbench/inferbench/workload"
)

// errNotSent is the error kind of a session's turn that was never sent.
const errNotSent = "not_sent"

// sessionHeader is the header that names a request's session to an
// affinity router, when Sessions.Header is "".
const sessionHeader = "X-Session-ID"

// Sessions drives multi-turn chats on the closed-loop pattern: Count
// sessions of Turns turns each, every turn sent when the previous one's
// reply has arrived and a think time has passed, the reply's text carried
// into the next turn's messages, at most MaxActive sessions at once and
// the sessions started all at once or as a Poisson process (Rate).
//
// The source is synthetic: every session opens with the Builder's system
// prompt (shared by all), then each turn adds a user message of
// UserTokens new tokens and asks for Output tokens. Every prompt is exact
// after the chat template with its history counted: turn k's target is
// the count of the history before it (the system message, and the user
// and assistant messages of turns 1 … k−1, with the generation prompt)
// plus UserTokens, and the new user message is sized so the whole chat
// hits it (promptsize.Builder.BuildAfter). Turn 1's user message starts
// with a salt of its own session, so sessions share nothing but the
// system prompt.
//
// A turn that fails ends its session: its row holds the error, and each
// turn after it is a row of error kind "not_sent" saying why (as is a turn
// whose prompt could not be built, and each turn a stopped run left); the
// other sessions go on. Rows carry Labels.Session (the session's number, "s0",
// "s1", …) and Labels.Turn (from 1).
type Sessions struct {
	// Engine serves the requests; Model names the model.
	Engine engine.Engine
	Model  string
	// Builder sizes the prompts; its Counter must count as the engine
	// does, and its System is the system prompt every session shares ("":
	// none). Required.
	Builder *promptsize.Builder
	// Request is the template of every turn (sampling, Extra, Header,
	// Thinking); Model, Messages and MaxTokens are the driver's. Its
	// Thinking labels every row (Labels.Thinking), and the turns are
	// counted with the chat template variables it sends, as Load.Request
	// says.
	Request engine.Request
	// NoStream asks for whole, unstreamed replies: each turn then has
	// E2E alone, no TTFT, TPOT or ITL. By default the replies stream.
	NoStream bool
	// AllowEOS lets a reply end before Output tokens; otherwise the
	// requests ask the server to ignore end-of-sequence.
	AllowEOS bool
	// Count is the number of sessions; Turns the turns of each.
	Count, Turns int
	// UserTokens is the new tokens of each turn's user message (turn 1's
	// after the system prompt); Output the max_tokens of each turn.
	UserTokens, Output int
	// TurnsMax, UserTokensMax and OutputMax, when above Turns, UserTokens
	// and Output, make each a distribution: each session's turns, and each
	// turn's new user tokens and output, are drawn uniformly from [Turns,
	// TurnsMax] (and likewise), seeded with Seed, the same for the same
	// session and turn whatever else the run holds.
	TurnsMax, UserTokensMax, OutputMax int
	// MaxActive caps the sessions under way at once; 0 leaves them
	// uncapped. A session waiting for a slot shows as schedule lag on its
	// first turn.
	MaxActive int
	// Rate, when positive, starts sessions as a Poisson process of Rate
	// sessions per second (seeded with Seed); 0 starts them all at once.
	Rate float64
	Seed uint64
	// Think is the pause before every turn after the first, from the
	// previous reply's end; with ThinkExp it is the mean of exponential
	// pauses, drawn per session from Seed.
	Think    time.Duration
	ThinkExp bool
	// Header names the header that carries the session's id on each
	// request, for affinity routers: "" means X-Session-ID, "-"
	// sends none.
	Header string
	// Nonce makes the session salts distinct from another run's (a random
	// one when ""); RequestTimeout bounds each turn (0: none).
	Nonce          string
	RequestTimeout time.Duration
	// Trace, when set, is the sessions' source instead of the synthetic
	// one: its rows grouped by session (Bailian's parent links, named by
	// workload.LinkSessions), each session's rows its turns in order, each
	// turn's prompt the row's own (exact token blocks: a Bailian row is
	// self-contained, its length and block ids already cover the parent's
	// prompt and reply, so no history is added on top), its output the
	// row's. A session starts at its first row's instant (all at once for
	// untimed rows); each later turn goes at its row's instant or when
	// the previous reply ends, whichever is later. Count, Turns,
	// UserTokens and Output are the trace's then.
	//
	// A dataset's conversations (ShareGPT read with every turn, one row a
	// user message; a JSONL file of OpenAI messages, one line a whole
	// conversation) are a Trace too: each turn sends the session's history
	// and the row's user message, the history carrying the server's real
	// replies, or the dataset's recorded ones with RecordedReplies.
	Trace           *Trace
	RecordedReplies bool
	// Barrier holds every session's turn k+1 until every session has
	// ended turn k (SGLang's round barrier): rounds, not sessions, then
	// pace the load.
	Barrier bool

	// Sinks receive each turn's row as it ends (a not-sent turn's when
	// its session gives up), one at a time, so that an interrupted run
	// keeps what it measured; a sink that fails ends the sessions.
	Sinks []Sink
	// ServerMetrics, when set, scrapes the server's /metrics before the
	// first session and after the last, and Run sets Server to what it
	// saw over the whole run; Summarize's ByRun group carries it.
	ServerMetrics *view.Scraper
	Server        *view.View
	// TrimReplies carries each reply into the history without the white
	// space around it. A chat template may trim a message (Llama 3's
	// Hugging Face template does) where the server's own does not
	// (Ollama's Go templates): a reply that begins or ends in white space
	// is then counted one way by the client and another by the server.
	// Trimmed, both count it alike; but the history then differs from the
	// tokens the server generated, which a server that does not trim
	// cannot reuse from its prefix cache. Off by default: the reply goes
	// back as it came, as a chat client sends it.
	TrimReplies bool

	barrier *rounds
	sinkMu  sync.Mutex
	stop    context.CancelCauseFunc
	// builder is Builder counting with the template variables of
	// Request.Thinking (thinkingBuilder), for the run.
	builder *promptsize.Builder
}

// rounds is the round barrier of a run of sessions: each session's last
// ended round, or math.MaxInt once it left (its last turn, or a failure).
type rounds struct {
	mu       sync.Mutex
	cond     *sync.Cond
	progress []int
}

func newRounds(n int) *rounds {
	r := &rounds{progress: make([]int, n)}
	r.cond = sync.NewCond(&r.mu)
	return r
}

func (r *rounds) set(i, k int) {
	r.mu.Lock()
	r.progress[i] = max(r.progress[i], k)
	r.mu.Unlock()
	r.cond.Broadcast()
}

// wait waits until every session has ended round k or left, or ctx ends.
func (r *rounds) wait(ctx context.Context, k int) {
	stop := context.AfterFunc(ctx, r.cond.Broadcast)
	defer stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for slices.Min(r.progress) < k && ctx.Err() == nil {
		r.cond.Wait()
	}
}

// Run runs the sessions and returns one row per turn of every session,
// in session and turn order. A run that ctx stops returns what it
// measured, the turns left as "not_sent" rows, with ctx's error.
func (s *Sessions) Run(ctx context.Context) ([]Request, error) {
	s.builder, _ = thinkingBuilder(s.Builder, s.Request.Thinking)
	scr := s.ServerMetrics.Start(ctx)
	scr.Ready()
	rows, err := s.run(ctx)
	s.Server = nil
	if scr != nil {
		s.Server = scr.Finish(ctx, serverCounts(rows))
	}
	return rows, err
}

func (s *Sessions) run(ctx context.Context) ([]Request, error) {
	if s.Trace != nil {
		return s.runTrace(ctx)
	}
	switch {
	case s.Engine == nil || s.Builder == nil || s.Builder.Counter == nil:
		return nil, fmt.Errorf("%w: sessions need an Engine and a Builder with a Counter", ErrBadLoad)
	case s.Count <= 0 || s.Turns <= 0 || s.UserTokens <= 0 || s.Output <= 0:
		return nil, fmt.Errorf("%w: sessions need positive Count, Turns, UserTokens and Output, got %d, %d, %d and %d", ErrBadLoad, s.Count, s.Turns, s.UserTokens, s.Output)
	case s.MaxActive < 0 || s.Rate < 0 || s.Think < 0:
		return nil, fmt.Errorf("%w: MaxActive, Rate and Think must not be negative", ErrBadLoad)
	}
	nonce := s.Nonce
	if nonce == "" {
		nonce = promptsize.NewNonce(nil)
	}
	ctx, s.stop = context.WithCancelCause(ctx)
	defer s.stop(nil)
	starts := s.SessionStarts()
	var slots chan struct{}
	if s.MaxActive > 0 {
		slots = make(chan struct{}, s.MaxActive)
	}
	rows := make([][]Request, s.Count)
	if s.Barrier {
		s.barrier = newRounds(s.Count)
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	for i := range s.Count {
		wg.Go(func() {
			rows[i] = s.session(ctx, t0, i, starts[i], slots, promptsize.RunSalt(nonce, 0, i))
		})
	}
	wg.Wait()
	out := slices.Concat(rows...)
	return out, stopped(ctx)
}

// SessionStarts is each synthetic session's start, from the run's start:
// all 0, or with Rate a Poisson process of Rate sessions per second seeded
// with Seed (the first at 0). A session waiting for a MaxActive slot
// starts later than this.
func (s *Sessions) SessionStarts() []time.Duration {
	starts := make([]time.Duration, max(s.Count, 0))
	if s.Rate > 0 {
		rng := rand.New(rand.NewPCG(s.Seed, s.Seed^0x5e5510e5))
		var at time.Duration
		for i := range starts {
			if i > 0 {
				at += time.Duration(rng.ExpFloat64() / s.Rate * float64(time.Second))
			}
			starts[i] = at
		}
	}
	return starts
}

// SessionTurns is the number of turns of synthetic session i: Turns, or
// its draw from [Turns, TurnsMax].
func (s *Sessions) SessionTurns(i int) int { return s.draw(s.Turns, s.TurnsMax, i, 0, 0) }

// ThinkTimes is session i's pause before each of its turns, turn k's at
// k−1 (the first turn's is drawn and not used): Think, or with ThinkExp
// exponential pauses of mean Think drawn from Seed.
func (s *Sessions) ThinkTimes(i, turns int) []time.Duration {
	rng := rand.New(rand.NewPCG(s.Seed^uint64(i+1), uint64(i)))
	out := make([]time.Duration, max(turns, 0))
	for k := range out {
		out[k] = s.Think
		if s.ThinkExp {
			out[k] = time.Duration(rng.ExpFloat64() * float64(s.Think))
		}
	}
	return out
}

// Turn is synthetic session i's turn k (from 1) after history (the
// system prompt, then each earlier turn's messages and reply): its prompt
// (history's count plus the turn's new user tokens, turn 1's user message
// salted with the session's salt of nonce), its max_tokens and its row's
// Index, as Run sends it.
func (s *Sessions) Turn(ctx context.Context, nonce string, i, k int, history []promptsize.Message) (p promptsize.Prompt, output, index int, err error) {
	if s.builder == nil {
		s.builder, _ = thinkingBuilder(s.Builder, s.Request.Thinking)
	}
	p, err = s.turnPrompt(ctx, history, i, k, promptsize.RunSalt(nonce, 0, i))
	return p, s.turnOutput(i, k), s.turnIndex(i, k), err
}

// turnOutput is synthetic session i's turn k's max_tokens.
func (s *Sessions) turnOutput(i, k int) int { return s.draw(s.Output, s.OutputMax, i, k, 2) }

// turnIndex is synthetic session i's turn k's row Index.
func (s *Sessions) turnIndex(i, k int) int { return i*max(s.Turns, s.TurnsMax) + k - 1 }

// A turnSource gives a session's turns: how many, and turn k's prompt,
// output, index and earliest instant (from the run's start; 0 for none)
// after the history so far.
type turnSource struct {
	id     string
	turns  int
	build  func(ctx context.Context, history []promptsize.Message, k int) (promptsize.Prompt, error)
	output func(k int) int
	index  func(k int) int
	at     func(k int) time.Duration
	// carry says the turn's messages go into the next turn's history, with
	// the server's reply unless recorded (the dataset's own replies are in
	// its rows).
	carry, recorded bool
}

// session runs session i from its start offset, returning its rows.
func (s *Sessions) session(ctx context.Context, t0 time.Time, i int, start time.Duration, slots chan struct{}, salt string) []Request {
	src := turnSource{id: fmt.Sprintf("s%d", i), turns: s.SessionTurns(i), carry: true,
		build: func(ctx context.Context, h []promptsize.Message, k int) (promptsize.Prompt, error) {
			return s.turnPrompt(ctx, h, i, k, salt)
		},
		output: func(k int) int { return s.turnOutput(i, k) },
		index:  func(k int) int { return s.turnIndex(i, k) },
		at:     func(int) time.Duration { return 0 }}
	return s.runSession(ctx, t0, i, start, slots, src)
}

// runSession runs the turns of src from start, returning its rows.
func (s *Sessions) runSession(ctx context.Context, t0 time.Time, i int, start time.Duration, slots chan struct{}, src turnSource) []Request {
	id := src.id
	rows := make([]Request, 0, src.turns)
	if s.barrier != nil {
		defer s.barrier.set(i, math.MaxInt)
	}
	notSent := func(from int, why string) []Request {
		for k := from; k <= src.turns; k++ {
			rows = append(rows, Request{Labels: Labels{Session: id, Turn: k, Thinking: thinkingLabel(s.Request.Thinking)}, Index: src.index(k),
				TGTarget: src.output(k), Model: s.Model, Stream: !s.NoStream, ErrorKind: errNotSent, Error: why})
			s.sink(rows[len(rows)-1])
		}
		return rows
	}
	if !clock.SleepUntil(ctx, t0.Add(start)) {
		return notSent(1, "not sent: "+context.Cause(ctx).Error())
	}
	if slots != nil {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		case <-ctx.Done():
			return notSent(1, "not sent: "+context.Cause(ctx).Error())
		}
	}
	var history []promptsize.Message
	if sys := s.builder.System; sys != "" {
		history = append(history, promptsize.Message{Role: "system", Content: sys})
	}
	intended := start
	thinks := s.ThinkTimes(i, src.turns)
	for k := 1; k <= src.turns; k++ {
		think := thinks[k-1]
		if k > 1 && s.barrier != nil {
			s.barrier.wait(ctx, k-1)
		}
		if k > 1 {
			next := time.Now().Add(think)
			if own := t0.Add(src.at(k)); own.After(next) {
				next = own
			}
			if !clock.SleepUntil(ctx, next) {
				return notSent(k, "not sent: "+context.Cause(ctx).Error())
			}
			intended = next.Sub(t0)
		}
		p, err := src.build(ctx, history, k)
		if err != nil {
			return notSent(k, fmt.Sprintf("not sent: building turn %d's prompt: %v", k, err))
		}
		out := src.output(k)
		req := promptRequest(s.Request, s.Model, p, out, !s.AllowEOS)
		req.Stream = !s.NoStream
		if h := s.header(); h != "" {
			req.Header = req.Header.Clone()
			if req.Header == nil {
				req.Header = http.Header{}
			}
			req.Header.Set(h, id)
		}
		q := concurrency.Result[engine.Result]{Index: src.index(k), User: i, Dispatched: true, Intended: intended, Dispatch: time.Since(t0)}
		q.Sent = q.Dispatch
		sendCtx := engine.WithSendHook(ctx, func(at time.Time) { q.Sent, q.Marked = at.Sub(t0), true })
		pr, err := engine.Prepare(sendCtx, s.Engine, req)
		if err == nil {
			q.Value, err = sendWithin(sendCtx, pr, s.RequestTimeout)
		}
		q.Done, q.Err = time.Since(t0), err
		asked := Request{Labels: Labels{Session: id, Turn: k, Thinking: thinkingLabel(s.Request.Thinking)}, Index: q.Index, PPTarget: p.Target,
			TGTarget: out, Model: s.Model, Stream: !s.NoStream}
		if asked.PPTarget == 0 {
			asked.PPTarget = p.Tokens
		}
		rows = append(rows, NewRequest(asked, p, q, s.AllowEOS))
		s.sink(rows[len(rows)-1])
		if err != nil {
			return notSent(k+1, fmt.Sprintf("not sent: turn %d of session %s failed: %v", k, id, err))
		}
		switch {
		case src.carry && src.recorded:
			history = p.Messages
		case src.carry:
			reply := q.Value.Text
			if s.TrimReplies {
				reply = strings.TrimSpace(reply)
			}
			history = append(p.Messages, promptsize.Message{Role: "assistant", Content: reply})
		}
		if s.barrier != nil {
			s.barrier.set(i, k)
		}
	}
	return rows
}

// draw is session i's turn k's value of a fixed lo or a uniform [lo, hi]
// (which tells the figures apart).
func (s *Sessions) draw(lo, hi, i, k, which int) int {
	if hi <= lo {
		return lo
	}
	src := rand.New(rand.NewPCG(s.Seed^uint64(i+1)*0x9e3779b97f4a7c15, uint64(k)*3+uint64(which)))
	return lo + src.IntN(hi-lo+1)
}

// turnPrompt builds session i's turn k's prompt after history: the
// history's count plus the turn's new user tokens, turn 1's user message
// salted with the session's salt.
func (s *Sessions) turnPrompt(ctx context.Context, history []promptsize.Message, i, k int, salt string) (promptsize.Prompt, error) {
	h := 0
	if len(history) > 0 {
		var err error
		if h, err = s.builder.Counter.Count(ctx, history); err != nil {
			return promptsize.Prompt{}, err
		}
	}
	if k > 1 {
		salt = ""
	}
	return s.builder.BuildAfter(ctx, history, h+s.draw(s.UserTokens, s.UserTokensMax, i, k, 1), salt)
}

func (s *Sessions) header() string {
	switch s.Header {
	case "":
		return sessionHeader
	case "-":
		return ""
	}
	return s.Header
}

// HistoryTokens is the part of row r's prompt that its session's earlier
// turns (and the shared system prompt) had already sent: what a prefix
// cache could serve.
func (s *Sessions) HistoryTokens(r Request) int {
	if s.Trace != nil {
		if hits := s.traceHits(); r.Index >= 0 && r.Index < len(hits) {
			return hits[r.Index]
		}
		return 0
	}
	if r.PPTarget == 0 {
		return 0
	}
	var i int
	if _, err := fmt.Sscanf(r.Session, "s%d", &i); err != nil {
		return 0
	}
	return r.PPTarget - s.draw(s.UserTokens, s.UserTokensMax, i, r.Turn, 1)
}

// traceHits is, for each row of the trace in order, the tokens of its
// leading blocks whose ids an earlier row sent (workload.PrefixHitRate's
// hit, row by row).
func (s *Sessions) traceHits() []int {
	tr := s.Trace
	seen := map[int64]bool{}
	hits := make([]int, len(tr.Rows))
	for i, r := range tr.Rows {
		k := 0
		for k < len(r.HashIDs) && seen[r.HashIDs[k]] {
			k++
		}
		switch {
		case k == len(r.HashIDs) && k > 0:
			hits[i] = r.Input
		default:
			hits[i] = k * tr.BlockSize
		}
		for _, id := range r.HashIDs {
			seen[id] = true
		}
	}
	return hits
}

// Summarize summarises rows (Summarize) and sets each group's
// TheoreticalHitRate: Σ history tokens / Σ prompt tokens over its turns
// that completed, beside the measured PrefixHitRate.
func (s *Sessions) Summarize(rows []Request, key Key, slo timing.SLO) []Summary {
	sums := Summarize(rows, key, slo)
	group := map[string]int{} // groups in the order they first appear, as Summarize's
	hist := make([]int, len(sums))
	prompt := make([]int, len(sums))
	for _, r := range rows {
		g, ok := group[key.of(r)]
		if !ok {
			g = len(group)
			group[key.of(r)] = g
		}
		if g < len(sums) && !r.Failed() {
			hist[g] += s.HistoryTokens(r)
			prompt[g] += r.PPTarget
		}
	}
	for j := range sums {
		if prompt[j] > 0 {
			v := float64(hist[j]) / float64(prompt[j])
			sums[j].TheoreticalHitRate = &v
		}
		if key == ByRun && s.Server != nil {
			v := *s.Server
			compareServer(&v, sums[j])
			sums[j].Server = &v
		}
	}
	return sums
}

// runTrace runs the sessions of s.Trace: its rows grouped by session, in
// the order their first rows come.
func (s *Sessions) runTrace(ctx context.Context) ([]Request, error) {
	if s.Engine == nil || s.Builder == nil || s.Builder.Counter == nil {
		return nil, fmt.Errorf("%w: sessions need an Engine and a Builder with a Counter", ErrBadLoad)
	}
	tr := *s.Trace
	tr.Rows = conversationTurns(tr.Rows)
	workload.LinkSessions(tr.Rows)
	var order []string
	chains := map[string][]int{}
	for i, r := range tr.Rows {
		name := r.Session
		if name == "" {
			name = fmt.Sprintf("row-%d", i)
		}
		if _, ok := chains[name]; !ok {
			order = append(order, name)
		}
		chains[name] = append(chains[name], i)
	}
	bb := tr.builder(s.builder, nil)
	ctx, s.stop = context.WithCancelCause(ctx)
	defer s.stop(nil)
	var slots chan struct{}
	if s.MaxActive > 0 {
		slots = make(chan struct{}, s.MaxActive)
	}
	rows := make([][]Request, len(order))
	if s.Barrier {
		s.barrier = newRounds(len(order))
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	for j, name := range order {
		idx := chains[name]
		at := func(k int) time.Duration {
			if r := tr.Rows[idx[k-1]]; r.Timed() {
				return r.At
			}
			return 0
		}
		dataset := len(tr.Rows[idx[0]].Messages) > 0
		src := turnSource{id: name, turns: len(idx), carry: dataset, recorded: s.RecordedReplies,
			build: func(ctx context.Context, history []promptsize.Message, k int) (promptsize.Prompt, error) {
				row := tr.Rows[idx[k-1]]
				if !dataset {
					it, err := tr.item(ctx, s.builder, bb, row, idx[k-1], nil)
					return it.Prompt, err
				}
				return s.conversationTurn(ctx, history, row)
			},
			output: func(k int) int { return cmp.Or(tr.Rows[idx[k-1]].Output, tr.Output, 128) },
			index:  func(k int) int { return idx[k-1] },
			at:     at}
		wg.Go(func() { rows[j] = s.runSession(ctx, t0, j, at(1), slots, src) })
	}
	wg.Wait()
	return slices.Concat(rows...), stopped(ctx)
}

// conversationTurn is a dataset turn's prompt: the history and the row's
// messages, without the dataset's recorded replies unless RecordedReplies,
// counted as the engine counts them.
func (s *Sessions) conversationTurn(ctx context.Context, history []promptsize.Message, row workload.Row) (promptsize.Prompt, error) {
	msgs := slices.Clone(history)
	for _, m := range row.Messages {
		if m.Role == "assistant" && !s.RecordedReplies {
			continue // the server's own reply is in the history
		}
		msgs = append(msgs, promptsize.Message{Role: m.Role, Content: m.Content})
	}
	n, err := s.builder.Counter.Count(ctx, msgs)
	return promptsize.Prompt{Messages: msgs, Tokens: n, Target: n}, err
}

// conversationTurns returns rows with each row that holds a whole
// conversation (a JSONL line of OpenAI messages with several user
// messages, and no session of its own) split into its turns, one a user
// message and what came before it since the last, as ShareGPT read with
// every turn gives them; other rows stay as they are.
func conversationTurns(rows []workload.Row) []workload.Row {
	out := make([]workload.Row, 0, len(rows))
	for i, r := range rows {
		users := countIf(r.Messages, func(m workload.Message) bool { return m.Role == "user" })
		if r.Session != "" || users < 2 {
			out = append(out, r)
			continue
		}
		turn, from := 0, 0
		for j, m := range r.Messages {
			if m.Role != "user" {
				continue
			}
			turn++
			t := r
			t.Messages, t.Session, t.Turn = r.Messages[from:j+1], fmt.Sprintf("conv-%d", i), turn
			out = append(out, t)
			from = j + 1
		}
	}
	return out
}

// sink hands r to the sinks, one row at a time; the first that fails
// stops the sessions.
func (s *Sessions) sink(r Request) {
	if len(s.Sinks) == 0 {
		return
	}
	s.sinkMu.Lock()
	defer s.sinkMu.Unlock()
	if err := addAll(s.Sinks, r); err != nil && s.stop != nil {
		s.stop(err)
	}
}

// stopped is why ctx ended (a sink's error, or its parent's), nil while it
// has not.
func stopped(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	return context.Cause(ctx)
}
