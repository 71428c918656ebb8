package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/timing"
)

// A replay is one file of testdata/replay: a server's stream, byte for
// byte, cut into the writes its server makes, with the truth of what the
// server generated. scripts/replay_corpus.py writes them and documents the
// format; each file names the source file and commit it follows.
type replay struct {
	name      string
	maxTokens int
	writes    []replayWrite
	n         int     // tokens generated
	chunks    []int   // tokens per content chunk; nil when no client can know them
	ttft      float64 // ms from the headers to the first text
	first     float64 // ms to the first-chunk anchor; −1 when none
	tpot      float64 // ms; −1 when undefined
	finish    string  // "" when none
	usage     [2]int  // prompt, completion; −1 when none
	cached    int     // cached_tokens of the final usage; −1 when not reported
	endpoint  string  // "/v1/completions" for a text completion; "" for a chat
	errKind   engine.Kind
	errCode   int
	pieces    []string // text of each token
	hidden    []bool   // the token's text is never in the stream
	recount   []string // the shown text as a tokenizer other than the server's splits it; nil when the case has none

	kinds                   []timing.ChunkKind // of each content chunk
	reasoning, answer, tool int                // tokens of the chunks of each kind; −1 when not knowable
	hiddenTokens            int                // tokens counted in no chunk (Trace.HiddenTokens)
	ttfa                    float64            // ms to the first answer chunk; −1 when none
	lastReasoning           float64            // ms to the last reasoning chunk; −1 when none
	// The time per output token of each side (Trace.TPOTReasoning,
	// TPOTAnswer) as the script computes it from the server's schedule;
	// −1 when undefined (fewer than two tokens, a failed stream) or absent.
	tpotReasoning, tpotAnswer float64
}

type replayWrite struct {
	at   float64 // ms from the headers
	data []byte
}

// loadReplays reads every file of testdata/replay.
func loadReplays(t testing.TB) []replay {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "replay", "*.replay"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no replays: %v", err)
	}
	var out []replay
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r, err := parseReplay(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		r.name = strings.TrimSuffix(filepath.Base(f), ".replay")
		out = append(out, r)
	}
	return out
}

// parseReplay parses one replay file.
func parseReplay(b []byte) (replay, error) {
	r := replay{first: -1, tpot: -1, usage: [2]int{-1, -1}, cached: -1, ttfa: -1, lastReasoning: -1, tpotReasoning: -1, tpotAnswer: -1}
	truth := map[string]string{}
	var at float64
	var cur *replayWrite
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line = b[:i+1]
		}
		switch {
		case bytes.HasPrefix(line, []byte("#write +")):
			d, err := strconv.ParseFloat(strings.TrimSpace(string(line[len("#write +"):])), 64)
			if err != nil {
				return r, fmt.Errorf("write line %q: %w", line, err)
			}
			at += d
			r.writes = append(r.writes, replayWrite{at: at})
			cur = &r.writes[len(r.writes)-1]
		case cur != nil:
			cur.data = append(cur.data, line...)
		case bytes.HasPrefix(line, []byte("#truth ")):
			k, v, _ := strings.Cut(strings.TrimSpace(string(line[len("#truth "):])), ": ")
			truth[k] = v
		case bytes.HasPrefix(line, []byte("#request: endpoint=")):
			r.endpoint = strings.TrimSpace(string(line[len("#request: endpoint="):]))
		case bytes.HasPrefix(line, []byte("#request: max_tokens=")):
			n, err := strconv.Atoi(strings.TrimSpace(string(line[len("#request: max_tokens="):])))
			if err != nil {
				return r, err
			}
			r.maxTokens = n
		}
		b = b[len(line):]
	}
	num := func(k string) (float64, bool, error) {
		v := truth[k]
		if v == "-" {
			return 0, false, nil
		}
		f, err := strconv.ParseFloat(v, 64)
		return f, true, err
	}
	var err error
	if r.n, err = strconv.Atoi(truth["n"]); err != nil {
		return r, fmt.Errorf("truth n: %w", err)
	}
	if v := truth["chunks"]; v != "-" {
		for _, f := range strings.Split(v, ",") {
			k, err := strconv.Atoi(f)
			if err != nil {
				return r, fmt.Errorf("truth chunks: %w", err)
			}
			r.chunks = append(r.chunks, k)
		}
	}
	var ok bool
	if r.ttft, ok, err = num("ttft_ms"); err != nil || !ok {
		return r, fmt.Errorf("truth ttft_ms %q: %v", truth["ttft_ms"], err)
	}
	if f, ok, err := num("first_ms"); err != nil {
		return r, err
	} else if ok {
		r.first = f
	}
	if f, ok, err := num("tpot_ms"); err != nil {
		return r, err
	} else if ok {
		r.tpot = f
	}
	if v := truth["finish"]; v != "-" {
		r.finish = v
	}
	if v := truth["usage"]; v != "-" {
		if _, err := fmt.Sscanf(v, "%d/%d", &r.usage[0], &r.usage[1]); err != nil {
			return r, fmt.Errorf("truth usage %q: %w", v, err)
		}
	}
	if v := truth["cached"]; v != "-" {
		if r.cached, err = strconv.Atoi(v); err != nil {
			return r, fmt.Errorf("truth cached %q: %w", v, err)
		}
	}
	for _, k := range truth["kinds"] {
		switch k {
		case 'r':
			r.kinds = append(r.kinds, timing.Reasoning)
		case 'a':
			r.kinds = append(r.kinds, timing.Answer)
		case 't':
			r.kinds = append(r.kinds, timing.ToolCall)
		default:
			return r, fmt.Errorf("truth kinds %q: want r, a or t per chunk", truth["kinds"])
		}
	}
	for _, f := range []struct {
		key string
		to  *int
	}{{"reasoning", &r.reasoning}, {"answer", &r.answer}, {"tool", &r.tool}, {"hidden", &r.hiddenTokens}} {
		*f.to = -1
		if v := truth[f.key]; v != "-" {
			if *f.to, err = strconv.Atoi(v); err != nil {
				return r, fmt.Errorf("truth %s %q: %w", f.key, v, err)
			}
		}
	}
	if r.hiddenTokens < 0 {
		return r, errors.New("truth hidden: want a count")
	}
	for _, f := range []struct {
		key string
		to  *float64
	}{{"ttfa_ms", &r.ttfa}, {"last_reasoning_ms", &r.lastReasoning}, {"tpot_reasoning_ms", &r.tpotReasoning}, {"tpot_answer_ms", &r.tpotAnswer}} {
		if _, present := truth[f.key]; !present && strings.HasPrefix(f.key, "tpot_") {
			continue // undefined
		}
		if v, ok, err := num(f.key); err != nil {
			return r, fmt.Errorf("truth %s: %w", f.key, err)
		} else if ok {
			*f.to = v
		}
	}
	if v := truth["error_kind"]; v != "-" {
		r.errKind = engine.Kind(v)
	}
	if v := truth["error_code"]; v != "-" {
		if r.errCode, err = strconv.Atoi(v); err != nil {
			return r, err
		}
	}
	for rest := strings.TrimSpace(truth["pieces"]); rest != ""; rest = strings.TrimLeft(rest, " ") {
		hidden := strings.HasPrefix(rest, "!")
		rest = strings.TrimPrefix(rest, "!")
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return r, fmt.Errorf("truth pieces at %q: %w", rest, err)
		}
		s, _ := strconv.Unquote(q)
		r.pieces = append(r.pieces, s)
		r.hidden = append(r.hidden, hidden)
		rest = rest[len(q):]
	}
	if len(r.pieces) != r.n {
		return r, fmt.Errorf("%d pieces for n = %d", len(r.pieces), r.n)
	}
	if v, ok := truth["recount"]; ok {
		for rest := strings.TrimSpace(v); rest != ""; rest = strings.TrimLeft(rest, " ") {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return r, fmt.Errorf("truth recount at %q: %w", rest, err)
			}
			s, _ := strconv.Unquote(q)
			r.recount = append(r.recount, s)
			rest = rest[len(q):]
		}
		if strings.Join(r.recount, "") != r.shown() {
			return r, fmt.Errorf("truth recount covers %q, the stream shows %q", strings.Join(r.recount, ""), r.shown())
		}
	}
	return r, nil
}

// request returns the request the replay answers: a chat, or a text
// completion of as many token ids as the server counted.
func (r replay) request() engine.Request {
	req := engine.Request{Model: "m", MaxTokens: r.maxTokens, Stream: true}
	if r.endpoint == completionsPath {
		ids := make([]int, max(r.usage[0], 1))
		for i := range ids {
			ids[i] = 100 + i
		}
		req.Prompt = &engine.Prompt{Tokens: ids}
	}
	return req
}

// shown returns the text the stream shows: every piece but the hidden.
func (r replay) shown() string {
	var b strings.Builder
	for i, p := range r.pieces {
		if !r.hidden[i] {
			b.WriteString(p)
		}
	}
	return b.String()
}

// exactCounter counts text as the server's tokenizer did: the number of
// visible tokens whose text it takes to cover text.
func (r replay) exactCounter() func(context.Context, string) (int, error) {
	var shown []string
	for i, p := range r.pieces {
		if !r.hidden[i] {
			shown = append(shown, p)
		}
	}
	return coverCounter(shown)
}

// recountCounter counts text as the case's re-count does (truth recount):
// a tokenizer that splits the text otherwise than the model did.
func (r replay) recountCounter() func(context.Context, string) (int, error) {
	return coverCounter(r.recount)
}

// coverCounter counts a prefix of the concatenated tokens as the number of
// tokens it takes to cover it.
func coverCounter(tokens []string) func(context.Context, string) (int, error) {
	return func(_ context.Context, text string) (int, error) {
		n, covered := 0, 0
		for _, p := range tokens {
			if covered >= len(text) {
				break
			}
			if p == "" {
				continue
			}
			covered += len(p)
			n++
		}
		return n, nil
	}
}

// fakeClock is a clock that a scheduled reader sets.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// scheduledReader returns the replay's writes one per Read, setting the
// clock to each write's instant first: the stream as the client would read
// it from a server that keeps the schedule exactly.
type scheduledReader struct {
	clk    *fakeClock
	base   time.Time
	writes []replayWrite
	rest   []byte
}

func (s *scheduledReader) Read(p []byte) (int, error) {
	for len(s.rest) == 0 {
		if len(s.writes) == 0 {
			return 0, io.EOF
		}
		w := s.writes[0]
		s.writes = s.writes[1:]
		s.clk.set(s.base.Add(msDur(w.at)))
		s.rest = w.data
	}
	n := copy(p, s.rest)
	s.rest = s.rest[n:]
	return n, nil
}

// engineTraceAt is a trace whose request started, and whose headers came,
// at base.
func engineTraceAt(base time.Time) timing.Trace { return timing.Trace{Start: base, Headers: base} }

func msDur(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// checkReplay asserts what the client made of a replay against its truth.
// tol bounds the timing errors; counted says a counter was set: an exact
// one, or one whose counts are not the model's where the stream itself
// states them (a re-count).
func checkReplay(t *testing.T, r replay, res engine.Result, err error, start time.Time, tol time.Duration, counted bool) {
	t.Helper()
	if got := engine.KindOf(err); got != r.errKind {
		t.Fatalf("error kind %q (%v), want %q", got, err, r.errKind)
	}
	if r.errCode != 0 {
		var se *engine.StreamError
		if !errors.As(err, &se) || se.Code != r.errCode {
			t.Errorf("error %v: want a StreamError with code %d", err, r.errCode)
		}
	}
	if res.FinishReason != r.finish {
		t.Errorf("finish reason %q, want %q", res.FinishReason, r.finish)
	}
	if r.usage[0] >= 0 {
		if res.Usage == nil || res.Usage.PromptTokens != r.usage[0] || res.Usage.CompletionTokens != r.usage[1] {
			t.Errorf("usage %+v, want %d/%d", res.Usage, r.usage[0], r.usage[1])
		}
	}
	if res.Usage != nil {
		got, ok := res.Usage.Cached()
		switch {
		case r.cached < 0 && ok:
			t.Errorf("cached_tokens %d, the server reported none", got)
		case r.cached >= 0 && (!ok || got != r.cached):
			t.Errorf("cached_tokens %d (reported %v), want %d", got, ok, r.cached)
		}
	}
	tr := res.Trace
	// A failed request carries no note on how its chunk counts were
	// reached: its figures are not reported as measurements.
	failed := err != nil
	var estimated, unknown bool
	for _, w := range res.Warnings {
		if failed && (errors.Is(w, ErrEstimatedTokens) || errors.Is(w, ErrUnknownTokens) || errors.Is(w, ErrHiddenFirstTokens)) {
			t.Errorf("failed request: warning %v, want none on its chunk counts", w)
		}
		estimated = estimated || errors.Is(w, ErrEstimatedTokens)
		unknown = unknown || errors.Is(w, ErrUnknownTokens)
		// Every server here reports counts that add up: the chunks'
		// must add up to them, whatever a counter found.
		if errors.Is(w, ErrTokenMismatch) {
			t.Errorf("warning %v: the server's counts are consistent", w)
		}
	}
	knowable := r.usage[0] >= 0 || counted
	switch {
	case knowable && tr.Tokens()+tr.HiddenTokens != r.n:
		t.Errorf("trace carries %d tokens and %d hidden, the server generated %d", tr.Tokens(), tr.HiddenTokens, r.n)
	case !knowable && !unknown && !failed:
		t.Errorf("no usage, no counter: want a warning wrapping ErrUnknownTokens, have %v", res.Warnings)
	}
	if !failed && tr.HiddenTokens != r.hiddenTokens {
		t.Errorf("%d hidden tokens, want %d", tr.HiddenTokens, r.hiddenTokens)
	}
	var kinds []timing.ChunkKind
	for _, ch := range tr.Chunks {
		kinds = append(kinds, ch.Kind)
	}
	if fmt.Sprint(kinds) != fmt.Sprint(r.kinds) {
		t.Errorf("chunk kinds %v, want %v", kinds, r.kinds)
	}
	exact := r.chunks != nil && (counted || (!failed && !estimated && !unknown))
	if exact {
		sums := map[timing.ChunkKind]int{}
		for _, ch := range tr.Chunks {
			sums[ch.Kind] += ch.Tokens
		}
		for _, k := range []struct {
			kind timing.ChunkKind
			want int
		}{{timing.Reasoning, r.reasoning}, {timing.Answer, r.answer}, {timing.ToolCall, r.tool}} {
			if k.want >= 0 && sums[k.kind] != k.want {
				t.Errorf("%v chunks carry %d tokens, want %d", k.kind, sums[k.kind], k.want)
			}
		}
	}
	var got []int
	for _, ch := range tr.Chunks {
		got = append(got, ch.Tokens)
	}
	if exact && fmt.Sprint(got) != fmt.Sprint(r.chunks) {
		t.Errorf("chunk tokens %v, want %v", got, r.chunks)
	}
	near := func(what string, d time.Duration, wantMS float64) {
		t.Helper()
		if diff := d - msDur(wantMS); diff > tol || diff < -tol {
			t.Errorf("%s = %v, want %vms ± %v", what, d, wantMS, tol)
		}
	}
	if len(tr.Chunks) == 0 {
		t.Fatal("no content chunks")
	}
	near("TTFT (first text)", tr.Chunks[0].At.Sub(start), r.ttft)
	firstAnswer, lastReasoning := -1, -1
	for i, ch := range tr.Chunks {
		if ch.Kind == timing.Answer && firstAnswer < 0 {
			firstAnswer = i
		}
		if ch.Kind == timing.Reasoning {
			lastReasoning = i
		}
	}
	for _, m := range []struct {
		what string
		i    int
		want float64
	}{{"time to the first answer chunk", firstAnswer, r.ttfa}, {"time to the last reasoning chunk", lastReasoning, r.lastReasoning}} {
		switch {
		case m.i < 0 && m.want >= 0:
			t.Errorf("%s: none, want %vms", m.what, m.want)
		case m.i >= 0 && m.want < 0:
			t.Errorf("%s: %v, want none", m.what, tr.Chunks[m.i].At.Sub(start))
		case m.i >= 0:
			near(m.what, tr.Chunks[m.i].At.Sub(start), m.want)
		}
	}
	switch {
	case r.first >= 0 && tr.FirstChunk.IsZero():
		t.Errorf("no first-chunk anchor, want one at %vms", r.first)
	case r.first >= 0:
		near("TTFT (first chunk)", tr.FirstChunk.Sub(start), r.first)
	case !tr.FirstChunk.IsZero():
		t.Errorf("first-chunk anchor at %v, want none", tr.FirstChunk.Sub(start))
	}
	if r.errKind == engine.KindNone && r.tpot >= 0 && (knowable) {
		tpot, err := tr.TPOT()
		if err != nil {
			t.Errorf("TPOT: %v", err)
		} else {
			near("TPOT", tpot, r.tpot)
		}
	}
	if exact && r.errKind == engine.KindNone {
		// Each side's TPOT, reported through Metrics as a run reports it,
		// wherever the chunks' counts are the server's.
		m, err := tr.Metrics()
		if err != nil {
			t.Fatalf("Metrics: %v", err)
		}
		for _, s := range []struct {
			what    string
			d       time.Duration
			defined bool
			want    float64
		}{{"TPOT of the reasoning", m.TPOTReasoning, m.TPOTReasoningDefined, r.tpotReasoning}, {"TPOT of the answer", m.TPOTAnswer, m.TPOTAnswerDefined, r.tpotAnswer}} {
			switch {
			case s.defined && s.want < 0:
				t.Errorf("%s = %v, want undefined", s.what, s.d)
			case !s.defined && s.want >= 0:
				t.Errorf("%s undefined, want %vms", s.what, s.want)
			case s.defined:
				near(s.what, s.d, s.want)
			}
		}
	}
	if exact {
		first := tr.Chunks[0].At
		// Hidden tokens are in no chunk: ITL has none of their gaps.
		shown := r.n - r.hiddenTokens
		want := shown - tr.Chunks[0].Tokens
		if !tr.FirstChunk.IsZero() {
			first, want = tr.FirstChunk, shown-1
		}
		itl := tr.ITL()
		var sum time.Duration
		for _, g := range itl {
			sum += g
		}
		if len(itl) != want {
			t.Errorf("%d ITL gaps, want %d", len(itl), want)
		}
		if span := tr.Chunks[len(tr.Chunks)-1].At.Sub(first); len(itl) > 0 && sum != span {
			t.Errorf("ITL sums to %v, want the span %v", sum, span)
		}
		// Hidden first tokens are claimed only when the stream states
		// them: an estimate that puts several tokens in the first chunk
		// says so in its own warning.
		hidden := tr.FirstChunk.IsZero() && tr.Chunks[0].Tokens > 1 && !estimated
		var warned bool
		for _, w := range res.Warnings {
			warned = warned || errors.Is(w, ErrHiddenFirstTokens)
		}
		if !failed && hidden != warned {
			t.Errorf("first chunk of %d tokens, anchor %v, estimated %v: hidden-first-token warning %v", tr.Chunks[0].Tokens, !tr.FirstChunk.IsZero(), estimated, warned)
		}
	}
}

// TestReplayCorpus parses every replay as the client would read it from a
// server that keeps its schedule exactly (a controlled clock set at each
// write), with no counter, with an exact one and, for the cases that have
// one, with a re-count that splits the text otherwise than the model did:
// token totals, per-chunk counts, both TTFT anchors, TPOT and each side's
// (the reasoning's, the answer's) within 1 ms,
// ITL, usage, errors and finish reasons against the truth in each file.
func TestReplayCorpus(t *testing.T) {
	for _, r := range loadReplays(t) {
		counters := []string{"false", "true"}
		if r.recount != nil {
			counters = append(counters, "recount")
		}
		for _, counter := range counters {
			t.Run(fmt.Sprintf("%s/counter=%s", r.name, counter), func(t *testing.T) {
				clk := &fakeClock{}
				base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
				clk.set(base)
				o := &Options{Now: clk.Now}
				switch counter {
				case "true":
					o.CountText = r.exactCounter()
				case "recount":
					o.CountText = r.recountCounter()
				}
				counted := counter != "false"
				c, err := New("http://127.0.0.1:9", o)
				if err != nil {
					t.Fatal(err)
				}
				res := engine.Result{Trace: engineTraceAt(base)}
				rerr := c.readStream(context.Background(), &scheduledReader{clk: clk, base: base, writes: r.writes}, nil, r.request(), &res)
				checkReplay(t, r, res, rerr, base, time.Millisecond, counted)
			})
		}
	}
}

// TestReplayLoopback serves every replay on loopback with its delays and
// reads it through Complete: the same counts, kinds and anchors as with a
// controlled clock. Its timing checks hold on a loaded machine: no instant
// the client stamps may come before the server began the write that
// carried it (causality), and none may be later than a bound that only a
// reader that missed a write altogether would exceed. The timing error
// itself is measured by cmd/perf.
func TestReplayLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("serves every replay with its delays")
	}
	for _, r := range loadReplays(t) {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			began := make([]time.Time, len(r.writes)) // when each write began
			want := chatPath
			if r.endpoint != "" {
				want = r.endpoint
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if req.URL.Path != want {
					http.Error(w, "this replay answers "+want+", not "+req.URL.Path, http.StatusNotFound)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				f := w.(http.Flusher)
				f.Flush()
				start := time.Now()
				for j, wr := range r.writes {
					if d := time.Until(start.Add(msDur(wr.at))); d > 0 {
						tm := time.NewTimer(d)
						select {
						case <-tm.C:
						case <-req.Context().Done():
							tm.Stop()
							return
						}
					}
					mu.Lock()
					began[j] = time.Now()
					mu.Unlock()
					w.Write(wr.data)
					f.Flush()
				}
			}))
			t.Cleanup(srv.Close)
			c := newClient(t, srv.URL, &Options{CountText: r.exactCounter()})
			res, err := c.Complete(context.Background(), r.request())
			// The schedule starts when the headers went out: measure from
			// them, within a stall bound of 2 s plus the stream's length.
			tol := 2*time.Second + msDur(r.writes[len(r.writes)-1].at)
			checkReplay(t, r, res, err, res.Trace.Headers, tol, true)
			mu.Lock()
			defer mu.Unlock()
			causal := func(what string, at time.Time, ms float64) {
				t.Helper()
				for j, wr := range r.writes {
					if math.Abs(wr.at-ms) < 1e-6 && !began[j].IsZero() && at.Before(began[j]) {
						t.Errorf("%s stamped %v before the server began the write that carries it", what, began[j].Sub(at))
					}
				}
			}
			if len(res.Trace.Chunks) > 0 {
				causal("first text", res.Trace.Chunks[0].At, r.ttft)
			}
			if !res.Trace.FirstChunk.IsZero() && r.first >= 0 {
				causal("first chunk", res.Trace.FirstChunk, r.first)
			}
		})
	}
}
