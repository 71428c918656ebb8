package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/inferbench/inferbench/internal/progtest"
	"github.com/inferbench/inferbench/internal/testkit"
)

// progressBar matches one redraw of the progress bar: done/total, the
// failures, the achieved rate, the elapsed time and the ETA.
var progressBar = regexp.MustCompile(`\r\[[# ]+\] (\d+)/(\d+)  \S+ rep \d+  failed (\d+)  \S+ req/s  \S+  ETA (\S+) `)

// TestProgressOnATerminal runs the program with its defaults (three
// phases of 2 requests) under script(1), whose pty makes stderr a
// terminal: the bar counts up to 6/6 across the phases, never starting
// again (redraws come at most one each cli.Progress's Every, so a count
// may be skipped), and ends with an ETA of 0s. With stderr a pipe there
// is no bar.
func TestProgressOnATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	bin := progtest.Build(t)
	dir := t.TempDir()
	got := progtest.OnTerminal(t, bin, "--json-out", filepath.Join(dir, "out.json"))
	ms := progressBar.FindAllSubmatch(got, -1)
	if len(ms) == 0 || len(ms) > 6 {
		t.Fatalf("%d redraws of the bar, want 1 to 6 (at most one per request):\n%q", len(ms), got)
	}
	prev := 0
	for i, m := range ms {
		done, _ := strconv.Atoi(string(m[1]))
		if done <= prev || string(m[2]) != "6" || string(m[3]) != "0" {
			t.Errorf("redraw %d reads %s/%s, failed %s; want more than %d of 6, failed 0", i, m[1], m[2], m[3], prev)
		}
		prev = done
	}
	if last := ms[len(ms)-1]; string(last[1]) != "6" || string(last[4]) != "0s" {
		t.Errorf("the last redraw reads %s/6, ETA %s; want 6/6 and 0s", last[1], last[4])
	}

	piped := testkit.Command(t, testkit.Patience, bin, "--json-out", filepath.Join(dir, "piped.json"))
	var stdout, stderr bytes.Buffer
	piped.Stdout, piped.Stderr = &stdout, &stderr
	if err := piped.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if bytes.Contains(stderr.Bytes(), []byte("\r")) || progressBar.Match(stderr.Bytes()) {
		t.Errorf("a progress bar on stderr though it is not a terminal:\n%q", stderr.Bytes())
	}
}
