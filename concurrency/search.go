package concurrency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
)

// Errors a rate search returns, wrapped with the figures that led to them.
var (
	// ErrNoPassingRate: even the lowest rate allowed failed the predicate.
	ErrNoPassingRate = errors.New("concurrency: no rate passes")
	// ErrProbeLimit: the probe budget ran out before the bracket was
	// narrow enough. The result still holds the best rate found.
	ErrProbeLimit = errors.New("concurrency: probe limit reached")
)

// Defaults of SearchOptions.
const (
	DefaultSearchStart     = 1.0  // requests per second
	DefaultSearchFactor    = 2.0  // bracket growth per probe
	DefaultSearchTolerance = 0.05 // relative width at which bisection stops
	DefaultSearchProbes    = 20   // measurements at most
)

// SearchOptions tune SearchRate. A nil *SearchOptions, like the zero
// value, means the defaults above, no floor below Start, no ceiling and no
// logging.
type SearchOptions struct {
	// Start is the first rate probed; 0 means DefaultSearchStart.
	Start float64
	// Factor (> 1) multiplies the rate while bracketing upward and divides
	// it while bracketing downward; 0 means DefaultSearchFactor.
	Factor float64
	// Min is the lowest rate tried when Start fails; 0 means Start (a
	// failing Start is then final).
	Min float64
	// Max is the highest rate tried; 0 means no ceiling. If Max passes, it
	// is the answer.
	Max float64
	// Tolerance is the relative bracket width, (hi − lo)/lo, at which
	// bisection stops; 0 means DefaultSearchTolerance.
	Tolerance float64
	// MaxProbes bounds the measurements; 0 means DefaultSearchProbes.
	MaxProbes int
	// Logger receives a Debug record per probe; nil logs nothing.
	Logger *slog.Logger
}

// Probe is one measurement of a rate search.
type Probe[M any] struct {
	Rate        float64
	Measurement M
	// Pass is ok(Measurement); false when Err is set.
	Pass bool
	Err  error
}

// SearchResult is the outcome of a rate search.
type SearchResult[M any] struct {
	// Rate is the highest rate that passed (0 when none did).
	Rate float64
	// Lo and Hi are the final bracket: Lo the highest passing rate (= Rate),
	// Hi the lowest failing rate above it (0 when no rate failed).
	Lo, Hi float64
	// Probes holds every measurement made, in order.
	Probes []Probe[M]
}

// SearchRate finds the highest rate at which ok(measure(ctx, rate)) holds,
// assuming that passing is monotone (a rate passes if a higher one does).
//
// Bracketing: probe Start; while it passes multiply the rate by Factor
// (capped at Max) until a rate fails or Max passes; if Start fails, divide
// by Factor (floored at Min) until a rate passes, or fail with
// ErrNoPassingRate once Min has failed. Bisection: with lo passing and hi
// failing, probe the geometric midpoint
//
//	r = √(lo · hi)
//
// (bisection of log rate, so each probe halves the relative width) and
// keep the half that brackets the change, until
//
//	(hi − lo) / lo ≤ Tolerance.
//
// From a bracket [lo, Factor·lo] that takes ⌈log₂(ln Factor / ln(1 +
// Tolerance))⌉ probes: 4 for the defaults. The answer is lo. Every probe is
// returned, also with an error. Errors: ErrNoPassingRate, ErrProbeLimit
// after MaxProbes measurements (with the bracket so far), measure's own
// error wrapped with the rate (the search stops: a failure to measure is not
// a failed SLO; fold overload errors into M if they should count as one),
// and the context's error when ctx ends between probes.
func SearchRate[M any](ctx context.Context, measure func(ctx context.Context, rate float64) (M, error), ok func(M) bool, opts *SearchOptions) (SearchResult[M], error) {
	var o SearchOptions
	if opts != nil {
		o = *opts
	}
	if o.Start == 0 {
		o.Start = DefaultSearchStart
	}
	if o.Factor == 0 {
		o.Factor = DefaultSearchFactor
	}
	if o.Min == 0 {
		o.Min = o.Start
	}
	if o.Tolerance == 0 {
		o.Tolerance = DefaultSearchTolerance
	}
	if o.MaxProbes == 0 {
		o.MaxProbes = DefaultSearchProbes
	}
	var res SearchResult[M]
	switch {
	case !(o.Start > 0) || math.IsInf(o.Start, 0):
		return res, fmt.Errorf("concurrency: search start rate %v; expected a finite rate > 0", o.Start)
	case !(o.Factor > 1) || math.IsInf(o.Factor, 0):
		return res, fmt.Errorf("concurrency: search factor %v; expected a finite factor > 1", o.Factor)
	case !(o.Min > 0) || o.Min > o.Start:
		return res, fmt.Errorf("concurrency: search floor %v; expected 0 < Min ≤ Start = %v", o.Min, o.Start)
	case o.Max != 0 && !(o.Max >= o.Start):
		return res, fmt.Errorf("concurrency: search ceiling %v; expected Max ≥ Start = %v (or 0 for none)", o.Max, o.Start)
	case !(o.Tolerance > 0):
		return res, fmt.Errorf("concurrency: search tolerance %v; expected > 0", o.Tolerance)
	case o.MaxProbes < 1:
		return res, fmt.Errorf("concurrency: search probe limit %d; expected ≥ 1", o.MaxProbes)
	}

	probe := func(rate float64) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, ctxErr(ctx, fmt.Sprintf("rate search cancelled after %d probes", len(res.Probes)))
		}
		if len(res.Probes) >= o.MaxProbes {
			return false, fmt.Errorf("%w: %d probes made, expected a bracket within tolerance %g, have %s",
				ErrProbeLimit, len(res.Probes), o.Tolerance, res.bracket())
		}
		m, err := measure(ctx, rate)
		p := Probe[M]{Rate: rate, Measurement: m, Err: err, Pass: err == nil && ok(m)}
		res.Probes = append(res.Probes, p)
		if o.Logger != nil {
			o.Logger.Debug("concurrency: rate probe", "rate", rate, "pass", p.Pass, "err", err)
		}
		if err != nil {
			return false, fmt.Errorf("concurrency: measuring at %g/s: %w", rate, err)
		}
		if p.Pass {
			res.Lo, res.Rate = rate, rate
		} else {
			res.Hi = rate
		}
		return p.Pass, nil
	}

	// Bracket.
	rate := o.Start
	pass, err := probe(rate)
	if err != nil {
		return res, err
	}
	if pass {
		for pass {
			if o.Max != 0 && rate >= o.Max {
				return res, nil // the ceiling passes: it is the answer
			}
			rate *= o.Factor
			if o.Max != 0 {
				rate = min(rate, o.Max)
			}
			if math.IsInf(rate, 0) {
				return res, fmt.Errorf("%w: rates passed up to %g/s with no ceiling set", ErrProbeLimit, res.Lo)
			}
			if pass, err = probe(rate); err != nil {
				return res, err
			}
		}
	} else {
		for !pass {
			if rate <= o.Min {
				return res, fmt.Errorf("%w: the lowest rate allowed, %g/s, failed (Min %g/s)", ErrNoPassingRate, rate, o.Min)
			}
			rate = max(rate/o.Factor, o.Min)
			if pass, err = probe(rate); err != nil {
				return res, err
			}
		}
	}
	// Bisect: res.Lo passes, res.Hi fails.
	for (res.Hi-res.Lo)/res.Lo > o.Tolerance {
		if _, err := probe(math.Sqrt(res.Lo * res.Hi)); err != nil {
			return res, err
		}
	}
	return res, nil
}

// bracket describes the search's state for an error message.
func (r SearchResult[M]) bracket() string {
	switch {
	case r.Lo == 0 && r.Hi == 0:
		return "no probe yet"
	case r.Lo == 0:
		return fmt.Sprintf("no passing rate yet, lowest failing %g/s", r.Hi)
	case r.Hi == 0:
		return fmt.Sprintf("rates pass up to %g/s, none failed yet", r.Lo)
	}
	return fmt.Sprintf("[%g/s, %g/s]", r.Lo, r.Hi)
}
