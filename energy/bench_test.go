package energy

import (
	"context"
	"math"
	"testing"
	"time"
)

// hourTrace is an hour of 1 Hz samples of a sine-like load.
func hourTrace() PowerTrace {
	p := PowerTrace{Node: "n"}
	for i := range 3600 {
		p.Samples = append(p.Samples, Sample{At: at(float64(i)), Value: 200 + 100*math.Sin(float64(i)/30)})
	}
	return p
}

func BenchmarkIntegrate(b *testing.B) {
	p := hourTrace()
	w := win(600.3, 1200.7) // ten minutes inside an hour
	for b.Loop() {
		if _, err := Integrate(p, w); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExoWindowEnergy(b *testing.B) {
	p := hourTrace()
	w := win(600.3, 1200.7)
	for b.Loop() {
		if _, err := ExoWindowEnergy(p, w); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCounterEnergy(b *testing.B) {
	c := CounterTrace{Node: "n", Max: 4294.967295}
	sum := 0.0
	for i := range 3600 {
		c.Samples = append(c.Samples, Sample{At: at(float64(i)), Value: math.Mod(sum, c.Max)})
		sum += 150
	}
	w := win(600.3, 1200.7)
	for b.Loop() {
		if _, err := c.Energy(w); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSamplerPoll measures one poll of four in-memory sources: the
// sampler's own cost per tick, without any real meter.
func BenchmarkSamplerPoll(b *testing.B) {
	srcs := make([]Source, 4)
	for i := range srcs {
		node := string(rune('a' + i))
		srcs[i] = SourceFunc(func(context.Context) ([]Reading, error) {
			return []Reading{{Node: node, Metric: MetricPower, Value: 100}}, nil
		})
	}
	clk := newStepClock(time.Millisecond)
	s, err := NewSampler(srcs, WithClock(clk))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		if err := s.Poll(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseNvidiaSMI(b *testing.B) {
	out := []byte("0, 312.45, 987654321\n1, 300.10, 5000\n2, [N/A], 12\n3, 71.5 W, 2000 mJ\n4, 1, 1\n5, 2, 2\n6, 3, 3\n7, 4, 4\n")
	for b.Loop() {
		if _, err := ParseNvidiaSMI(out); err != nil {
			b.Fatal(err)
		}
	}
}
