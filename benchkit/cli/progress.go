package cli

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/inferbench/inferbench/benchkit"
)

// A Progress is a [benchkit.Sink] that draws a one-line progress report,
// redrawn in place with a carriage return, meant for a terminal's stderr:
// a bar, the requests done of the total planned, where the last one
// belongs (its placement, cell and repeat, for a Runner's requests), the
// failures, the achieved rate (done / elapsed), the time elapsed and an
// estimate of the time left. Use NewProgress, which draws nothing unless
// the writer is a terminal; a nil *Progress's methods do nothing, so
// output piped to a file or another program stays clean.
//
// Add counts each request as it ends; Finish ends the line. Redraws are at
// most one each Every, and always for the last request. Safe for
// concurrent use.
type Progress struct {
	// W receives the line.
	W io.Writer
	// Total is the number of requests planned; 0 when not known in
	// advance (a search, a --duration run): no bar or ETA is then shown.
	Total int
	// Width is the bar's width in cells; 0 means 30.
	Width int
	// Every is the shortest time between redraws; 0 means 100 ms.
	Every time.Duration
	// Now reads the clock; nil means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	started time.Time
	last    time.Time
	done    int
	failed  int
	drawn   bool
}

var _ benchkit.Sink = (*Progress)(nil)

// NewProgress returns a Progress drawing on w for total requests when w is
// a terminal, and nil otherwise.
func NewProgress(w io.Writer, total int) *Progress {
	if !IsTerminal(w) {
		return nil
	}
	return &Progress{W: w, Total: total}
}

// Start sets the instant elapsed time counts from (by default, the first
// request's end).
func (p *Progress) Start() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started = nowOr(p.Now)
}

// Add counts one ended request, a failure if r failed, and redraws. It
// never fails.
func (p *Progress) Add(r benchkit.Request) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := nowOr(p.Now)
	if p.started.IsZero() {
		p.started = now
	}
	p.done++
	if r.Failed() {
		p.failed++
	}
	every := p.Every
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	if p.drawn && now.Sub(p.last) < every && p.done != p.Total {
		return nil
	}
	p.last, p.drawn = now, true
	elapsed := now.Sub(p.started)
	bar, total := "", "?"
	if p.Total > 0 {
		w := p.Width
		if w <= 0 {
			w = 30
		}
		fill := min(w, w*p.done/p.Total)
		bar = "[" + strings.Repeat("#", fill) + strings.Repeat(" ", w-fill) + "] "
		total = fmt.Sprint(p.Total)
	}
	where := ""
	if r.Concurrency > 0 {
		where = fmt.Sprintf("%s rep %d  ", r.Cell(), r.Repeat)
		if pl := r.Placement.String(); pl != "" {
			where = "placement=" + pl + "/" + where
		}
	}
	fmt.Fprintf(p.W, "\r%s%d/%s  %sfailed %d  %s req/s  %s  ETA %s ", bar, p.done, total, where, p.failed,
		rateOf(p.done, elapsed), shortDuration(elapsed), eta(elapsed, p.done, p.Total))
	return nil
}

// Finish ends the line, if one was drawn.
func (p *Progress) Finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.W)
		p.drawn = false
	}
}

func rateOf(done int, elapsed time.Duration) string {
	if s := elapsed.Seconds(); s > 0 {
		return fmt.Sprintf("%.3g", float64(done)/s)
	}
	return "—"
}

// IsTerminal reports whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func nowOr(now func() time.Time) time.Time {
	if now == nil {
		return time.Now()
	}
	return now()
}

// eta estimates the time left when done of total took elapsed: elapsed ×
// (total − done) / done, "?" when it cannot be told.
func eta(elapsed time.Duration, done, total int) string {
	if done <= 0 || total <= 0 || elapsed <= 0 {
		return "?"
	}
	if done >= total {
		return "0s"
	}
	return shortDuration(time.Duration(float64(elapsed) * float64(total-done) / float64(done)))
}

// shortDuration formats d for a progress line: "850ms", "12.3s", "4m05s",
// "1h02m".
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		m := int(d / time.Minute)
		return fmt.Sprintf("%dm%02ds", m, int(math.Round((d-time.Duration(m)*time.Minute).Seconds()))%60)
	default:
		h := int(d / time.Hour)
		return fmt.Sprintf("%dh%02dm", h, int((d-time.Duration(h)*time.Hour)/time.Minute))
	}
}
