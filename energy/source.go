package energy

import (
	"context"
	"time"
)

// Metric names with a meaning in this package. Sources may report any
// other metric (exo's node metrics add "gpuUsage", "temp", "pcpuUsage",
// "ecpuUsage"); the Sampler keeps and summarises them all.
const (
	// MetricPower is power draw in watts. It is exo's name for system
	// power, so a Recording's Summary has the shape of exo's
	// system_metrics.
	MetricPower = "sysPower"
	// MetricEnergy is a cumulative energy counter in joules. A Source
	// that reports it and implements Counter says where it wraps.
	MetricEnergy = "energy"
)

// A Reading is one value a Source read.
type Reading struct {
	// Node names what was measured: a machine of a cluster, a GPU
	// ("gpu0"), a RAPL domain ("package-0"). It must be unique across
	// the sources of one Sampler for each Metric.
	Node string
	// Metric is MetricPower, MetricEnergy or a name of the source's own.
	Metric string
	// Value is in the metric's unit: watts, joules, a 0–1 fraction, °C.
	Value float64
	// At, when set, is when the value was measured, for sources that
	// know (a reading relayed with its own timestamp). When zero, the
	// Sampler stamps the reading with the midpoint of the Read call.
	At time.Time
}

// A Source reads power telemetry.
//
// Read returns the current value of each metric of each node it covers.
// It must be safe for concurrent use, return promptly, and return an error
// wrapping ctx.Err() when ctx is done before it finishes (checking ctx
// before reading is enough for a source that never blocks). Values of
// MetricPower and MetricEnergy are finite and non-negative. A source that
// cannot work on this machine returns an error wrapping ErrUnavailable.
// The package sourcetest checks these rules.
type Source interface {
	Read(ctx context.Context) ([]Reading, error)
}

// A Counter is a Source whose MetricEnergy readings are cumulative
// counters that wrap around. The Sampler finds it by type assertion and
// asks, once per node, where the counter wraps.
type Counter interface {
	Source
	// CounterMax returns the value in joules at which node's energy
	// counter wraps to zero, or 0 if it does not wrap within any
	// realistic run (a 64-bit counter).
	CounterMax(ctx context.Context, node string) (float64, error)
}

// SourceFunc adapts a function to a Source.
type SourceFunc func(ctx context.Context) ([]Reading, error)

// Read calls f(ctx).
func (f SourceFunc) Read(ctx context.Context) ([]Reading, error) { return f(ctx) }

var _ Source = SourceFunc(nil)
