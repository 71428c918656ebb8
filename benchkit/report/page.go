package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
)

// view is one page: what was measured, the warnings, then sections of
// tables, figures and notes. Every program's page is one, so that they
// share one look, one template and one set of checks: every string in it
// is escaped by html/template, and only the figures' SVG, drawn here,
// goes in as markup.
type view struct {
	Title     string
	Simulated bool
	Predicted bool
	// Kind says what the page shows: "Load test", "Offline batch", ….
	Kind     string
	About    [][2]string
	Command  string
	Warnings []warning
	Sections []section
}

// section is one heading's tables, figures and notes, in order.
type section struct {
	// ID is the section's anchor; "" makes none.
	ID      string
	Heading string
	Blocks  []block
}

// block is one thing a section shows; the first field set is drawn.
type block struct {
	// Sub is a subheading.
	Sub string
	// Note is a paragraph.
	Note string
	// List is a bulleted list.
	List []string
	// Warnings is a list of warnings with their codes and what to do.
	Warnings []warning
	// Table is a table; Pair is tables side by side.
	Table *table
	Pair  []table
	// Figure is a plot.
	Figure *figure
	// Pre is preformatted text (the server's view).
	Pre string
}

// table is an HTML table: a caption, the column headers (units in them),
// and rows each headed by its name.
type table struct {
	Caption string
	Head    []string
	Rows    []row
}

// row is a table's row: its header cell, then its cells.
type row struct {
	Head  string
	Cells []cell
}

// cell is one value. Key, where set, names the figure the cell shows
// ("ttft.p50") as the data-key attribute, so that a browser can read the
// page's figures back against the results file's.
type cell struct {
	Text string
	Num  bool
	Key  string
}

// figure is an inline SVG plot with its caption.
type figure struct {
	SVG     template.HTML
	Caption string
}

// warning is one warning: its stable code, its text as the results
// file holds it, and what to do about it.
type warning struct {
	Code   string
	Text   string
	Advice string
}

// numCell is a right-aligned figure named key.
func numCell(text, key string) cell { return cell{Text: text, Num: true, Key: key} }

// textCell is a left-aligned text.
func textCell(text string) cell { return cell{Text: text} }

// pairsTable is a two-column table of names and values.
func pairsTable(caption, nameHead, valueHead string, pairs [][2]string, keys []string) *table {
	t := &table{Caption: caption, Head: []string{nameHead, valueHead}}
	for i, p := range pairs {
		k := ""
		if i < len(keys) {
			k = keys[i]
		}
		t.Rows = append(t.Rows, row{Head: p[0], Cells: []cell{numCell(p[1], k)}})
	}
	return t
}

// warningsOf gives each of texts its code and what to do (advise).
func warningsOf(texts []string) []warning {
	out := make([]warning, 0, len(texts))
	for _, t := range texts {
		code, advice := advise(t)
		out = append(out, warning{Code: code, Text: t, Advice: advice})
	}
	return out
}

// write renders v to w as one HTML page.
func (v view) write(w io.Writer) error {
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, v); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("report: write: %w", err)
	}
	return nil
}
