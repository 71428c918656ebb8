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

// A ProgressBar is a [benchkit.Observer] that draws a one-line progress bar, redrawn
// in place with a carriage return: meant for a terminal's stderr. The line
// names the placement (when the rows carry one), the cell and the repeat
// being measured, the requests done of all (over every placement of an
// [benchkit.ExoSweep]), the failures, the achieved rate (requests done / elapsed),
// the time elapsed and an estimate of the time left. Call Finish at the
// end to end the line.
type ProgressBar struct {
	// W receives the bar.
	W io.Writer
	// Width is the bar's width in cells; 0 means 30.
	Width int
	// Now reads the clock for the elapsed time and the ETA; nil means
	// time.Now.
	Now func() time.Time

	mu      sync.Mutex
	drawn   bool
	failed  int
	started time.Time
}

var _ benchkit.Observer = (*ProgressBar)(nil)

// Start sets the instant the elapsed time and the ETA count from (by
// default, the first report's).
func (b *ProgressBar) Start() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.started = nowOr(b.Now)
}

// Observe redraws the bar for p.
func (b *ProgressBar) Observe(p benchkit.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := nowOr(b.Now)
	if b.started.IsZero() {
		b.started = now
	}
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
	where := p.Cell.String()
	if pl := benchkit.PlacementOf(p.Row); !pl.IsZero() {
		where = "placement=" + pl.String() + "/" + where
	}
	elapsed := now.Sub(b.started)
	fmt.Fprintf(b.W, "\r[%s%s] %d/%d  %s rep %d  failed %d  %s req/s  %s  ETA %s ", strings.Repeat("#", fill), strings.Repeat(" ", w-fill),
		p.Done, p.Total, where, p.Repeat, b.failed, rateOf(p.Done, elapsed), shortDuration(elapsed), eta(elapsed, p.Done, p.Total))
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

// A LoadProgress draws a one-line progress report of a load test, redrawn
// in place with a carriage return: the requests done of the total planned,
// the achieved rate (done / elapsed), the errors, the time elapsed and an
// estimate of the time left. It is meant for a terminal's stderr: use
// NewLoadProgress, which draws nothing unless stderr is one.
//
// Row (a [benchkit.Load]'s OnRow, or chained with it) counts each request as it
// ends; Finish ends the line. Redraws are at most one each Every, and
// always for the last request. Safe for concurrent use.
type LoadProgress struct {
	// W receives the line.
	W io.Writer
	// Total is the number of requests planned; 0 when not known in
	// advance (a search, a --duration run): no ETA is then shown.
	Total int
	// Every is the shortest time between redraws; 0 means 100 ms.
	Every time.Duration
	// Now reads the clock; nil means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	started time.Time
	last    time.Time
	done    int
	errors  int
	drawn   bool
}

// NewLoadProgress returns a LoadProgress drawing on w for total requests
// when w is a terminal, and nil otherwise: a nil *LoadProgress's methods
// do nothing, so output piped to a file or another program stays clean.
func NewLoadProgress(w io.Writer, total int) *LoadProgress {
	if !IsTerminal(w) {
		return nil
	}
	return &LoadProgress{W: w, Total: total}
}

// Start sets the instant elapsed time counts from (by default, the first
// row's end).
func (p *LoadProgress) Start() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started = nowOr(p.Now)
}

// Row counts one ended request, a failure if r failed, and redraws.
func (p *LoadProgress) Row(r benchkit.LoadRow) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := nowOr(p.Now)
	if p.started.IsZero() {
		p.started = now
	}
	p.done++
	if r.Failed() {
		p.errors++
	}
	every := p.Every
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	if p.drawn && now.Sub(p.last) < every && p.done != p.Total {
		return
	}
	p.last, p.drawn = now, true
	elapsed := now.Sub(p.started)
	rate := rateOf(p.done, elapsed)
	total := "?"
	if p.Total > 0 {
		total = fmt.Sprint(p.Total)
	}
	fmt.Fprintf(p.W, "\r%d/%s requests  %s req/s  errors %d  elapsed %s  ETA %s ", p.done, total, rate, p.errors, shortDuration(elapsed), eta(elapsed, p.done, p.Total))
}

// Finish ends the line, if one was drawn.
func (p *LoadProgress) Finish() {
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

// Phases returns a [benchkit.Observer] that hears the progress of n runs of the
// same plan one after the other (the phases of a disaggregation
// benchmark) and tells obs of it as one: Done goes on from the earlier
// phases' requests, and Total is n times a phase's. A phase ends when its
// Done reaches its Total; a phase cut short ends when the next one's
// Done starts again from 1.
func Phases(obs benchkit.Observer, n int) benchkit.Observer {
	var mu sync.Mutex
	base, last, lastTotal := 0, 0, 0
	return benchkit.ObserverFunc(func(p benchkit.Progress) {
		mu.Lock()
		if p.Done <= last {
			base += lastTotal
		}
		last, lastTotal = p.Done, p.Total
		p.Done += base
		p.Total *= max(n, 1)
		mu.Unlock()
		obs.Observe(p)
	})
}

// rateOf formats done / elapsed in requests per second for a progress
// line, "—" before any time has passed.
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
