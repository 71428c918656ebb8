package benchkit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/inferbench/inferbench/timing"
)

// A ramp's rate moves through the run: the searches and the sweep, which
// each replace one rate, refuse it before anything is sent.
func TestRateSearchesRefuseARamp(t *testing.T) {
	l := &Load{}
	tr := Traffic{Rate: 1, RampShape: "linear", RampTo: 4, RampOver: time.Second, Duration: 2 * time.Second}
	slo := timing.SLO{E2E: time.Second}
	ctx := context.Background()
	if _, err := l.Sweep(ctx, nil, tr, []float64{1, 2}, slo); !errors.Is(err, ErrBadLoad) {
		t.Errorf("Sweep of a ramp: err = %v, want ErrBadLoad", err)
	}
	if _, _, err := l.FindMaxRate(ctx, nil, tr, slo, 0, nil); !errors.Is(err, ErrBadLoad) {
		t.Errorf("FindMaxRate of a ramp: err = %v, want ErrBadLoad", err)
	}
	if _, _, err := l.FindCapacity(ctx, nil, tr, slo, nil); !errors.Is(err, ErrBadLoad) {
		t.Errorf("FindCapacity of a ramp: err = %v, want ErrBadLoad", err)
	}
}
