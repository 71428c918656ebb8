package sourcetest_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/energy/sourcetest"
)

func good(ctx context.Context) ([]energy.Reading, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return []energy.Reading{{Node: "n", Metric: energy.MetricPower, Value: 10}, {Node: "n", Metric: "temp", Value: -3}}, nil
}

func TestConformingSourcePasses(t *testing.T) {
	sourcetest.Run(t, energy.SourceFunc(good))
}

type wrapping struct {
	n   atomic.Int64
	max float64
}

func (w *wrapping) Read(ctx context.Context) ([]energy.Reading, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v := float64(w.n.Add(70) % 100) // 70, 40, 10, 80, …: wraps at 100
	return []energy.Reading{{Node: "c", Metric: energy.MetricEnergy, Value: v}}, nil
}

func (w *wrapping) CounterMax(ctx context.Context, node string) (float64, error) { return w.max, nil }

// TestCheckFindsBreaches gives Check one broken source per rule and
// expects the finding of that rule, by name.
func TestCheckFindsBreaches(t *testing.T) {
	tests := []struct {
		name string
		src  energy.Source
		want string // the check that must fail
	}{
		{"fails", energy.SourceFunc(func(context.Context) ([]energy.Reading, error) { return nil, errors.New("no meter") }), "read:"},
		{"empty", energy.SourceFunc(func(context.Context) ([]energy.Reading, error) { return nil, nil }), "read:"},
		{"negative power", energy.SourceFunc(func(context.Context) ([]energy.Reading, error) {
			return []energy.Reading{{Node: "n", Metric: energy.MetricPower, Value: -1}}, nil
		}), "read:"},
		{"duplicate", energy.SourceFunc(func(context.Context) ([]energy.Reading, error) {
			return []energy.Reading{{Node: "n", Metric: energy.MetricPower, Value: 1}, {Node: "n", Metric: energy.MetricPower, Value: 2}}, nil
		}), "read:"},
		{"no node", energy.SourceFunc(func(context.Context) ([]energy.Reading, error) {
			return []energy.Reading{{Metric: energy.MetricPower, Value: 1}}, nil
		}), "read:"},
		{"ignores ctx", energy.SourceFunc(func(context.Context) ([]energy.Reading, error) {
			return []energy.Reading{{Node: "n", Metric: energy.MetricPower, Value: 1}}, nil
		}), "cancelled:"},
		{"counter wraps without a maximum", &wrapping{}, "counter:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := sourcetest.Check(context.Background(), tc.src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check: %v; want a %q finding", err, tc.want)
			}
		})
	}
	if err := sourcetest.Check(context.Background(), &wrapping{max: 100}); err != nil {
		t.Errorf("wrapping counter with its maximum: %v, want no finding", err)
	}
}
