// Package precision says when a measurement is known well enough to stop:
// a Target is a margin of error asked of one figure (the p99 of TTFT
// within ±5 % at 95 %), and Target.Check says whether a sample of that
// figure meets it. A load test (benchkit.Load.Until) checks its targets as
// its requests complete and stops dispatching once every one is met; a
// benchkit.Runner's cell (Plan.Until) repeats until its per-repeat figures
// meet them. Either stops at its cap otherwise, and says which.
//
// A mean's interval is Student's t (timing.ConfidenceInterval); a
// percentile's is distribution-free, from the sample's order statistics
// (timing.PercentileInterval). The achieved margin is the interval's
// larger side over the figure's magnitude:
//
//	margin = max(center − lo, hi − center) / |center|
//
// and a target is met when margin ≤ Target.Margin. docs/PRECISION.md gives
// the method and its limits.
package precision

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/inferbench/inferbench/timing"
)

// DefaultLevel is the confidence level of a target that names none.
const DefaultLevel = 0.95

// MinSamples is the fewest samples a target is checked on: a mean's
// interval over two or three samples can be narrow by chance, and a run
// stopped on it would stop on luck.
const MinSamples = 5

// ErrBadTarget marks a target that cannot be parsed or checked.
var ErrBadTarget = errors.New("precision: bad target")

// Stats are the statistics a Target may name: the mean and the
// percentiles.
var Stats = []string{"mean", "p50", "p90", "p95", "p99"}

// A Target is a margin of error asked of one figure: the Stat of Figure
// known within ±Margin (relative) at confidence Level.
type Target struct {
	// Figure names the figure: for a load test ttft, tpot, itl, e2e or
	// ttfa; for a Runner's cell one of its per-repeat figures (gen_tps,
	// prompt_tps, ttft, …). Its reader says which it knows.
	Figure string
	// Stat is mean, p50, p90, p95 or p99.
	Stat string
	// Margin is the largest relative half width accepted, in (0, 1):
	// 0.05 is ±5 %.
	Margin float64
	// Level is the confidence level, in (0, 1): 0.95 is 95 %.
	Level float64
}

// ParseTarget parses a target written FIGURE.STAT:MARGIN%[@LEVEL], as
// "ttft.p99:5%" (the p99 of TTFT within ±5 % at 95 %) or
// "tpot.mean:2%@90" (at 90 %). MARGIN is a percentage in (0, 100), LEVEL
// one in (0, 100) with an optional "%"; without it the level is
// DefaultLevel. FIGURE is lower-case letters, digits and underscores.
// Errors wrap ErrBadTarget.
func ParseTarget(s string) (Target, error) {
	bad := func(format string, args ...any) (Target, error) {
		return Target{}, fmt.Errorf("%w %q: "+format, append([]any{ErrBadTarget, s}, args...)...)
	}
	name, rest, ok := strings.Cut(s, ":")
	if !ok {
		return bad("want FIGURE.STAT:MARGIN%%[@LEVEL], as ttft.p99:5%%")
	}
	fig, stat, ok := strings.Cut(name, ".")
	if !ok || fig == "" {
		return bad("want FIGURE.STAT before the colon, as ttft.p99")
	}
	for _, r := range fig {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return bad("figure %q: lower-case letters, digits and _ only", fig)
		}
	}
	if !validStat(stat) {
		return bad("statistic %q: want one of %s", stat, strings.Join(Stats, ", "))
	}
	margin, level, hasLevel := strings.Cut(rest, "@")
	m, ok := percent(margin, true)
	if !ok {
		return bad("margin %q: want a percentage in (0, 100) with its %% sign, as 5%%", margin)
	}
	t := Target{Figure: fig, Stat: stat, Margin: m, Level: DefaultLevel}
	if hasLevel {
		l, ok := percent(level, false)
		if !ok {
			return bad("level %q: want a percentage in (0, 100), as 95", level)
		}
		t.Level = l
	}
	return t, nil
}

// ParseTargets parses a comma-separated list of targets (ParseTarget); an
// empty string is none.
func ParseTargets(s string) ([]Target, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []Target
	for _, f := range strings.Split(s, ",") {
		t, err := ParseTarget(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// percent parses a percentage in (0, 100) as a fraction; needSign asks
// for a trailing "%".
func percent(s string, needSign bool) (float64, bool) {
	v, had := strings.CutSuffix(s, "%")
	if needSign && !had {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0 && f < 100) {
		return 0, false
	}
	return f / 100, true
}

func validStat(s string) bool {
	for _, v := range Stats {
		if s == v {
			return true
		}
	}
	return false
}

// Validate checks a target built by hand; errors wrap ErrBadTarget.
func (t Target) Validate() error {
	switch {
	case t.Figure == "":
		return fmt.Errorf("%w: no figure", ErrBadTarget)
	case !validStat(t.Stat):
		return fmt.Errorf("%w: statistic %q: want one of %s", ErrBadTarget, t.Stat, strings.Join(Stats, ", "))
	case !(t.Margin > 0 && t.Margin < 1):
		return fmt.Errorf("%w: margin %g: want a fraction in (0, 1)", ErrBadTarget, t.Margin)
	case !(t.Level > 0 && t.Level < 1):
		return fmt.Errorf("%w: level %g: want a fraction in (0, 1)", ErrBadTarget, t.Level)
	}
	return nil
}

// String writes the target as ParseTarget reads it: "ttft.p99:5%@95".
func (t Target) String() string {
	return fmt.Sprintf("%s.%s:%s%%@%s", t.Figure, t.Stat,
		strconv.FormatFloat(t.Margin*100, 'g', -1, 64), strconv.FormatFloat(t.Level*100, 'g', -1, 64))
}

// MarshalText writes String, so that a target is one string in JSON.
func (t Target) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads what MarshalText wrote.
func (t *Target) UnmarshalText(b []byte) error {
	v, err := ParseTarget(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// A Result is a target checked against a sample.
type Result struct {
	// Target is what was asked.
	Target Target `json:"target"`
	// N is the number of samples checked.
	N int `json:"n"`
	// Center is the figure (the sample's mean or percentile); Lo and Hi
	// the interval's bounds; null where undefined or infinite.
	Center *float64 `json:"center"`
	Lo     *float64 `json:"lo"`
	Hi     *float64 `json:"hi"`
	// Margin is the achieved relative half width, max(center − lo,
	// hi − center) / |center|; null when the interval has an infinite
	// bound or the center is zero.
	Margin *float64 `json:"margin"`
	// Met is true when Margin ≤ Target.Margin on at least MinSamples
	// samples.
	Met bool `json:"met"`
	// Note says why a target could not be met yet (too few samples).
	Note string `json:"note,omitempty"`
	// Interval is the interval itself, its warnings included.
	Interval timing.Interval `json:"-"`
}

// Check computes the target's interval over samples (NaN and infinite
// values dropped) and whether it meets the margin.
func (t Target) Check(samples []float64) Result {
	x := make([]float64, 0, len(samples))
	for _, v := range samples {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			x = append(x, v)
		}
	}
	r := Result{Target: t, N: len(x)}
	if t.Validate() != nil {
		r.Note = t.Validate().Error()
		return r
	}
	if t.Stat == "mean" {
		r.Interval = timing.ConfidenceInterval(x, t.Level)
	} else {
		p, _ := strconv.ParseFloat(t.Stat[1:], 64)
		r.Interval = timing.PercentileInterval(x, p, t.Level)
	}
	iv := r.Interval
	r.Center, r.Lo, r.Hi = finite(iv.Center), finite(iv.Lo), finite(iv.Hi)
	if m := RelativeHalfWidth(iv); !math.IsInf(m, 0) && !math.IsNaN(m) {
		r.Margin = &m
	}
	switch {
	case len(x) < MinSamples:
		r.Note = fmt.Sprintf("%d samples; a target is checked on %d or more", len(x), MinSamples)
	case r.Margin == nil && len(iv.Warnings) > 0:
		r.Note = iv.Warnings[0].Error()
	case r.Margin == nil:
		r.Note = "no relative margin: the figure is zero"
	default:
		r.Met = *r.Margin <= t.Margin
	}
	return r
}

// RelativeHalfWidth is an interval's larger side over its center's
// magnitude: max(center − lo, hi − center) / |center|. It is +Inf when a
// bound is infinite or the center is zero, NaN when the interval is.
func RelativeHalfWidth(iv timing.Interval) float64 {
	half := math.Max(iv.Center-iv.Lo, iv.Hi-iv.Center)
	if math.IsNaN(half) || math.IsNaN(iv.Center) {
		return math.NaN()
	}
	if iv.Center == 0 {
		return math.Inf(1)
	}
	return half / math.Abs(iv.Center)
}

// AllMet reports whether every result is met (false for none).
func AllMet(rs []Result) bool {
	if len(rs) == 0 {
		return false
	}
	for _, r := range rs {
		if !r.Met {
			return false
		}
	}
	return true
}

// Describe describes results in one line for a table's notes: each
// target, its achieved margin and whether it was met, as
// "ttft.p99 ±3.1 % ≤ 5 % (n=412) met".
func Describe(rs []Result) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		got := "± none"
		if r.Margin != nil {
			got = "±" + strconv.FormatFloat(*r.Margin*100, 'f', 1, 64) + " %"
		}
		verdict, cmp := "met", "≤"
		if !r.Met {
			verdict, cmp = "not met", ">"
			if r.Margin == nil {
				cmp = "vs"
			}
		}
		parts[i] = fmt.Sprintf("%s.%s %s %s %s %% at %s %% (n=%d) %s", r.Target.Figure, r.Target.Stat, got, cmp,
			strconv.FormatFloat(r.Target.Margin*100, 'g', -1, 64), strconv.FormatFloat(r.Target.Level*100, 'g', -1, 64), r.N, verdict)
	}
	return strings.Join(parts, "; ")
}

// The reasons a measurement that had targets stopped.
const (
	// StoppedMet is a stop because every target was met.
	StoppedMet = "target met"
	// StoppedCap is a stop at the cap (the requests, the duration, the
	// repeats) with some target not met.
	StoppedCap = "cap reached"
)

func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
