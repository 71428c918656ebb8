package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestHelpExitsZero: -h and --help write the usage and exit 0, with
// nothing on stdout.
func TestHelpExitsZero(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), []string{arg}, &stdout, &stderr); err != nil {
			t.Errorf("%s: %v, want nil (exit 0)", arg, err)
		}
		if !strings.Contains(stderr.String(), "-allow-saturated") || stdout.Len() > 0 {
			t.Errorf("%s: stderr %q, stdout %q; want the usage on stderr only", arg, stderr.String(), stdout.String())
		}
	}
}
