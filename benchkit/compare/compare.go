package compare

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// A Verdict is what a comparison says of one figure.
type Verdict string

// The verdicts.
const (
	// Better and Worse: B's figure differs from A's, in the direction
	// the figure's Lower says is better or worse, at the family-wise
	// level (Holm's procedure over every figure compared).
	Better Verdict = "better"
	Worse  Verdict = "worse"
	// NoChange: the test does not tell B from A. It is not a proof of
	// equality: the interval says how large a change could have gone
	// unseen.
	NoChange Verdict = "no change detected"
	// NotComparable: a side has fewer than two units of the figure, so
	// it has no variance to test with.
	NotComparable Verdict = "not comparable"
)

// Config says how Compare tests and gates.
type Config struct {
	// Alpha is the family-wise false-alarm rate of the verdicts (0 means
	// DefaultAlpha); Confidence the level of each figure's interval (0
	// means DefaultConfidence).
	Alpha, Confidence float64
	// Allow names the settings that may differ between the sides (a
	// Difference's Name: "model", "preset", "server", …, or "all").
	Allow []string
	// Threshold, when positive, makes the comparison a gate: a figure
	// whose verdict is Worse and whose relative change (its point
	// estimate) is worse by more than Threshold (0.05 for 5 %) is a
	// regression. GateFigures, when set, names the figures the gate
	// looks at; by default every figure.
	Threshold   float64
	GateFigures []string
	// Tolerance is how far the mean prompt and output lengths the rows
	// asked for may differ, relative to A's (0 means DefaultTolerance).
	Tolerance float64
}

// The defaults of Config. DefaultAlpha is 1 %, not 5 %: a gate runs on
// every change, and one that failed one clean build in twenty would be
// ignored; and a comparison of one run per side (batch means) sees none
// of the variation between runs, so its real false-alarm rate sits above
// the nominal one.
const (
	DefaultAlpha      = 0.01
	DefaultConfidence = 0.95
	DefaultTolerance  = 0.10
)

// A Difference is a setting in which the two sides' runs differ.
type Difference struct {
	Name string `json:"name"`
	A    string `json:"a"`
	B    string `json:"b"`
}

func (d Difference) String() string { return fmt.Sprintf("%s: A %s, B %s", d.Name, d.A, d.B) }

// A RefusedError is a comparison refused because the runs measured
// different things; Differences names each.
type RefusedError struct{ Differences []Difference }

func (e *RefusedError) Error() string {
	var b strings.Builder
	b.WriteString("compare: the runs measured different things (allow a difference by its name with --allow):")
	for _, d := range e.Differences {
		b.WriteString("\n  ")
		b.WriteString(d.String())
	}
	return b.String()
}

// A Row is one figure of one group compared.
type Row struct {
	Group  string `json:"group"`
	Figure Figure `json:"-"`
	// UnitA and UnitB say what the units were; NA and NB how many.
	UnitA, UnitB string
	NA, NB       int
	// MeanA and MeanB are the means over the units, in the figure's
	// stored unit (seconds, tokens per second, a fraction).
	MeanA, MeanB float64
	// Diff is MeanB − MeanA with its interval [DiffLo, DiffHi].
	Diff, DiffLo, DiffHi float64
	// Rel is Diff / MeanA, with Fieller's interval [RelLo, RelHi] for
	// MeanB/MeanA − 1; NaN where A's mean is not told apart from 0.
	Rel, RelLo, RelHi float64
	// DF is the Welch–Satterthwaite degrees of freedom and P the test's
	// two-sided p-value before the correction; PHolm is P adjusted for
	// the family by Holm's procedure (the smallest family-wise α at which
	// the figure would read better or worse: with the family's p-values
	// sorted ascending, min(1, max over j ≤ i of (N − j)·p(j)), i and j
	// from 0). NaN where the figure was not tested.
	DF, P, PHolm float64
	// Widened says the batches were correlated (lag-1 autocorrelation
	// beyond 2/√k on a side) and the variance was inflated by
	// (1 + r)/(1 − r).
	Widened bool
	Verdict Verdict
	// Regression is true when the gate trips on this figure.
	Regression bool
}

// A Result is a comparison of B against A.
type Result struct {
	// A and B are the files; Kind A's kind.
	A, B *Side
	// Rows are every figure of every group both sides have, in print
	// order.
	Rows []Row
	// Tests is the size of the family the verdicts are corrected for;
	// GatedTests how many of them the gate looks at.
	Tests, GatedTests            int
	Alpha, Confidence, Threshold float64
	// GateFigures are the figures the gate looks at (Config.GateFigures;
	// none means every figure).
	GateFigures []string
	// Allowed are the differences Config.Allow let through; Refused,
	// set only on the Result that Compare returns beside a
	// *RefusedError, the differences that refused the comparison (that
	// Result has no rows: it says what was compared and why not).
	Allowed, Refused []Difference
	// Warnings say what limits the comparison.
	Warnings []string
}

// Regressions returns the rows the gate tripped on.
func (r *Result) Regressions() []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Regression {
			out = append(out, row)
		}
	}
	return out
}

// ErrKinds is wrapped by Compare's error when the two files hold
// different kinds of units (exo-bench's repeats against load runs).
var ErrKinds = errors.New("compare: the files are of kinds that cannot be compared")

// Differences returns every setting in which a and b differ, and the
// settings only one side records (in notes, which are not refused).
func Differences(a, b *Side, tolerance float64) (diffs []Difference, notes []string) {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	var keys []string
	for k := range a.Settings {
		keys = append(keys, k)
	}
	for k := range b.Settings {
		if _, ok := a.Settings[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var unchecked []string
	for _, k := range keys {
		va, oka := a.Settings[k]
		vb, okb := b.Settings[k]
		switch {
		case oka && okb && va != vb:
			diffs = append(diffs, Difference{Name: settingName(k), A: va, B: vb})
		case oka != okb:
			unchecked = append(unchecked, settingName(k))
		}
	}
	if len(unchecked) > 0 {
		notes = append(notes, "not checked, only one file records them: "+strings.Join(unchecked, ", "))
	}
	for _, k := range []string{"prompt_tokens", "output_tokens"} {
		ma, oka := a.Means[k]
		mb, okb := b.Means[k]
		if oka && okb && math.Abs(mb-ma) > tolerance*math.Abs(ma) {
			diffs = append(diffs, Difference{Name: k, A: fmt.Sprintf("mean %.4g asked", ma), B: fmt.Sprintf("mean %.4g asked", mb)})
		}
	}
	ga, gb := groupNames(a), groupNames(b)
	if !slices.Equal(sortedCopy(ga), sortedCopy(gb)) {
		diffs = append(diffs, Difference{Name: "groups", A: strings.Join(ga, "; "), B: strings.Join(gb, "; ")})
	}
	// Duplicate names (the same setting found twice) are kept once.
	diffs = slices.CompactFunc(diffs, func(x, y Difference) bool { return x.Name == y.Name })
	return diffs, notes
}

// settingName is the name a refusal and --allow use for a setting: the
// rows' own settings go by the meta's names.
func settingName(k string) string {
	return strings.TrimPrefix(k, "row_")
}

func groupNames(s *Side) []string {
	out := make([]string, len(s.Groups))
	for i, g := range s.Groups {
		out[i] = g.Name
	}
	return out
}

func sortedCopy(x []string) []string {
	y := slices.Clone(x)
	slices.Sort(y)
	return y
}

// family is the kind of units a side's kind holds.
func family(kind string) string {
	if kind == KindExo || kind == KindExoJSONL {
		return "repeats"
	}
	return "load"
}

// Compare tests every figure of every group both sides have: Welch's
// t-test on the units' values, the difference and the relative change
// with their intervals, and a verdict corrected for the family of tests
// by Holm's procedure. It refuses (a *RefusedError) sides whose runs
// measured different things, unless c.Allow names each difference; it
// then also returns a Result without rows that names the sides, the
// differences refused (Refused) and allowed, and the warnings, for a
// report of the refusal.
func Compare(a, b *Side, c Config) (*Result, error) {
	if c.Alpha <= 0 || c.Alpha >= 1 {
		c.Alpha = DefaultAlpha
	}
	if c.Confidence <= 0 || c.Confidence >= 1 {
		c.Confidence = DefaultConfidence
	}
	if family(a.Kind) != family(b.Kind) {
		return nil, fmt.Errorf("%w: A holds %s (%s), B %s (%s)", ErrKinds, family(a.Kind), a.Kind, family(b.Kind), b.Kind)
	}
	for _, g := range c.GateFigures {
		if _, ok := FigureByName(g); !ok {
			return nil, fmt.Errorf("compare: no figure %q (the figures: %s)", g, strings.Join(Figures(), ", "))
		}
	}
	res := &Result{A: a, B: b, Alpha: c.Alpha, Confidence: c.Confidence, Threshold: c.Threshold, GateFigures: c.GateFigures}
	diffs, notes := Differences(a, b, c.Tolerance)
	var refused []Difference
	for _, d := range diffs {
		if slices.Contains(c.Allow, d.Name) || slices.Contains(c.Allow, "all") {
			res.Allowed = append(res.Allowed, d)
		} else {
			refused = append(refused, d)
		}
	}
	res.Warnings = append(res.Warnings, notes...)
	for _, w := range a.Warnings {
		res.Warnings = append(res.Warnings, "A: "+w)
	}
	for _, w := range b.Warnings {
		res.Warnings = append(res.Warnings, "B: "+w)
	}
	if len(refused) > 0 {
		res.Refused = refused
		return res, &RefusedError{Differences: refused}
	}
	ps, tested := res.test(a, b, c.Confidence)
	res.judge(ps, tested, c)
	for _, g := range c.GateFigures {
		if !slices.ContainsFunc(tested, func(j int) bool { return res.Rows[j].Figure.Name == g }) {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the gate's figure %s was not tested: a side lacks it or has fewer than two units of it", g))
		}
	}
	if res.Tests == 0 {
		res.Warnings = append(res.Warnings, "no figure had two units on both sides: nothing was tested (a run needs at least "+
			fmt.Sprint(2*DefaultMinBatch)+" requests for two batches)")
	}
	return res, nil
}

// test compares every figure of every group both sides hold: a row per
// figure, Welch's test where each side has two units; it returns the
// tests' p-values and the rows they belong to.
func (res *Result) test(a, b *Side, confidence float64) (ps []float64, tested []int) {
	bGroups := map[string]*Group{}
	for i := range b.Groups {
		bGroups[b.Groups[i].Name] = &b.Groups[i]
	}
	for _, ga := range a.Groups {
		gb, ok := bGroups[ga.Name]
		if !ok {
			continue
		}
		for _, f := range figures {
			xa, oka := column(ga.Units, f.Name)
			xb, okb := column(gb.Units, f.Name)
			if !oka && !okb {
				continue
			}
			row := Row{Group: ga.Name, Figure: f, UnitA: ga.UnitKind, UnitB: gb.UnitKind, NA: len(xa), NB: len(xb)}
			row.MeanA, row.MeanB = meanOf(xa), meanOf(xb)
			row.Diff, row.DiffLo, row.DiffHi = row.MeanB-row.MeanA, math.NaN(), math.NaN()
			row.Rel, row.RelLo, row.RelHi, row.DF, row.P, row.PHolm = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
			if len(xa) < 2 || len(xb) < 2 {
				row.Verdict = NotComparable
				res.Rows = append(res.Rows, row)
				continue
			}
			ia, ib := inflation(ga.Lag1[f.Name], len(xa)), inflation(gb.Lag1[f.Name], len(xb))
			row.Widened = ia > 1 || ib > 1
			w := welchTest(xa, xb, ia, ib, confidence)
			row.DiffLo, row.DiffHi, row.DF, row.P = w.DiffLo, w.DiffHi, w.DF, w.P
			if row.MeanA != 0 {
				row.Rel = row.Diff / row.MeanA
			}
			if w.RatioOK {
				row.RelLo, row.RelHi = w.RatioLo-1, w.RatioHi-1
			}
			ps = append(ps, w.P)
			tested = append(tested, len(res.Rows))
			res.Rows = append(res.Rows, row)
		}
	}
	return ps, tested
}

// judge turns the p-values into verdicts, Holm's correction over all of
// them at c.Alpha, and marks the regressions beyond c.Threshold among the
// gated figures.
func (res *Result) judge(ps []float64, tested []int, c Config) {
	res.Tests = len(ps)
	reject := holm(ps, c.Alpha)
	adjusted := holmAdjusted(ps)
	for i, j := range tested {
		row := &res.Rows[j]
		row.PHolm = adjusted[i]
		row.Verdict = NoChange
		if reject[i] {
			row.Verdict = Better
			if (row.Diff > 0) == row.Figure.Lower {
				row.Verdict = Worse
			}
		}
		gated := len(c.GateFigures) == 0 || slices.Contains(c.GateFigures, row.Figure.Name)
		if gated {
			res.GatedTests++
		}
		if c.Threshold > 0 && gated && row.Verdict == Worse && math.Abs(row.Rel) > c.Threshold {
			row.Regression = true
		}
	}
}

func meanOf(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}
