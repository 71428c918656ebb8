package exo

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/inferbench/inferbench/energy"
)

// The metric names of a PowerSource's readings, exo's own. MetricSysPower
// is energy.MetricPower.
const (
	MetricSysPower  = energy.MetricPower // "sysPower", W
	MetricGPUUsage  = "gpuUsage"         // fraction 0–1
	MetricTemp      = "temp"             // °C
	MetricPCPUUsage = "pcpuUsage"        // fraction 0–1
	MetricECPUUsage = "ecpuUsage"        // fraction 0–1
)

// A PowerSource reads exo's node metrics as an energy.Source: for each
// node, sysPower as energy.MetricPower and the four other metrics under
// exo's names. Make one with Client.PowerSource.
//
// Each Read is one GET /state/nodeSystem, a single attempt (a sampler
// polls again at its next tick rather than waiting out a backoff), so
// every node's values come from one snapshot of the API node's state,
// where exo_bench stamps N sequential requests with one instant. The
// values are macmon readings that exo refreshes once a second and relays
// through its events: they lag the hardware by a second or more, and the
// readings carry no timestamp of their own.
type PowerSource struct {
	c     *Client
	nodes []string
}

var _ energy.Source = (*PowerSource)(nil)
var _ energy.PowerKinder = (*PowerSource)(nil)

// SysPowerInterval is the span each sysPower reading is the mean over:
// exo runs macmon with a 1000 ms interval.
const SysPowerInterval = time.Second

// PowerKind says what sysPower readings are: the mean power over the
// SysPowerInterval before the reading (macmon's), not an instantaneous
// value, so energy.Integrate integrates them as means.
func (s *PowerSource) PowerKind() energy.SampleKind { return energy.IntervalMean(SysPowerInterval) }

// PowerSource returns a source of the given nodes' metrics, or of every
// node that reports them when nodes is empty.
func (c *Client) PowerSource(nodes ...string) *PowerSource {
	return &PowerSource{c: c, nodes: slices.Clone(nodes)}
}

// Read returns five readings per node, in node order. A cluster where no
// node (or none of the chosen ones) reports metrics gives an error
// wrapping energy.ErrUnavailable and ErrNoMetrics; a node missing from
// the chosen ones is left out.
func (s *PowerSource) Read(ctx context.Context) ([]energy.Reading, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("exo: reading node metrics: %w", err)
	}
	all, err := s.c.NodeSystems(withNoRetry(ctx))
	if err != nil {
		return nil, fmt.Errorf("exo: reading node metrics: %w", err)
	}
	nodes := s.nodes
	if len(nodes) == 0 {
		nodes = make([]string, 0, len(all))
		for n := range all {
			nodes = append(nodes, n)
		}
		sort.Strings(nodes)
	}
	var rs []energy.Reading
	for _, n := range nodes {
		m, ok := all[n]
		if !ok {
			continue
		}
		if !(m.SysPower >= 0) || math.IsInf(m.SysPower, 0) {
			return nil, fmt.Errorf("exo: node %s: sysPower %v W, expected a finite value ≥ 0", n, m.SysPower)
		}
		rs = append(rs,
			energy.Reading{Node: n, Metric: MetricSysPower, Value: m.SysPower},
			energy.Reading{Node: n, Metric: MetricGPUUsage, Value: m.GPUUsage},
			energy.Reading{Node: n, Metric: MetricTemp, Value: m.Temp},
			energy.Reading{Node: n, Metric: MetricPCPUUsage, Value: m.PCPUUsage},
			energy.Reading{Node: n, Metric: MetricECPUUsage, Value: m.ECPUUsage},
		)
	}
	if len(rs) == 0 {
		if len(s.nodes) == 0 {
			return nil, fmt.Errorf("exo: %w: %w: no node reports metrics (exo has them from macmon, on macOS only)", energy.ErrUnavailable, ErrNoMetrics)
		}
		return nil, fmt.Errorf("exo: %w: %w: none of %v among the %d node(s) that report metrics", energy.ErrUnavailable, ErrNoMetrics, s.nodes, len(all))
	}
	return rs, nil
}
