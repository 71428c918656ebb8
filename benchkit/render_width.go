package benchkit

import (
	"unicode/utf8"

	"github.com/inferbench/inferbench/internal/termwidth"
)

// termWidth is the widest line, in runes, that a table written for a
// terminal has: a grid wider than this is split into grids of its columns,
// each led by the first (the traffic, the run), and a longer line of prose
// is wrapped (termwidth.Wrap). Markdown is left as wide as its content.
const termWidth = termwidth.Width

// wrapText wraps the lines of s longer than termWidth (termwidth.Wrap).
func wrapText(s string) string { return termwidth.Wrap(s) }

// columnGroups splits a grid's columns into groups that each fit termWidth
// when written with a two-space gap: every group after the first repeats
// column 0 so that a line still names its run. A grid that fits is one
// group; a column too wide alone still gets a group of its own.
func columnGroups(head []string, lines [][]string) [][]int {
	width := make([]int, len(head))
	for c := range head {
		width[c] = utf8.RuneCountInString(head[c])
		for _, l := range lines {
			if c < len(l) {
				width[c] = max(width[c], utf8.RuneCountInString(l[c]))
			}
		}
	}
	total := 0
	for _, w := range width {
		total += w + 2
	}
	if len(head) < 2 || total-2 <= termWidth {
		return [][]int{allColumns(len(head))}
	}
	var groups [][]int
	group, used := []int{0}, width[0]
	for c := 1; c < len(head); c++ {
		if len(group) > 1 && used+2+width[c] > termWidth {
			groups = append(groups, group)
			group, used = []int{0}, width[0]
		}
		group = append(group, c)
		used += 2 + width[c]
	}
	return append(groups, group)
}

// allColumns is the indexes 0..n-1.
func allColumns(n int) []int {
	cols := make([]int, n)
	for i := range cols {
		cols[i] = i
	}
	return cols
}

// cellsAt is the cells of row at cols ("" past its end).
func cellsAt(row []string, cols []int) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		if c < len(row) {
			out[i] = row[c]
		}
	}
	return out
}
