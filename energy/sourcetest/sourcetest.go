// Package sourcetest checks that an energy.Source keeps the contract the
// energy package relies on, the way testing/slogtest checks a slog
// handler: an adapter's own tests call Run (or Check) with one line.
//
// The checks, each a subtest of Run:
//
//   - read: Read succeeds and returns at least one reading; every reading
//     names its node and metric, carries a finite value (≥ 0 for power and
//     energy), is listed once per node and metric, and, if it carries its
//     own At, is not stamped after Read returned.
//   - stamped: an energy.Sampler polling the source stamps every reading
//     with an instant inside the Read call, or with the reading's own At.
//   - cancelled: Read with a cancelled context returns an error wrapping
//     context.Canceled.
//   - concurrent: Read called from several goroutines at once succeeds and
//     reports the same nodes and metrics (run under -race to catch data
//     races).
//   - counter (only for an energy.Counter): CounterMax is finite and ≥ 0
//     for every node with energy readings, readings stay within it, and a
//     second read does not show a counter going backwards unless it can
//     wrap.
//
// The source must be readable where the test runs: point it at a fake
// (a fake powercap tree, a Runner that prints canned output).
package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/energy"
)

// A check is one named conformance check.
type check struct {
	name string
	run  func(ctx context.Context, src energy.Source) error
}

func checks() []check {
	return []check{
		{"read", checkRead},
		{"stamped", checkStamped},
		{"cancelled", checkCancelled},
		{"concurrent", checkConcurrent},
		{"counter", checkCounter},
	}
}

// Check runs every check on src and returns their failures joined with
// errors.Join, nil when src conforms.
func Check(ctx context.Context, src energy.Source) error {
	var errs []error
	for _, c := range checks() {
		if err := c.run(ctx, src); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
		}
	}
	return errors.Join(errs...)
}

// Run runs every check on src as a subtest of t.
func Run(t *testing.T, src energy.Source) {
	t.Helper()
	for _, c := range checks() {
		t.Run(c.name, func(t *testing.T) {
			if err := c.run(t.Context(), src); err != nil {
				t.Error(err)
			}
		})
	}
}

type key struct{ node, metric string }

func readOnce(ctx context.Context, src energy.Source) ([]energy.Reading, error) {
	rs, err := src.Read(ctx)
	done := time.Now()
	if err != nil {
		return nil, fmt.Errorf("calling Read: %w", err)
	}
	if len(rs) == 0 {
		return nil, errors.New("a Read call returned no readings and no error; expected at least one reading")
	}
	var errs []error
	seen := map[key]bool{}
	for i, r := range rs {
		k := key{r.Node, r.Metric}
		switch {
		case r.Node == "":
			errs = append(errs, fmt.Errorf("reading %d: expected a node name, found none", i))
		case r.Metric == "":
			errs = append(errs, fmt.Errorf("reading %d (node %q): expected a metric name, found none", i, r.Node))
		case math.IsNaN(r.Value) || math.IsInf(r.Value, 0):
			errs = append(errs, fmt.Errorf("reading %d (%s of %s): expected a finite value, found %v", i, r.Metric, r.Node, r.Value))
		case r.Value < 0 && (r.Metric == energy.MetricPower || r.Metric == energy.MetricEnergy):
			errs = append(errs, fmt.Errorf("reading %d (%s of %s): expected a value ≥ 0, found %v", i, r.Metric, r.Node, r.Value))
		case seen[k]:
			errs = append(errs, fmt.Errorf("reading %d: %s of %s listed twice in one read", i, r.Metric, r.Node))
		case r.At.After(done):
			errs = append(errs, fmt.Errorf("reading %d (%s of %s): stamped %s, after Read returned", i, r.Metric, r.Node, r.At.Sub(done)))
		}
		seen[k] = true
	}
	return rs, errors.Join(errs...)
}

func checkRead(ctx context.Context, src energy.Source) error {
	_, err := readOnce(ctx, src)
	return err
}

func checkStamped(ctx context.Context, src energy.Source) error {
	s, err := energy.NewSampler([]energy.Source{src})
	if err != nil {
		return err
	}
	before := time.Now()
	if err := s.Poll(ctx); err != nil {
		return err
	}
	after := time.Now()
	var errs []error
	for _, sr := range s.Recording().Series {
		if len(sr.Samples) != 1 {
			errs = append(errs, fmt.Errorf("%s of %s: expected one sample from one poll, found %d", sr.Metric, sr.Node, len(sr.Samples)))
			continue
		}
		at := sr.Samples[0].At
		if at.Before(before) || at.After(after) {
			// Allowed only when the source stamps its own readings.
			own := false
			rs, _ := src.Read(ctx)
			for _, r := range rs {
				if r.Node == sr.Node && r.Metric == sr.Metric && !r.At.IsZero() {
					own = true
				}
			}
			if !own {
				errs = append(errs, fmt.Errorf("%s of %s: stamped %s, outside the poll [%s, %s]", sr.Metric, sr.Node, at, before, after))
			}
		}
	}
	return errors.Join(errs...)
}

func checkCancelled(ctx context.Context, src energy.Source) error {
	c, cancel := context.WithCancel(ctx)
	cancel()
	rs, err := src.Read(c)
	if err == nil {
		return fmt.Errorf("a Read call with a cancelled context returned %d readings and no error; expected an error wrapping context.Canceled", len(rs))
	}
	if !errors.Is(err, context.Canceled) {
		return fmt.Errorf("a Read call with a cancelled context: expected an error wrapping context.Canceled, found %w", err)
	}
	return nil
}

func keys(rs []energy.Reading) map[key]bool {
	m := map[key]bool{}
	for _, r := range rs {
		m[key{r.Node, r.Metric}] = true
	}
	return m
}

func checkConcurrent(ctx context.Context, src energy.Source) error {
	first, err := src.Read(ctx)
	if err != nil {
		return fmt.Errorf("calling Read: %w", err)
	}
	want := keys(first)
	const goroutines, reads = 8, 3
	errs := make([]error, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range reads {
				rs, err := src.Read(ctx)
				if err != nil {
					errs[g] = fmt.Errorf("concurrent Read: %w", err)
					return
				}
				got := keys(rs)
				if len(got) != len(want) {
					errs[g] = fmt.Errorf("concurrent Read reported %d node metrics, the first read %d", len(got), len(want))
					return
				}
				for k := range got {
					if !want[k] {
						errs[g] = fmt.Errorf("concurrent Read reported %s of %s, which the first read did not", k.metric, k.node)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func checkCounter(ctx context.Context, src energy.Source) error {
	c, ok := src.(energy.Counter)
	if !ok {
		return nil
	}
	r1, err := src.Read(ctx)
	if err != nil {
		return fmt.Errorf("calling Read: %w", err)
	}
	r2, err := src.Read(ctx)
	if err != nil {
		return fmt.Errorf("calling Read: %w", err)
	}
	prev := map[string]float64{}
	for _, r := range r1 {
		if r.Metric == energy.MetricEnergy {
			prev[r.Node] = r.Value
		}
	}
	var errs []error
	for _, r := range r2 {
		if r.Metric != energy.MetricEnergy {
			continue
		}
		m, err := c.CounterMax(ctx, r.Node)
		if err != nil {
			errs = append(errs, fmt.Errorf("CounterMax(%q): %w", r.Node, err))
			continue
		}
		if math.IsNaN(m) || math.IsInf(m, 0) || m < 0 {
			errs = append(errs, fmt.Errorf("CounterMax(%q): expected a finite value ≥ 0, found %v", r.Node, m))
			continue
		}
		if m > 0 && r.Value > m {
			errs = append(errs, fmt.Errorf("counter of %s: %v J above its maximum %v J", r.Node, r.Value, m))
		}
		if p, ok := prev[r.Node]; ok && r.Value < p && m == 0 {
			errs = append(errs, fmt.Errorf("counter of %s went from %v J to %v J and CounterMax says it does not wrap", r.Node, p, r.Value))
		}
	}
	return errors.Join(errs...)
}
