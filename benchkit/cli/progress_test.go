package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
)

// TestProgressBar: the bar counts failures, and its ETA is the time per
// request so far times the requests left: 3 of 4 done 6 s after the start
// leaves 2 s.
func TestProgressBar(t *testing.T) {
	var buf strings.Builder
	now := time.Unix(1e9, 0)
	b := &ProgressBar{W: &buf, Width: 10, Now: func() time.Time { return now }}
	b.Start()
	now = now.Add(6 * time.Second)
	b.Observe(benchkit.Progress{Cell: benchkit.Cell{PP: 64, TG: 8, Concurrency: 2}, Done: 3, Total: 4, Row: benchkit.Row{Error: "x"}})
	b.Finish()
	want := "\r[#######   ] 3/4  pp=64/tg=8/conc=2 rep 0  failed 1  0.5 req/s  6.0s  ETA 2.0s \n"
	if buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}

// TestPhases: three phases of 4 requests read as one run of 12, the
// second cut short after 2.
func TestPhases(t *testing.T) {
	var got []string
	obs := Phases(benchkit.ObserverFunc(func(p benchkit.Progress) { got = append(got, fmt.Sprintf("%d/%d", p.Done, p.Total)) }), 3)
	for _, done := range []int{1, 2, 3, 4, 1, 2, 1, 2, 3, 4} {
		obs.Observe(benchkit.Progress{Done: done, Total: 4})
	}
	want := "1/12 2/12 3/12 4/12 5/12 6/12 9/12 10/12 11/12 12/12"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("got %s, want %s", s, want)
	}
}

// TestLoadProgress: the line gives done/total, the achieved rate, the
// errors, the elapsed time and the ETA; redraws come at most one each
// Every, except the last; a run of unknown size has no ETA; a nil
// LoadProgress (not a terminal) does nothing.
func TestLoadProgress(t *testing.T) {
	var buf strings.Builder
	now := time.Unix(1e9, 0)
	p := &LoadProgress{W: &buf, Total: 10, Now: func() time.Time { return now }}
	p.Start()
	for range 2 {
		now = now.Add(500 * time.Millisecond)
		p.Row(benchkit.LoadRow{})
	}
	p.Row(benchkit.LoadRow{}) // within Every of the last redraw: not drawn
	for range 7 {
		now = now.Add(time.Second)
		p.Row(benchkit.LoadRow{ErrorKind: "status", Error: "503"})
	}
	p.Finish()
	want := "\r1/10 requests  2 req/s  errors 0  elapsed 500ms  ETA 4.5s " +
		"\r2/10 requests  2 req/s  errors 0  elapsed 1.0s  ETA 4.0s " +
		"\r4/10 requests  2 req/s  errors 1  elapsed 2.0s  ETA 3.0s " +
		"\r5/10 requests  1.67 req/s  errors 2  elapsed 3.0s  ETA 3.0s "
	if !strings.HasPrefix(buf.String(), want) || !strings.HasSuffix(buf.String(), "\r10/10 requests  1.25 req/s  errors 7  elapsed 8.0s  ETA 0s \n") {
		t.Errorf("got %q", buf.String())
	}
	var open strings.Builder
	q := &LoadProgress{W: &open, Now: func() time.Time { return now }}
	q.Start()
	now = now.Add(2 * time.Second)
	q.Row(benchkit.LoadRow{})
	if got := open.String(); got != "\r1/? requests  0.5 req/s  errors 0  elapsed 2.0s  ETA ? " {
		t.Errorf("unknown total: got %q", got)
	}
	none := NewLoadProgress(&buf, 3)
	if none != nil {
		t.Fatal("NewLoadProgress on a strings.Builder drew a line")
	}
	none.Start()
	none.Row(benchkit.LoadRow{})
	none.Finish()
}
