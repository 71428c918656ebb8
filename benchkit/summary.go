package benchkit

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferbench/inferbench/timing"
	"gonum.org/v1/gonum/stat"
)

// ConfidenceLevel is the level of the repeat-level intervals in a
// CellSummary.
const ConfidenceLevel = 0.95

// A PlacementKey names the placement rows were measured on: exo's
// sharding, instance kind and node count, the three things a sweep varies
// between placements. Rows of different placements are different
// measurements and are never summarised together. The zero key means rows
// with no placement (an engine that has none, such as an OpenAI-compatible
// server).
type PlacementKey struct {
	// Sharding and InstanceMeta are exo's labels ("Pipeline", "MlxRing"),
	// as the rows carry them.
	Sharding, InstanceMeta string
	// Nodes is the placement's node count.
	Nodes int
}

// PlacementOf returns the placement the row was measured on.
func PlacementOf(r Row) PlacementKey {
	return PlacementKey{Sharding: r.PlacementSharding, InstanceMeta: r.PlacementInstanceMeta, Nodes: r.PlacementNodes}
}

// IsZero reports whether k names no placement.
func (k PlacementKey) IsZero() bool { return k == PlacementKey{} }

// String formats k as "<sharding>-<instance kind>-<nodes>n" in lower case
// with exo's "Mlx" prefix dropped: "pipeline-ring-2n", "tensor-jaccl-4n".
// It is the value of the placement= key of benchfmt names and the label of
// table lines and plot series. The zero key formats as "".
func (k PlacementKey) String() string {
	if k.IsZero() {
		return ""
	}
	part := func(s string) string {
		s = strings.ToLower(strings.TrimPrefix(s, "Mlx"))
		s = strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' {
				return r
			}
			return '_'
		}, s)
		if s == "" {
			return "none"
		}
		return s
	}
	return part(k.Sharding) + "-" + part(k.InstanceMeta) + "-" + strconv.Itoa(k.Nodes) + "n"
}

// A CellSummary aggregates the rows of one cell of one placement over its
// repeats. Each figure is first computed per repeat (one burst), then
// summarised across repeats as a Student-t interval
// (timing.ConfidenceInterval at ConfidenceLevel): the repeats, not the
// requests of a burst, are the independent samples.
type CellSummary struct {
	// Placement is the placement the rows ran on (zero without one);
	// Cell the plan's cell.
	Placement PlacementKey
	Cell      Cell
	// Repeats is the number of repeats seen; Requests and Failed count
	// rows.
	Repeats, Requests, Failed int
	// PromptTPS is the per-repeat mean of the server's prompt_tps.
	PromptTPS timing.Interval
	// GenerationTPS is the per-repeat mean of the per-request generation
	// rates (server generation_tps, else the client's).
	GenerationTPS timing.Interval
	// ExoAggregateTPS is exo's per-repeat max(per-request generation TPS)
	// × N.
	ExoAggregateTPS timing.Interval
	// ThroughputTPS is the per-repeat Σ generated tokens / burst wall time
	// (the largest elapsed_s of the burst).
	ThroughputTPS timing.Interval
	// TTFTS is the per-repeat mean client TTFT in seconds (streamed rows
	// only; N = 0 otherwise).
	TTFTS timing.Interval
	// PeakMemoryBytes is the largest peak memory any row reported.
	PeakMemoryBytes int64
	// EnergyJ is the per-repeat client energy (a shared burst window
	// counted once); JPerToken is that divided by the repeat's generated
	// tokens. N = 0 without energy.
	EnergyJ, JPerToken timing.Interval
	// EnergyWindowShort is true when some repeat's client energy window
	// was shorter than ShortWindowFactor sample intervals (its rows carry
	// energy_window_short); ShortWindowS is the shortest such window and
	// SampleIntervalS the samples' resolution. Tables then leave the
	// client figure out.
	EnergyWindowShort             bool
	ShortWindowS, SampleIntervalS float64
	// ServerEnergyJ is the per-repeat energy the server reported (exo's
	// power_usage.total_energy_joules, every node of the cluster, over a
	// request's own span): for a burst, that of its longest request,
	// whose span covers the others' (they share the release).
	// ServerJPerToken is that divided by the repeat's generated tokens.
	// N = 0 when the server reported none (streamed responses, engines
	// other than exo).
	ServerEnergyJ, ServerJPerToken timing.Interval
	// ServerPrefillS is the per-repeat mean of the server's prefill time,
	// prompt_tokens / prompt_tps, in seconds: the server's own view of the
	// time to first token, without queueing or the network.
	ServerPrefillS timing.Interval
	// Warnings gathers the rows' warnings, each once, and the summary's
	// own (too few repeats for an interval).
	Warnings []string
}

// burstFigures are the figures of one repeat of a cell (one burst).
// Undefined ones are NaN.
type burstFigures struct {
	burst     timing.BurstStats
	ok        int     // successful requests
	promptTPS float64 // mean server prompt_tps
	ttftS     float64 // mean client TTFT
	e2eS      float64 // mean elapsed_s of the successful requests
	energyJ   float64 // client energy, a shared window counted once
	jPerTok   float64 // energyJ / Σ generated tokens
	ppTokens  int     // the verified prompt length (the first row's)
	// serverJ is the server energy of the burst's longest request;
	// serverJPerTok that over the burst's tokens; prefillS the mean
	// server prefill time.
	serverJ, serverJPerTok, prefillS float64
	short                            bool // the client window is short
	windowS, intervalS               float64
}

// figuresOf computes the figures of one burst's rows.
func figuresOf(rows []Row) burstFigures {
	var reqs []timing.BurstRequest
	var pts, ttfts, e2es []float64
	f := burstFigures{energyJ: math.NaN(), jPerTok: math.NaN(), serverJ: math.NaN(), serverJPerTok: math.NaN()}
	var prefills []float64
	longest := -1.0
	wall := 0.0
	energyJ, haveEnergy, sharedDone := 0.0, false, false
	for _, r := range rows {
		wall = max(wall, r.ElapsedS)
		if f.ppTokens == 0 {
			f.ppTokens = r.PPTokens
		}
		if r.Failed() {
			reqs = append(reqs, timing.BurstRequest{Failed: true})
			continue
		}
		f.ok++
		rate, ok := rowGenerationTPS(r)
		reqs = append(reqs, timing.BurstRequest{Tokens: r.generatedTokens(), GenerationTPS: rate, RateDefined: ok})
		if r.Stats != nil && r.Stats.PromptTPS > 0 {
			pts = append(pts, r.Stats.PromptTPS)
		}
		if r.TTFTS != nil {
			ttfts = append(ttfts, *r.TTFTS)
		}
		e2es = append(e2es, r.ElapsedS)
		if pu := r.PowerUsage; pu != nil && pu.ElapsedSeconds > longest && pu.TotalEnergyJoules > 0 {
			longest, f.serverJ = pu.ElapsedSeconds, pu.TotalEnergyJoules
		}
		if st := r.Stats; st != nil && st.PromptTPS > 0 && st.PromptTokens > 0 {
			prefills = append(prefills, float64(st.PromptTokens)/st.PromptTPS)
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
	f.burst = timing.AggregateBurst(reqs, time.Duration(wall*float64(time.Second)))
	f.promptTPS, f.ttftS, f.e2eS = meanOrNaN(pts), meanOrNaN(ttfts), meanOrNaN(e2es)
	f.prefillS = meanOrNaN(prefills)
	if !math.IsNaN(f.serverJ) && f.burst.TotalTokens > 0 {
		f.serverJPerTok = f.serverJ / float64(f.burst.TotalTokens)
	}
	if haveEnergy {
		f.energyJ = energyJ
		if f.burst.TotalTokens > 0 {
			f.jPerTok = energyJ / float64(f.burst.TotalTokens)
		}
	}
	return f
}

func meanOrNaN(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	return stat.Mean(x, nil)
}

// groupRepeats splits a cell's rows by repeat index, in ascending order.
func groupRepeats(rows []Row) [][]Row {
	byRepeat := map[int][]Row{}
	for _, r := range rows {
		byRepeat[r.RepeatIndex] = append(byRepeat[r.RepeatIndex], r)
	}
	keys := make([]int, 0, len(byRepeat))
	for k := range byRepeat {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([][]Row, len(keys))
	for i, k := range keys {
		out[i] = byRepeat[k]
	}
	return out
}

// cellKey locates a cell of one placement.
type cellKey struct {
	placement PlacementKey
	cell      Cell
}

// name is the key as a benchfmt name suffix and a note prefix:
// "placement=pipeline-ring-2n/pp=512/tg=128/conc=1", or the cell alone
// without a placement.
func (k cellKey) name() string {
	if k.placement.IsZero() {
		return k.cell.String()
	}
	return "placement=" + k.placement.String() + "/" + k.cell.String()
}

// groupCells splits rows by placement and cell, in the order they first
// appear.
func groupCells(rows []Row) ([]cellKey, map[cellKey][]Row) {
	var order []cellKey
	byCell := map[cellKey][]Row{}
	for _, r := range rows {
		k := cellKey{PlacementOf(r), Cell{PP: r.PPTarget, TG: r.TG, Concurrency: r.Concurrency}}
		if _, ok := byCell[k]; !ok {
			order = append(order, k)
		}
		byCell[k] = append(byCell[k], r)
	}
	return order, byCell
}

// SummarizeCells groups rows by placement and cell, in the order they
// first appear, and aggregates each group: a sweep over several
// placements gets one summary per placement and cell, never one that
// mixes placements.
func SummarizeCells(rows []Row) []CellSummary {
	order, byCell := groupCells(rows)
	out := make([]CellSummary, 0, len(order))
	for _, k := range order {
		out = append(out, summarizeCell(k, byCell[k]))
	}
	return out
}

// Name is the summary's placement and cell as a benchfmt name suffix,
// "placement=pipeline-ring-2n/pp=512/tg=128/conc=1", or the cell alone
// ("pp=512/tg=128/conc=1") without a placement.
func (s CellSummary) Name() string { return cellKey{s.Placement, s.Cell}.name() }

func summarizeCell(k cellKey, rows []Row) CellSummary {
	s := CellSummary{Placement: k.placement, Cell: k.cell, Requests: len(rows)}
	seen := map[string]bool{}
	warn := func(w string) {
		if !seen[w] {
			seen[w] = true
			s.Warnings = append(s.Warnings, w)
		}
	}
	for _, r := range rows {
		if r.Failed() {
			s.Failed++
		}
		if r.Stats != nil && r.Stats.PeakMemoryBytes > s.PeakMemoryBytes {
			s.PeakMemoryBytes = r.Stats.PeakMemoryBytes
		}
		for _, w := range r.Warnings {
			warn(w)
		}
	}
	repeats := groupRepeats(rows)
	s.Repeats = len(repeats)
	var prompt, gen, exoAgg, thru, ttft, joules, jpt, sj, sjpt, prefill []float64
	add := func(dst *[]float64, v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			*dst = append(*dst, v)
		}
	}
	for _, b := range repeats {
		f := figuresOf(b)
		for _, w := range f.burst.Warnings {
			warn(w.Error())
		}
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
		if f.short && (!s.EnergyWindowShort || f.windowS < s.ShortWindowS) {
			s.EnergyWindowShort, s.ShortWindowS, s.SampleIntervalS = true, f.windowS, f.intervalS
		}
	}
	iv := func(x []float64) timing.Interval {
		if len(x) == 0 {
			nan := math.NaN()
			return timing.Interval{Center: nan, Lo: nan, Hi: nan, Confidence: ConfidenceLevel}
		}
		return timing.ConfidenceInterval(x, ConfidenceLevel)
	}
	s.PromptTPS, s.GenerationTPS, s.ExoAggregateTPS, s.ThroughputTPS = iv(prompt), iv(gen), iv(exoAgg), iv(thru)
	s.TTFTS, s.EnergyJ, s.JPerToken = iv(ttft), iv(joules), iv(jpt)
	s.ServerEnergyJ, s.ServerJPerToken, s.ServerPrefillS = iv(sj), iv(sjpt), iv(prefill)
	if s.Repeats < 2 {
		warn(fmt.Sprintf("only %d repeat: no confidence interval (use repeat ≥ 2)", s.Repeats))
	}
	return s
}

// rowGenerationTPS is the row's generation rate: the server's
// generation_tps when it reported a positive one, else the client's.
func rowGenerationTPS(r Row) (float64, bool) {
	if r.Stats != nil && r.Stats.GenerationTPS > 0 {
		return r.Stats.GenerationTPS, true
	}
	if r.ClientGenerationTPS != nil {
		return *r.ClientGenerationTPS, true
	}
	return 0, false
}

// generatedTokens is the row's generated tokens, 0 when they are null.
func (r Row) generatedTokens() int {
	if r.GeneratedTokens == nil {
		return 0
	}
	return *r.GeneratedTokens
}
