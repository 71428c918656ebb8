package timing

import (
	"errors"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// trace builds a Trace starting at t0 with chunks at the given ms offsets,
// each carrying toks[i] tokens (1 when toks is nil), ending at end ms.
func trace(end float64, offs []float64, toks []int) Trace {
	tr := Trace{Start: t0, Headers: at(1), End: at(end)}
	for i, o := range offs {
		k := 1
		if toks != nil {
			k = toks[i]
		}
		tr.Chunks = append(tr.Chunks, Chunk{At: at(o), Tokens: k})
	}
	return tr
}

func TestTraceMetrics(t *testing.T) {
	tests := []struct {
		name string
		tr   Trace
		// expectations, computed by hand
		tokens      int
		ttft, e2e   time.Duration
		tpot        time.Duration
		tpotDefined bool
		genTPS      float64
		genDefined  bool
		itl, icl    []time.Duration
	}{
		{
			// 4 tokens at 100, 110, 120, 130 ms; end 140 ms.
			// TPOT = (140 − 100) / 3 = 13.333… ms; gen TPS = 3 / 0.030 = 100.
			name: "one token per chunk", tr: trace(140, []float64{100, 110, 120, 130}, nil),
			tokens: 4, ttft: ms(100), e2e: ms(140), tpot: ms(40) / 3, tpotDefined: true,
			genTPS: 100, genDefined: true,
			itl: []time.Duration{ms(10), ms(10), ms(10)},
			icl: []time.Duration{ms(10), ms(10), ms(10)},
		},
		{
			// Chunks of 1, 4, 2 tokens at 50, 90, 100 ms; end 100 ms.
			// 7 tokens; TPOT = (100 − 50) / 6 = 8.333… ms;
			// gen TPS = 6 / 0.050 = 120; ITL: 40/4 ×4, 10/2 ×2; ICL: 40, 10.
			name: "multi-token chunks", tr: trace(100, []float64{50, 90, 100}, []int{1, 4, 2}),
			tokens: 7, ttft: ms(50), e2e: ms(100), tpot: ms(50) / 6, tpotDefined: true,
			genTPS: 120, genDefined: true,
			itl: []time.Duration{ms(10), ms(10), ms(10), ms(10), ms(5), ms(5)},
			icl: []time.Duration{ms(40), ms(10)},
		},
		{
			// One chunk of 3 tokens: TPOT = (80 − 60) / 2 = 10 ms, but no
			// span between chunks, so the generation rate is undefined.
			name: "single chunk of several tokens", tr: trace(80, []float64{60}, []int{3}),
			tokens: 3, ttft: ms(60), e2e: ms(80), tpot: ms(10), tpotDefined: true,
			genDefined: false,
		},
		{
			// tg = 1: no TPOT, no generation rate.
			name: "one token", tr: trace(70, []float64{60}, nil),
			tokens: 1, ttft: ms(60), e2e: ms(70), genDefined: false,
		},
		{
			// Two tokens in the same instant: zero span.
			name: "zero span", tr: trace(70, []float64{60, 60}, nil),
			tokens: 2, ttft: ms(60), e2e: ms(70), tpot: ms(10), tpotDefined: true,
			genDefined: false, itl: []time.Duration{0}, icl: []time.Duration{0},
		},
		{
			// A gap of 10 ms over 3 tokens: 3.333… ms each, summing to 10 ms
			// exactly (one nanosecond of remainder goes to the first gap).
			name: "uneven split", tr: trace(20, []float64{10, 20}, []int{1, 3}),
			tokens: 4, ttft: ms(10), e2e: ms(20), tpot: ms(10) / 3, tpotDefined: true,
			genTPS: 300, genDefined: true,
			itl: []time.Duration{3333334, 3333333, 3333333},
			icl: []time.Duration{ms(10)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := tc.tr.Metrics()
			if err != nil {
				t.Fatal(err)
			}
			if m.Tokens != tc.tokens || m.TTFT != tc.ttft || m.E2E != tc.e2e || !m.TTFTDefined || !m.E2EDefined {
				t.Errorf("tokens, TTFT, E2E = %d, %v, %v; want %d, %v, %v", m.Tokens, m.TTFT, m.E2E, tc.tokens, tc.ttft, tc.e2e)
			}
			if m.TPOTDefined != tc.tpotDefined || m.TPOT != tc.tpot {
				t.Errorf("TPOT = %v (defined %v), want %v (defined %v)", m.TPOT, m.TPOTDefined, tc.tpot, tc.tpotDefined)
			}
			if m.GenerationTPSDefined != tc.genDefined || math.Abs(m.GenerationTPS-tc.genTPS) > 1e-9*math.Max(1, tc.genTPS) {
				t.Errorf("generation TPS = %v (defined %v), want %v (defined %v)", m.GenerationTPS, m.GenerationTPSDefined, tc.genTPS, tc.genDefined)
			}
			if !tc.genDefined && len(m.Warnings) == 0 {
				t.Error("undefined generation rate without a Warning")
			}
			if diff := cmp.Diff(tc.itl, m.ITL); diff != "" {
				t.Errorf("ITL (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.icl, m.ICL); diff != "" {
				t.Errorf("ICL (-want +got):\n%s", diff)
			}
			wantOut := float64(tc.tokens) / tc.e2e.Seconds()
			if math.Abs(m.OutputTPS-wantOut) > 1e-9*wantOut {
				t.Errorf("output TPS = %v, want %v", m.OutputTPS, wantOut)
			}
		})
	}
}

func TestTraceValidate(t *testing.T) {
	good := trace(100, []float64{10, 20}, nil)
	tests := []struct {
		name string
		mod  func(*Trace)
	}{
		{"no start", func(tr *Trace) { tr.Start = time.Time{} }},
		{"headers before start", func(tr *Trace) { tr.Headers = t0.Add(-time.Millisecond) }},
		{"unsorted chunks", func(tr *Trace) { tr.Chunks[0], tr.Chunks[1] = tr.Chunks[1], tr.Chunks[0] }},
		{"chunk before headers", func(tr *Trace) { tr.Headers = at(15) }},
		{"end before last chunk", func(tr *Trace) { tr.End = at(15) }},
		{"negative tokens", func(tr *Trace) { tr.Chunks[1].Tokens = -1 }},
	}
	if err := good.Validate(); err != nil {
		t.Fatalf("good trace: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := good
			tr.Chunks = append([]Chunk(nil), good.Chunks...)
			tc.mod(&tr)
			err := tr.Validate()
			if !errors.Is(err, ErrInvalidTrace) {
				t.Fatalf("Validate() = %v, want ErrInvalidTrace", err)
			}
			if _, err := tr.Metrics(); !errors.Is(err, ErrInvalidTrace) {
				t.Errorf("Metrics() error = %v, want ErrInvalidTrace", err)
			}
		})
	}
}

func TestUndefinedFigures(t *testing.T) {
	var empty = Trace{Start: t0}
	if _, err := empty.TTFT(); !errors.Is(err, ErrUndefined) {
		t.Errorf("TTFT of no chunks: %v, want ErrUndefined", err)
	}
	if _, err := empty.E2E(); !errors.Is(err, ErrUndefined) {
		t.Errorf("E2E with no End: %v, want ErrUndefined", err)
	}
	m, err := empty.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if m.TTFTDefined || m.E2EDefined || m.TPOTDefined || m.GenerationTPSDefined || m.OutputTPSDefined {
		t.Errorf("empty trace has defined figures: %+v", m)
	}
	if len(m.Warnings) == 0 {
		t.Error("no Warnings for an empty trace")
	}
	// A chunk with an unknown token count is taken as one and warned about.
	tr := trace(30, []float64{10, 20}, []int{0, 2})
	m, err = tr.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if m.Tokens != 3 || len(m.Warnings) != 1 {
		t.Errorf("tokens %d, warnings %v; want 3 and one warning", m.Tokens, m.Warnings)
	}
}

func TestRates(t *testing.T) {
	tests := []struct {
		name    string
		got     func() (float64, error)
		want    float64
		wantErr error
	}{
		{"prefill 512 in 0.25 s", func() (float64, error) { return PrefillTPS(512, 250*time.Millisecond) }, 2048, nil},
		{"prefill zero time", func() (float64, error) { return PrefillTPS(512, 0) }, 0, ErrUndefined},
		{"prefill negative tokens", func() (float64, error) { return PrefillTPS(-1, time.Second) }, 0, errAny},
		{"generation 129 tokens in 2 s", func() (float64, error) { return GenerationTPS(129, 2*time.Second) }, 64, nil},
		{"generation tg=1", func() (float64, error) { return GenerationTPS(1, time.Second) }, 0, ErrUndefined},
		{"generation zero span", func() (float64, error) { return GenerationTPS(10, 0) }, 0, ErrUndefined},
		{"generation negative span", func() (float64, error) { return GenerationTPS(10, -time.Second) }, 0, ErrUndefined},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.got()
			switch {
			case tc.wantErr == errAny && err == nil:
				t.Fatalf("got %v, nil; want an error", got)
			case tc.wantErr != nil && tc.wantErr != errAny && !errors.Is(err, tc.wantErr):
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			case tc.wantErr == nil && err != nil:
				t.Fatalf("error = %v", err)
			}
			if tc.wantErr == nil && got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if tc.wantErr != nil && got != 0 {
				t.Errorf("got %v with an error; want 0", got)
			}
		})
	}
}

var errAny = errors.New("any error")

// TestTraceAbsurdCounts: token counts come from servers, which may lie. A
// chunk that claims 1e18 or 2e7 tokens, counts that overflow int when
// summed, or a negative count make the trace invalid; ITL returns nil for
// it instead of sizing a slice from the claim (it used to panic on 1e18
// and allocate 160 MB on 2e7).
func TestTraceAbsurdCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		toks []int
	}{
		{"1e18 in one chunk", []int{1, 1e18}},
		{"2e7 in one chunk", []int{1, 2e7}},
		{"first chunk absurd", []int{2e7, 1}},
		{"just over the bound in all", []int{1, MaxTraceTokens}},
		{"sum overflows int", []int{1, math.MaxInt/2 + 1, math.MaxInt/2 + 1}},
		{"negative after positive", []int{3, -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			offs := make([]float64, len(tc.toks))
			for i := range offs {
				offs[i] = float64(10 * (i + 1))
			}
			tr := trace(100, offs, tc.toks)
			if err := tr.Validate(); !errors.Is(err, ErrInvalidTrace) {
				t.Errorf("Validate() = %v, want ErrInvalidTrace", err)
			}
			if _, err := tr.Metrics(); !errors.Is(err, ErrInvalidTrace) {
				t.Errorf("Metrics() error = %v, want ErrInvalidTrace", err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			itl := tr.ITL()
			runtime.ReadMemStats(&after)
			if itl != nil {
				t.Errorf("ITL() has %d gaps, want nil", len(itl))
			}
			// Nothing to allocate: a generous 1 MiB allows for the
			// runtime's own bookkeeping.
			if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
				t.Errorf("ITL() allocated %d bytes", d)
			}
			if n := tr.Tokens(); n < 0 {
				t.Errorf("Tokens() = %d, want no wrap-around", n)
			}
		})
	}
}

// TestTraceAtTokenBound: a trace of exactly MaxTraceTokens tokens is valid
// and has its full ITL.
func TestTraceAtTokenBound(t *testing.T) {
	tr := trace(100, []float64{10, 90}, []int{1, MaxTraceTokens - 1})
	m, err := tr.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if m.Tokens != MaxTraceTokens || len(m.ITL) != MaxTraceTokens-1 {
		t.Errorf("tokens %d, %d ITL gaps; want %d and %d", m.Tokens, len(m.ITL), MaxTraceTokens, MaxTraceTokens-1)
	}
}

func TestSharedInstants(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms ...int) Trace {
		tr := Trace{Start: t0}
		for _, m := range ms {
			tr.Chunks = append(tr.Chunks, Chunk{At: t0.Add(time.Duration(m) * time.Millisecond), Tokens: 1})
		}
		return tr
	}
	for _, c := range []struct {
		name string
		tr   Trace
		want int
	}{
		{"none", at(1, 2, 3), 0},
		{"empty", Trace{}, 0},
		{"one chunk", at(5), 0},
		{"first two", at(4, 4, 6), 1},
		{"a run of three", at(1, 3, 3, 3, 5), 2},
		{"two pairs", at(1, 1, 2, 2), 2},
		{"the anchor in the first chunk's read", anchored(at(4, 5, 6), 4), 0},
		{"the anchor and the first two in one read", anchored(at(4, 4, 6), 4), 1},
	} {
		if got := c.tr.SharedInstants(); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// anchored returns tr with its first-chunk anchor ms after Start.
func anchored(tr Trace, ms int) Trace {
	tr.FirstChunk = tr.Start.Add(time.Duration(ms) * time.Millisecond)
	return tr
}

func TestFirstContentShared(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms ...int) Trace {
		tr := Trace{Start: t0}
		for _, m := range ms {
			tr.Chunks = append(tr.Chunks, Chunk{At: t0.Add(time.Duration(m) * time.Millisecond), Tokens: 1})
		}
		return tr
	}
	for _, c := range []struct {
		name string
		tr   Trace
		want bool
	}{
		{"empty", Trace{}, false},
		{"one chunk", at(5), false},
		{"one chunk in the anchor's read", anchored(at(5), 5), false},
		{"apart", at(4, 5, 6), false},
		// vLLM's role chunk and first token flushed together: the
		// anchor is not a content chunk, nothing is hidden.
		{"the anchor in the first chunk's read", anchored(at(4, 5, 6), 4), false},
		{"an earlier anchor, the first apart", anchored(at(4, 5, 6), 2), false},
		{"the first two in one read", at(4, 4, 6), true},
		// Role chunk, first and second token in one read: the first
		// token's instant is an upper bound, and so is the anchor.
		{"the anchor and the first two in one read", anchored(at(4, 4, 6), 4), true},
		// The anchor came earlier: TTFT (to the first text) is an upper
		// bound, TTFTFirstChunk is not.
		{"an earlier anchor, the first two in one read", anchored(at(4, 4, 6), 2), true},
		{"later chunks in one read", at(4, 5, 5, 5), false},
	} {
		if got := c.tr.FirstContentShared(); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		if c.tr.FirstContentShared() && c.tr.SharedInstants() == 0 {
			t.Errorf("%s: the first content chunk shares a read, SharedInstants counts none", c.name)
		}
	}
}
