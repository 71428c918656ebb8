package benchkit

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// unwrapped is s with every run of white space one space: the text of a
// table's prose whatever the terminal's width wrapped.
func unwrapped(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestWriteRowsFitsATerminal: a grid wider than a terminal is written as
// grids within termWidth, each line led by its run's name (and thinking
// setting), with every other cell once; a grid that fits, and Markdown,
// are written whole.
func TestWriteRowsFitsATerminal(t *testing.T) {
	for _, thinking := range []bool{false, true} {
		head := []string{"traffic"}
		if thinking {
			head = []string{"thinking", "traffic"}
		}
		lead := len(head)
		for c := range 14 {
			head = append(head, fmt.Sprintf("figure %d ms mean/p50/p99", c))
		}
		var lines [][]string
		for r := range 3 {
			l := []string{fmt.Sprintf("poisson(rate=%d/s)", r+1)}
			if thinking {
				l = append([]string{[]string{"off", "on", "low"}[r]}, l...)
			}
			for c := lead; c < len(head); c++ {
				l = append(l, fmt.Sprintf("r%dc%d.5/1.25/7.125", r, c))
			}
			lines = append(lines, l)
		}
		var b strings.Builder
		if err := writeRows(&b, false, head, lines); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		grids := strings.Split(strings.TrimSuffix(out, "\n"), "\n\n")
		if len(grids) < 2 {
			t.Fatalf("thinking %v: a grid of %d columns was not split:\n%s", thinking, len(head), out)
		}
		for _, g := range grids {
			gl := strings.Split(g, "\n")
			if len(gl) != 1+len(lines) {
				t.Fatalf("a grid of %d lines, want %d:\n%s", len(gl), 1+len(lines), g)
			}
			for i, l := range gl {
				if n := utf8.RuneCountInString(l); n > termWidth {
					t.Errorf("a line of %d columns: %q", n, l)
				}
				want := head[:lead]
				if i > 0 {
					want = lines[i-1][:lead]
				}
				if f := strings.Fields(l); !strings.HasPrefix(strings.Join(f, " "), strings.Join(want, " ")) {
					t.Errorf("line %q does not start with its name %q", l, want)
				}
			}
		}
		for r, l := range lines {
			for _, cell := range l[lead:] {
				if n := strings.Count(out, cell); n != 1 {
					t.Errorf("row %d: cell %q written %d times", r, cell, n)
				}
			}
		}
		for _, h := range head[lead:] {
			if n := strings.Count(out, h+" ") + strings.Count(out, h+"\n"); n != 1 {
				t.Errorf("header %q written %d times", h, n)
			}
		}
		b.Reset()
		if err := writeRows(&b, true, head, lines); err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(b.String(), "\n"); got != 2+len(lines) {
			t.Errorf("Markdown: %d lines, want one table of %d:\n%s", got, 2+len(lines), b.String())
		}
	}
	var b strings.Builder
	if err := writeRows(&b, false, []string{"traffic", "req/s"}, [][]string{{"burst", "4.00"}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "\n\n") || strings.Count(b.String(), "\n") != 2 {
		t.Errorf("a narrow grid was split:\n%s", b.String())
	}
}
