package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
)

// cellRequest is a request of a Runner's cell (pp, tg, conc) and repeat,
// failed when failed is set.
func cellRequest(pp, tg, conc, repeat int, failed bool) benchkit.Request {
	r := benchkit.Request{PPTarget: pp, TGTarget: tg}
	r.Concurrency, r.Repeat = conc, repeat
	if failed {
		r.Error = "x"
	}
	return r
}

// TestProgressBar: the bar counts failures, and its ETA is the time per
// request so far times the requests left: 3 of 4 done 6 s after the start
// leaves 2 s.
func TestProgressBar(t *testing.T) {
	var buf strings.Builder
	now := time.Unix(1e9, 0)
	b := &Progress{W: &buf, Total: 4, Width: 10, Now: func() time.Time { return now }}
	b.Start()
	for i := range 3 {
		now = now.Add(2 * time.Second)
		if err := b.Add(cellRequest(64, 8, 2, 0, i == 2)); err != nil {
			t.Fatal(err)
		}
	}
	b.Finish()
	want := "\r[#######   ] 3/4  pp=64/tg=8/conc=2 rep 0  failed 1  0.5 req/s  6.0s  ETA 2.0s \n"
	if !strings.HasSuffix(buf.String(), want) {
		t.Errorf("got %q, want it to end in %q", buf.String(), want)
	}
}

// TestProgressPhases: the requests of three phases of 4 (a
// disaggregation benchmark's, each phase's requests carrying their phase)
// read as one run of 12: the count goes on across the phases.
func TestProgressPhases(t *testing.T) {
	var buf strings.Builder
	now := time.Unix(1e9, 0)
	p := &Progress{W: &buf, Total: 3 * 4, Now: func() time.Time { return now }}
	p.Start()
	for _, phase := range []string{"prefill_alone", "disaggregated", "decode_alone"} {
		for i := range 4 {
			now = now.Add(time.Second)
			r := cellRequest(2048, 16, 1, i, false)
			r.Phase = phase
			if err := p.Add(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	p.Finish()
	var got []string
	for _, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\r")[1:] {
		_, rest, _ := strings.Cut(line, "] ")
		n, _, _ := strings.Cut(rest, " ")
		got = append(got, n)
	}
	want := "1/12 2/12 3/12 4/12 5/12 6/12 7/12 8/12 9/12 10/12 11/12 12/12"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("got %s, want %s", s, want)
	}
}

// TestLoadProgress: the line gives done/total, the failures, the achieved
// rate, the elapsed time and the ETA; redraws come at most one each
// Every, except the last; a run of unknown size has no bar or ETA; a nil
// Progress (not a terminal) does nothing.
func TestLoadProgress(t *testing.T) {
	var buf strings.Builder
	now := time.Unix(1e9, 0)
	p := &Progress{W: &buf, Total: 10, Width: 10, Now: func() time.Time { return now }}
	p.Start()
	for range 2 {
		now = now.Add(500 * time.Millisecond)
		p.Add(benchkit.Request{})
	}
	p.Add(benchkit.Request{}) // within Every of the last redraw: not drawn
	for range 7 {
		now = now.Add(time.Second)
		p.Add(benchkit.Request{ErrorKind: "status", Error: "503"})
	}
	p.Finish()
	want := "\r[#         ] 1/10  failed 0  2 req/s  500ms  ETA 4.5s " +
		"\r[##        ] 2/10  failed 0  2 req/s  1.0s  ETA 4.0s " +
		"\r[####      ] 4/10  failed 1  2 req/s  2.0s  ETA 3.0s " +
		"\r[#####     ] 5/10  failed 2  1.67 req/s  3.0s  ETA 3.0s "
	if !strings.HasPrefix(buf.String(), want) || !strings.HasSuffix(buf.String(), "\r[##########] 10/10  failed 7  1.25 req/s  8.0s  ETA 0s \n") {
		t.Errorf("got %q", buf.String())
	}
	var open strings.Builder
	q := &Progress{W: &open, Now: func() time.Time { return now }}
	q.Start()
	now = now.Add(2 * time.Second)
	q.Add(benchkit.Request{})
	if got := open.String(); got != "\r1/?  failed 0  0.5 req/s  2.0s  ETA ? " {
		t.Errorf("unknown total: got %q", got)
	}
	none := NewProgress(&buf, 3)
	if none != nil {
		t.Fatal("NewProgress on a strings.Builder drew a line")
	}
	none.Start()
	if err := none.Add(benchkit.Request{}); err != nil {
		t.Errorf("nil Progress: Add = %v", err)
	}
	none.Finish()
}
