package engine_test

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/timing"
)

// TestMaxPlausibleCountBounds: the bound is MaxTokens plus the margin and
// never more than a timing.Trace may carry, so a count that passes
// CheckCount never makes a Trace invalid.
func TestMaxPlausibleCountBounds(t *testing.T) {
	for _, tc := range []struct{ max, want int }{
		{0, engine.NoMaxTokensBound},
		{-5, engine.NoMaxTokensBound},
		{16, 16 + engine.CountMarginTokens},
		{1000, 1250},
		{engine.NoMaxTokensBound - 1, engine.NoMaxTokensBound},
		{math.MaxInt, engine.NoMaxTokensBound},
	} {
		if got := engine.MaxPlausibleCount(tc.max); got != tc.want {
			t.Errorf("MaxPlausibleCount(%d) = %d, want %d", tc.max, got, tc.want)
		}
	}
	if engine.NoMaxTokensBound > timing.MaxTraceTokens {
		t.Errorf("NoMaxTokensBound %d > timing.MaxTraceTokens %d", engine.NoMaxTokensBound, timing.MaxTraceTokens)
	}
}

func TestCheckRate(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		bad  bool
		want string // in the message
	}{
		{0, false, ""},
		{123.4, false, ""},
		{engine.MaxPlausibleRate, false, ""},
		{-3461.8, true, "-3461.8"},
		{6.5e19, true, "6.5e+19"},
		{math.NaN(), true, "NaN"},
		{math.Inf(1), true, "+Inf"},
	} {
		err := engine.CheckRate("generation_stats.generation_tps", tc.v)
		if (err != nil) != tc.bad {
			t.Errorf("CheckRate(%v) = %v, want error %v", tc.v, err, tc.bad)
			continue
		}
		if err == nil {
			continue
		}
		if k := engine.KindOf(err); k != engine.KindImplausibleUsage {
			t.Errorf("CheckRate(%v) kind %q", tc.v, k)
		}
		if msg := err.Error(); !strings.Contains(msg, tc.want) || !strings.Contains(msg, "generation_tps") {
			t.Errorf("CheckRate(%v) = %q, want the value %q and the field named", tc.v, msg, tc.want)
		}
	}
	// An excessive rate's message names the bound too.
	if err := engine.CheckRate("x", 2e7); !strings.Contains(err.Error(), "1e+07") {
		t.Errorf("message %q does not name the bound", err)
	}
}

func TestMaxPlausiblePromptCount(t *testing.T) {
	msgs := []engine.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: strings.Repeat("é", 100)}}
	want := engine.PromptTemplateAllowance + 2*engine.PromptMessageAllowance + len("be brief") + 200
	if got := engine.MaxPlausiblePromptCount(msgs); got != want {
		t.Errorf("MaxPlausiblePromptCount = %d, want %d", got, want)
	}
	if got := engine.MaxPlausiblePromptCount(nil); got != engine.PromptTemplateAllowance {
		t.Errorf("MaxPlausiblePromptCount(nil) = %d", got)
	}
	for _, tc := range []struct {
		req  engine.Request
		want int
	}{
		{engine.Request{Messages: msgs}, want},
		{engine.Request{Prompt: &engine.Prompt{Tokens: make([]int, 416)}}, 416 + engine.PromptTemplateAllowance},
		{engine.Request{Prompt: &engine.Prompt{Text: "héllo"}}, 6 + engine.PromptTemplateAllowance},
	} {
		if got := engine.MaxPlausiblePromptTokens(tc.req); got != tc.want {
			t.Errorf("MaxPlausiblePromptTokens(%+v) = %d, want %d", tc.req.Prompt, got, tc.want)
		}
	}
}

func TestPromptCheck(t *testing.T) {
	for _, tc := range []struct {
		p  *engine.Prompt
		ok bool
	}{
		{nil, true},
		{&engine.Prompt{Tokens: []int{1, 2, 3}}, true},
		{&engine.Prompt{Text: "Once upon a time"}, true},
		{&engine.Prompt{}, false},
		{&engine.Prompt{Tokens: []int{1}, Text: "x"}, false},
		{&engine.Prompt{Tokens: []int{4, -1}}, false},
	} {
		if err := tc.p.Check(); (err == nil) != tc.ok {
			t.Errorf("Check(%+v) = %v, want ok %v", tc.p, err, tc.ok)
		}
	}
}

func TestCheckText(t *testing.T) {
	limit := engine.MaxPlausibleTextBytes(16)
	if want := (16 + engine.CountMarginTokens) * engine.MaxTokenBytes; limit != want {
		t.Fatalf("MaxPlausibleTextBytes(16) = %d, want %d", limit, want)
	}
	if err := engine.CheckText(limit, 16); err != nil {
		t.Errorf("CheckText at the bound: %v", err)
	}
	err := engine.CheckText(200<<20, 16)
	if engine.KindOf(err) != engine.KindImplausibleUsage || !strings.Contains(err.Error(), "209715200") ||
		!strings.Contains(err.Error(), "32768") {
		t.Errorf("CheckText(200 MiB, 16) = %v, want implausible_usage naming both numbers", err)
	}
}

// TestKeptText: at most MaxKeptText bytes are kept, cut at a rune
// boundary, while every byte is counted.
func TestKeptText(t *testing.T) {
	var k engine.KeptText
	k.WriteString("héllo ")
	if k.Truncated() || k.TruncatedWarning() != nil || k.String() != "héllo " {
		t.Fatalf("short text: %q truncated %v", k.String(), k.Truncated())
	}
	// Fill to one byte short of the bound, then write a 2-byte rune: it
	// must not be split.
	pad := engine.MaxKeptText - len(k.String()) - 1
	k.Write([]byte(strings.Repeat("a", pad)))
	k.Write([]byte("é"))
	k.WriteString("more")
	if got := len(k.String()); got != engine.MaxKeptText-1 {
		t.Errorf("kept %d bytes, want %d", got, engine.MaxKeptText-1)
	}
	if !utf8.ValidString(k.String()) {
		t.Error("kept text is not valid UTF-8")
	}
	want := len("héllo ") + pad + len("é") + len("more")
	if k.Received() != want || !k.Truncated() {
		t.Errorf("received %d (truncated %v), want %d", k.Received(), k.Truncated(), want)
	}
	if w := k.TruncatedWarning(); w == nil || !strings.Contains(w.Error(), "1048575") {
		t.Errorf("warning %v, want the kept and received counts", w)
	}
	// A huge write keeps nothing more and allocates nothing for it.
	huge := make([]byte, 8<<20)
	allocs := testing.AllocsPerRun(5, func() { k.Write(huge) })
	if allocs != 0 || len(k.String()) != engine.MaxKeptText-1 {
		t.Errorf("a write past the bound: %v allocations, %d bytes kept", allocs, len(k.String()))
	}
}

// FuzzKeptText writes fuzzed pieces of text after filling a KeptText to
// within room bytes of its bound: what it keeps is a prefix of what was
// written, at most MaxKeptText bytes, valid UTF-8 when the input was, and
// every byte is counted.
func FuzzKeptText(f *testing.F) {
	f.Add([]byte("héllo"), []byte("wörld"), uint8(3))
	f.Add([]byte("\xf0\x9f\x98\x80"), []byte("a"), uint8(2))
	f.Add([]byte{}, []byte("\xff\xfe"), uint8(0))
	pad := strings.Repeat("a", engine.MaxKeptText-255)
	f.Fuzz(func(t *testing.T, a, b []byte, room uint8) {
		var k engine.KeptText
		k.WriteString(pad[:len(pad)-int(room)])
		k.Write(a)
		k.WriteString(string(b))
		all := pad[:len(pad)-int(room)] + string(a) + string(b)
		got := k.String()
		if len(got) > engine.MaxKeptText || !strings.HasPrefix(all, got) || k.Received() != len(all) {
			t.Fatalf("kept %d bytes (prefix %v), received %d; wrote %d", len(got), strings.HasPrefix(all, got), k.Received(), len(all))
		}
		if utf8.ValidString(all) && !utf8.ValidString(got) {
			t.Errorf("valid input kept as invalid UTF-8")
		}
		if k.Truncated() != (len(got) < len(all)) {
			t.Errorf("Truncated() = %v with %d of %d kept", k.Truncated(), len(got), len(all))
		}
	})
}
