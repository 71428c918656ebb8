package cli

import (
	"errors"
	"fmt"
	"testing"
)

func TestExitSaturated(t *testing.T) {
	err := fmt.Errorf("%w: run 0: lag", ErrClientSaturated)
	if got := ExitCode(err); got != ExitSaturated {
		t.Errorf("ExitCode(saturated) = %d, want %d", got, ExitSaturated)
	}
	if got := ExitCode(errors.Join(err, ErrRequestsFailed)); got != ExitFailed {
		t.Errorf("ExitCode(saturated and failed) = %d, want %d: failures come first", got, ExitFailed)
	}
}

// TestExitRegression: a gate's regression has its own status, and a
// comparison that could not be made is a plain failure.
func TestExitRegression(t *testing.T) {
	if got := ExitCode(fmt.Errorf("compare: %w", ErrRegression)); got != ExitRegression {
		t.Errorf("ExitCode(regression) = %d, want %d", got, ExitRegression)
	}
	if got := ExitCode(errors.New("compare: the runs measured different things")); got != ExitFailed {
		t.Errorf("ExitCode(refused) = %d, want %d", got, ExitFailed)
	}
}
