// Package termwidth keeps the text the programs print for a terminal
// within a terminal's width.
package termwidth

import (
	"strings"
	"unicode/utf8"
)

// Width is the widest line, in runes, that a program's default (terminal)
// output has.
const Width = 120

// Wrap wraps every line of s longer than Width runes at its spaces; a
// continuation is indented two spaces past the line's own indent. A word
// longer than the width stays whole on a line of its own; a line that fits
// is left as it is.
func Wrap(s string) string {
	var b strings.Builder
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteString("\n")
		}
		if utf8.RuneCountInString(line) <= Width {
			b.WriteString(line)
			continue
		}
		body := strings.TrimLeft(line, " ")
		indent := strings.Repeat(" ", len(line)-len(body)+2)
		b.WriteString(line[:len(line)-len(body)])
		used, fresh := len(line)-len(body), true
		for _, word := range strings.Split(body, " ") {
			n := utf8.RuneCountInString(word)
			switch {
			case fresh:
				fresh = false
				used += n
			case used+1+n > Width:
				b.WriteString("\n" + indent)
				used = len(indent) + n
			default:
				b.WriteString(" ")
				used += 1 + n
			}
			b.WriteString(word)
		}
	}
	return b.String()
}

// Longest is the widest line of s in runes, and that line.
func Longest(s string) (int, string) {
	width, widest := 0, ""
	for _, line := range strings.Split(s, "\n") {
		if n := utf8.RuneCountInString(line); n > width {
			width, widest = n, line
		}
	}
	return width, widest
}
