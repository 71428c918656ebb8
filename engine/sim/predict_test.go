package sim

import (
	"cmp"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/internal/clock"
	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
)

// TestPredictMatchesLiveSchedule sends a queueing Poisson schedule of chat
// requests of mixed lengths, sharing prefixes, to a live server and
// predicts the same requests arriving at the instants, and in the order,
// the live server saw them: the scheduler's instants (admission, every
// token) and the prefix cache's hits are the same, to the nanosecond, for
// every request. The live schedule is a function of its arrivals alone,
// whatever the machine's load.
func TestPredictMatchesLiveSchedule(t *testing.T) {
	s := newFast(t, Options{})
	tr := traced(s)
	const n = 60
	src := rand.New(rand.NewPCG(7, 37))
	offs := make([]time.Duration, n)
	reqs := make([]PredictRequest, n)
	at := time.Duration(0)
	for i := range n {
		at += time.Duration(src.ExpFloat64() / 500 * float64(time.Second)) // 500 requests/s
		offs[i] = at
		// Distinct prompt lengths name the requests; the shared "a "
		// prefix gives block cache hits that depend on the order of
		// admission.
		reqs[i] = PredictRequest{
			Messages:  []promptsize.Message{{Role: "user", Content: prompt(40 + 13*i)}},
			MaxTokens: 4 + src.IntN(40), IgnoreEOS: true,
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			clock.SleepUntil(context.Background(), start.Add(offs[i])) // the schedule's instant, not a wait on a condition
			body := chatBody(s.Model(), reqs[i].Messages[0].Content, reqs[i].MaxTokens, `,"ignore_eos":true`)
			errs[i] = postErr(s.VLLMURL+"/v1/chat/completions", body)
		})
	}
	testkit.WaitWithin(t, &wg, testkit.Patience)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	live := map[int]truthReq{}
	for _, r := range tr.take() {
		live[r.f.promptTokens] = r
	}
	if len(live) != n {
		t.Fatalf("%d requests finished on the live server, want %d", len(live), n)
	}
	ctx := context.Background()
	counts := make([]int, n)
	for i := range reqs {
		c, err := s.Counter().Count(ctx, reqs[i].Messages)
		if err != nil {
			t.Fatal(err)
		}
		counts[i] = c
		reqs[i].At = live[c].f.arrival
	}
	// Requests that arrived at one instant (a step's end: they came
	// during a step that ended before the scheduler took them) are queued
	// in the order they really came, which admission shows.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		la, lb := live[counts[a]].f, live[counts[b]].f
		return cmp.Or(cmp.Compare(la.arrival, lb.arrival), cmp.Compare(la.admitted, lb.admitted))
	})
	sorted := make([]PredictRequest, n)
	for k, i := range order {
		sorted[k] = reqs[i]
	}
	pred, err := Predict(ctx, Options{Preset: Fast()}, sorted)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]Predicted, n)
	for k, i := range order {
		got[i] = pred[k]
	}
	exact, cachedLive, cachedPred := 0, 0, 0
	for i, p := range got {
		l := live[counts[i]]
		cachedLive += l.f.cached
		cachedPred += p.CachedTokens
		if p.GeneratedTokens != l.f.generated || len(p.Tokens) != len(l.tokens) {
			t.Fatalf("request %d: predicted %d tokens, live %d", i, p.GeneratedTokens, l.f.generated)
		}
		same := p.Admitted == l.f.admitted && p.First == l.f.first && p.Last == l.f.last && p.CachedTokens == l.f.cached
		for k := range p.Tokens {
			same = same && p.Tokens[k] == l.tokens[k]
		}
		if !same {
			t.Errorf("request %d (arrival %v): predicted admitted %v first %v last %v cached %d; live %v %v %v %d",
				i, p.Arrival, p.Admitted, p.First, p.Last, p.CachedTokens, l.f.admitted, l.f.first, l.f.last, l.f.cached)
			continue
		}
		exact++
	}
	t.Logf("%d of %d exact; cached tokens live %d, predicted %d", exact, n, cachedLive, cachedPred)
}

// TestPredictRefuses: requests no live server would run the same way are
// refused with ErrPredict, naming the request.
func TestPredictRefuses(t *testing.T) {
	ok := PredictRequest{TokenIDs: []int{1, 2, 3}, MaxTokens: 4}
	for name, c := range map[string]struct {
		o Options
		r PredictRequest
	}{
		"no prompt":      {r: PredictRequest{MaxTokens: 4}},
		"max tokens":     {r: PredictRequest{TokenIDs: []int{1}, MaxTokens: 0}},
		"before start":   {r: PredictRequest{TokenIDs: []int{1}, MaxTokens: 1, At: -time.Millisecond}},
		"context":        {o: Options{Preset: Fast()}, r: PredictRequest{TokenIDs: make([]int, 32768), MaxTokens: 1}},
		"ids on exo":     {r: PredictRequest{TokenIDs: []int{1}, MaxTokens: 1, API: PredictExo}},
		"unknown API":    {r: PredictRequest{TokenIDs: []int{1}, MaxTokens: 1, API: "tgi"}},
		"llamacpp":       {o: Options{Profile: LlamaCpp}, r: ok},
		"bad block size": {o: Options{BlockSize: -1}, r: ok},
	} {
		if _, err := Predict(context.Background(), c.o, []PredictRequest{ok, c.r}); !errors.Is(err, ErrPredict) {
			t.Errorf("%s: error %v, want ErrPredict", name, err)
		}
	}
}

// BenchmarkPredictMooncake1000 predicts 1,000 requests shaped like the
// public Mooncake arxiv trace on the fast preset (about 6.5 a second;
// prompts of token ids lognormal around 7,600 tokens, made of 512-token
// blocks that half of them share with an earlier prompt; outputs around
// 180 tokens), the scheduler alone: no prompt is built, no row. It
// reports the wall time of one prediction and the simulated span.
func BenchmarkPredictMooncake1000(b *testing.B) {
	src := rand.New(rand.NewPCG(1000, 512))
	reqs := make([]PredictRequest, 1000)
	var earlier [][]int
	next, at := 0, time.Duration(0)
	for i := range reqs {
		at += time.Duration(src.ExpFloat64() / 6.5 * float64(time.Second))
		in := min(max(int(math.Exp(8.7+0.7*src.NormFloat64())), 64), 30000)
		out := min(max(int(math.Exp(5.0+0.6*src.NormFloat64())), 1), 1024)
		n := (in + 511) / 512
		var blocks []int
		if len(earlier) > 0 && src.IntN(2) == 0 {
			p := earlier[src.IntN(len(earlier))]
			blocks = append(blocks, p[:min(len(p), 1+src.IntN(n))]...)
		}
		for len(blocks) < n {
			blocks = append(blocks, next)
			next++
		}
		earlier = append(earlier, blocks)
		ids := make([]int, in)
		for k := range ids {
			ids[k] = blocks[k/512]*512 + k%512
		}
		reqs[i] = PredictRequest{At: at, TokenIDs: ids, MaxTokens: out, IgnoreEOS: true}
	}
	ctx := context.Background()
	var got []Predicted
	var wall time.Duration
	for b.Loop() {
		start := time.Now()
		var err error
		if got, err = Predict(ctx, Options{Preset: Fast()}, reqs); err != nil {
			b.Fatal(err)
		}
		wall = time.Since(start)
	}
	span := time.Duration(0)
	for _, p := range got {
		span = max(span, p.Last)
	}
	b.ReportMetric(wall.Seconds()*1e3, "wall-ms")
	b.ReportMetric(span.Seconds(), "simulated-s")
}

// TestPredictExoAPIs: exo's bench API generates exactly max_tokens and
// skips exo's prefix cache; its /v1 API saves the prompt, so the same
// prompt sent again after the first ended is an exact hit, with no
// prefill.
func TestPredictExoAPIs(t *testing.T) {
	msgs := []promptsize.Message{{Role: "user", Content: prompt(300)}}
	reqs := []PredictRequest{
		{API: PredictExoBench, Messages: msgs, MaxTokens: 40},
		{API: PredictExoBench, Messages: msgs, MaxTokens: 40, At: time.Second},
		{API: PredictExo, Messages: msgs, MaxTokens: 5000, At: 2 * time.Second},
		{API: PredictExo, Messages: msgs, MaxTokens: 5000, At: 3 * time.Second},
	}
	got, err := Predict(context.Background(), Options{Preset: Fast()}, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range got[:2] {
		if p.GeneratedTokens != 40 || p.FinishReason != "length" || p.CachedTokens != 0 || p.PrefixCacheHit != HitNone {
			t.Errorf("bench request %d: %d tokens (%s), %d cached (%s); want 40 (length), none cached", i, p.GeneratedTokens, p.FinishReason, p.CachedTokens, p.PrefixCacheHit)
		}
	}
	first, again := got[2], got[3]
	if first.FinishReason != "stop" || first.GeneratedTokens >= 5000 || first.PrefixCacheHit != HitNone {
		t.Errorf("first /v1 request: %d tokens (%s), hit %s; want a natural end and no hit", first.GeneratedTokens, first.FinishReason, first.PrefixCacheHit)
	}
	if again.PrefixCacheHit != HitExact || again.CachedTokens != again.PromptTokens-1 || again.PrefillEnd != again.PrefillStart {
		t.Errorf("repeated /v1 request: hit %s, %d of %d cached, prefill %v to %v; want an exact hit and no prefill",
			again.PrefixCacheHit, again.CachedTokens, again.PromptTokens, again.PrefillStart, again.PrefillEnd)
	}
	if again.GeneratedTokens != first.GeneratedTokens {
		t.Errorf("the same prompt and seed ended after %d tokens, then %d", first.GeneratedTokens, again.GeneratedTokens)
	}
}

// TestPredictRequestOverhead: a live request waits Options.RequestOverhead
// before the scheduler sees it, side by side with the others, so a
// prediction shifts every instant of a lone request by exactly that wait,
// and two requests sent together still reach the queue together.
func TestPredictRequestOverhead(t *testing.T) {
	const d = 40 * time.Millisecond
	msgs := []promptsize.Message{{Role: "user", Content: prompt(200)}}
	reqs := []PredictRequest{{Messages: msgs, MaxTokens: 8}, {Messages: msgs, MaxTokens: 8, At: 10 * time.Second}}
	plain, err := Predict(context.Background(), Options{Preset: Fast()}, reqs)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := Predict(context.Background(), Options{Preset: Fast(), RequestOverhead: d}, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range reqs {
		if got := slow[i].Arrival - plain[i].Arrival; got != d {
			t.Errorf("request %d arrives %v later with the overhead, want %v", i, got, d)
		}
		if got := slow[i].Last - plain[i].Last; got != d {
			t.Errorf("request %d ends %v later with the overhead, want %v", i, got, d)
		}
	}
	both, err := Predict(context.Background(), Options{Preset: Fast(), RequestOverhead: d}, []PredictRequest{reqs[0], reqs[0]})
	if err != nil {
		t.Fatal(err)
	}
	if both[0].Arrival != d || both[1].Arrival != d {
		t.Errorf("two requests sent together arrive at %v and %v, want both at %v: the overhead is waited side by side", both[0].Arrival, both[1].Arrival, d)
	}
}

// TestPredictDynamic predicts a closed loop of three users on the virtual
// clock (each sends its next request 3 ms after its previous reply ends,
// 12 requests in all, mixed lengths sharing a prefix), then predicts the
// same requests as a fixed list arriving at the instants the loop sent
// them: every request's schedule is the same, so requests added while the
// clock runs are queued as if they had been known from the start. A
// request added before the reply it follows ended is refused.
func TestPredictDynamic(t *testing.T) {
	const users, total, think = 3, 12, 3 * time.Millisecond
	mk := func(n int, at time.Duration) PredictRequest {
		return PredictRequest{At: at, Messages: []promptsize.Message{{Role: "user", Content: prompt(40 + 37*n)}}, MaxTokens: 4 + n%7}
	}
	var sent []PredictRequest
	user := map[int]int{}
	for u := range users {
		sent = append(sent, mk(u, 0))
		user[u] = u
	}
	opts := Options{Preset: Fast(), RequestOverhead: time.Millisecond}
	got, err := PredictDynamic(context.Background(), opts, slices.Clone(sent), func(i int, p Predicted) []PredictRequest {
		if len(sent) >= total {
			return nil
		}
		r := mk(len(sent), p.Last+think)
		user[len(sent)] = user[i]
		sent = append(sent, r)
		return []PredictRequest{r}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != total {
		t.Fatalf("%d requests predicted, want %d", len(got), total)
	}
	fixed, err := Predict(context.Background(), opts, sent)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		a, b := got[i], fixed[i]
		if a.Arrival != b.Arrival || a.Admitted != b.Admitted || !slices.Equal(a.Tokens, b.Tokens) || a.CachedTokens != b.CachedTokens {
			t.Errorf("request %d: added while running %+v, known from the start %+v", i, a, b)
		}
	}
	// Each user's requests follow one another.
	last := map[int]time.Duration{}
	for i, p := range got {
		u := user[i]
		if p.Arrival < last[u] {
			t.Errorf("request %d of user %d arrives at %v, before its previous reply ended at %v", i, u, p.Arrival, last[u])
		}
		last[u] = p.Last
	}
	_, err = PredictDynamic(context.Background(), opts, sent[:1], func(i int, p Predicted) []PredictRequest {
		return []PredictRequest{mk(1, p.Last-time.Microsecond)}
	})
	if !errors.Is(err, ErrPredict) {
		t.Errorf("a request added before its reply ended: error %v, want ErrPredict", err)
	}
}
