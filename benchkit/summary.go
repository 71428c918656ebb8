package benchkit

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferbench/inferbench/engine/metrics/view"
	"github.com/inferbench/inferbench/precision"
	"github.com/inferbench/inferbench/timing"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat"
)

const (
	// ConfidenceLevel is the level of a Summary's repeat-level
	// intervals.
	ConfidenceLevel = 0.95
	// DefaultSLOAttainment is the share of requests that must meet every
	// SLO objective for a run to meet its SLOs (DistServe's 90 %
	// attainment).
	DefaultSLOAttainment = 0.9
	// ShortWindowFactor is how many sample intervals a client energy
	// window must span for tables to show its figure: a shorter window
	// holds too few samples to resolve (a burst of 1.2 s against 1 s
	// samples).
	ShortWindowFactor = 3
)

// A Key says how Summarize groups requests.
type Key int

// The keys of Summarize.
const (
	// ByRun groups a load test's requests by run (Labels.Run): one
	// summary per rate of a sweep.
	ByRun Key = iota
	// ByCell groups a Runner's requests by placement, thinking setting
	// and (pp, tg, concurrency) cell: exo's per-cell summary, whose
	// figures are computed per repeat and then summarised over the
	// repeats.
	ByCell
	// ByPhase groups by phase (disaggregation), ByTurn by the turn of a
	// session, over every session.
	ByPhase
	ByTurn
)

// A Summary aggregates a group of requests (Summarize). Every group gets
// both kinds of figure:
//
//   - over its requests: counts, tokens, throughputs over the group's
//     duration (from its start instant to the end of its last request;
//     output Σ completion tokens / duration, total Σ (pp_tokens +
//     completion tokens) / duration, requests completed / duration),
//     latency quantiles (ITL pools every per-token gap), goodput, and the
//     schedule's lag and skew;
//   - for ByCell groups, over their repeats (bursts), as Student-t
//     intervals at ConfidenceLevel: the repeats, not the requests of one
//     burst, are the independent samples of a Runner's cell.
//
// Its JSON is a load test's summary; exo's per-cell record is written
// from the repeat-level figures (Document).
type Summary struct {
	// Key is how the group was formed, Labels its first request's, and
	// Cell its first request's cell.
	Key    Key    `json:"-"`
	Labels Labels `json:"-"`
	Cell   Cell   `json:"-"`
	// Thinking is the group's thinking setting (Labels.Thinking), ""
	// for none.
	Thinking string `json:"thinking,omitempty"`
	// Traffic describes the arrivals; RequestRate is the offered rate,
	// null when infinite or a burst.
	Traffic     string   `json:"traffic"`
	RequestRate *float64 `json:"request_rate"`
	// Probes summarises a load run's head-of-line probes
	// (Traffic.ProbeRate) apart from its requests: their TTFT and E2E
	// are how long the load made an unrelated one-token request wait.
	// Null without probes.
	Probes *Summary `json:"probes,omitempty"`
	// Scheduled counts the requests the schedule held; Requests those
	// measured (sent or failed), Completed and Failed split them.
	Scheduled int `json:"scheduled"`
	Requests  int `json:"requests"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// DurationS is the group's wall time in seconds.
	DurationS float64 `json:"duration_s"`
	// PeakInFlight is the most requests in flight at once.
	PeakInFlight int `json:"peak_in_flight"`

	// The steady state (docs/STEADY-STATE.md), set by a Load's run.
	// Steady holds the figures over the run's steady-state window (a
	// Summary of its own: its rates over the window's length, its
	// latencies over the requests that started in it); null, with a
	// warning, when the run has no window that means anything (a burst,
	// fewer than 10 requests started in it). On Steady, WindowStartS and
	// WindowEndS bound the window [start, end) in seconds from the run's
	// start, SteadyRule names the rule that picked it ("plateau",
	// "ramp_to_drain"), SteadyRatio is its ratio and SteadyThreshold the
	// in-flight count it held.
	Steady          *Summary `json:"steady_state,omitempty"`
	WindowStartS    *float64 `json:"window_start_s,omitempty"`
	WindowEndS      *float64 `json:"window_end_s,omitempty"`
	SteadyRule      string   `json:"steady_rule,omitempty"`
	SteadyRatio     float64  `json:"steady_ratio,omitempty"`
	SteadyThreshold int      `json:"steady_threshold,omitempty"`
	// PeakOutputThroughput is the most output tokens that arrived in
	// any whole second (tokens/s), counted from the first send (from the
	// window's start on Steady); AchievedRate the requests per second
	// that went out: (n − 1) over the span of the sends for the run,
	// those sent in the window over its length on Steady. Null where a
	// Load did not set them.
	PeakOutputThroughput *float64 `json:"peak_output_throughput_tok_s,omitempty"`
	AchievedRate         *float64 `json:"achieved_rate_rps,omitempty"`
	// Warmup counts the warm-up requests sent and dropped before the
	// run (Load.Warmup): in no row and no figure.
	Warmup int `json:"warmup,omitempty"`

	TotalInputTokens  int `json:"total_input_tokens"`
	TotalOutputTokens int `json:"total_output_tokens"`
	// CachedTokens sums the completed requests' server-reported cached
	// prompt tokens; PrefixHitRate is that over all their server-counted
	// prompt tokens (SGLang's cache_hit_rate), null when no request
	// reported a cached count. A request without a count adds 0 cached:
	// vLLM's chat endpoint reports the count only when it is positive. TheoreticalHitRate is the workload's own
	// (a trace's shared leading blocks over its input tokens), set by the
	// driver that knows it; null otherwise.
	CachedTokens       int      `json:"cached_tokens"`
	PrefixHitRate      *float64 `json:"prefix_hit_rate"`
	TheoreticalHitRate *float64 `json:"theoretical_prefix_hit_rate,omitempty"`

	OutputThroughput  *float64 `json:"output_throughput_tok_s"`
	TotalThroughput   *float64 `json:"total_throughput_tok_s"`
	RequestThroughput *float64 `json:"request_throughput_rps"`

	TTFT Quantiles `json:"ttft_s"`
	TPOT Quantiles `json:"tpot_s"`
	ITL  Quantiles `json:"itl_s"`
	E2E  Quantiles `json:"e2e_s"`

	// The figures of a model that reasons before it answers, over the
	// completed requests that have them (Request's of these names),
	// absent where none has: TTFA (every streamed request's: TTFT's for
	// one that did not reason), the time to the last reasoning token,
	// each side's TPOT, and the reasoning and answer tokens per request,
	// with their sums (TotalAnswerTokens over the requests whose answer
	// tokens are known). HiddenTokens sums the tokens the server counted
	// but never sent.
	TTFA                 Quantiles `json:"ttfa_s,omitzero"`
	LastReasoning        Quantiles `json:"last_reasoning_s,omitzero"`
	TPOTAnswer           Quantiles `json:"tpot_answer_s,omitzero"`
	TPOTReasoning        Quantiles `json:"tpot_reasoning_s,omitzero"`
	ReasoningTokens      Quantiles `json:"reasoning_tokens,omitzero"`
	AnswerTokens         Quantiles `json:"answer_tokens,omitzero"`
	TotalReasoningTokens *int      `json:"total_reasoning_tokens,omitempty"`
	TotalAnswerTokens    *int      `json:"total_answer_tokens,omitempty"`
	HiddenTokens         int       `json:"hidden_tokens,omitempty"`

	// Goodput counts the requests that met every objective of the SLO;
	// null without objectives. MeetsSLO is whether its fraction reaches
	// DefaultSLOAttainment (null without objectives).
	Goodput  *Goodput `json:"goodput"`
	MeetsSLO *bool    `json:"meets_slo"`

	// DispatchSkew is the spread of the requests' lateness, skew_i =
	// lag_i − min_j lag_j with lag_i = send_i − intended_i, which for a
	// burst is the usual dispatch skew; ScheduleLag describes lag_i
	// (coordinated omission shows here).
	DispatchSkew Quantiles `json:"dispatch_skew_s"`
	ScheduleLag  Quantiles `json:"schedule_lag_s"`

	// Client is how well the load generator kept to its schedule (a
	// Load's run measures it); null where not measured.
	Client *ClientHealth `json:"client_health,omitempty"`
	// Server is the server's own view of the run from its /metrics
	// (Load.ServerMetrics), with the client's means beside it; null when
	// not scraped. Its warnings stay in it, not in Warnings: the table's
	// notes and WriteServerView print them, once.
	Server *view.View `json:"server,omitempty"`
	// Responses summarises the server's own timings of each response
	// (Ollama, llama.cpp, TGI), beside the client's; null when no
	// response carried any.
	Responses *ResponseTimings `json:"server_timings,omitempty"`

	// Dialed counts the requests that waited for a new connection
	// (connect_s set); FirstShared those whose first content chunk shared
	// its read with the next (their TTFT is an upper bound).
	Dialed      int `json:"dialed"`
	FirstShared int `json:"first_chunk_shared"`

	// Interrupted is true when the group's run stopped before its
	// schedule was done.
	Interrupted bool `json:"interrupted,omitempty"`
	// Precision is each target margin of error asked of the group
	// (Load.Until, Plan.Until) checked: for a load run stopped at its
	// targets, the check that stopped it (over the requests complete
	// then: each result's N; those in flight finished after it and are
	// in the other figures), else over all the group's samples. Stopped
	// says what ended it: "target met" (every target met, the
	// rest of the schedule or the repeats left), "cap reached" (the
	// schedule or MaxRepeat done with a target not met) or
	// "interrupted". Both are empty without targets.
	Precision []precision.Result `json:"precision,omitempty"`
	Stopped   string             `json:"stopped,omitempty"`
	// Warnings say what limits the figures.
	Warnings []string `json:"warnings,omitempty"`

	// The repeat-level figures: each computed per repeat (one burst),
	// then summarised over the Repeats as an interval.
	Repeats int `json:"-"`
	// PromptTPS is the mean server prompt_tps; GenerationTPS the mean of
	// the per-request generation rates (server generation_tps, else the
	// client's); ExoAggregateTPS exo's max(per-request rate) × N;
	// ThroughputTPS Σ generated tokens / burst wall time; RepeatTTFT the
	// mean client TTFT; ServerPrefillS the mean server prefill time,
	// prompt_tokens / prompt_tps.
	PromptTPS, GenerationTPS, ExoAggregateTPS, ThroughputTPS timing.Interval `json:"-"`
	RepeatTTFT, ServerPrefillS                               timing.Interval `json:"-"`
	// EnergyJ is the client energy (a shared burst window counted once)
	// and JPerToken that over the repeat's generated tokens;
	// ServerEnergyJ and ServerJPerToken the server's (exo's power_usage of
	// the burst's longest request, every node).
	EnergyJ, JPerToken, ServerEnergyJ, ServerJPerToken timing.Interval `json:"-"`
	// For a model that reasons: RepeatTTFA is the mean client TTFA;
	// RepeatReasoningTokens and RepeatAnswerTokens the mean reasoning
	// tokens (over the requests that reasoned) and answer tokens per
	// request; JPerAnswerToken and ServerJPerAnswerToken the energies
	// over the repeat's answer tokens alone, the thinking's cost in each
	// (n = 0 where some request's answer tokens are unknown).
	RepeatTTFA, RepeatReasoningTokens, RepeatAnswerTokens timing.Interval `json:"-"`
	JPerAnswerToken, ServerJPerAnswerToken                timing.Interval `json:"-"`
	// PeakMemoryBytes is the largest peak memory any request reported.
	PeakMemoryBytes int64 `json:"-"`
	// EnergyWindowShort is true when some repeat's client energy window
	// was shorter than ShortWindowFactor sample intervals; ShortWindowS
	// is the shortest such window, SampleIntervalS the samples'
	// resolution. Tables then leave the client figure out.
	EnergyWindowShort             bool    `json:"-"`
	ShortWindowS, SampleIntervalS float64 `json:"-"`

	// DriverWarnings are those of the Warnings that the driver that ran
	// the group gave (a schedule's, an interruption's), which no request
	// holds: what LoadRun.Resummarize keeps.
	DriverWarnings []string `json:"-"`
}

// Goodput is timing.Goodput in a results file.
type Goodput struct {
	// SLO is the objectives, e.g. "ttft≤500ms tpot≤50ms".
	SLO string `json:"slo"`
	// Good requests met every objective out of Total (failed included).
	Good  int `json:"good"`
	Total int `json:"total"`
	// Fraction is Good / Total; RateRPS is Good / duration.
	Fraction *float64 `json:"fraction"`
	RateRPS  *float64 `json:"rate_rps"`
}

// Name is the summary's group as a benchfmt name suffix and a note
// prefix: "placement=pipeline-ring-2n/thinking=off/pp=512/tg=128/conc=1"
// (the placement and thinking parts only with one) for ByCell, "run=0",
// "phase=…" or "turn=2" for the others.
func (s Summary) Name() string {
	switch s.Key {
	case ByCell:
		name := s.Cell.String()
		if th := s.Labels.Thinking; th != "" {
			name = "thinking=" + th + "/" + name
		}
		if p := s.Labels.Placement.String(); p != "" {
			name = "placement=" + p + "/" + name
		}
		return name
	case ByPhase:
		return "phase=" + s.Labels.Phase
	case ByTurn:
		return "turn=" + strconv.Itoa(s.Labels.Turn)
	}
	return "run=" + strconv.Itoa(s.Labels.Run)
}

// of is the group of r under k.
func (k Key) of(r Request) string {
	switch k {
	case ByCell:
		return r.Placement.String() + "|" + r.Thinking + "|" + r.Cell().String()
	case ByPhase:
		return r.Phase
	case ByTurn:
		return strconv.Itoa(r.Turn)
	}
	return strconv.Itoa(r.Run)
}

// Summarize groups reqs by key, in the order the groups first appear, and
// summarises each against slo (goodput; none without objectives). It uses
// nothing but the requests, so requests read back from a file summarise
// the same way; what only a driver knows (the traffic, the schedule's
// size, the client's health) it leaves for the driver. A sweep over
// several placements gets one ByCell summary per placement and cell,
// never one that mixes placements.
func Summarize(reqs []Request, key Key, slo timing.SLO) []Summary {
	groups := groupBy(reqs, key)
	out := make([]Summary, 0, len(groups))
	for _, g := range groups {
		out = append(out, summarize(g, key, slo))
	}
	return out
}

// groupBy splits reqs by key, in the order the groups first appear.
func groupBy(reqs []Request, key Key) [][]Request {
	var order []string
	groups := map[string][]Request{}
	for _, r := range reqs {
		k := key.of(r)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([][]Request, len(order))
	for i, k := range order {
		out[i] = groups[k]
	}
	return out
}

func summarize(reqs []Request, key Key, slo timing.SLO) Summary {
	reqs = withoutProbes(reqs)
	s := Summary{Key: key}
	if len(reqs) > 0 {
		s.Labels, s.Cell = reqs[0].Labels, reqs[0].Cell()
		s.Thinking = s.Labels.Thinking
	}
	s.overRequests(reqs, slo)
	s.Responses = responseTimings(reqs, s)
	if key == ByCell {
		s.overRepeats(reqs)
	}
	s.Warnings = append(s.Warnings, requestWarnings(reqs, s.Completed, key != ByCell)...)
	if key == ByCell {
		s.Warnings = append(s.Warnings, s.repeatWarnings(reqs)...)
	} else if unstreamed := countIf(reqs, func(r Request) bool { return !r.Failed() && !r.Stream }); unstreamed > 0 && slo.TTFT+slo.TTFA+slo.TPOT+slo.ITL > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d requests were not streamed: they have no TTFT, TTFA, TPOT or ITL and cannot meet objectives on them", unstreamed))
	}
	if key != ByCell && len(reqs) > 0 && countIf(reqs, func(r Request) bool { return r.TGTarget == 1 }) == len(reqs) {
		s.Warnings = append(s.Warnings, tg1Note)
	}
	return s
}

// overRequests computes the figures over the group's requests.
func (s *Summary) overRequests(reqs []Request, slo timing.SLO) {
	s.Requests = len(reqs)
	var ttft, tpot, itl, e2e, lags []float64
	var metrics []timing.Metrics
	var sides sideSamples
	var wall float64
	cachedPrompt, reported := 0, false
	for _, r := range reqs {
		wall = math.Max(wall, r.DoneS)
		if r.ConnectS != nil {
			s.Dialed++
		}
		if r.FirstShared {
			s.FirstShared++
		}
		if r.Rate != nil && s.RequestRate == nil {
			v := *r.Rate
			s.RequestRate = &v
		}
		if r.Failed() {
			s.Failed++
			continue
		}
		s.Completed++
		lags = append(lags, r.SendOffsetS-r.IntendedSendS)
		s.TotalInputTokens += r.PPTokens
		s.TotalOutputTokens += r.Tokens()
		if r.CachedTokens != nil {
			reported = true
			s.CachedTokens += *r.CachedTokens
		}
		if r.ServerPromptTokens != nil {
			cachedPrompt += *r.ServerPromptTokens
		} else {
			cachedPrompt += r.PPTokens
		}
		appendDefined(&ttft, r.TTFTS)
		appendDefined(&tpot, r.TPOTS)
		appendDefined(&e2e, r.E2ES)
		itl = append(itl, r.ITLS...)
		metrics = append(metrics, r.Metrics())
		sides.add(r)
	}
	sides.set(s)
	if reported && cachedPrompt > 0 {
		s.PrefixHitRate = finite(float64(s.CachedTokens) / float64(cachedPrompt))
	}
	s.DurationS = wall
	if wall > 0 {
		s.OutputThroughput = finite(float64(s.TotalOutputTokens) / wall)
		s.TotalThroughput = finite(float64(s.TotalInputTokens+s.TotalOutputTokens) / wall)
		s.RequestThroughput = finite(float64(s.Completed) / wall)
	}
	s.TTFT, s.TPOT, s.ITL, s.E2E = withIntervals(ttft), withIntervals(tpot), withIntervals(itl), withIntervals(e2e)
	s.ScheduleLag = withIntervals(lags)
	if len(lags) > 0 {
		lo := slices.Min(lags)
		skew := make([]float64, len(lags))
		for i, g := range lags {
			skew[i] = g - lo
		}
		s.DispatchSkew = withIntervals(skew)
	}
	if slo != (timing.SLO{}) {
		g := timing.ComputeGoodput(slo, metrics, s.Failed, seconds(wall))
		s.Goodput = &Goodput{SLO: slo.String(), Good: g.Good, Total: g.Total, Fraction: finite(g.Fraction), RateRPS: finite(g.Rate)}
		meets := g.Total > 0 && g.Fraction >= DefaultSLOAttainment
		s.MeetsSLO = &meets
	}
}

// sideSamples gathers the figures of the two sides (reasoning and
// answer) over a group's completed requests.
type sideSamples struct {
	ttfa, last, tpotA, tpotR, reasoning, answer []float64
	// The sums of the counts and the hidden tokens, saturating: rows
	// read back from a file may hold any count.
	sumReasoning, sumAnswer, hidden int
}

// addSat returns a + b, held within the ints when it overflows.
func addSat(a, b int) int {
	switch {
	case b > 0 && a > math.MaxInt-b:
		return math.MaxInt
	case b < 0 && a < math.MinInt-b:
		return math.MinInt
	}
	return a + b
}

func (x *sideSamples) add(r Request) {
	appendDefined(&x.ttfa, r.TTFAS)
	appendDefined(&x.last, r.LastReasoningS)
	appendDefined(&x.tpotA, r.TPOTAnswerS)
	appendDefined(&x.tpotR, r.TPOTReasoningS)
	if r.ReasoningTokens != nil {
		x.reasoning = append(x.reasoning, float64(*r.ReasoningTokens))
		x.sumReasoning = addSat(x.sumReasoning, *r.ReasoningTokens)
	}
	if r.AnswerTokens != nil {
		x.answer = append(x.answer, float64(*r.AnswerTokens))
		x.sumAnswer = addSat(x.sumAnswer, *r.AnswerTokens)
	}
	x.hidden = addSat(x.hidden, r.HiddenTokens)
}

// set writes the figures into s: quantiles, and sums where a request had
// the count.
func (x *sideSamples) set(s *Summary) {
	s.TTFA, s.LastReasoning = withIntervals(x.ttfa), quantiles(x.last)
	s.TPOTAnswer, s.TPOTReasoning = withIntervals(x.tpotA), quantiles(x.tpotR)
	s.ReasoningTokens, s.AnswerTokens = quantiles(x.reasoning), quantiles(x.answer)
	sum := func(v []float64, n int) *int {
		if len(v) == 0 {
			return nil
		}
		return &n
	}
	s.TotalReasoningTokens, s.TotalAnswerTokens = sum(x.reasoning, x.sumReasoning), sum(x.answer, x.sumAnswer)
	s.HiddenTokens = x.hidden
}

func appendDefined(dst *[]float64, v *float64) {
	if v != nil {
		*dst = append(*dst, *v)
	}
}

func countIf[T any](xs []T, f func(T) bool) int {
	n := 0
	for _, r := range xs {
		if f(r) {
			n++
		}
	}
	return n
}

// requestWarnings are what the group's request warnings and errors say:
// counted by code for the codes that recur, each other message once.
// withFailed adds the count of failures (a cell's table has a column for
// it instead).
func requestWarnings(reqs []Request, completed int, withFailed bool) []string {
	var out []string
	failed := countIf(reqs, Request.Failed)
	if failed > 0 && withFailed {
		kinds := map[string]int{}
		for _, r := range reqs {
			if r.Failed() {
				k := r.ErrorKind
				if k == "" {
					k = "error"
				}
				kinds[k]++
			}
		}
		ks := make([]string, 0, len(kinds))
		for k, n := range kinds {
			ks = append(ks, fmt.Sprintf("%d %s", n, k))
		}
		slices.Sort(ks)
		out = append(out, fmt.Sprintf("%d of %d requests failed (%s); their rows say why", failed, len(reqs), strings.Join(ks, ", ")))
	}
	code := func(c string) int {
		return countIf(reqs, func(r Request) bool { return !r.Failed() && r.HasWarning(c) })
	}
	if n := code(WarnPromptMismatch); n > 0 {
		out = append(out, fmt.Sprintf("%d of %d requests: the server's prompt_tokens differ from the client's pp_tokens; the client's tokenizer or chat template is not the engine's", n, completed))
	}
	if n := code(WarnShortGeneration); n > 0 {
		out = append(out, fmt.Sprintf("%d of %d requests generated fewer completion tokens than asked", n, completed))
	}
	if n := code(WarnReasoningMismatch); n > 0 {
		out = append(out, fmt.Sprintf("%d of %d requests: the stream's reasoning tokens differ from the server's reasoning_tokens (each row has both: reasoning_tokens, server_reasoning_tokens); the adapter did not tell the server's reasoning from its answer, or the server counts otherwise", n, completed))
	}
	if n := countIf(reqs, func(r Request) bool { return r.ConnectS != nil }); n > 0 {
		out = append(out, fmt.Sprintf("new connections: %d of %d requests waited for a new connection (connect_s): the dial delayed their send (schedule lag) but is not in their ttft_s, which vLLM's benchmark would count it in; the server may also be slower on a connection's first request", n, len(reqs)))
	}
	if n := countIf(reqs, func(r Request) bool { return r.FirstShared }); n > 0 {
		out = append(out, fmt.Sprintf("first chunks shared a read: %d of %d requests received their first content chunk in one read with the next (first_chunk_shared): the server sent them together, or the client read the first only after the second arrived; their ttft_s is an upper bound", n, len(reqs)))
	}
	seen := map[string]bool{}
	for _, r := range reqs {
		for _, w := range r.Warnings {
			switch w.Code {
			case WarnPromptMismatch, WarnShortGeneration, WarnClientCounted, WarnReasoningMismatch:
				continue
			}
			if !seen[w.Message] {
				seen[w.Message] = true
				out = append(out, w.Message)
			}
		}
	}
	return out
}

// burstFigures are the figures of one repeat of a cell (one burst).
// Undefined ones are NaN.
type burstFigures struct {
	burst     timing.BurstStats
	ok        int     // successful requests
	promptTPS float64 // mean server prompt_tps
	ttftS     float64 // mean client TTFT
	e2eS      float64 // mean end offset of the successful requests
	energyJ   float64 // client energy, a shared window counted once
	jPerTok   float64 // energyJ / Σ generated tokens
	ppTokens  int     // the verified prompt length (the first request's)
	// serverJ is the server energy of the burst's longest request;
	// serverJPerTok that over the burst's tokens; prefillS the mean
	// server prefill time.
	serverJ, serverJPerTok, prefillS float64
	short                            bool // the client window is short
	windowS, intervalS               float64
	// ttfaS is the mean client TTFA, reasoningTok and answerTok the mean
	// reasoning tokens (of the requests that reasoned) and answer tokens;
	// jPerAnswer and serverJPerAnswer the energies over the answer tokens,
	// NaN unless every successful request's are known.
	ttfaS, reasoningTok, answerTok, jPerAnswer, serverJPerAnswer float64
}

// figuresOf computes the figures of one burst's requests.
func figuresOf(reqs []Request) burstFigures {
	var rates []timing.BurstRequest
	var pts, ttfts, e2es, prefills, ttfas, reasoning, answer []float64
	f := burstFigures{energyJ: math.NaN(), jPerTok: math.NaN(), serverJ: math.NaN(), serverJPerTok: math.NaN()}
	longest, wall := -1.0, 0.0
	energyJ, haveEnergy, sharedDone := 0.0, false, false
	for _, r := range reqs {
		wall = max(wall, r.DoneS)
		if f.ppTokens == 0 {
			f.ppTokens = r.PPTokens
		}
		if r.Failed() {
			rates = append(rates, timing.BurstRequest{Failed: true})
			continue
		}
		f.ok++
		rate, ok := generationTPS(r)
		rates = append(rates, timing.BurstRequest{Tokens: r.Tokens(), GenerationTPS: rate, RateDefined: ok})
		if st := r.Stats; st != nil && st.PromptTPS > 0 {
			pts = append(pts, st.PromptTPS)
			if st.PromptTokens > 0 {
				prefills = append(prefills, float64(st.PromptTokens)/st.PromptTPS)
			}
		}
		appendDefined(&ttfts, r.TTFTS)
		appendDefined(&ttfas, r.TTFAS)
		if r.ReasoningTokens != nil {
			reasoning = append(reasoning, float64(*r.ReasoningTokens))
		}
		if r.AnswerTokens != nil {
			answer = append(answer, float64(*r.AnswerTokens))
		}
		e2es = append(e2es, r.DoneS)
		if pu := r.PowerUsage; pu != nil && pu.ElapsedSeconds > longest && pu.TotalEnergyJoules > 0 {
			longest, f.serverJ = pu.ElapsedSeconds, pu.TotalEnergyJoules
		}
		if r.EnergyWindowShort && r.Energy != nil {
			f.short, f.windowS, f.intervalS = true, r.Energy.WindowS, r.Energy.SampleIntervalS
		}
		if r.Energy != nil && (!r.Energy.Shared || !sharedDone) {
			energyJ += r.Energy.Joules
			haveEnergy = true
			sharedDone = sharedDone || r.Energy.Shared
		}
	}
	f.burst = timing.AggregateBurst(rates, time.Duration(wall*float64(time.Second)))
	f.promptTPS, f.ttftS, f.e2eS, f.prefillS = meanOrNaN(pts), meanOrNaN(ttfts), meanOrNaN(e2es), meanOrNaN(prefills)
	if !math.IsNaN(f.serverJ) && f.burst.TotalTokens > 0 {
		f.serverJPerTok = f.serverJ / float64(f.burst.TotalTokens)
	}
	if haveEnergy {
		f.energyJ = energyJ
		if f.burst.TotalTokens > 0 {
			f.jPerTok = energyJ / float64(f.burst.TotalTokens)
		}
	}
	f.ttfaS, f.reasoningTok, f.answerTok = meanOrNaN(ttfas), meanOrNaN(reasoning), meanOrNaN(answer)
	f.jPerAnswer, f.serverJPerAnswer = math.NaN(), math.NaN()
	if total := floats.Sum(answer); len(answer) == f.ok && total > 0 {
		f.jPerAnswer, f.serverJPerAnswer = f.energyJ/total, f.serverJ/total
	}
	return f
}

// generationTPS is the request's generation rate: the server's
// generation_tps when it reported a positive one, else the client's.
func generationTPS(r Request) (float64, bool) {
	if r.Stats != nil && r.Stats.GenerationTPS > 0 {
		return r.Stats.GenerationTPS, true
	}
	if r.GenerationTPS != nil {
		return *r.GenerationTPS, true
	}
	return 0, false
}

func meanOrNaN(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	return stat.Mean(x, nil)
}

// byRepeat splits requests by repeat, in ascending order.
func byRepeat(reqs []Request) [][]Request {
	m := map[int][]Request{}
	for _, r := range reqs {
		m[r.Repeat] = append(m[r.Repeat], r)
	}
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([][]Request, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

// overRepeats computes the repeat-level figures.
func (s *Summary) overRepeats(reqs []Request) {
	for _, r := range reqs {
		if r.Stats != nil && r.Stats.PeakMemoryBytes > s.PeakMemoryBytes {
			s.PeakMemoryBytes = r.Stats.PeakMemoryBytes
		}
	}
	repeats := byRepeat(reqs)
	s.Repeats = len(repeats)
	var prompt, gen, exoAgg, thru, ttft, joules, jpt, sj, sjpt, prefill []float64
	var ttfa, reasoning, answer, jpa, sjpa []float64
	add := func(dst *[]float64, v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			*dst = append(*dst, v)
		}
	}
	for _, b := range repeats {
		f := figuresOf(b)
		add(&gen, f.burst.MeanTPS)
		add(&exoAgg, f.burst.ExoAggregateTPS)
		add(&thru, f.burst.ThroughputTPS)
		add(&prompt, f.promptTPS)
		add(&ttft, f.ttftS)
		add(&joules, f.energyJ)
		add(&jpt, f.jPerTok)
		add(&sj, f.serverJ)
		add(&sjpt, f.serverJPerTok)
		add(&prefill, f.prefillS)
		add(&ttfa, f.ttfaS)
		add(&reasoning, f.reasoningTok)
		add(&answer, f.answerTok)
		add(&jpa, f.jPerAnswer)
		add(&sjpa, f.serverJPerAnswer)
		if f.short && (!s.EnergyWindowShort || f.windowS < s.ShortWindowS) {
			s.EnergyWindowShort, s.ShortWindowS, s.SampleIntervalS = true, f.windowS, f.intervalS
		}
	}
	s.PromptTPS, s.GenerationTPS, s.ExoAggregateTPS, s.ThroughputTPS = interval(prompt), interval(gen), interval(exoAgg), interval(thru)
	s.RepeatTTFT, s.EnergyJ, s.JPerToken = interval(ttft), interval(joules), interval(jpt)
	s.ServerEnergyJ, s.ServerJPerToken, s.ServerPrefillS = interval(sj), interval(sjpt), interval(prefill)
	s.RepeatTTFA, s.RepeatReasoningTokens, s.RepeatAnswerTokens = interval(ttfa), interval(reasoning), interval(answer)
	s.JPerAnswerToken, s.ServerJPerAnswerToken = interval(jpa), interval(sjpa)
}

// repeatWarnings are a cell's burst aggregates' warnings, each once, and
// a note when it has too few repeats for an interval.
func (s *Summary) repeatWarnings(reqs []Request) []string {
	var out []string
	seen := map[string]bool{}
	for _, b := range byRepeat(reqs) {
		for _, w := range figuresOf(b).burst.Warnings {
			if m := w.Error(); !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	if s.Repeats < 2 {
		out = append(out, fmt.Sprintf("only %d repeat: no confidence interval (use repeat ≥ 2)", s.Repeats))
	}
	return out
}

func interval(x []float64) timing.Interval {
	if len(x) == 0 {
		nan := math.NaN()
		return timing.Interval{Center: nan, Lo: nan, Hi: nan, Confidence: ConfidenceLevel}
	}
	iv := timing.ConfidenceInterval(x, ConfidenceLevel)
	iv.Warnings = nil // what they say, the summary's own warnings say
	return iv
}

// Meets reports whether the group met its SLOs: at least attainment of
// its requests (failed ones included) met every objective. Without
// objectives every group with a completed request meets them.
func (s Summary) Meets(attainment float64) bool {
	if s.Goodput == nil {
		return s.Completed > 0
	}
	return s.Goodput.Total > 0 && s.Goodput.Fraction != nil && *s.Goodput.Fraction >= attainment
}
