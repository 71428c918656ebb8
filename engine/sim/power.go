package sim

import (
	"math"
	"sync"
	"time"

	"github.com/inferbench/inferbench/engine"
)

// powerLog holds each node's dynamic power as segments of the schedule. A
// node's power at instant t is
//
//	P(t) = IdleWatts + Σ over segments covering t of (uc · ComputeWatts + um · MemoryWatts)
//
// where uc and um are the compute and memory utilisation of the step the
// segment records. Energy over a window is the exact integral of P.
type powerLog struct {
	hw   Hardware
	mu   sync.Mutex
	segs [][]powerSeg // per node
	adds int
}

type powerSeg struct {
	start, end time.Duration
	watts      float64 // dynamic part
	util       float64 // max(uc, um), for gpuUsage
}

func newPowerLog(hw Hardware, nodes int) *powerLog {
	return &powerLog{hw: hw, segs: make([][]powerSeg, nodes)}
}

// trimEvery is how many segments are added between trims.
const trimEvery = 4096

// add records a step on node from start to end with the given
// utilisations. It reports true every trimEvery segments, when the caller
// should trim.
func (p *powerLog) add(node int, start, end time.Duration, uc, um float64) bool {
	if end <= start {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.segs[node] = append(p.segs[node], powerSeg{
		start: start, end: end,
		watts: uc*p.hw.ComputeWatts + um*p.hw.MemoryWatts,
		util:  math.Max(uc, um),
	})
	p.adds++
	return p.adds%trimEvery == 0
}

// trim drops segments that end before keep.
func (p *powerLog) trim(keep time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for n, s := range p.segs {
		i := 0
		for i < len(s) && s[i].end < keep {
			i++
		}
		if i > 0 {
			p.segs[n] = append(s[:0], s[i:]...)
		}
	}
}

// energy is ∫ P dt over [from, to] on node, in joules.
func (p *powerLog) energy(node int, from, to time.Duration) float64 {
	if to <= from {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.hw.IdleWatts * (to - from).Seconds()
	for _, s := range p.segs[node] {
		if o := overlap(s.start, s.end, from, to); o > 0 {
			e += s.watts * o.Seconds()
		}
	}
	return e
}

// utilisation is the time-weighted mean of max(uc, um) on node over
// [from, to].
func (p *powerLog) utilisation(node int, from, to time.Duration) float64 {
	if to <= from {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	u := 0.0
	for _, s := range p.segs[node] {
		if o := overlap(s.start, s.end, from, to); o > 0 {
			u += s.util * o.Seconds()
		}
	}
	return math.Min(u/(to-from).Seconds(), 1)
}

func overlap(a0, a1, b0, b1 time.Duration) time.Duration {
	return min(a1, b1) - max(a0, b0)
}

// usage is exo's power_usage block of a non-streaming bench response
// (exo-api.md §1.5), computed from the simulated power model.
func (p *powerLog) usage(nodeIDs []string, from, mark, to time.Duration) engine.PowerUsage {
	el := (to - from).Seconds()
	u := engine.PowerUsage{ElapsedSeconds: el, Nodes: []engine.NodePower{}}
	marked := mark >= 0
	if marked {
		mark = min(max(mark, from), to)
	}
	samples := 2 + int(el)
	if marked {
		samples++
	}
	var pe, ge float64
	for i, id := range nodeIDs {
		e := p.energy(i, from, to)
		n := engine.NodePower{NodeID: id, Samples: samples}
		if el > 0 {
			n.AvgSysPower = e / el
		}
		if marked {
			a, b := p.energy(i, from, mark), p.energy(i, mark, to)
			pe += a
			ge += b
			n.PrefillEnergyJoules, n.GenerationEnergyJoules = ptr(a), ptr(b)
			n.PrefillAvgSysPower = ptr(safeDiv(a, (mark - from).Seconds()))
			n.GenerationAvgSysPower = ptr(safeDiv(b, (to - mark).Seconds()))
		}
		u.TotalEnergyJoules += e
		u.Nodes = append(u.Nodes, n)
	}
	u.TotalAvgSysPowerWatts = safeDiv(u.TotalEnergyJoules, el)
	if marked {
		ps, gs := (mark - from).Seconds(), (to - mark).Seconds()
		u.PrefillSeconds, u.GenerationSeconds = ptr(ps), ptr(gs)
		u.PrefillEnergyJoules, u.GenerationEnergyJoules = ptr(pe), ptr(ge)
		u.PrefillAvgSysPowerWatts = ptr(safeDiv(pe, ps))
		u.GenerationAvgSysPowerWatts = ptr(safeDiv(ge, gs))
	}
	return u
}

func ptr[T any](v T) *T { return &v }

func safeDiv(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}
