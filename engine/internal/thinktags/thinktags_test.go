package thinktags

import (
	"errors"
	"testing"
	"time"

	"github.com/inferbench/inferbench/timing"
)

var errEstimate = errors.New("estimated")

func TestEnd(t *testing.T) {
	for _, tc := range []struct {
		text string
		end  int
		ok   bool
	}{
		{"<think>\nhm</think>\n\nFour", len("<think>\nhm</think>"), true},
		{"  \n<think>hm", 99, true}, // never closed: the whole stream
		{"hm, so</think>Four", len("hm, so</think>"), true},
		{"Four <think>x</think>", 0, false},
		{"a <think>b</think> c </think>", 0, false},
		{"plain answer", 0, false},
		{"", 0, false},
	} {
		end, ok := End(tc.text, 99)
		if end != tc.end || ok != tc.ok {
			t.Errorf("End(%q) = %d, %v, want %d, %v", tc.text, end, ok, tc.end, tc.ok)
		}
	}
}

// The block's chunks become reasoning, the markers' included; a chunk of
// several tokens holding the block's end and answer text is split at its
// instant by bytes, with a warning wrapping the caller's sentinel; tool
// calls and chunks of another kind are left alone.
func TestClassify(t *testing.T) {
	base := time.Unix(0, 0)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Millisecond) }
	texts := []string{"<think>", "hm", "</think>\n\nFour", "."}
	var (
		text   string
		ends   []int
		chunks []timing.Chunk
	)
	for i, s := range texts {
		text += s
		ends = append(ends, len(text))
		chunks = append(chunks, timing.Chunk{At: at(i), Tokens: 1, Kind: timing.Answer})
	}
	chunks[2].Tokens = 3
	out, warns := Classify(chunks, text, len(text), ends, errEstimate)
	r, a := timing.Reasoning, timing.Answer
	// "</think>\n\nFour": 8 of its 14 bytes are the marker, round(3 × 8/14) = 2.
	want := []timing.Chunk{{At: at(0), Tokens: 1, Kind: r}, {At: at(1), Tokens: 1, Kind: r},
		{At: at(2), Tokens: 2, Kind: r}, {At: at(2), Tokens: 1, Kind: a}, {At: at(3), Tokens: 1, Kind: a}}
	if len(out) != len(want) {
		t.Fatalf("chunks %v, want %v", out, want)
	}
	for i := range want {
		if !out[i].At.Equal(want[i].At) || out[i].Tokens != want[i].Tokens || out[i].Kind != want[i].Kind {
			t.Errorf("chunk %d = %+v, want %+v", i, out[i], want[i])
		}
	}
	if len(warns) != 1 || !errors.Is(warns[0], errEstimate) {
		t.Errorf("warnings %v, want one wrapping the sentinel", warns)
	}

	// A tool call inside the block stays one; a text with no block is
	// left alone; ends that do not match the chunks change nothing.
	chunks = []timing.Chunk{{At: at(0), Tokens: 1}, {At: at(1), Tokens: 4, Kind: timing.ToolCall}, {At: at(2), Tokens: 1}}
	out, _ = Classify(chunks, "hm x</think>A", 13, []int{2, 4, 13}, errEstimate)
	if out[0].Kind != r || out[1].Kind != timing.ToolCall || out[2].Kind != a {
		t.Errorf("kinds %v, want reasoning, tool call, answer", out)
	}
	chunks = []timing.Chunk{{At: at(0), Tokens: 1}}
	if out, w := Classify(chunks, "Four.", 5, []int{5}, errEstimate); out[0].Kind != a || w != nil {
		t.Errorf("no block: %v %v", out, w)
	}
	if out, _ := Classify(chunks, "<think>x", 8, nil, errEstimate); out[0].Kind != a {
		t.Errorf("ends missing: %v, want the chunks untouched", out)
	}
}

// FuzzClassify checks the split of a <think> block left in the content on
// arbitrary text cut into arbitrary chunks: the tokens are kept, no chunk
// is emptied, reasoning comes before the answer, and the instants stay in
// order.
func FuzzClassify(f *testing.F) {
	f.Add("<think>\nhm</think>\n\nFour.", uint64(0x0123456789), uint8(3))
	f.Add("hm, so</think>Four", uint64(7), uint8(1))
	f.Add("  <think>never closed", uint64(99), uint8(2))
	f.Add("Four <think>x</think>", uint64(5), uint8(4))
	f.Fuzz(func(t *testing.T, text string, cuts uint64, tokens uint8) {
		if len(text) == 0 || len(text) > 1<<12 {
			return
		}
		var (
			chunks []timing.Chunk
			ends   []int
		)
		base := time.Unix(0, 0)
		pos := 0
		for i := 0; pos < len(text); i++ {
			step := int(cuts>>(uint(i)%60)&7) + 1
			pos = min(pos+step, len(text))
			ends = append(ends, pos)
			chunks = append(chunks, timing.Chunk{At: base.Add(time.Duration(i) * time.Millisecond), Tokens: int(tokens%4) + i%2})
		}
		before := 0
		for _, ch := range chunks {
			before += ch.Tokens
		}
		out, _ := Classify(append([]timing.Chunk(nil), chunks...), text, len(text), ends, errEstimate)
		after, answered := 0, false
		for i, ch := range out {
			after += ch.Tokens
			if ch.Kind == timing.Answer {
				answered = true
			} else if answered {
				t.Fatalf("%q: a reasoning chunk after an answer chunk: %v", text, out)
			}
			if i > 0 && ch.At.Before(out[i-1].At) {
				t.Fatalf("%q: instants out of order: %v", text, out)
			}
			if len(out) > len(chunks) && ch.Tokens < 1 {
				t.Fatalf("%q: a split left a chunk of %d tokens: %v", text, ch.Tokens, out)
			}
		}
		if after != before || len(out) > len(chunks)+1 {
			t.Fatalf("%q: %d tokens in %d chunks became %d in %d", text, before, len(chunks), after, len(out))
		}
	})
}
