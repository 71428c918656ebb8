// Package capacity says where a server saturates, from a sweep of offered
// request rates: the knee (the rate at which the throughput stops
// following the offered rate, the server's service rate), whether each
// rate over-saturated the server (its backlog grew for the whole run), the
// capacity at an SLO (the highest rate at which enough requests meet
// their objectives), each with its interval, and the rates a sweep should
// add to narrow them. It is pure arithmetic on what a load generator
// recorded: no I/O, no goroutines. docs/CAPACITY.md defines every figure
// and says where GuideLLM, vLLM's SLA sweep and AIPerf differ.
//
// benchkit's Load.FindCapacity runs the sweep and calls Analyze after each
// run; any load generator can call Analyze on its own runs.
package capacity

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Defaults of Options.
const (
	DefaultConfidence  = 0.95 // level of every interval
	DefaultAttainment  = 0.9  // share of requests that must meet the SLO (DistServe's 90 %)
	DefaultMinGrowth   = 0.05 // backlog growth, as a share of the offered rate, that over-saturates
	DefaultSettle      = 0.25 // share of the arrival window left out at its start
	DefaultBins        = 10   // batches of the arrival window
	DefaultLatencyRise = 0.5  // a latency above (1 + rise) × floor has left its floor
	DefaultStart       = 1.0  // requests per second
	DefaultFactor      = 2.0  // growth of the ladder of rates
	DefaultMaxRuns     = 12   // runs a search makes at most
	DefaultTolerance   = 0.1  // relative width at which a bracket is narrow enough
)

// ErrBadInput is wrapped by every error about the points or the options.
var ErrBadInput = errors.New("capacity: bad input")

// A Span is one request of a run, on the run's clock (seconds from its
// start).
type Span struct {
	// Start is when the request was meant to go (its intended send: a
	// request that waits in the client for a free slot is already part
	// of the backlog); End when its response ended or it failed, NaN when
	// it never ended.
	Start, End float64
	// OK is false for a failed request.
	OK bool
}

// A Point is one run of a rate sweep.
type Point struct {
	// Rate is the offered rate in requests per second (finite, > 0).
	Rate float64
	// Spans are the run's requests.
	Spans []Span
	// Good of Total requests met every objective of the SLO (failed ones
	// counted in Total); both 0 without an SLO.
	Good, Total int
	// Latency is the run's latency floor figure, in seconds: the median
	// TTFT of a streamed run, else the median E2E; NaN when unknown.
	Latency float64
}

// Options set the method and, for a search, its rates. The zero value
// means every default.
type Options struct {
	// Confidence is the level of every interval; 0 means
	// DefaultConfidence.
	Confidence float64 `json:"confidence"`
	// Attainment is the share of a run's requests that must meet the SLO
	// for the run to meet it; 0 means DefaultAttainment.
	Attainment float64 `json:"attainment"`
	// MinGrowth is the growth of the backlog, as a share of the offered
	// rate, from which a run is over-saturated (0.05: one arriving
	// request in twenty stays queued); 0 means DefaultMinGrowth.
	MinGrowth float64 `json:"min_growth"`
	// Settle is the share of a run's arrival window, at its start, left
	// out of its backlog and throughput (the backlog of a stable server
	// rises from empty to its level first); 0 means DefaultSettle.
	Settle float64 `json:"settle"`
	// Bins is the number of batches the rest of the window is cut into;
	// 0 means DefaultBins. A run with fewer than 4 requests a batch has
	// as many batches as that allows, at least 3.
	Bins int `json:"bins"`
	// LatencyRise is how far above the lowest rate's latency a run's
	// latency must be to have left its floor: (1 + LatencyRise) × floor;
	// 0 means DefaultLatencyRise.
	LatencyRise float64 `json:"latency_rise"`

	// The search's rates (Load.FindCapacity). Rates, when set, are run
	// first; else a ladder from Start multiplied by Factor (0: the
	// defaults) until a run over-saturates and, with an SLO, one surely
	// misses it. Max, when positive, is the highest rate tried. MaxRuns
	// bounds the runs (0: DefaultMaxRuns). Refining stops when the knee's
	// and the capacity's brackets are within Tolerance, (hi − lo)/lo (0:
	// DefaultTolerance).
	Rates     []float64 `json:"rates,omitempty"`
	Start     float64   `json:"start,omitempty"`
	Factor    float64   `json:"factor,omitempty"`
	Max       float64   `json:"max,omitempty"`
	MaxRuns   int       `json:"max_runs,omitempty"`
	Tolerance float64   `json:"tolerance"`
}

// WithDefaults returns o with each zero field set to its default, or an
// error wrapping ErrBadInput for a value out of its range.
func (o Options) WithDefaults() (Options, error) {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Confidence, DefaultConfidence)
	def(&o.Attainment, DefaultAttainment)
	def(&o.MinGrowth, DefaultMinGrowth)
	def(&o.Settle, DefaultSettle)
	def(&o.LatencyRise, DefaultLatencyRise)
	def(&o.Start, DefaultStart)
	def(&o.Factor, DefaultFactor)
	def(&o.Tolerance, DefaultTolerance)
	if o.Bins == 0 {
		o.Bins = DefaultBins
	}
	if o.MaxRuns == 0 {
		o.MaxRuns = DefaultMaxRuns
	}
	in := func(v, lo, hi float64) bool { return v > lo && v < hi }
	switch {
	case !in(o.Confidence, 0, 1):
		return o, fmt.Errorf("%w: confidence must be in (0, 1), got %g", ErrBadInput, o.Confidence)
	case !in(o.Attainment, 0, 1) && o.Attainment != 1:
		return o, fmt.Errorf("%w: attainment must be in (0, 1], got %g", ErrBadInput, o.Attainment)
	case !in(o.MinGrowth, 0, 1):
		return o, fmt.Errorf("%w: minimum backlog growth must be in (0, 1), got %g", ErrBadInput, o.MinGrowth)
	case !in(o.Settle, 0, 1) && o.Settle != 0:
		return o, fmt.Errorf("%w: settle share must be in [0, 1), got %g", ErrBadInput, o.Settle)
	case o.Bins < 3:
		return o, fmt.Errorf("%w: at least 3 bins are needed for a slope and its interval, got %d", ErrBadInput, o.Bins)
	case !in(o.LatencyRise, 0, math.Inf(1)):
		return o, fmt.Errorf("%w: latency rise must be a positive number, got %g", ErrBadInput, o.LatencyRise)
	case !in(o.Start, 0, math.Inf(1)):
		return o, fmt.Errorf("%w: start rate must be a positive number, got %g", ErrBadInput, o.Start)
	case !in(o.Factor, 1, math.Inf(1)):
		return o, fmt.Errorf("%w: ladder factor must be a finite number above 1, got %g", ErrBadInput, o.Factor)
	case math.IsNaN(o.Max) || o.Max < 0 || math.IsInf(o.Max, 0):
		return o, fmt.Errorf("%w: highest rate must be a finite rate ≥ 0 (0: none), got %g", ErrBadInput, o.Max)
	case o.MaxRuns < 1:
		return o, fmt.Errorf("%w: the search needs at least one run, got %d", ErrBadInput, o.MaxRuns)
	case !in(o.Tolerance, 0, math.Inf(1)):
		return o, fmt.Errorf("%w: tolerance must be a positive number, got %g", ErrBadInput, o.Tolerance)
	}
	for _, r := range o.Rates {
		if !in(r, 0, math.Inf(1)) {
			return o, fmt.Errorf("%w: rate %g is not a finite positive number of requests per second", ErrBadInput, r)
		}
	}
	return o, nil
}

// The states of a run's backlog (PointResult.State).
const (
	// Stable: the backlog surely grows by less than MinGrowth of the
	// offered rate (the upper bound of its slope's interval is below).
	Stable = "stable"
	// OverSaturated: the backlog surely grows (the lower bound of its
	// slope's interval is above 0) and by at least MinGrowth of the
	// offered rate.
	OverSaturated = "over-saturated"
	// Undecided: neither; the run was too short to tell, or sits at the
	// knee.
	Undecided = "undecided"
	// TooFew: the run's window holds too few requests for a slope.
	TooFew = "too few requests"
)

// The verdicts of a run on the SLO (PointResult.Meets).
const (
	Meets  = "meets"  // the lower bound of its attainment's interval reaches the target
	Misses = "misses" // the upper bound is below the target
	Unsure = "unsure" // the target is inside the interval
	NoSLO  = ""       // no objective was set
)

const (
	atMax   = 1e-9      // relative distance at which a rate is Max
	minBin  = 4         // requests a batch should hold
	minBins = 3         // batches a slope needs (1 degree of freedom)
	dedupe  = 0.01      // relative distance at which a new rate repeats one measured
	unknown = "unknown" // an Interval without points
)

// A PointResult is what Analyze found in one run.
type PointResult struct {
	// Rate is the offered rate (requests/s); Requests the run's count.
	Rate     float64 `json:"rate_rps"`
	Requests int     `json:"requests"`
	// WindowS is the analysed part of the arrival window, in seconds:
	// from Settle of the way in to the last intended send.
	WindowS float64 `json:"window_s"`
	// Throughput is the rate the run's requests completed at over the
	// middle half of their completions (from the first quartile of their
	// end instants to the third): the offered rate below the knee, the
	// server's service rate above it. ThroughputLo and ThroughputHi are
	// its Student-t interval over batches of that span.
	Throughput   float64 `json:"throughput_rps"`
	ThroughputLo float64 `json:"throughput_lo"`
	ThroughputHi float64 `json:"throughput_hi"`
	// Growth is the least-squares slope of the backlog (requests meant to
	// have gone and not yet ended) against time, over the batch means of
	// the window, in requests/s, with its Student-t interval (Bins − 2
	// degrees of freedom); GrowthShare is Growth / Rate.
	Growth      float64 `json:"backlog_growth_rps"`
	GrowthLo    float64 `json:"backlog_growth_lo"`
	GrowthHi    float64 `json:"backlog_growth_hi"`
	GrowthShare float64 `json:"backlog_growth_share"`
	// State is Stable, OverSaturated, Undecided or TooFew.
	State string `json:"state"`
	// Attainment is Good/Total with its Clopper–Pearson interval; Meets
	// the verdict against the target (NoSLO without objectives).
	Attainment   float64 `json:"attainment"`
	AttainmentLo float64 `json:"attainment_lo"`
	AttainmentHi float64 `json:"attainment_hi"`
	Meets        string  `json:"meets,omitempty"`
	// LatencyS is the run's latency floor figure; LatencyRaised says it
	// is above (1 + LatencyRise) × the lowest rate's.
	LatencyS      *float64 `json:"latency_s,omitempty"`
	LatencyRaised bool     `json:"latency_raised,omitempty"`
}

// An Interval is a rate found by a sweep, in requests per second.
type Interval struct {
	// Status says what the sweep bracketed: "bracketed" (Lo and Hi are
	// rates measured on each side), "above" (every rate measured is on
	// the low side: the rate is at least Lo; Hi is 0), "below" (every
	// rate is on the high side: the rate is below Hi; Lo is 0) or
	// "unknown" (no rate tells).
	Status string `json:"status"`
	// Rate is the estimate, within [Lo, Hi] when bracketed; 0 when not.
	Rate float64 `json:"rate_rps"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
}

// Bracketed reports whether the interval has both sides.
func (iv Interval) Bracketed() bool { return iv.Status == "bracketed" }

// Width is (Hi − Lo)/Lo, the relative width of a bracket; +Inf when it
// is not bracketed.
func (iv Interval) Width() float64 {
	if !iv.Bracketed() || iv.Lo <= 0 {
		return math.Inf(1)
	}
	return (iv.Hi - iv.Lo) / iv.Lo
}

// String formats the interval, e.g. "18.2/s [16, 19.0]", "≥ 32/s",
// "< 4/s" or "unknown".
func (iv Interval) String() string {
	switch iv.Status {
	case "bracketed":
		return fmt.Sprintf("%.3g/s [%.3g, %.3g]", iv.Rate, iv.Lo, iv.Hi)
	case "above":
		return fmt.Sprintf("≥ %.3g/s", iv.Lo)
	case "below":
		return fmt.Sprintf("< %.3g/s", iv.Hi)
	}
	return unknown
}

// Result is what a sweep says about where the server saturates.
type Result struct {
	// Points are the runs analysed, by ascending rate.
	Points []PointResult `json:"points"`
	// Knee is the offered rate at which the throughput stops following
	// the offered rate: bracketed by the highest Stable rate below the
	// lowest OverSaturated one (Lo) and that rate (Hi); its estimate is
	// ServiceRate's, clipped to the bracket.
	Knee Interval `json:"knee"`
	// ServiceRate is the throughput the server keeps at over-saturation:
	// the mean batch throughput of the OverSaturated runs (Throughput's
	// batches, pooled), its interval the Student-t interval over them. Status "unknown" when no
	// run over-saturated.
	ServiceRate Interval `json:"service_rate"`
	// LatencyKnee is where the latency leaves its floor: bracketed by the
	// highest rate whose latency is within (1 + LatencyRise) × the lowest
	// rate's, below the lowest rate whose latency is above it; its
	// estimate is the bracket's geometric midpoint.
	LatencyKnee Interval `json:"latency_knee"`
	// Capacity is the highest rate that meets the SLO at the target
	// attainment and that the server sustains: bracketed by the highest
	// rate that surely meets it and is Stable (or TooFew) (Lo) below the lowest rate that
	// surely misses it or over-saturates the server (Hi: an over-saturated
	// run's latencies grow with its length, so its attainment tells only
	// how long it ran); its estimate is where the attainment,
	// interpolated linearly between the runs of the bracket, first falls
	// below the target, else the knee's estimate when it lies in the
	// bracket. Status "unknown" without objectives.
	Capacity Interval `json:"capacity"`
	// SLO is the objectives ("" when none) and Attainment, Confidence
	// and MinGrowth the method's settings.
	SLO        string  `json:"slo,omitempty"`
	Attainment float64 `json:"attainment"`
	Confidence float64 `json:"confidence"`
	MinGrowth  float64 `json:"min_growth"`
	// Next are the rates a sweep should add, most useful first: the
	// ladder's next rung while the knee (or the capacity) lies above
	// every rate (or one down while the lowest rate over-saturates or
	// misses the SLO), then the geometric midpoints of the brackets
	// wider than Tolerance. Empty when the sweep has nothing to add: its
	// brackets are narrow enough, or its runs too short to tell more.
	Next []float64 `json:"next_rates,omitempty"`
	// Warnings say what limits the answer: runs too short to tell their
	// backlog's slope, a bracket the sweep could not close.
	Warnings []string `json:"warnings,omitempty"`
	// The cost of the sweep, set by the driver: runs made, requests sent
	// and wall seconds.
	Runs     int     `json:"runs"`
	Requests int     `json:"requests"`
	Seconds  float64 `json:"seconds"`
}

// Analyze finds the knee, the service rate, the latency knee and the
// capacity at the SLO in points (any order; slo names the objectives, ""
// for none, in which case Good and Total are ignored), and the rates to
// add. It returns an error wrapping ErrBadInput for a bad option or a
// point without a finite positive rate.
func Analyze(points []Point, slo string, opts Options) (Result, error) {
	o, err := opts.WithDefaults()
	if err != nil {
		return Result{}, err
	}
	res := Result{SLO: slo, Attainment: o.Attainment, Confidence: o.Confidence, MinGrowth: o.MinGrowth}
	pts := slices.Clone(points)
	for i, p := range pts {
		if !(p.Rate > 0) || math.IsInf(p.Rate, 0) {
			return res, fmt.Errorf("%w: point %d: rate %g is not a finite positive number of requests per second", ErrBadInput, i, p.Rate)
		}
		if p.Good < 0 || p.Total < p.Good {
			return res, fmt.Errorf("%w: point %d: %d good of %d requests", ErrBadInput, i, p.Good, p.Total)
		}
	}
	slices.SortStableFunc(pts, func(a, b Point) int { return cmpF(a.Rate, b.Rate) })
	var sat [][]float64 // the batch throughputs of each over-saturated run
	for _, p := range pts {
		pr, batches := analyzePoint(p, slo != "", o)
		if pr.State == OverSaturated {
			sat = append(sat, batches)
		}
		res.Points = append(res.Points, pr)
	}
	latencies(res.Points, o.LatencyRise)
	res.Knee = knee(res.Points)
	res.ServiceRate = serviceRate(sat, o.Confidence)
	if res.Knee.Bracketed() && res.ServiceRate.Status == "bracketed" {
		res.Knee.Rate = min(max(res.ServiceRate.Rate, res.Knee.Lo), res.Knee.Hi)
	}
	res.LatencyKnee = latencyKnee(res.Points)
	if slo != "" {
		k := 0.0
		if res.Knee.Bracketed() {
			k = res.Knee.Rate
		}
		res.Capacity = capacityAt(res.Points, o.Attainment, k)
	} else {
		res.Capacity = Interval{Status: unknown}
	}
	res.Next = next(res, o)
	res.Warnings = warnings(res, o.Settle)
	return res, nil
}

// warnings name the runs too short to tell and the brackets left open
// with nothing to add.
func warnings(res Result, settle float64) []string {
	var out []string
	for _, p := range res.Points {
		if p.State == TooFew {
			out = append(out, fmt.Sprintf("rate %.3g/s: %d requests are too few for the backlog's slope (%d batches of %d in the arrival window after its first %.0f%%): run longer", p.Rate, p.Requests, minBins, minBin, 100*settle))
		}
	}
	if len(res.Next) > 0 {
		return out
	}
	for _, m := range []struct {
		name string
		iv   Interval
	}{{"knee", res.Knee}, {"capacity", res.Capacity}} {
		switch m.iv.Status {
		case "below", "unknown":
			if m.name == "capacity" && res.SLO == "" {
				continue
			}
			out = append(out, fmt.Sprintf("the %s is not bracketed (%s) and no rate would tell more: the runs near it are too short or undecided; run longer", m.name, m.iv))
		}
	}
	return out
}

// geomean is √(a·b), without the product's overflow or underflow, and
// between a and b despite rounding.
func geomean(a, b float64) float64 {
	return min(max(math.Sqrt(a)*math.Sqrt(b), min(a, b)), max(a, b))
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// knee brackets the lowest over-saturated rate from below by the highest
// stable rate under it.
func knee(ps []PointResult) Interval {
	hi := slices.IndexFunc(ps, func(p PointResult) bool { return p.State == OverSaturated })
	if hi < 0 {
		lo := -1
		for i, p := range ps {
			if p.State == Stable {
				lo = i
			}
		}
		if lo < 0 {
			return Interval{Status: unknown}
		}
		return Interval{Status: "above", Lo: ps[lo].Rate}
	}
	for i := hi - 1; i >= 0; i-- {
		if ps[i].State == Stable {
			iv := Interval{Status: "bracketed", Lo: ps[i].Rate, Hi: ps[hi].Rate}
			iv.Rate = geomean(iv.Lo, iv.Hi)
			return iv
		}
	}
	return Interval{Status: "below", Hi: ps[hi].Rate}
}

// latencyKnee brackets the lowest rate whose latency left the floor.
func latencyKnee(ps []PointResult) Interval {
	hi := slices.IndexFunc(ps, func(p PointResult) bool { return p.LatencyRaised })
	lo := -1
	for i, p := range ps {
		if p.LatencyS != nil && !p.LatencyRaised && (hi < 0 || i < hi) {
			lo = i
		}
	}
	switch {
	case lo < 0 && hi < 0:
		return Interval{Status: unknown}
	case hi < 0:
		return Interval{Status: "above", Lo: ps[lo].Rate}
	case lo < 0:
		return Interval{Status: "below", Hi: ps[hi].Rate}
	}
	return Interval{Status: "bracketed", Lo: ps[lo].Rate, Hi: ps[hi].Rate, Rate: geomean(ps[lo].Rate, ps[hi].Rate)}
}

// latencies marks the runs whose latency left the floor: the lowest
// rate's latency.
func latencies(ps []PointResult, rise float64) {
	floor := math.NaN()
	for _, p := range ps {
		if p.LatencyS != nil {
			floor = *p.LatencyS
			break
		}
	}
	for i := range ps {
		if l := ps[i].LatencyS; l != nil && floor > 0 {
			ps[i].LatencyRaised = *l > (1+rise)*floor
		}
	}
}

// capacityAt brackets the highest rate meeting the SLO: Hi is the lowest
// rate that surely misses it or over-saturates the server, Lo the highest
// rate below Hi that surely meets it and is stable (or too short to
// tell); the estimate is the first
// crossing of the target by the attainment interpolated between the runs
// of the bracket, else kneeRate (when positive), clipped to the bracket,
// else the bracket's geometric midpoint.
func capacityAt(ps []PointResult, target, kneeRate float64) Interval {
	hi := slices.IndexFunc(ps, func(p PointResult) bool { return p.Meets == Misses || p.State == OverSaturated })
	lo := -1
	for i, p := range ps {
		if p.Meets == Meets && (p.State == Stable || p.State == TooFew) && (hi < 0 || i < hi) {
			lo = i
		}
	}
	switch {
	case lo < 0 && hi < 0:
		return Interval{Status: unknown}
	case hi < 0:
		return Interval{Status: "above", Lo: ps[lo].Rate}
	case lo < 0:
		return Interval{Status: "below", Hi: ps[hi].Rate}
	}
	iv := Interval{Status: "bracketed", Lo: ps[lo].Rate, Hi: ps[hi].Rate}
	iv.Rate = geomean(iv.Lo, iv.Hi)
	if kneeRate > 0 {
		iv.Rate = kneeRate
	}
	for i := lo; i < hi; i++ {
		a, b := ps[i], ps[i+1]
		if a.Attainment >= target && b.Attainment < target {
			iv.Rate = a.Rate + (a.Attainment-target)/(a.Attainment-b.Attainment)*(b.Rate-a.Rate)
			break
		}
	}
	iv.Rate = min(max(iv.Rate, iv.Lo), iv.Hi)
	return iv
}

// next are the rates to add: the ladder's next rung while the knee or the
// capacity lies above every rate (or below the lowest), then the
// geometric midpoints of brackets wider than Tolerance, dropping rates
// above Max and rates within 1 % of one measured.
func next(res Result, o Options) []float64 {
	if len(res.Points) == 0 {
		return nil
	}
	lowest, highest := res.Points[0].Rate, res.Points[len(res.Points)-1].Rate
	var out []float64
	add := func(r float64) {
		if !(r > 0) || math.IsInf(r, 0) {
			return
		}
		if o.Max > 0 && r > o.Max {
			if highest >= o.Max*(1-atMax) {
				return
			}
			r = o.Max
		}
		for _, p := range res.Points {
			if math.Abs(r-p.Rate) <= dedupe*p.Rate {
				return
			}
		}
		for _, q := range out {
			if math.Abs(r-q) <= dedupe*q {
				return
			}
		}
		out = append(out, r)
	}
	// Down only from a lowest rate that itself says it is too high: below
	// a run too short or undecided, a lower rate's run holds fewer
	// requests and tells less (a longer run is what it needs).
	low := res.Points[0]
	for _, iv := range []Interval{res.Knee, res.Capacity} {
		switch {
		case iv.Status == "above":
			add(highest * o.Factor)
		case iv.Status == "below" && (low.State == OverSaturated || low.Meets == Misses):
			add(lowest / o.Factor)
		}
	}
	if res.Knee.Status == unknown {
		add(highest * o.Factor) // nothing stable or saturated yet: go on up
	}
	for _, iv := range []Interval{res.Knee, res.Capacity} {
		if iv.Bracketed() && iv.Width() > o.Tolerance {
			add(geomean(iv.Lo, iv.Hi))
		}
	}
	return out
}
