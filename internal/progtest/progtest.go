// Package progtest runs the example programs as programs, for the tests
// that need a real process: signals, file locks, and what a terminal sees.
package progtest

import (
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/inferbench/inferbench/internal/termwidth"
	"github.com/inferbench/inferbench/internal/testkit"
)

// Build builds the package in the current directory into a temporary
// directory and returns the binary's path. It builds with the race detector
// when the calling test binary has it, so that the packages the test
// already compiled come from the build cache.
func Build(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "prog")
	args := []string{"build", "-o", bin}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" && s.Value == "true" {
				args = append(args, "-race")
			}
		}
	}
	// A cold build with the race detector on a loaded machine takes
	// minutes; one that takes ten is stuck.
	if out, err := testkit.Command(t, 10*time.Minute, "go", append(args, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// OnTerminal runs bin with args under script(1), whose pty makes the
// program's stdout and stderr a terminal, and returns what the terminal
// showed. It skips the test where script(1) (util-linux) is not installed
// and fails it when the program fails. No argument may hold a single
// quote.
func OnTerminal(t testing.TB, bin string, args ...string) []byte {
	t.Helper()
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) (util-linux) is not installed")
	}
	quoted := make([]string, 0, len(args)+1)
	for _, a := range append([]string{bin}, args...) {
		if strings.Contains(a, "'") {
			t.Fatalf("progtest.OnTerminal: argument %q holds a single quote", a)
		}
		quoted = append(quoted, "'"+a+"'")
	}
	cmd := strings.Join(quoted, " ")
	out, err := testkit.Command(t, testkit.Patience, script, "-qec", cmd, "/dev/null").CombinedOutput()
	if err != nil {
		t.Fatalf("script -qec %q: %v\n%s", cmd, err, out)
	}
	return out
}

// Fits fails t for every line of out (what a program printed for a
// terminal) wider than termwidth.Width runes.
func Fits(t testing.TB, what, out string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > termwidth.Width {
			t.Errorf("%s: a line of %d columns, over %d: %q", what, n, termwidth.Width, line)
		}
	}
}
