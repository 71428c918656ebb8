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
