package benchkit

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/inferbench/inferbench/concurrency"
)

// The shapes of Traffic.RampShape.
const (
	rampLinear      = "linear"
	rampExponential = "exponential"
)

// shapeErr checks the traffic's ramp and probes (docs/RAMPS-AND-PROBES.md);
// each error wraps ErrBadLoad.
func (t Traffic) shapeErr() error {
	bad := func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }
	switch {
	case bad(t.ProbeRate) || t.ProbeRate < 0:
		return fmt.Errorf("%w: probe rate must be a finite number of requests per second ≥ 0, got %g", ErrBadLoad, t.ProbeRate)
	case t.ProbeRate > 0 && (t.Burst > 0 || t.Users > 0):
		return fmt.Errorf("%w: probes go beside an open loop's schedule; a burst or a closed loop has none", ErrBadLoad)
	case t.RampShape == "" && (t.RampTo != 0 || t.RampOver != 0):
		return fmt.Errorf("%w: a ramp's end rate and length need its shape (%s or %s)", ErrBadLoad, rampLinear, rampExponential)
	case t.RampShape == "":
		return nil
	case t.RampShape != rampLinear && t.RampShape != rampExponential:
		return fmt.Errorf("%w: ramp shape must be %s or %s, got %q", ErrBadLoad, rampLinear, rampExponential, t.RampShape)
	case t.Burst > 0 || t.Users > 0 || t.Replay:
		return fmt.Errorf("%w: a ramp shapes an open loop's rate; a burst, a closed loop or a replay has none", ErrBadLoad)
	case bad(t.Rate) || t.Rate < 0:
		return fmt.Errorf("%w: a ramp's start rate must be a finite number of requests per second ≥ 0, got %g", ErrBadLoad, t.Rate)
	case t.RampShape == rampExponential && t.Rate == 0:
		return fmt.Errorf("%w: an exponential ramp cannot start from 0 requests per second (no factor takes 0 anywhere); give a positive start rate or a linear ramp", ErrBadLoad)
	case bad(t.RampTo) || t.RampTo <= 0:
		return fmt.Errorf("%w: a ramp's end rate must be a positive, finite number of requests per second, got %g", ErrBadLoad, t.RampTo)
	case t.RampOver <= 0:
		return fmt.Errorf("%w: a ramp's length must be positive, got %s", ErrBadLoad, t.RampOver)
	}
	return nil
}

// ramp is the traffic's ramp, when it has one (RampShape set).
func (t Traffic) ramp() (concurrency.Ramp, bool) {
	if t.RampShape == "" {
		return concurrency.Ramp{}, false
	}
	return concurrency.Ramp{Start: t.Rate, End: t.RampTo, Over: t.RampOver, Exponential: t.RampShape == rampExponential,
		Burstiness: t.Burstiness, Src: rand.NewPCG(t.Seed, 0x61727269766c73)}, true // "arrivls", as Gamma's
}
