package benchkit

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/inferbench/inferbench/timing"
)

// DefaultSLOAttainment is the share of requests that must meet every SLO
// objective for a run to meet its SLOs (DistServe's 90 % attainment).
const DefaultSLOAttainment = 0.9

// LatencyStats describe a sample of latencies in seconds: mean and
// percentiles by timing.Percentile (linear interpolation, numpy's
// default, as vLLM reports them). Undefined figures (no sample) are null.
type LatencyStats struct {
	N    int      `json:"n"`
	Mean *float64 `json:"mean"`
	P50  *float64 `json:"p50"`
	P90  *float64 `json:"p90"`
	P99  *float64 `json:"p99"`
	Max  *float64 `json:"max"`
}

func latencyStats(x []float64) LatencyStats {
	if len(x) == 0 {
		return LatencyStats{}
	}
	s := timing.Summarize(x)
	return LatencyStats{N: s.N, Mean: finite(s.Mean), P50: finite(s.P50), P90: finite(s.P90), P99: finite(s.P99), Max: finite(s.Max)}
}

// SpreadStats describe the dispatch skew of a run, in seconds.
type SpreadStats struct {
	P50 *float64 `json:"p50"`
	P99 *float64 `json:"p99"`
	Max *float64 `json:"max"`
}

// GoodputJSON is timing.Goodput in a results file.
type GoodputJSON struct {
	// SLO is the objectives, e.g. "ttft≤500ms tpot≤50ms".
	SLO string `json:"slo"`
	// Good requests met every objective out of Total (failed included).
	Good  int `json:"good"`
	Total int `json:"total"`
	// Fraction is Good / Total; RateRPS is Good / duration.
	Fraction *float64 `json:"fraction"`
	RateRPS  *float64 `json:"rate_rps"`
}

// LoadSummary aggregates a load run. Throughputs divide by the run's
// duration, from its start instant to the end of its last request:
//
//	output throughput  = Σ completion tokens / duration
//	total throughput   = Σ (pp_tokens + completion tokens) / duration
//	request throughput = completed requests / duration
//
// over the successful requests. Latency figures cover the successful
// requests that have them (TTFT, TPOT and ITL need streaming; ITL pools
// every per-token gap of every request).
type LoadSummary struct {
	// Traffic describes the arrivals; RequestRate is the offered rate,
	// null when infinite or a burst.
	Traffic     string   `json:"traffic"`
	RequestRate *float64 `json:"request_rate"`
	// Scheduled counts the requests the schedule held; Requests those
	// measured (sent or failed), Completed and Failed split them.
	Scheduled int `json:"scheduled"`
	Requests  int `json:"requests"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// DurationS is the run's wall time in seconds.
	DurationS float64 `json:"duration_s"`
	// PeakInFlight is the most requests in flight at once.
	PeakInFlight int `json:"peak_in_flight"`

	TotalInputTokens  int `json:"total_input_tokens"`
	TotalOutputTokens int `json:"total_output_tokens"`

	OutputThroughput  *float64 `json:"output_throughput_tok_s"`
	TotalThroughput   *float64 `json:"total_throughput_tok_s"`
	RequestThroughput *float64 `json:"request_throughput_rps"`

	TTFT LatencyStats `json:"ttft_s"`
	TPOT LatencyStats `json:"tpot_s"`
	ITL  LatencyStats `json:"itl_s"`
	E2E  LatencyStats `json:"e2e_s"`

	// Goodput counts the requests that met every objective of the SLO;
	// null without objectives. MeetsSLO is whether its fraction reaches
	// DefaultSLOAttainment (null without objectives).
	Goodput  *GoodputJSON `json:"goodput"`
	MeetsSLO *bool        `json:"meets_slo"`

	// DispatchSkew is the spread of the requests' lateness,
	//
	//	skew_i = lag_i − min_j lag_j,   lag_i = send_i − intended_i
	//
	// which for a burst (every intended instant 0) is the usual dispatch
	// skew, send_i − min_j send_j.
	DispatchSkew SpreadStats `json:"dispatch_skew_s"`
	// ScheduleLag describes lag_i = send_i − intended_i: how late
	// requests left compared with their schedule (coordinated omission
	// shows here).
	ScheduleLag LatencyStats `json:"schedule_lag_s"`

	// Client is how well the load generator kept to its schedule in this
	// run (schedule and dispatch lag, achieved rate, CPU over wall) and
	// whether it was the bottleneck (ClientHealth.Saturated); null where
	// not measured.
	Client *ClientHealth `json:"client_health,omitempty"`

	// Dialed counts the requests that waited for a new connection
	// (connect_s set): their dial is in their schedule lag, not their
	// TTFT, and a warning says so. A prewarmed run has none.
	Dialed int `json:"dialed"`
	// FirstShared counts the requests whose first content chunk shares
	// its instant with the next (LoadRow.FirstShared): their TTFT is an
	// upper bound, and a warning says so.
	FirstShared int `json:"first_chunk_shared"`

	// Interrupted is true when the run was stopped before its schedule
	// was done.
	Interrupted bool `json:"interrupted,omitempty"`
	// Warnings say what limits the figures.
	Warnings []string `json:"warnings,omitempty"`
}

// SummarizeLoad aggregates rows (one run's) against slo. It uses nothing
// but the rows, so a run read back from a file summarises the same way.
// The traffic fields and PeakInFlight are left for the caller.
func SummarizeLoad(rows []LoadRow, slo timing.SLO) LoadSummary {
	var s LoadSummary
	s.Requests = len(rows)
	var ttft, tpot, itl, e2e, lags []float64
	var metrics []timing.Metrics
	var wall float64
	mismatch, short, unstreamed := 0, 0, 0
	errKinds := map[string]int{}
	for _, r := range rows {
		wall = math.Max(wall, r.DoneS)
		if r.ConnectS != nil {
			s.Dialed++
		}
		if r.FirstShared {
			s.FirstShared++
		}
		if r.Failed() {
			s.Failed++
			k := r.ErrorKind
			if k == "" {
				k = "error"
			}
			errKinds[k]++
			continue
		}
		s.Completed++
		lags = append(lags, r.SendOffsetS-r.IntendedSendS)
		s.TotalInputTokens += r.PPTokens
		s.TotalOutputTokens += r.CompletionTokens
		if r.TTFTS != nil {
			ttft = append(ttft, *r.TTFTS)
		}
		if r.TPOTS != nil {
			tpot = append(tpot, *r.TPOTS)
		}
		if r.E2ES != nil {
			e2e = append(e2e, *r.E2ES)
		}
		itl = append(itl, r.ITLS...)
		if !r.Stream {
			unstreamed++
		}
		metrics = append(metrics, r.Metrics())
		for _, w := range r.Warnings {
			switch {
			case strings.HasPrefix(w, warnPromptMismatch):
				mismatch++
			case strings.HasPrefix(w, warnShort):
				short++
			}
		}
	}
	s.DurationS = wall
	if wall > 0 {
		s.OutputThroughput = finite(float64(s.TotalOutputTokens) / wall)
		s.TotalThroughput = finite(float64(s.TotalInputTokens+s.TotalOutputTokens) / wall)
		s.RequestThroughput = finite(float64(s.Completed) / wall)
	}
	s.TTFT, s.TPOT, s.ITL, s.E2E = latencyStats(ttft), latencyStats(tpot), latencyStats(itl), latencyStats(e2e)
	s.ScheduleLag = latencyStats(lags)
	if len(lags) > 0 {
		lo := slices.Min(lags)
		skew := make([]float64, len(lags))
		for i, g := range lags {
			skew[i] = g - lo
		}
		s.DispatchSkew = SpreadStats{P50: finite(timing.Percentile(skew, 50)), P99: finite(timing.Percentile(skew, 99)), Max: finite(slices.Max(skew))}
	}
	if slo != (timing.SLO{}) {
		g := timing.ComputeGoodput(slo, metrics, s.Failed, seconds(wall))
		s.Goodput = &GoodputJSON{SLO: slo.String(), Good: g.Good, Total: g.Total, Fraction: finite(g.Fraction), RateRPS: finite(g.Rate)}
		meets := g.Total > 0 && g.Fraction >= DefaultSLOAttainment
		s.MeetsSLO = &meets
	}
	if s.Failed > 0 {
		kinds := make([]string, 0, len(errKinds))
		for k, n := range errKinds {
			kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
		}
		slices.Sort(kinds)
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d of %d requests failed (%s); their rows say why", s.Failed, s.Requests, strings.Join(kinds, ", ")))
	}
	if mismatch > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d of %d requests: the server's prompt_tokens differ from the client's pp_tokens; the client's tokenizer or chat template is not the engine's", mismatch, s.Completed))
	}
	if short > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d of %d requests generated fewer completion tokens than asked", short, s.Completed))
	}
	if s.Dialed > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s: %d of %d requests waited for a new connection (connect_s): the dial delayed their send (schedule lag) but is not in their ttft_s, which vLLM's benchmark would count it in; the server may also be slower on a connection's first request", warnDialed, s.Dialed, s.Requests))
	}
	if s.FirstShared > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s: %d of %d requests received their first content chunk in one read with the next (first_chunk_shared): the server sent them together, or the client read the first only after the second arrived; their ttft_s is an upper bound", warnFirstShared, s.FirstShared, s.Requests))
	}
	if unstreamed > 0 && slo.TTFT+slo.TPOT+slo.ITL > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d requests were not streamed: they have no TTFT, TPOT or ITL and cannot meet objectives on them", unstreamed))
	}
	return s
}

// Meets reports whether the run met its SLOs: at least attainment of its
// requests (failed ones included) met every objective. Without objectives
// every run with a completed request meets them.
func (s LoadSummary) Meets(attainment float64) bool {
	if s.Goodput == nil {
		return s.Completed > 0
	}
	return s.Goodput.Total > 0 && s.Goodput.Fraction != nil && *s.Goodput.Fraction >= attainment
}

// ms formats seconds as milliseconds for tables; "-" when undefined.
func ms(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v*1e3)
}

func num(v *float64, prec int) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, *v)
}
