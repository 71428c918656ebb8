package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/internal/progtest"
	"github.com/inferbench/inferbench/internal/testkit"
)

// progressArgs is a short run whose progress line ends at 6/6.
var progressArgs = []string{"--allow-saturated", "--num-requests", "6", "--rate", "50", "--pp", "64", "--tg", "2", "--seed", "1"}

// TestProgressOnATerminal runs the program under script(1), whose pty
// makes stderr a terminal: a progress line redrawn with a carriage return
// (cli.Progress) gives a bar, the requests done of the total, the
// failures, the achieved rate, the elapsed time and the ETA, and ends at
// 6/6 with an ETA of 0s.
func TestProgressOnATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	bin := progtest.Build(t)
	out := progtest.OnTerminal(t, bin, progressArgs...)
	if !bytes.Contains(out, []byte("] 1/6  ")) || !bytes.Contains(out, []byte("] 6/6  ")) {
		t.Fatalf("no progress line from 1/6 to 6/6 on a terminal:\n%q", out)
	}
	last := string(out[bytes.LastIndex(out, []byte("] 6/6  ")):])
	last, _, _ = strings.Cut(last, "\n")
	for _, want := range []string{"req/s", "failed 0", "ETA 0s"} {
		if !strings.Contains(last, want) {
			t.Errorf("the last progress line %q lacks %q", last, want)
		}
	}
}

// TestNoProgressWhenNotATerminal: with stderr a pipe, the same run writes
// no progress line and no carriage return.
func TestNoProgressWhenNotATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	bin := progtest.Build(t)
	var stdout, stderr bytes.Buffer
	cmd := testkit.Command(t, testkit.Patience, bin, progressArgs...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	for name, b := range map[string][]byte{"stdout": stdout.Bytes(), "stderr": stderr.Bytes()} {
		if bytes.Contains(b, []byte("\r")) || bytes.Contains(b, []byte("  ETA ")) {
			t.Errorf("%s holds a progress line though it is not a terminal:\n%q", name, b)
		}
	}
}
