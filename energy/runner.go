package energy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// A Runner runs an outside command and returns its standard output. The
// command sources take one so tests (and remote setups: ssh to a node)
// can replace the real process.
type Runner interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// RunnerFunc adapts a function to a Runner.
type RunnerFunc func(ctx context.Context, name string, args ...string) ([]byte, error)

// Run calls f(ctx, name, args...).
func (f RunnerFunc) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return f(ctx, name, args...)
}

var _ Runner = RunnerFunc(nil)

// ExecRunner returns a Runner that starts the command with os/exec, killed
// when ctx is done. A missing executable gives an error wrapping
// ErrUnavailable; a failing one an error holding the start of its
// standard error.
func ExecRunner() Runner { return RunnerFunc(execRun) }

func execRun(ctx context.Context, name string, args ...string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err == nil {
		return out, nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("energy: %s: %w", name, ctx.Err())
	}
	if errors.Is(err, exec.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s not found: %w", ErrUnavailable, name, err)
	}
	msg := strings.TrimSpace(stderr.String())
	if msg == "" {
		msg = strings.TrimSpace(string(out))
	}
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return nil, fmt.Errorf("energy: %s %s: %w: %s", name, strings.Join(args, " "), err, msg)
}
