package timing

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// kinded builds a Trace starting at t0 with chunks at the given ms
// offsets, each carrying toks[i] tokens (1 when toks is nil) of kinds[i],
// ending at end ms.
func kinded(end float64, offs []float64, toks []int, kinds []ChunkKind) Trace {
	tr := trace(end, offs, toks)
	for i := range tr.Chunks {
		tr.Chunks[i].Kind = kinds[i]
	}
	return tr
}

const (
	r = Reasoning
	a = Answer
	c = ToolCall
)

func TestReasoningMetrics(t *testing.T) {
	type want struct {
		tokens, reasoning, answer int
		reasoned                  bool
		ttft, ttfa, last          time.Duration // last 0: undefined
		ttfaDefined               bool
		tpot, tpotA, tpotR        time.Duration // 0: undefined
	}
	anchored := func(tr Trace, ms float64) Trace { tr.FirstChunk = at(ms); return tr }
	hidden := func(tr Trace, n int) Trace { tr.HiddenTokens = n; return tr }
	tests := []struct {
		name string
		tr   Trace
		want want
	}{
		{
			// Reasoning at 100, 110, 120 ms, answer at 140 … 170, end 175.
			// TPOT = (175 − 100)/6 = 12.5 ms; reasoning (120 − 100)/2 =
			// 10 ms; answer (175 − 140)/3 = 11.666… ms.
			name: "reasoning then answer",
			tr:   kinded(175, []float64{100, 110, 120, 140, 150, 160, 170}, nil, []ChunkKind{r, r, r, a, a, a, a}),
			want: want{tokens: 7, reasoning: 3, answer: 4, reasoned: true, ttft: ms(100), ttfa: ms(140), ttfaDefined: true, last: ms(120),
				tpot: ms(75) / 6, tpotA: ms(35) / 3, tpotR: ms(10)},
		},
		{
			// The first answer chunk carries 3 tokens (</think>, "\n\n"
			// and the first word) 30 ms after the last reasoning chunk:
			// ITL gives them 10 ms each; the first is the answer's first
			// token, the two others count: (20 + 10 + 10)/(5 − 1) = 10 ms.
			name: "first answer chunk of several tokens",
			tr:   kinded(170, []float64{100, 110, 120, 150, 160, 170}, []int{1, 1, 1, 3, 1, 1}, []ChunkKind{r, r, r, a, a, a}),
			want: want{tokens: 8, reasoning: 3, answer: 5, reasoned: true, ttft: ms(100), ttfa: ms(150), ttfaDefined: true, last: ms(120),
				tpot: ms(70) / 7, tpotA: ms(10), tpotR: ms(10)},
		},
		{
			// A role chunk at 90 ms anchors the first token; the first
			// reasoning chunk carries 2: reasoning (10 + 10)/2 = 10 ms,
			// answer (130 − 120)/1 = 10 ms, TPOT (130 − 90)/4 = 10 ms.
			name: "anchored",
			tr:   anchored(kinded(130, []float64{100, 110, 120, 130}, []int{2, 1, 1, 1}, []ChunkKind{r, r, a, a}), 90),
			want: want{tokens: 5, reasoning: 3, answer: 2, reasoned: true, ttft: ms(100), ttfa: ms(120), ttfaDefined: true, last: ms(110),
				tpot: ms(10), tpotA: ms(10), tpotR: ms(10)},
		},
		{
			// A tool call is answer-side output: TTFA is its arrival. Its
			// 5 tokens came 20 ms after the reasoning: 4 ms each, the
			// first left out; with 10 ms to End: (16 + 10)/4 = 6.5 ms.
			name: "tool call after reasoning",
			tr:   kinded(140, []float64{100, 110, 130}, []int{1, 1, 5}, []ChunkKind{r, r, c}),
			want: want{tokens: 7, reasoning: 2, answer: 5, reasoned: true, ttft: ms(100), ttfa: ms(130), ttfaDefined: true, last: ms(110),
				tpot: ms(40) / 6, tpotA: ms(6.5), tpotR: ms(10)},
		},
		{
			// max_tokens reached while thinking: no answer, and the
			// reasoning's TPOT takes the time to End as TPOT does:
			// (20 + 5)/2 = 12.5 ms.
			name: "ended while reasoning",
			tr:   kinded(125, []float64{100, 110, 120}, nil, []ChunkKind{r, r, r}),
			want: want{tokens: 3, reasoning: 3, answer: 0, reasoned: true, ttft: ms(100), last: ms(120),
				tpot: ms(12.5), tpotR: ms(12.5)},
		},
		{
			// No reasoning: TTFA is TTFT, the answer's TPOT is TPOT,
			// (130 − 100)/5 = 6 ms, the reasoning figures undefined.
			name: "no reasoning",
			tr:   kinded(130, []float64{100, 110, 120}, []int{1, 4, 1}, []ChunkKind{a, a, a}),
			want: want{tokens: 6, answer: 6, ttft: ms(100), ttfa: ms(100), ttfaDefined: true, tpot: ms(6), tpotA: ms(6)},
		},
		{
			// Ollama's OpenAI API drops </think> (and <think>) and counts
			// them: the step of the hidden </think> is in the gap before
			// the first answer chunk, which the answer's TPOT leaves out:
			// (160 − 140)/2 = 10 ms, the decode step; the whole stream's
			// TPOT counts it, (160 − 100)/5 = 12 ms.
			name: "hidden think tags",
			tr:   hidden(kinded(160, []float64{100, 110, 120, 140, 150, 160}, nil, []ChunkKind{r, r, r, a, a, a}), 2),
			want: want{tokens: 6, reasoning: 3, answer: 3, reasoned: true, ttft: ms(100), ttfa: ms(140), ttfaDefined: true, last: ms(120),
				tpot: ms(12), tpotA: ms(10), tpotR: ms(10)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := tc.tr.Metrics()
			if err != nil {
				t.Fatal(err)
			}
			w := tc.want
			if m.Tokens != w.tokens || m.ReasoningTokens != w.reasoning || m.AnswerTokens != w.answer || m.ReasoningDefined != w.reasoned {
				t.Errorf("tokens %d = %d reasoning + %d answer (reasoned %v), want %d = %d + %d (%v)",
					m.Tokens, m.ReasoningTokens, m.AnswerTokens, m.ReasoningDefined, w.tokens, w.reasoning, w.answer, w.reasoned)
			}
			if m.TTFT != w.ttft || m.TTFA != w.ttfa || m.TTFADefined != w.ttfaDefined {
				t.Errorf("TTFT %v, TTFA %v (defined %v); want %v, %v (%v)", m.TTFT, m.TTFA, m.TTFADefined, w.ttft, w.ttfa, w.ttfaDefined)
			}
			figure := func(name string, got time.Duration, defined bool, want time.Duration) {
				t.Helper()
				if defined != (want != 0) || got != want {
					t.Errorf("%s = %v (defined %v), want %v (0: undefined)", name, got, defined, want)
				}
			}
			figure("LastReasoning", m.LastReasoning, m.LastReasoningDefined, w.last)
			figure("TPOT", m.TPOT, m.TPOTDefined, w.tpot)
			figure("TPOTAnswer", m.TPOTAnswer, m.TPOTAnswerDefined, w.tpotA)
			figure("TPOTReasoning", m.TPOTReasoning, m.TPOTReasoningDefined, w.tpotR)
			if m.HiddenTokens != tc.tr.HiddenTokens {
				t.Errorf("HiddenTokens %d, want %d", m.HiddenTokens, tc.tr.HiddenTokens)
			}
			said := func(s string) bool {
				for _, e := range m.Warnings {
					if strings.Contains(e.Error(), s) {
						return true
					}
				}
				return false
			}
			if !w.reasoned && (said("reasoning") || said("answer")) {
				t.Errorf("a trace without reasoning warns of it: %v", m.Warnings)
			}
			if w.reasoned && !w.ttfaDefined && !said("ended while reasoning") {
				t.Errorf("no warning says why TTFA is undefined: %v", m.Warnings)
			}
			if tc.tr.HiddenTokens > 0 && !said("never sent") {
				t.Errorf("no warning says tokens were hidden: %v", m.Warnings)
			}
		})
	}
}

func TestReasoningUndefined(t *testing.T) {
	one := kinded(130, []float64{100, 120}, nil, []ChunkKind{r, a})
	if _, err := one.TPOTReasoning(); !errors.Is(err, ErrUndefined) || !strings.Contains(err.Error(), "have 1") {
		t.Errorf("TPOTReasoning of one reasoning token: %v, want ErrUndefined saying so", err)
	}
	if _, err := one.TPOTAnswer(); !errors.Is(err, ErrUndefined) {
		t.Errorf("TPOTAnswer of one answer token: %v, want ErrUndefined", err)
	}
	noEnd := one
	noEnd.End = time.Time{}
	noEnd.Chunks = append(noEnd.Chunks, Chunk{At: at(125)})
	if _, err := noEnd.TPOTAnswer(); !errors.Is(err, ErrUndefined) || !strings.Contains(err.Error(), "no End") {
		t.Errorf("TPOTAnswer without End: %v, want ErrUndefined saying so", err)
	}
	var empty Trace
	if _, err := empty.TTFA(); !errors.Is(err, ErrUndefined) {
		t.Errorf("TTFA of no chunks: %v", err)
	}
	if _, err := empty.LastReasoning(); !errors.Is(err, ErrUndefined) {
		t.Errorf("LastReasoning of no chunks: %v", err)
	}
	for _, n := range []int{-1, MaxTraceTokens + 1} {
		tr := one
		tr.HiddenTokens = n
		if err := tr.Validate(); !errors.Is(err, ErrInvalidTrace) {
			t.Errorf("HiddenTokens %d: Validate = %v, want ErrInvalidTrace", n, err)
		}
	}
}

// checkSides asserts what the figures of the two sides promise on any
// valid trace.
func checkSides(t *testing.T, tr Trace, m Metrics) {
	t.Helper()
	if m.ReasoningTokens+m.AnswerTokens != m.Tokens {
		t.Fatalf("reasoning %d + answer %d ≠ tokens %d", m.ReasoningTokens, m.AnswerTokens, m.Tokens)
	}
	if m.HiddenTokens != tr.HiddenTokens {
		t.Fatalf("HiddenTokens %d, want %d", m.HiddenTokens, tr.HiddenTokens)
	}
	if !m.ReasoningDefined {
		if m.ReasoningTokens != 0 || m.LastReasoningDefined || m.TPOTReasoningDefined {
			t.Fatalf("reasoning figures defined without a reasoning chunk: %+v", m)
		}
		if m.TTFA != m.TTFT || m.TTFADefined != m.TTFTDefined {
			t.Fatalf("no reasoning: TTFA %v (%v) ≠ TTFT %v (%v)", m.TTFA, m.TTFADefined, m.TTFT, m.TTFTDefined)
		}
		if m.TPOTAnswer != m.TPOT || m.TPOTAnswerDefined != m.TPOTDefined {
			t.Fatalf("no reasoning: TPOTAnswer %v (%v) ≠ TPOT %v (%v)", m.TPOTAnswer, m.TPOTAnswerDefined, m.TPOT, m.TPOTDefined)
		}
		return
	}
	if m.TTFADefined && (!m.TTFTDefined || m.TTFA < m.TTFT || m.E2EDefined && m.TTFA > m.E2E) {
		t.Fatalf("TTFA %v outside [TTFT %v, E2E %v]", m.TTFA, m.TTFT, m.E2E)
	}
	if !m.LastReasoningDefined || m.LastReasoning < m.TTFT || m.E2EDefined && m.LastReasoning > m.E2E {
		t.Fatalf("LastReasoning %v (%v) outside [TTFT %v, E2E %v]", m.LastReasoning, m.LastReasoningDefined, m.TTFT, m.E2E)
	}
	firstAnswer, lastReasoning := -1, -1
	for i, c := range tr.Chunks {
		if c.Kind == Reasoning {
			lastReasoning = i
		} else if firstAnswer < 0 {
			firstAnswer = i
		}
	}
	if m.TTFADefined != (firstAnswer >= 0) {
		t.Fatalf("TTFA defined %v with first answer chunk %d", m.TTFADefined, firstAnswer)
	}
	if firstAnswer > lastReasoning && m.TTFA < m.LastReasoning {
		t.Fatalf("the answer follows the reasoning, but TTFA %v < LastReasoning %v", m.TTFA, m.LastReasoning)
	}
	for _, s := range []struct {
		name    string
		v       time.Duration
		defined bool
		n       int
	}{{"answer", m.TPOTAnswer, m.TPOTAnswerDefined, m.AnswerTokens}, {"reasoning", m.TPOTReasoning, m.TPOTReasoningDefined, m.ReasoningTokens}} {
		if s.defined && (s.v < 0 || s.n < 2) {
			t.Fatalf("TPOT of the %s %v defined over %d tokens", s.name, s.v, s.n)
		}
	}
	// The sides' times are the whole's less the gaps of each side's first
	// token: never more than TPOT's, but for its rounding.
	if m.TPOTDefined && m.TPOTAnswerDefined && m.TPOTReasoningDefined {
		sides := time.Duration(m.AnswerTokens-1)*m.TPOTAnswer + time.Duration(m.ReasoningTokens-1)*m.TPOTReasoning
		if whole := time.Duration(m.Tokens-1) * (m.TPOT + 1); sides > whole {
			t.Fatalf("the sides' time %v exceeds the whole's %v", sides, whole)
		}
	}
}

// FuzzReasoningTrace builds traces from arbitrary triples (gap in µs,
// tokens, kind); flags set the End, a first-chunk anchor and hidden
// tokens. Valid traces must keep checkSides' promises.
func FuzzReasoningTrace(f *testing.F) {
	f.Add([]byte{10, 1, 1, 5, 1, 1, 20, 3, 0, 5, 1, 0}, uint8(3), uint8(0))
	f.Add([]byte{10, 2, 1, 5, 1, 2, 5, 1, 1}, uint8(0), uint8(3))
	f.Add([]byte{0, 0, 1, 0, 0, 0}, uint8(1), uint8(4))
	f.Add([]byte{10, 1, 0, 5, 4, 0}, uint8(7), uint8(2))
	f.Fuzz(func(t *testing.T, ev []byte, endGap uint8, flags uint8) {
		start := time.Unix(1000, 0)
		tr := Trace{Start: start}
		now := start
		for i := 0; i+2 < len(ev); i += 3 {
			now = now.Add(time.Duration(int8(ev[i])) * time.Microsecond)
			tr.Chunks = append(tr.Chunks, Chunk{At: now, Tokens: int(ev[i+1] % 8), Kind: ChunkKind(ev[i+2] % 4)})
		}
		if flags&1 == 0 {
			tr.End = now.Add(time.Duration(endGap) * time.Microsecond)
		}
		if flags&2 != 0 && len(tr.Chunks) > 0 {
			tr.FirstChunk = tr.Chunks[0].At.Add(-time.Duration(endGap) * time.Microsecond)
		}
		if flags&4 != 0 {
			tr.HiddenTokens = int(endGap % 5)
		}
		m, err := tr.Metrics()
		if err != nil {
			if !errors.Is(err, ErrInvalidTrace) {
				t.Fatalf("Metrics error %v does not wrap ErrInvalidTrace", err)
			}
			return
		}
		checkSides(t, tr, m)
	})
}

// TestReasoningProperties runs checkSides over random traces: runs of
// reasoning, answer and tool-call chunks in any order, of any size, with
// and without an anchor, an End and hidden tokens.
func TestReasoningProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 1))
	for range 3000 {
		tr := Trace{Start: t0}
		now := t0.Add(time.Duration(rng.IntN(200)) * time.Millisecond)
		if rng.IntN(3) == 0 {
			tr.FirstChunk = now
			now = now.Add(time.Duration(rng.IntN(30)) * time.Millisecond)
		}
		for range rng.IntN(12) {
			tr.Chunks = append(tr.Chunks, Chunk{At: now, Tokens: rng.IntN(5), Kind: ChunkKind(rng.IntN(3))})
			now = now.Add(time.Duration(rng.IntN(20_000)) * time.Microsecond)
		}
		if len(tr.Chunks) == 0 {
			tr.FirstChunk = time.Time{}
		}
		if rng.IntN(5) > 0 {
			tr.End = now
		}
		tr.HiddenTokens = rng.IntN(3)
		m, err := tr.Metrics()
		if err != nil {
			t.Fatalf("%+v: %v", tr, err)
		}
		checkSides(t, tr, m)
	}
}

// TestGoodputTTFA: an objective on the time to the first answer token
// judges when the answer began, not the first reasoning token; a request
// that never answered fails it.
func TestGoodputTTFA(t *testing.T) {
	quick := kinded(400, []float64{100, 150, 200, 300}, nil, []ChunkKind{r, r, a, a}) // TTFA 200 ms
	slow := kinded(900, []float64{100, 600, 700, 800}, nil, []ChunkKind{r, r, a, a})  // TTFA 700 ms
	never := kinded(300, []float64{100, 200}, nil, []ChunkKind{r, r})                 // no answer
	plain := kinded(300, []float64{150, 250}, nil, []ChunkKind{a, a})                 // TTFA = TTFT 150 ms
	var all []Metrics
	for _, tr := range []Trace{quick, slow, never, plain} {
		m, err := tr.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, m)
	}
	slo := SLO{TTFT: ms(120), TTFA: ms(500)}
	g := ComputeGoodput(slo, all, 1, time.Second)
	if g.Good != 1 || g.Total != 5 {
		t.Errorf("goodput %+v, want 1 good (the quick answer) of 5: TTFT 150 ms fails the plain one, TTFA the slow and the unanswered", g)
	}
	if g := ComputeGoodput(SLO{TTFA: ms(500)}, all, 0, time.Second); g.Good != 2 {
		t.Errorf("TTFA ≤ 500 ms alone: %d good, want 2 (quick, plain)", g.Good)
	}
	if got := slo.String(); got != "ttft≤120ms ttfa≤500ms" {
		t.Errorf("String() = %q", got)
	}
}
