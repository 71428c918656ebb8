package benchkit

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/inferbench/inferbench/timing"
)

// The steady-state window of a load run (docs/STEADY-STATE.md): the part
// of the run after the ramp-up and before the drain, over which the
// summary's Steady figures are computed.

const (
	// steadyRatio is the share of the reference in-flight count the
	// window holds (vllm-bench's default threshold).
	steadyRatio = 0.95
	// minSteadyRequests is the fewest requests a window must see start
	// for its figures to mean anything; below it Steady is null.
	minSteadyRequests = 10
	// shortSteadyShare is the share of the run below which a window is
	// reported with a warning (vllm-bench warns under 10 % of the run).
	shortSteadyShare = 0.1
)

// The rules that pick a window (Summary.SteadyRule).
const (
	rulePlateau = "plateau"       // from the first to the last instant at least ratio × peak are in flight
	ruleOpen    = "ramp_to_drain" // from the ramp's end to the last send
)

// step is the in-flight count n over [t0, t1).
type step struct {
	t0, t1 float64
	n      int
}

// inFlight is the number of requests in flight over time: each row that
// went out is in flight from its send offset to its end (failures
// included: they held their slot as long). At one instant ends come
// before sends. Steps of zero length are left out.
func inFlight(rows []Request) []step {
	type ev struct {
		t float64
		d int
	}
	var evs []ev
	for _, r := range rows {
		if r.DoneS > r.SendOffsetS && r.SendOffsetS >= 0 {
			evs = append(evs, ev{r.SendOffsetS, +1}, ev{r.DoneS, -1})
		}
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.d, b.d)
	})
	var out []step
	n := 0
	for i, e := range evs {
		n += e.d
		if i+1 < len(evs) && evs[i+1].t > e.t {
			out = append(out, step{e.t, evs[i+1].t, n})
		}
	}
	return out
}

// peakOf is the most requests in flight at once over steps.
func peakOf(steps []step) int {
	p := 0
	for _, s := range steps {
		p = max(p, s.n)
	}
	return p
}

// plateau is the span from the first instant at least k requests are in
// flight to the last instant the count falls below k (vllm-bench's
// crossings): the dips between, a slot freed before the next request
// takes it, stay in. ok is false when the count never reaches k.
func plateau(steps []step, k int) (lo, hi float64, ok bool) {
	for _, s := range steps {
		if s.n >= k {
			if !ok {
				lo, ok = s.t0, true
			}
			hi = s.t1
		}
	}
	return lo, hi, ok
}

// medianInFlight is the time-weighted median of the in-flight count over
// [lo, hi): the count the run held for at least half that time.
func medianInFlight(steps []step, lo, hi float64) int {
	dur := map[int]float64{}
	var total float64
	for _, s := range steps {
		a, b := math.Max(s.t0, lo), math.Min(s.t1, hi)
		if b > a {
			dur[s.n] += b - a
			total += b - a
		}
	}
	ns := make([]int, 0, len(dur))
	for n := range dur {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	var acc float64
	for _, n := range ns {
		if acc += dur[n]; acc >= total/2 {
			return n
		}
	}
	return 0
}

// steadyWindow picks the window of a run's rows under traffic t: the
// plateau rule when the run's concurrency is bounded (a closed loop's
// users, a cap) and the peak reached ratio × the bound; else, for an open
// loop or a replay, from the end of the ramp to the last send. A burst,
// or every request sent at once with no cap, has no steady state: it
// only drains. why says why there is no window.
func steadyWindow(rows []Request, t Traffic, ratio float64) (lo, hi float64, rule string, threshold int, why string) {
	steps := inFlight(rows)
	if len(steps) == 0 {
		return 0, 0, "", 0, "no request went out"
	}
	peak := peakOf(steps)
	bound := t.MaxConcurrency
	if t.Users > 0 {
		bound = t.Users
	}
	switch {
	case t.Burst > 0:
		return 0, 0, "", 0, "a burst releases every request at once and then only drains"
	case bound > 0 && peak >= needed(ratio, bound):
		k := needed(ratio, peak)
		lo, hi, ok := plateau(steps, k)
		if !ok {
			return 0, 0, "", 0, "the in-flight count never held its plateau"
		}
		return lo, hi, rulePlateau, k, ""
	case !t.Replay && t.Users == 0 && math.IsInf(t.Rate, 1):
		return 0, 0, "", 0, "every request went at once with no cap: the run only drains"
	}
	var sends, e2e []float64
	for _, r := range rows {
		if r.DoneS > r.SendOffsetS && r.SendOffsetS >= 0 {
			sends = append(sends, r.SendOffsetS)
			if !r.Failed() {
				e2e = append(e2e, r.DoneS-r.SendOffsetS)
			}
		}
	}
	first, last := slices.Min(sends), slices.Max(sends)
	if last <= first {
		return 0, 0, "", 0, "every request went at one instant"
	}
	// Until most requests sent at the start have run their course, the
	// tokens arriving are only those of requests in their beginning: the
	// ramp lasts at least the p90 of the requests' lives.
	settle := first
	if len(e2e) > 0 {
		slices.Sort(e2e)
		settle += e2e[int(math.Ceil(0.9*float64(len(e2e))))-1]
	}
	k := needed(ratio, medianInFlight(steps, first, last))
	for _, s := range steps {
		if s.n >= k && s.t1 > first {
			lo = math.Max(math.Max(s.t0, first), settle)
			if lo >= last {
				break
			}
			return lo, last, ruleOpen, k, ""
		}
	}
	return 0, 0, "", 0, "the in-flight count never settled at its usual level before the last send"
}

// needed is ⌈ratio × n⌉, at least 1.
func needed(ratio float64, n int) int {
	return max(1, int(math.Ceil(ratio*float64(n)-1e-9)))
}

// tokenInstants calls f with each output token's arrival offset and its
// weight for a completed row: a streamed row's first token at send +
// TTFT and each next one a per-token gap later (ITLS), the completion
// tokens shared evenly over those instants; an unstreamed row's tokens
// all at its end, when the client received them.
func tokenInstants(r Request, f func(t, w float64)) {
	n := r.Tokens()
	if r.Failed() || n <= 0 {
		return
	}
	if r.TTFTS == nil {
		f(r.DoneS, float64(n))
		return
	}
	w := float64(n) / float64(1+len(r.ITLS))
	t := r.SendOffsetS + *r.TTFTS
	f(t, w)
	for _, g := range r.ITLS {
		t += g
		f(t, w)
	}
}

// peakOutput is the most output tokens that arrived in any whole second
// counted from lo (vLLM's peak output token throughput, in tokens/s),
// over the seconds that lie wholly in [lo, hi), hi at most the last
// token's instant: a second cut short by the end would understate it.
// Null when no whole second fits.
func peakOutput(rows []Request, lo, hi float64) *float64 {
	buckets := map[int]float64{}
	last := math.Inf(-1)
	for _, r := range rows {
		tokenInstants(r, func(t, w float64) {
			if t >= lo && t < hi {
				buckets[int(math.Floor(t-lo))] += w
			}
			last = math.Max(last, t)
		})
	}
	hi = math.Min(hi, last)
	var p *float64
	for b, v := range buckets {
		if lo+float64(b+1) <= hi && (p == nil || v > *p) {
			p = finite(v)
		}
	}
	return p
}

// achievedRate is the rate at which the rows went out: (n − 1) over the
// span from the first send to the last; null with fewer than two.
func achievedRate(rows []Request) *float64 {
	var sends []float64
	for _, r := range rows {
		if r.DoneS > r.SendOffsetS && r.SendOffsetS >= 0 {
			sends = append(sends, r.SendOffsetS)
		}
	}
	if len(sends) < 2 {
		return nil
	}
	span := slices.Max(sends) - slices.Min(sends)
	if span <= 0 {
		return nil
	}
	return finite(float64(len(sends)-1) / span)
}

// setSteady sets the whole run's peak output throughput and achieved rate
// and its Steady figures over the window picked under traffic t. A run
// that has none says why in DriverWarnings, unless it could not have had
// one: a burst, every request at once with no cap, fewer than
// minSteadyRequests requests in all.
func (s *Summary) setSteady(rows []Request, slo timing.SLO, t Traffic, ratio float64) {
	s.setPeaks(rows)
	if ratio <= 0 || ratio > 1 {
		ratio = steadyRatio
	}
	lo, hi, rule, k, why := steadyWindow(rows, t, ratio)
	if why == "" {
		s.Steady, why = steadySummary(rows, slo, lo, hi)
	}
	if s.Steady == nil {
		drains := t.Burst > 0 || (!t.Replay && t.Users == 0 && t.MaxConcurrency == 0 && math.IsInf(t.Rate, 1))
		if !drains && len(rows) >= minSteadyRequests {
			s.DriverWarnings = append(s.DriverWarnings, "no steady-state figures: "+why)
		}
		return
	}
	st := s.Steady
	st.SteadyRule, st.SteadyRatio, st.SteadyThreshold = rule, ratio, k
	st.Traffic, st.Scheduled = s.Traffic, st.Requests
	if s.DurationS > 0 && hi-lo < shortSteadyShare*s.DurationS {
		s.DriverWarnings = append(s.DriverWarnings, fmt.Sprintf("the steady-state window is %.3g s, %.0f %% of the run: its figures may not represent the run", hi-lo, 100*(hi-lo)/s.DurationS))
	}
}

// setPeaks sets the figures of the whole run that need the rows' instants.
func (s *Summary) setPeaks(rows []Request) {
	first := math.Inf(1)
	for _, r := range rows {
		if r.DoneS > r.SendOffsetS && r.SendOffsetS >= 0 {
			first = math.Min(first, r.SendOffsetS)
		}
	}
	if !math.IsInf(first, 1) {
		s.PeakOutputThroughput = peakOutput(rows, first, math.Inf(1))
	}
	s.AchievedRate = achievedRate(rows)
}

// resteady recomputes the steady figures of old's window over rows (a
// LoadRun summarised again): the window stays the one the run picked.
func resteady(old *Summary, rows []Request, slo timing.SLO) *Summary {
	if old == nil || old.WindowStartS == nil || old.WindowEndS == nil {
		return nil
	}
	st, _ := steadySummary(rows, slo, *old.WindowStartS, *old.WindowEndS)
	if st != nil {
		st.SteadyRule, st.SteadyRatio, st.SteadyThreshold, st.Traffic = old.SteadyRule, old.SteadyRatio, old.SteadyThreshold, old.Traffic
	}
	return st
}

// steadySummary is the summary of the window [lo, hi) of a run's rows:
// the requests that started in it (their latencies, goodput, counts and
// input tokens), the output tokens that arrived in it, the requests that
// completed in it, and the peaks within it, every rate over hi − lo. It
// is null, with the reason, when fewer than minSteadyRequests started in
// it.
func steadySummary(rows []Request, slo timing.SLO, lo, hi float64) (*Summary, string) {
	length := hi - lo
	var in []Request
	for _, r := range rows {
		if r.SendOffsetS >= lo && r.SendOffsetS < hi {
			in = append(in, r)
		}
	}
	if len(in) < minSteadyRequests || length <= 0 {
		return nil, fmt.Sprintf("the window [%.3f s, %.3f s) saw %d requests start, fewer than %d", lo, hi, len(in), minSteadyRequests)
	}
	s := summarize(in, ByRun, slo)
	s.Warnings = nil // the whole run's say it
	s.DurationS = length
	s.WindowStartS, s.WindowEndS = &lo, &hi
	var out float64
	done := 0
	for _, r := range rows {
		tokenInstants(r, func(t, w float64) {
			if t >= lo && t < hi {
				out += w
			}
		})
		if !r.Failed() && r.DoneS >= lo && r.DoneS < hi {
			done++
		}
	}
	s.TotalOutputTokens = int(math.Round(out))
	s.OutputThroughput = finite(out / length)
	s.TotalThroughput = finite((float64(s.TotalInputTokens) + out) / length)
	s.RequestThroughput = finite(float64(done) / length)
	s.AchievedRate = finite(float64(len(in)) / length)
	if s.Goodput != nil {
		s.Goodput.RateRPS = finite(float64(s.Goodput.Good) / length)
	}
	steps := inFlight(rows)
	for _, st := range steps {
		if st.t1 > lo && st.t0 < hi {
			s.PeakInFlight = max(s.PeakInFlight, st.n)
		}
	}
	s.PeakOutputThroughput = peakOutput(rows, lo, hi)
	return &s, ""
}

// steadyLine is the table line of a run's steady-state figures, under
// the run's own line: each column of head that a steady figure fills,
// the others blank.
func steadyLine(head []string, st Summary) []string {
	line := make([]string, len(head))
	for i, h := range head {
		switch h {
		case "traffic":
			line[i] = "↳ steady"
		case "ok/sent":
			line[i] = fmt.Sprintf("%d/%d", st.Completed, st.Requests)
		case "dur s":
			line[i] = fmt.Sprintf("%.2f", st.DurationS)
		case "req/s":
			line[i] = num(st.RequestThroughput, 2)
		case "out tok/s":
			line[i] = num(st.OutputThroughput, 1)
		case "ttft ms mean/p50/p99":
			line[i] = ms(st.TTFT.Mean) + "/" + ms(st.TTFT.P50) + "/" + ms(st.TTFT.P99)
		case "tpot ms mean/p50/p99":
			line[i] = ms(st.TPOT.Mean) + "/" + ms(st.TPOT.P50) + "/" + ms(st.TPOT.P99)
		case "itl ms p50/p99":
			line[i] = ms(st.ITL.P50) + "/" + ms(st.ITL.P99)
		case "e2e ms p50/p99":
			line[i] = ms(st.E2E.P50) + "/" + ms(st.E2E.P99)
		case "goodput":
			line[i] = goodCol(st)
		case "skew ms p99":
			line[i] = ms(st.DispatchSkew.P99)
		case "lag ms p99":
			line[i] = ms(st.ScheduleLag.P99)
		case "thinking":
			line[i] = thinkingCol(st)
		case "cache hit % (server/workload)":
			line[i] = hitRate(st.PrefixHitRate, st.TheoreticalHitRate)
		case "ttfa ms mean/p50/p99":
			line[i] = ms(st.TTFA.Mean) + "/" + ms(st.TTFA.P50) + "/" + ms(st.TTFA.P99)
		case "think/answer tok mean":
			line[i] = num(st.ReasoningTokens.Mean, 0) + "/" + num(st.AnswerTokens.Mean, 0)
		case "tpot answer ms p50/p99":
			line[i] = ms(st.TPOTAnswer.P50) + "/" + ms(st.TPOTAnswer.P99)
		}
	}
	return line
}

// withSteady adds a run's steady line under its own, and its note, when
// it has steady figures; prefix names the run in the note.
func withSteady(lines [][]string, notes, head []string, s Summary, prefix string) ([][]string, []string) {
	if s.Steady == nil {
		return lines, notes
	}
	return append(lines, steadyLine(head, *s.Steady)), append(notes, prefix+steadyNote(s))
}

// steadyNote says where a run's steady-state window lies and the peaks
// and achieved rate beside the whole run's.
func steadyNote(s Summary) string {
	st := s.Steady
	return fmt.Sprintf("steady window [%.2f s, %.2f s) (%s, ≥ %d in flight): achieved %s req/s (run %s), peak %d in flight (run %d), peak output %s tok/s (run %s)",
		*st.WindowStartS, *st.WindowEndS, st.SteadyRule, st.SteadyThreshold,
		num(st.AchievedRate, 2), num(s.AchievedRate, 2), st.PeakInFlight, s.PeakInFlight,
		num(st.PeakOutputThroughput, 0), num(s.PeakOutputThroughput, 0))
}
