package cli

import (
	"errors"
	"fmt"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
)

func TestExitSaturated(t *testing.T) {
	err := fmt.Errorf("%w: run 0: lag", benchkit.ErrClientSaturated)
	if got := ExitCode(err); got != ExitSaturated {
		t.Errorf("ExitCode(saturated) = %d, want %d", got, ExitSaturated)
	}
	if got := ExitCode(errors.Join(err, benchkit.ErrRequestsFailed)); got != ExitFailed {
		t.Errorf("ExitCode(saturated and failed) = %d, want %d: failures come first", got, ExitFailed)
	}
}
