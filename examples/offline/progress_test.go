package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/internal/progtest"
	"github.com/inferbench/inferbench/internal/testkit"
)

// progressArgs is a short burst whose progress line ends at 5/5.
var progressArgs = []string{"--allow-saturated", "--num-seqs", "5", "--min-input-len", "40", "--max-input-len", "60",
	"--min-output-len", "2", "--max-output-len", "4", "--seed", "1"}

// TestProgressOnATerminal runs the program under script(1), whose pty
// makes stderr a terminal: a progress line (cli.Progress) gives a bar, the
// requests done of the total, the failures, the achieved rate, the elapsed
// time and the ETA, and ends at 5/5 with an ETA of 0s.
func TestProgressOnATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	bin := progtest.Build(t)
	out := progtest.OnTerminal(t, bin, progressArgs...)
	i := bytes.LastIndex(out, []byte("] 5/5  "))
	if i < 0 {
		t.Fatalf("no progress line ending at 5/5 on a terminal:\n%q", out)
	}
	last, _, _ := strings.Cut(string(out[i:]), "\n")
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
