package termwidth

import (
	"strings"
	"testing"
)

// TestWrap checks that a long line is wrapped at spaces within Width,
// keeps every word in order and indents its continuations, and that a
// line that fits is untouched.
func TestWrap(t *testing.T) {
	words := make([]string, 60)
	for i := range words {
		words[i] = "wörd" + strings.Repeat("x", i%7)
	}
	long := "  " + strings.Join(words, " ")
	in := "short line\n" + long + "\n" + strings.Repeat("y", Width+5)
	out := Wrap(in)
	if n, l := Longest(out); n > Width && !strings.HasPrefix(strings.TrimSpace(l), "yyy") {
		t.Fatalf("a line of %d runes after Wrap: %q", n, l)
	}
	lines := strings.Split(out, "\n")
	if lines[0] != "short line" {
		t.Errorf("a fitting line changed: %q", lines[0])
	}
	if lines[len(lines)-1] != strings.Repeat("y", Width+5) {
		t.Errorf("an unbreakable word changed: %q", lines[len(lines)-1])
	}
	wrapped := lines[1 : len(lines)-1]
	if len(wrapped) < 2 {
		t.Fatalf("the long line was not wrapped: %q", out)
	}
	for _, l := range wrapped[1:] {
		if !strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "     ") {
			t.Errorf("continuation not indented by its line's indent + 2: %q", l)
		}
	}
	if got := strings.Fields(strings.Join(wrapped, " ")); strings.Join(got, " ") != strings.Join(words, " ") {
		t.Errorf("words lost or reordered:\n%q\n%q", got, words)
	}
}
