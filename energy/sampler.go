package energy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sync"
	"time"
)

// Sampling intervals of a Sampler.
const (
	// DefaultInterval is the interval of a Sampler given none, exo's
	// --metrics-interval default.
	DefaultInterval = time.Second
	// MinInterval is the shortest interval a Sampler accepts: shorter
	// polls would mostly measure the cost of polling (an nvidia-smi call
	// takes tens of milliseconds) and sources refresh no faster.
	MinInterval = 50 * time.Millisecond
)

// A Sampler polls Sources at a fixed interval on its own goroutine and
// keeps a time series per node and metric.
//
// Each tick reads every source concurrently and stamps each source's
// readings with the midpoint of its own Read call (unlike exo's client,
// which stamps all nodes with one instant taken before polling them one
// after the other), unless a reading carries its own At. A failed Read is
// counted and reported in the Recording's Warnings, never printed; a
// logger handed in with WithLogger also hears of it.
//
// Typical use:
//
//	s, err := energy.NewSampler([]energy.Source{src})
//	...
//	s.Start(ctx)
//	// run the benchmark; s.Poll(ctx) at the first token adds a reading there
//	rec := s.Stop()
//	rep, err := energy.Measure(run, rec.Power(), rec.Counters())
type Sampler struct {
	sources  []Source
	interval time.Duration
	clock    Clock
	log      *slog.Logger

	pollMu sync.Mutex // serialises polls, so stamps of a series increase

	mu      sync.Mutex
	series  map[seriesKey]*series
	stats   []sourceStats
	dropped map[seriesKey]int
	// warnings hold problems other than failed reads and dropped readings.
	warnings []error
	started  bool
	ctx      context.Context // Start's context
	stop     chan struct{}   // closed by Stop
	done     chan struct{}   // closed when the loop returns
	stopped  bool
}

type seriesKey struct{ node, metric string }

func compareKeys(a, b seriesKey) int {
	return cmp.Or(cmp.Compare(a.node, b.node), cmp.Compare(a.metric, b.metric))
}

type series struct {
	samples []Sample
	max     float64 // counter wraparound, for MetricEnergy
	source  int
	// stampErr is half the longest Read whose midpoint stamped a sample.
	stampErr time.Duration
}

type sourceStats struct {
	reads, fails int
	last         error
}

// An Option configures a Sampler.
type Option func(*Sampler)

// WithInterval sets the polling interval (default DefaultInterval; at
// least MinInterval, or NewSampler fails with ErrInterval).
func WithInterval(d time.Duration) Option { return func(s *Sampler) { s.interval = d } }

// WithClock sets the clock that stamps readings and makes the ticker
// (default SystemClock).
func WithClock(c Clock) Option { return func(s *Sampler) { s.clock = c } }

// WithLogger sets a logger told of failed reads at level Warn (default:
// none; the Recording's Warnings report them either way).
func WithLogger(l *slog.Logger) Option { return func(s *Sampler) { s.log = l } }

// NewSampler returns a Sampler of the sources. It fails without sources,
// with a nil one, or with an interval below MinInterval (ErrInterval).
func NewSampler(sources []Source, opts ...Option) (*Sampler, error) {
	s := &Sampler{
		sources:  slices.Clone(sources),
		interval: DefaultInterval,
		series:   map[seriesKey]*series{},
		dropped:  map[seriesKey]int{},
		stats:    make([]sourceStats, len(sources)),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	if s.clock == nil {
		s.clock = SystemClock()
	}
	if len(s.sources) == 0 {
		return nil, errors.New("energy: a sampler needs at least one source, found none")
	}
	for i, src := range s.sources {
		if src == nil {
			return nil, fmt.Errorf("energy: source %d is nil", i)
		}
	}
	if s.interval < MinInterval {
		return nil, fmt.Errorf("%w: expected at least %s, found %s", ErrInterval, MinInterval, s.interval)
	}
	return s, nil
}

// Interval returns the polling interval.
func (s *Sampler) Interval() time.Duration { return s.interval }

// Start takes a first reading and keeps polling at the interval on a new
// goroutine until ctx is done or Stop is called. A Sampler starts once;
// a second Start returns an error.
func (s *Sampler) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("energy: sampler already started; expected one Start per Sampler")
	}
	s.started = true
	s.ctx = ctx
	s.mu.Unlock()
	go s.loop(ctx)
	return nil
}

func (s *Sampler) loop(ctx context.Context) {
	defer close(s.done)
	s.poll(ctx)
	t := s.clock.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.stop:
			return
		case <-t.C():
			if ctx.Err() != nil {
				return
			}
			s.poll(ctx)
		}
	}
}

// Poll takes a reading of every source now, outside the schedule: call it
// at an instant that matters (the first generated token) so the trace has
// a sample there. It returns the sources' errors, joined; they are also
// counted in the Recording. Poll works before Start and after Stop too.
func (s *Sampler) Poll(ctx context.Context) error { return s.poll(ctx) }

// Stop ends the polling, waits for the goroutine (a poll under way
// finishes first), takes one last reading (unless Start's context is
// done) so a window ending just before Stop is covered, and returns the
// Recording. Stop may be called more than once; later calls return the
// Recording without a new reading.
func (s *Sampler) Stop() Recording {
	s.mu.Lock()
	first := s.started && !s.stopped
	s.stopped = true
	ctx := s.ctx
	s.mu.Unlock()
	if first {
		close(s.stop)
		<-s.done
		if ctx.Err() == nil {
			s.poll(ctx)
		}
	}
	return s.Recording()
}

// Done is closed when the polling goroutine has returned (after Stop, or
// once Start's context is done). It is never closed if Start was not
// called.
func (s *Sampler) Done() <-chan struct{} { return s.done }

type polled struct {
	readings []Reading
	err      error
	at       time.Time
	half     time.Duration // half the Read's duration
}

func (s *Sampler) poll(ctx context.Context) error {
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	res := make([]polled, len(s.sources))
	var wg sync.WaitGroup
	for i, src := range s.sources {
		wg.Go(func() {
			before := s.clock.Now()
			r, err := src.Read(ctx)
			after := s.clock.Now()
			half := after.Sub(before) / 2
			res[i] = polled{readings: r, err: err, at: before.Add(half), half: half}
		})
	}
	wg.Wait()

	var errs []error
	for i, p := range res {
		if p.err != nil && ctx.Err() != nil {
			continue // cancelled by the caller: not the source's failure
		}
		s.mu.Lock()
		st := &s.stats[i]
		st.reads++
		if p.err != nil {
			st.fails++
			st.last = p.err
		}
		s.mu.Unlock()
		if p.err != nil {
			err := fmt.Errorf("energy: source %d (%T): %w", i, s.sources[i], p.err)
			errs = append(errs, err)
			if s.log != nil {
				s.log.Warn("energy: read failed", "source", i, "type", fmt.Sprintf("%T", s.sources[i]), "err", p.err)
			}
			continue
		}
		for _, r := range p.readings {
			s.add(ctx, i, r, p.at, p.half)
		}
	}
	return errors.Join(errs...)
}

// add appends a reading to its series. Polls are serialised by pollMu, so
// only Recording runs beside it; mu guards against that.
func (s *Sampler) add(ctx context.Context, src int, r Reading, stamp time.Time, half time.Duration) {
	if !r.At.IsZero() {
		stamp, half = r.At, 0
	}
	k := seriesKey{r.Node, r.Metric}
	bad := math.IsNaN(r.Value) || math.IsInf(r.Value, 0) ||
		(r.Value < 0 && (r.Metric == MetricPower || r.Metric == MetricEnergy))
	s.mu.Lock()
	sr, ok := s.series[k]
	s.mu.Unlock()
	if !ok && !bad {
		sr = &series{source: src}
		if c, isCounter := s.sources[src].(Counter); isCounter && r.Metric == MetricEnergy {
			m, err := c.CounterMax(ctx, r.Node)
			if err != nil {
				s.mu.Lock()
				s.warnings = append(s.warnings, fmt.Errorf("energy: node %q: wraparound maximum unknown, counter taken as non-wrapping: %w", r.Node, err))
				s.mu.Unlock()
			} else {
				sr.max = m
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if bad || (len(sr.samples) > 0 && !stamp.After(sr.samples[len(sr.samples)-1].At)) {
		s.dropped[k]++
		return
	}
	s.series[k] = sr
	sr.samples = append(sr.samples, Sample{At: stamp, Value: r.Value})
	sr.stampErr = max(sr.stampErr, half)
}

// A Recording is what a Sampler gathered.
type Recording struct {
	// Series holds one time series per node and metric, sorted by node
	// then metric.
	Series []Series
	// Warnings report failed reads per source, readings dropped as
	// invalid (negative or non-finite power or energy, NaN, a stamp not
	// after the previous one of its series) and counters whose range
	// could not be read.
	Warnings []error
	maxes    map[seriesKey]float64
	kinds    map[seriesKey]SampleKind
	ranges   map[seriesKey]PowerRange
	stampErr map[seriesKey]time.Duration
}

// A Series is one node's metric over time.
type Series struct {
	Node, Metric string
	Samples      []Sample
}

// Recording returns a copy of what the Sampler has gathered so far.
func (s *Sampler) Recording() Recording {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := Recording{maxes: map[seriesKey]float64{}, kinds: map[seriesKey]SampleKind{},
		ranges: map[seriesKey]PowerRange{}, stampErr: map[seriesKey]time.Duration{}}
	for k, sr := range s.series {
		rec.Series = append(rec.Series, Series{Node: k.node, Metric: k.metric, Samples: slices.Clone(sr.samples)})
		rec.maxes[k] = sr.max
		rec.stampErr[k] = sr.stampErr
		if pk, ok := s.sources[sr.source].(PowerKinder); ok {
			rec.kinds[k] = pk.PowerKind()
		}
		if pr, ok := s.sources[sr.source].(PowerRanger); ok && k.metric == MetricPower {
			rec.ranges[k] = pr.PowerRange(k.node)
		}
	}
	slices.SortFunc(rec.Series, func(a, b Series) int {
		return compareKeys(seriesKey{a.Node, a.Metric}, seriesKey{b.Node, b.Metric})
	})
	for i, st := range s.stats {
		if st.fails > 0 {
			rec.Warnings = append(rec.Warnings, fmt.Errorf("energy: source %d (%T) failed %d of %d reads; last: %w", i, s.sources[i], st.fails, st.reads, st.last))
		}
	}
	rec.Warnings = append(rec.Warnings, s.warnings...)
	for _, k := range slices.SortedFunc(maps.Keys(s.dropped), compareKeys) {
		rec.Warnings = append(rec.Warnings, fmt.Errorf("%w: node %q metric %q: %d readings dropped (non-finite, negative, or stamped at or before the previous one)",
			ErrInvalidTrace, k.node, k.metric, s.dropped[k]))
	}
	return rec
}

// Power returns the MetricPower series as power traces, sorted by node,
// each with the SampleKind its source declared (PowerKinder;
// instantaneous otherwise), the PowerRange it declared for the node
// (PowerRanger; none otherwise) and the StampError of its reads.
func (r Recording) Power() []PowerTrace {
	var out []PowerTrace
	for _, s := range r.Series {
		if s.Metric == MetricPower {
			k := seriesKey{s.Node, s.Metric}
			out = append(out, PowerTrace{Node: s.Node, Samples: s.Samples, Kind: r.kinds[k], Range: r.ranges[k], StampError: r.stampErr[k]})
		}
	}
	return out
}

// MeanInterval returns the longest interval a power trace's samples are
// means over, or 0 when every trace is instantaneous: with the polling
// interval, it limits how short a window the samples can resolve.
func (r Recording) MeanInterval() time.Duration {
	var d time.Duration
	for _, k := range r.kinds {
		d = max(d, k.Interval)
	}
	return d
}

// Counters returns the MetricEnergy series as counter traces with the
// wraparound maximum their Counter source reported (0 from a source that
// is not a Counter), sorted by node.
func (r Recording) Counters() []CounterTrace {
	var out []CounterTrace
	for _, s := range r.Series {
		if s.Metric == MetricEnergy {
			out = append(out, CounterTrace{Node: s.Node, Max: r.maxes[seriesKey{s.Node, s.Metric}], Samples: s.Samples})
		}
	}
	return out
}

// A MetricSummary describes one metric of one node over a recording, in
// the shape of an entry of exo's system_metrics.
type MetricSummary struct {
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	Mean    float64 `json:"mean"`
	Samples int     `json:"samples"`
}

// Summarize returns the min, max, arithmetic mean (Σ v / n, every sample
// weighing the same, as exo computes it) and count of the samples' values.
// Empty input gives NaN figures and Samples 0. Unlike exo, nothing is
// rounded.
func Summarize(s []Sample) MetricSummary {
	if len(s) == 0 {
		nan := math.NaN()
		return MetricSummary{Min: nan, Max: nan, Mean: nan}
	}
	m := MetricSummary{Min: s[0].Value, Max: s[0].Value, Samples: len(s)}
	sum := 0.0
	for _, x := range s {
		m.Min, m.Max = min(m.Min, x.Value), max(m.Max, x.Value)
		sum += x.Value
	}
	m.Mean = sum / float64(len(s))
	return m
}

// Summary summarises every series: node → metric → MetricSummary, the
// shape of exo's system_metrics.
func (r Recording) Summary() map[string]map[string]MetricSummary {
	out := map[string]map[string]MetricSummary{}
	for _, s := range r.Series {
		if out[s.Node] == nil {
			out[s.Node] = map[string]MetricSummary{}
		}
		out[s.Node][s.Metric] = Summarize(s.Samples)
	}
	return out
}
