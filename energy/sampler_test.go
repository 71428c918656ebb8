package energy

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/inferbench/inferbench/internal/testkit"
)

// stepClock returns t0 + k·step on its k-th call to Now, and a ticker whose
// ticks the test sends on tick (unbuffered, so a send returns only once
// the sampler has finished the poll before and taken the tick).
type stepClock struct {
	mu       sync.Mutex
	k        int
	step     time.Duration
	tick     chan time.Time
	interval time.Duration
}

func newStepClock(step time.Duration) *stepClock {
	return &stepClock{step: step, tick: make(chan time.Time)}
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.k++
	return t0.Add(time.Duration(c.k) * c.step)
}

func (c *stepClock) NewTicker(d time.Duration) Ticker {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.interval = d
	return stepTicker{c.tick}
}

type stepTicker struct{ c chan time.Time }

func (t stepTicker) C() <-chan time.Time { return t.c }
func (t stepTicker) Stop()               {}

// countingSource reports, on its n-th read (from 0), power n·10 W and
// temp n °C for nodes a and b.
func countingSource() Source {
	var mu sync.Mutex
	n := 0
	return SourceFunc(func(ctx context.Context) ([]Reading, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		v := float64(n)
		n++
		return []Reading{
			{Node: "a", Metric: MetricPower, Value: 10 * v},
			{Node: "a", Metric: "temp", Value: v},
			{Node: "b", Metric: MetricPower, Value: 10*v + 1},
		}, nil
	})
}

func TestSamplerPollsAndStamps(t *testing.T) {
	clk := newStepClock(10 * time.Millisecond)
	s, err := NewSampler([]Source{countingSource()}, WithClock(clk), WithInterval(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		testkit.SendWithin(t, clk.tick, time.Time{}, testkit.Patience)
	}
	rec := s.Stop()
	if clk.interval != 200*time.Millisecond {
		t.Errorf("ticker interval %s, want 200ms", clk.interval)
	}
	// Polls: the first at Start, three ticks, the last at Stop. Poll j
	// reads the clock at (2j+1)·10 ms and (2j+2)·10 ms: stamp (20j+15) ms.
	stamps := func(vals ...float64) []Sample {
		var out []Sample
		for j, v := range vals {
			out = append(out, Sample{At: t0.Add(time.Duration(20*j+15) * time.Millisecond), Value: v})
		}
		return out
	}
	want := []Series{
		{Node: "a", Metric: MetricPower, Samples: stamps(0, 10, 20, 30, 40)},
		{Node: "a", Metric: "temp", Samples: stamps(0, 1, 2, 3, 4)},
		{Node: "b", Metric: MetricPower, Samples: stamps(1, 11, 21, 31, 41)},
	}
	if d := cmp.Diff(want, rec.Series, cmpopts.IgnoreUnexported(Recording{})); d != "" {
		t.Errorf("series (-want +got):\n%s", d)
	}
	wantSum := map[string]map[string]MetricSummary{
		"a": {MetricPower: {Min: 0, Max: 40, Mean: 20, Samples: 5}, "temp": {Min: 0, Max: 4, Mean: 2, Samples: 5}},
		"b": {MetricPower: {Min: 1, Max: 41, Mean: 21, Samples: 5}},
	}
	if d := cmp.Diff(wantSum, rec.Summary()); d != "" {
		t.Errorf("summary (-want +got):\n%s", d)
	}
	if len(rec.Power()) != 2 || rec.Power()[1].Node != "b" {
		t.Errorf("Power() = %v, want traces of a and b", rec.Power())
	}
	if len(rec.Warnings) != 0 {
		t.Errorf("warnings %v, want none", rec.Warnings)
	}
	// A second Stop takes no reading.
	if again := s.Stop(); len(again.Series[0].Samples) != 5 {
		t.Errorf("second Stop: %d samples, want 5", len(again.Series[0].Samples))
	}
}

func TestSamplerStopsWithContext(t *testing.T) {
	clk := newStepClock(time.Millisecond)
	// A source that ignores ctx and says when it is read, so the test
	// cancels while the tick's poll is under way and that poll still
	// records its reading.
	reads := make(chan struct{}, 10)
	src := SourceFunc(func(context.Context) ([]Reading, error) {
		reads <- struct{}{}
		return []Reading{{Node: "n", Metric: MetricPower, Value: 1}}, nil
	})
	s, err := NewSampler([]Source{src}, WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.RecvWithin(t, reads, testkit.Patience) // the first poll
	testkit.SendWithin(t, clk.tick, time.Time{}, testkit.Patience)
	testkit.RecvWithin(t, reads, testkit.Patience) // the tick's poll
	cancel()
	<-s.Done()
	rec := s.Stop() // no last reading: the context is done
	if n := len(rec.Power()[0].Samples); n != 2 {
		t.Errorf("%d samples, want 2 (start and one tick)", n)
	}
	if err := s.Start(context.Background()); err == nil {
		t.Error("second Start: no error, want one")
	}
}

func TestNewSamplerRejects(t *testing.T) {
	src := countingSource()
	if _, err := NewSampler([]Source{src}, WithInterval(49*time.Millisecond)); !errors.Is(err, ErrInterval) {
		t.Errorf("49ms: error %v, want ErrInterval", err)
	}
	s, err := NewSampler([]Source{src}, WithInterval(MinInterval))
	if err != nil || s.Interval() != MinInterval {
		t.Errorf("MinInterval: %v, %v", s, err)
	}
	if s, _ := NewSampler([]Source{src}); s.Interval() != DefaultInterval {
		t.Errorf("default interval %s, want %s", s.Interval(), DefaultInterval)
	}
	if _, err := NewSampler(nil); err == nil {
		t.Error("no sources: no error")
	}
	if _, err := NewSampler([]Source{nil}); err == nil {
		t.Error("nil source: no error")
	}
}

func TestSamplerReportsFailuresAndDrops(t *testing.T) {
	boom := errors.New("boom")
	failing := SourceFunc(func(context.Context) ([]Reading, error) { return nil, boom })
	bad := SourceFunc(func(context.Context) ([]Reading, error) {
		return []Reading{
			{Node: "x", Metric: MetricPower, Value: -1},
			{Node: "x", Metric: MetricPower, Value: math.NaN()},
			{Node: "y", Metric: MetricPower, Value: 5},
		}, nil
	})
	var logBuf bytes.Buffer
	s, err := NewSampler([]Source{failing, bad}, WithClock(newStepClock(time.Millisecond)), WithLogger(slog.New(slog.NewTextHandler(&logBuf, nil))))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Poll(context.Background()); !errors.Is(err, boom) {
		t.Errorf("Poll: error %v, want boom", err)
	}
	_ = s.Poll(context.Background())
	rec := s.Recording()
	if len(rec.Warnings) != 2 || !errors.Is(rec.Warnings[0], boom) || !errors.Is(rec.Warnings[1], ErrInvalidTrace) {
		t.Errorf("warnings %v, want the failed source and the dropped readings of x", rec.Warnings)
	}
	if len(rec.Series) != 1 || rec.Series[0].Node != "y" || len(rec.Series[0].Samples) != 2 {
		t.Errorf("series %+v, want y with two samples", rec.Series)
	}
	if !bytes.Contains(logBuf.Bytes(), []byte("boom")) {
		t.Errorf("log %q does not mention the failure", logBuf.String())
	}
}

// TestSamplerReadsConcurrently makes source a wait until source b has
// returned: polling one source after the other would never finish.
func TestSamplerReadsConcurrently(t *testing.T) {
	bDone := make(chan struct{})
	var once sync.Once
	a := SourceFunc(func(ctx context.Context) ([]Reading, error) {
		select {
		case <-bDone:
		case <-time.After(10 * time.Second):
			return nil, errors.New("b was not read while a was")
		}
		return []Reading{{Node: "a", Metric: MetricPower, Value: 1}}, nil
	})
	b := SourceFunc(func(ctx context.Context) ([]Reading, error) {
		defer once.Do(func() { close(bDone) })
		return []Reading{{Node: "b", Metric: MetricPower, Value: 2}}, nil
	})
	s, err := NewSampler([]Source{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := s.Recording().Power(); len(p) != 2 {
		t.Errorf("power traces %+v, want a and b", p)
	}
}

type fakeCounter struct{ vals []float64 }

func (f *fakeCounter) Read(ctx context.Context) ([]Reading, error) {
	v := f.vals[0]
	f.vals = f.vals[1:]
	return []Reading{{Node: "pkg", Metric: MetricEnergy, Value: v}, {Node: "pkg", Metric: MetricPower, Value: 3}}, nil
}

func (f *fakeCounter) CounterMax(ctx context.Context, node string) (float64, error) {
	if node != "pkg" {
		return 0, errors.New("no such node")
	}
	return 100, nil
}

func TestSamplerCounter(t *testing.T) {
	s, err := NewSampler([]Source{&fakeCounter{vals: []float64{90, 10, 30}}}, WithClock(newStepClock(500*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := s.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	cs := s.Recording().Counters()
	if len(cs) != 1 || cs[0].Max != 100 {
		t.Fatalf("counters %+v, want pkg with Max 100", cs)
	}
	// Stamps at 0.75 s, 1.75 s, 2.75 s; 90 → 10 → 30 wrapping at 100 is 40 J.
	e, err := cs[0].Energy(Window{Start: cs[0].Samples[0].At, End: cs[0].Samples[2].At})
	if err != nil {
		t.Fatal(err)
	}
	if e.Joules != 40 {
		t.Errorf("energy %g J, want 40", e.Joules)
	}
}

func TestSamplerKeepsSourceStamps(t *testing.T) {
	when := t0.Add(-time.Hour)
	src := SourceFunc(func(context.Context) ([]Reading, error) {
		return []Reading{{Node: "n", Metric: MetricPower, Value: 1, At: when}}, nil
	})
	s, err := NewSampler([]Source{src}, WithClock(newStepClock(time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Poll(context.Background())
	_ = s.Poll(context.Background()) // same stamp again: dropped
	rec := s.Recording()
	if got := rec.Series[0].Samples; len(got) != 1 || !got[0].At.Equal(when) {
		t.Errorf("samples %v, want one at the source's own stamp", got)
	}
	if len(rec.Warnings) != 1 || !errors.Is(rec.Warnings[0], ErrInvalidTrace) {
		t.Errorf("warnings %v, want one for the repeated stamp", rec.Warnings)
	}
}

// TestSamplerRecordingWhileRunning reads the recording while the sampler
// polls, for the race detector.
func TestSamplerRecordingWhileRunning(t *testing.T) {
	clk := newStepClock(time.Millisecond)
	s, err := NewSampler([]Source{countingSource()}, WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20 {
			_ = s.Recording().Summary()
		}
	}()
	for range 20 {
		testkit.SendWithin(t, clk.tick, time.Time{}, testkit.Patience)
	}
	testkit.RecvWithin(t, done, testkit.Patience)
	if n := len(s.Stop().Power()[0].Samples); n != 22 {
		t.Errorf("%d samples, want 22", n)
	}
}

func TestSummarizeEmpty(t *testing.T) {
	m := Summarize(nil)
	if m.Samples != 0 || !math.IsNaN(m.Mean) || !math.IsNaN(m.Min) || !math.IsNaN(m.Max) {
		t.Errorf("Summarize(nil) = %+v, want NaN figures and 0 samples", m)
	}
}
