package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/inferbench/inferbench/promptsize"
)

// PredictAPI names the API a predicted request goes to, whose rules decide
// where its generation ends and which prefix cache it meets, as on a live
// Server.
type PredictAPI string

// The APIs a prediction follows.
const (
	// PredictVLLM is the vLLM API (Server.VLLMURL): a chat request
	// (Messages) or a completion of token ids (TokenIDs), the instance's
	// block cache, EOS allowed unless IgnoreEOS. The zero value.
	PredictVLLM PredictAPI = "vllm"
	// PredictExoBench is exo's POST /bench/chat/completions: EOS banned
	// (exactly MaxTokens tokens), exo's KVPrefixCache only with
	// UsePrefixCache.
	PredictExoBench PredictAPI = "exo-bench"
	// PredictExo is exo's POST /v1/chat/completions: EOS allowed, exo's
	// KVPrefixCache.
	PredictExo PredictAPI = "exo"
)

// A PredictRequest is one request of a workload to predict: what a client
// would send, and when it would reach the server.
type PredictRequest struct {
	// At is when the request reaches the server, from the start of the
	// schedule (a live server's start): the arrival instant of the
	// Predicted request.
	At time.Duration
	// API is the API it goes to; empty means PredictVLLM.
	API PredictAPI
	// Messages is a chat request's messages, counted and identified as
	// the server counts a chat (Options.Counter, else the built-in
	// tokenizer and template).
	Messages []promptsize.Message
	// TokenIDs is a completion's prompt of token ids (the vLLM API's
	// /v1/completions), used when Messages is empty: prompt_tokens is
	// their number, and requests that share a leading run of them share
	// cached blocks.
	TokenIDs []int
	// MaxTokens is max_tokens, at least 1.
	MaxTokens int
	// IgnoreEOS asks for exactly MaxTokens tokens on the vLLM API (its
	// ignore_eos); exo's bench API always does, exo's /v1 never.
	IgnoreEOS bool
	// Seed is the request's seed; nil means the server's default.
	Seed *int64
	// CacheSalt is the vLLM API's cache_salt.
	CacheSalt string
	// UsePrefixCache is exo's bench use_prefix_cache.
	UsePrefixCache bool
}

// Predicted is one request's schedule as the embedded engine computes it:
// every instant is a duration from the start of the schedule, and equals
// the instant a live Server's scheduler gives the same request arriving at
// the same instant.
type Predicted struct {
	// Arrival is when the request reached the queue (its At, plus
	// Options.RequestOverhead as a live request waits it), Admitted
	// when it left the queue for the batch, PrefillStart and PrefillEnd
	// the span of its prefill (equal for an exact prefix hit).
	Arrival, Admitted, PrefillStart, PrefillEnd time.Duration
	// Tokens are the instants of its generated tokens, one per decode
	// step, in order: the end of each step that gave one.
	Tokens []time.Duration
	// First and Last are Tokens' first and last instants.
	First, Last time.Duration
	// PromptTokens is prompt_tokens; CachedTokens those served from a
	// prefix cache; GeneratedTokens the tokens generated.
	PromptTokens, CachedTokens, GeneratedTokens int
	// FinishReason is "length" (MaxTokens reached) or "stop" (the natural
	// end of a request with EOS allowed).
	FinishReason string
	// PrefixCacheHit is exo's outcome: "none", "partial" or "exact".
	PrefixCacheHit string
	// MaxBatch is the largest running batch it decoded in.
	MaxBatch int
	// PromptTPS and GenerationTPS are the server's rates (see the
	// package documentation's Cost model).
	PromptTPS, GenerationTPS float64
	// Text is the reply's content as the live server writes it: its
	// generated words, the reasoning's left out. A conversation's next
	// turn carries it in its history, as a chat client does.
	Text string
}

// ErrPredict wraps every refusal of Predict: options or a request that no
// live server would run the same way.
var ErrPredict = errors.New("sim: cannot predict")

// Predict runs reqs through the scheduler of a Server with opts on a
// virtual clock: no socket, no goroutine, no sleeping. Each request
// arrives at its At at the server's default instance (one instance of the
// preset's model on the first node, ready at once, whatever NoInstance
// says) and the scheduler runs the same code as a live Server's (the same
// admission, chunked prefill, decode steps, prefix caches and cost model),
// advancing its clock by each computed duration instead of sleeping it,
// until every request has ended. The result holds one Predicted per
// request, in the order of reqs.
//
// A request arriving during a step is queued at its own instant and
// admitted at the step's end, as on a live server; requests arriving at
// one instant arrive in the order of reqs. The LlamaCpp profile's slots
// and remote prefill (instance links) are not predicted; the metrics a
// live server keeps are off.
func Predict(ctx context.Context, opts Options, reqs []PredictRequest) ([]Predicted, error) {
	return PredictDynamic(ctx, opts, reqs, nil)
}

// PredictDynamic is Predict for a workload whose requests depend on the
// replies (a closed loop, a cap on requests in flight, a conversation's
// next turn): first are the requests known from the start; each time
// request i ends (at its p.Last, the instant of its last token), next,
// when not nil, is called with i and its schedule and returns the requests
// that reply lets a client send, each arriving at or after p.Last. The
// virtual clock queues them in order of arrival among those still to
// arrive (at one instant, after those already known); they are numbered
// on from the requests known so far, in the order returned. The result
// holds one Predicted per request, first's then the added ones in their
// numbering. next runs in the calling goroutine, inside the scheduler's
// loop: it must not call Predict. A request that next returns arriving
// before p.Last, or that cannot be predicted, ends the prediction with an
// error.
func PredictDynamic(ctx context.Context, opts Options, first []PredictRequest, next func(i int, p Predicted) []PredictRequest) ([]Predicted, error) {
	if err := opts.check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPredict, err)
	}
	if p, _ := ParseProfile(string(opts.Profile)); p == LlamaCpp {
		return nil, fmt.Errorf("%w: the llamacpp profile's slot scheduler is not predicted", ErrPredict)
	}
	opts.Metrics = MetricsOff
	opts.NoInstance = true
	s := newState(opts)
	v := &virtualClock{}
	s.virt = v
	s.mu.Lock()
	in := s.startInstance(s.newSpec(s.preset.Model, []int{0}, "Pipeline", "MlxRing"), 0)
	s.mu.Unlock()
	v.in = in

	rec := &predictions{out: make([]Predicted, 0, len(first)), index: make(map[*job]int, len(first)), vocab: s.vocab}
	// add numbers r on and returns its arrival at the queue: a live
	// request waits Options.RequestOverhead, in parallel with the
	// others, before it reaches the scheduler (Server.admit).
	add := func(r PredictRequest) (arrival, error) {
		i := len(rec.out)
		j, err := s.predictJob(ctx, in, r)
		if err != nil {
			return arrival{}, fmt.Errorf("%w: request %d: %w", ErrPredict, i, err)
		}
		rec.index[j] = i
		rec.out = append(rec.out, Predicted{Tokens: make([]time.Duration, 0, j.target)})
		return arrival{at: r.At + opts.RequestOverhead, j: j}, nil
	}
	v.arrivals = make([]arrival, 0, len(first))
	for _, r := range first {
		a, err := add(r)
		if err != nil {
			return nil, err
		}
		v.arrivals = append(v.arrivals, a)
	}
	slices.SortStableFunc(v.arrivals, func(a, b arrival) int { return cmp.Compare(a.at, b.at) })
	if k := opts.RequestOverheadSlots; k > 0 && opts.RequestOverhead > 0 {
		if next != nil {
			return nil, fmt.Errorf("%w: RequestOverheadSlots with requests that wait on replies is not predicted", ErrPredict)
		}
		queueOverheads(v.arrivals, opts.RequestOverhead, k)
	}
	if next != nil {
		rec.next = func(i int, p Predicted) {
			if rec.err != nil {
				return
			}
			for _, r := range next(i, p) {
				if r.At < p.Last {
					rec.err = fmt.Errorf("%w: request %d arrives at %v, before the reply of request %d it follows ended (%v)",
						ErrPredict, len(rec.out), r.At, i, p.Last)
					return
				}
				a, err := add(r)
				if err != nil {
					rec.err = err
					return
				}
				v.insert(a)
			}
		}
	}
	var t tracer = rec
	s.trace.Store(&t)
	in.run()
	if rec.err != nil {
		return nil, rec.err
	}
	for i := range rec.out {
		if rec.out[i].FinishReason == "" {
			return nil, fmt.Errorf("%w: request %d did not finish (the scheduler stopped early)", ErrPredict, i)
		}
	}
	return rec.out, nil
}

// predictJob is r's job, built as the chat and completion handlers build
// a request's.
func (s *Server) predictJob(ctx context.Context, in *instance, r PredictRequest) (*job, error) {
	if r.At < 0 {
		return nil, fmt.Errorf("arrival %v is before the schedule's start", r.At)
	}
	if r.MaxTokens < 1 {
		return nil, fmt.Errorf("max_tokens=%d: expected at least 1", r.MaxTokens)
	}
	d := dialectVLLM
	g := generation{model: in.model.ID, maxTokens: r.MaxTokens, seed: r.Seed, salt: r.CacheSalt}
	switch r.API {
	case PredictVLLM, "":
		g.ignoreEOS = r.IgnoreEOS
	case PredictExoBench:
		d, g.bench, g.useCache = dialectExo, true, r.UsePrefixCache
	case PredictExo:
		d, g.useCache = dialectExo, true
	default:
		return nil, fmt.Errorf("API %q: expected %q, %q or %q", r.API, PredictVLLM, PredictExoBench, PredictExo)
	}
	switch {
	case len(r.Messages) > 0:
		n, err := s.countChat(ctx, r.Messages, nil)
		if err != nil {
			return nil, fmt.Errorf("counting prompt tokens: %w", err)
		}
		g.prompt, g.ids, g.think = n, chatIDs(r.Messages, nil), noControl()
		var system []promptsize.Message
		for _, m := range r.Messages {
			if m.Role == "system" {
				system = append(system, m)
			}
		}
		if len(system) > 0 {
			g.system = len(templateIDs(system))
		}
	case len(r.TokenIDs) > 0:
		if d != dialectVLLM {
			return nil, errors.New("a prompt of token ids goes to the vLLM API's completions, not to exo's chat")
		}
		g.prompt, g.ids, g.completion = len(r.TokenIDs), r.TokenIDs, true
	default:
		return nil, errors.New("no prompt: expected Messages or TokenIDs")
	}
	if d == dialectVLLM && g.prompt+g.maxTokens > in.model.ContextLength {
		return nil, fmt.Errorf("%d prompt and %d completion tokens exceed the model's context of %d tokens (the server answers 400)",
			g.prompt, g.maxTokens, in.model.ContextLength)
	}
	j, _, err := s.newJob(d, g)
	if err != nil {
		return nil, err
	}
	j.quiet = true
	return j, nil
}

// virtualClock is a prediction's clock: the schedule's present, and the
// requests still to arrive, in order of arrival. The scheduler's waits
// move it on, submitting each request as its instant is passed.
type virtualClock struct {
	now      time.Duration
	in       *instance
	arrivals []arrival
	pos      int
}

type arrival struct {
	at time.Duration
	j  *job
}

// advance moves the clock to t, submitting every request that arrives by
// then at its own instant.
func (v *virtualClock) advance(t time.Duration) {
	for ; v.pos < len(v.arrivals) && v.arrivals[v.pos].at <= t; v.pos++ {
		a := v.arrivals[v.pos]
		v.now = max(v.now, a.at)
		v.in.submit(a.j)
	}
	v.now = max(v.now, t)
}

// insert adds a request still to arrive, at or after the present: after
// every one that arrives by its instant.
func (v *virtualClock) insert(a arrival) {
	rest := v.arrivals[v.pos:]
	k, _ := slices.BinarySearchFunc(rest, a.at, func(b arrival, t time.Duration) int {
		if b.at <= t {
			return -1
		}
		return 1
	})
	v.arrivals = slices.Insert(v.arrivals, v.pos+k, a)
}

// next moves the clock to the next arrival; it reports false when no
// request is left to arrive.
func (v *virtualClock) next() bool {
	if v.pos >= len(v.arrivals) {
		return false
	}
	v.advance(v.arrivals[v.pos].at)
	return true
}

// predictions records the schedule's instants per request (a tracer).
type predictions struct {
	out   []Predicted
	index map[*job]int
	// vocab is the server's vocabulary, of the replies' words.
	vocab []string
	// next, when set, is told of each request's end (PredictDynamic);
	// err is the first request it could not add.
	next func(i int, p Predicted)
	err  error
}

func (p *predictions) token(j *job, at time.Duration) {
	o := &p.out[p.index[j]]
	o.Tokens = append(o.Tokens, at)
}

func (p *predictions) done(j *job, f *finalStats) {
	o := &p.out[p.index[j]]
	o.Arrival, o.Admitted, o.PrefillStart, o.PrefillEnd = f.arrival, f.admitted, f.prefillStart, f.prefillEnd
	o.First, o.Last = f.first, f.last
	o.PromptTokens, o.CachedTokens, o.GeneratedTokens = f.promptTokens, f.cached, f.generated
	o.FinishReason, o.PrefixCacheHit, o.MaxBatch = f.reason, f.hit, f.maxBatch
	o.PromptTPS, o.GenerationTPS = f.promptTPS, f.generationTPS
	var text strings.Builder
	for i := range f.generated {
		if j.think.kind(i) == tokAnswer {
			text.WriteString(j.think.word(p.vocab, j.seed, i))
		}
	}
	o.Text = text.String()
	if p.next != nil {
		i := p.index[j]
		p.next(i, p.out[i])
	}
}

// queueOverheads passes arrivals, in order of arrival, each at its own
// instant plus d, through k overhead slots first come first served
// (Options.RequestOverheadSlots): each starts its overhead d at its own
// instant or when a slot frees, whichever is later, and reaches the
// scheduler d after that.
func queueOverheads(arrivals []arrival, d time.Duration, k int) {
	free := make([]time.Duration, k)
	for i := range arrivals {
		at := arrivals[i].at - d
		j := 0
		for x := range free {
			if free[x] < free[j] {
				j = x
			}
		}
		start := max(at, free[j])
		arrivals[i].at = start + d
		free[j] = arrivals[i].at
	}
}
