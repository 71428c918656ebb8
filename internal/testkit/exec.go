package testkit

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// Command returns exec.CommandContext(ctx, name, args...) with a context
// that ends after d, or when the test ends: the process is killed then,
// and its Wait (or Run, Output) returns at most five seconds later even
// when a child of it still holds its output open.
func Command(t testing.TB, d time.Duration, name string, args ...string) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}
