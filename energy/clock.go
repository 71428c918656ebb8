package energy

import "time"

// A Clock tells the Sampler the time and makes its ticker. Tests inject a
// controlled one; nil means the system clock.
type Clock interface {
	Now() time.Time
	NewTicker(d time.Duration) Ticker
}

// A Ticker delivers ticks on C until stopped, as time.Ticker does.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// SystemClock returns the Clock of the time package.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time                   { return time.Now() }
func (systemClock) NewTicker(d time.Duration) Ticker { return systemTicker{time.NewTicker(d)} }

type systemTicker struct{ t *time.Ticker }

func (t systemTicker) C() <-chan time.Time { return t.t.C }
func (t systemTicker) Stop()               { t.t.Stop() }

var _ Clock = systemClock{}
