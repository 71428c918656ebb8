package benchkit

import (
	"fmt"
	"io"
	"strings"
	"sync"
)

// A ProgressBar is an Observer that draws a one-line progress bar, redrawn
// in place with a carriage return: meant for a terminal's stderr. The line
// names the placement (when the rows carry one), the cell and the repeat
// being measured. Call Finish at the end to end the line.
type ProgressBar struct {
	// W receives the bar.
	W io.Writer
	// Width is the bar's width in cells; 0 means 30.
	Width int

	mu     sync.Mutex
	drawn  bool
	failed int
}

var _ Observer = (*ProgressBar)(nil)

// Observe redraws the bar for p.
func (b *ProgressBar) Observe(p Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p.Row.Failed() {
		b.failed++
	}
	w := b.Width
	if w <= 0 {
		w = 30
	}
	fill := 0
	if p.Total > 0 {
		fill = min(w, w*p.Done/p.Total)
	}
	where := cellKey{PlacementOf(p.Row), p.Cell}.name()
	fmt.Fprintf(b.W, "\r[%s%s] %d/%d  %s rep %d  failed %d ", strings.Repeat("#", fill), strings.Repeat(" ", w-fill), p.Done, p.Total, where, p.Repeat, b.failed)
	b.drawn = true
}

// Finish ends the bar's line, if one was drawn.
func (b *ProgressBar) Finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drawn {
		fmt.Fprintln(b.W)
		b.drawn = false
	}
}
