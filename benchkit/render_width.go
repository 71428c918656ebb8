package benchkit

import (
	"slices"
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
// when written with a two-space gap: every group repeats the columns that
// name a line (the traffic, and the thinking setting before it) so that a
// line still names its run. A grid that fits is one
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
	// The columns that name a line: the traffic, after the thinking
	// setting where the grid has one.
	lead := 1
	if head[0] == "thinking" {
		lead = 2
	}
	if len(head) <= lead || total-2 <= termWidth {
		return [][]int{allColumns(len(head))}
	}
	keys := allColumns(lead)
	keyWidth := 0
	for _, c := range keys {
		keyWidth += width[c] + 2
	}
	var groups [][]int
	group, used := slices.Clone(keys), keyWidth-2
	for c := lead; c < len(head); c++ {
		if len(group) > lead && used+2+width[c] > termWidth {
			groups = append(groups, group)
			group, used = slices.Clone(keys), keyWidth-2
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
