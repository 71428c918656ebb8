package report

import (
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/inferbench/inferbench/benchkit"
)

// A QwenDocument is the results file of the bench-qwen program (its
// --json-out): mini-sglang's online benchmark (bench_qwen.py), a trace's
// first rows replayed at several time scales one after another, with
// mini-sglang's own figures computed from each scale's records beside
// benchkit's.
type QwenDocument struct {
	// Program is "bench-qwen".
	Program string `json:"program"`
	// Trace names the trace replayed; Rows is how many of its first rows
	// each scale replays.
	Trace string `json:"trace"`
	Rows  int    `json:"rows"`
	// Scales are the time scales asked for, in order: at scale s a row
	// goes at the scale's start + LeadInS + s × its timestamp.
	Scales []float64 `json:"scales"`
	// LeadInS is when each scale's first request went, after the scale's
	// start, in seconds.
	LeadInS float64 `json:"lead_in_s"`
	// Runs holds one entry per scale measured, an interrupted one
	// included.
	Runs []QwenScale `json:"runs"`
}

// A QwenScale is one scale's results: the scale, mini-sglang's figures
// of its requests (nil when none has streamed timing) and benchkit's load
// test document of it, every request's row included.
type QwenScale struct {
	Scale float64               `json:"scale"`
	Mini  *MiniSGLang           `json:"minisglang"`
	Load  benchkit.LoadDocument `json:"load"`
}

// MiniSGLang are mini-sglang's figures of one run, as
// python/minisgl/benchmark/client.py's process_benchmark_results computes
// them from each request's instants ("tics"): the first the instant
// create() returned (the response headers), then one per SSE chunk.
//
//	deltas   = [tics[i+1] − tics[i] for each i]
//	TTFT     = deltas[0] of each request
//	TPOT     = deltas[1:] of every request, pooled
//	E2E      = tics[−1] − tics[0] of each request
//	duration = max of every tic − min of every tic
//	token/s  = Σ len(tics) / duration;  req/s = requests / duration
//
// Each distribution's avg is sum/len and its percentiles sorted[int(len·q)],
// not interpolated. TTFT and TPOT are in ms, E2E in s, as it prints them.
type MiniSGLang struct {
	Requests int            `json:"requests"`
	Tokens   int            `json:"num_tokens"`
	TTFTms   MiniSGLangDist `json:"ttft_ms"`
	TPOTms   MiniSGLangDist `json:"tpot_ms"`
	E2Es     MiniSGLangDist `json:"e2e_s"`
	// DurationS is the first tic of any request to the last tic of any.
	DurationS float64 `json:"duration_s"`
	TokensPS  float64 `json:"token_per_s"`
	ReqPS     float64 `json:"req_per_s"`
	// LeftOut counts the requests that have no tics: failed ones, whose
	// exception would have ended mini-sglang's run, and any without
	// streamed timing.
	LeftOut int `json:"left_out"`
}

// MiniSGLangDist is one of mini-sglang's distributions, as client.py's
// _print_stats gives it: the mean and the percentiles of MiniSGLang.
type MiniSGLangDist struct {
	Avg float64 `json:"avg"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// WriteQwen writes doc, bench-qwen's results, to w as one HTML page: what
// was replayed and against what; an overview of every scale, mini-sglang's
// headline figures beside ours with their intervals; how the two differ;
// and for each scale its counts, mini-sglang's figures, ours (TTFT, TPOT,
// ITL, E2E, each with its interval: the ITL's too narrow, the page says
// why), the two throughputs, its warnings and a per-request timeline.
// opts.Title heads the page ("" makes one of the model and the trace);
// opts.MaxTimeline bounds the timelines over all scales; opts.SLO is not
// used. It fails only when w does or when a plot cannot be drawn.
func WriteQwen(w io.Writer, doc QwenDocument, opts Options) error {
	v, err := qwenPage(doc, opts)
	if err != nil {
		return err
	}
	return v.write(w)
}

// itlNote says why the ITL's intervals are too narrow.
const itlNote = "Our ITL pools the gaps between the tokens of every request. The gaps of one request are correlated, and its intervals take them as independent samples, so they are too narrow: read them as a floor of the uncertainty, not a bound."

// qwenDiffers are the reasons mini-sglang's figures and ours differ.
var qwenDiffers = []string{
	"Clock start: mini-sglang's client starts a request's clock at the response headers, which are not recorded here; its figures are computed from the send instead, so the server's wait before its headers is in both.",
	"TTFT: theirs ends at the first SSE chunk, a role-only chunk where the server writes one; ours at the first chunk with text.",
	"TPOT: theirs pools every gap between chunks of every request, each chunk taken for a token, so long replies weigh more: it is a time between tokens. Our TPOT is per request, (E2E − TTFT)/(n − 1); our ITL pools per-token gaps (a chunk of k tokens gives k).",
	"The last instant: the chunk after the last text is not recorded; theirs stands at the end of the response.",
	"Percentiles: theirs are sorted[int(n·q)], the value above the rank; ours are interpolated between ranks.",
	"Throughput: theirs counts instants (chunks + 1 per request) from the first send to the last end; ours counts output tokens over the scale from its start, before the first send.",
	"Failures: a failed request stops their run; here it is recorded and left out of their figures.",
}

func qwenPage(doc QwenDocument, opts Options) (view, error) {
	var info benchkit.RunInfo
	predicted, stream := false, false
	if len(doc.Runs) > 0 {
		first, last := doc.Runs[0].Load.Meta, doc.Runs[len(doc.Runs)-1].Load.Meta
		info, predicted, stream = first.RunInfo, first.Predicted, first.Stream
		info.Finished = last.Finished
		for _, r := range doc.Runs {
			info.Interrupted = info.Interrupted || r.Load.Meta.Interrupted
		}
	}
	trace := path.Base(strings.ReplaceAll(doc.Trace, `\`, "/"))
	p := view{Title: opts.Title, Simulated: info.Simulated, Predicted: predicted, Kind: "Trace replay at time scales"}
	if p.Title == "" {
		p.Title = "mini-sglang's bench_qwen beside inferbench: " + orNone(info.Model) + ", " + orNone(trace)
	}
	p.About, p.Command = about(info, predicted)
	scales := make([]string, len(doc.Scales))
	for i, s := range doc.Scales {
		scales[i] = fmt.Sprintf("%g", s)
	}
	p.About = append(p.About,
		[2]string{"Trace", orNone(doc.Trace)},
		[2]string{"Rows replayed at each scale", fmt.Sprint(doc.Rows)},
		[2]string{"Time scales", fmt.Sprintf("%s, each in turn: a row goes at the scale's start + %g s + scale × its timestamp", orNone(strings.Join(scales, ", ")), doc.LeadInS)},
		[2]string{"Scales measured", fmt.Sprintf("%d of %d", len(doc.Runs), len(doc.Scales))},
		[2]string{"Streamed", fmt.Sprint(stream)},
	)
	var warns []string
	seen := map[string]bool{}
	for _, r := range doc.Runs {
		for _, w := range r.Load.Meta.Warnings {
			if !seen[w] {
				seen[w] = true
				warns = append(warns, w)
			}
		}
		if r.Load.Meta.ClientSaturated {
			warns = append(warns, fmt.Sprintf("client saturated: the load generator could not keep its schedule at scale %g, so latencies include its own queueing: %s", r.Scale, r.Load.Meta.Saturation()))
		}
	}
	p.Warnings = warningsOf(warns)
	if len(doc.Runs) == 0 {
		p.Sections = append(p.Sections, section{ID: "scales", Heading: "Scales", Blocks: []block{{Note: "No scale was measured."}}})
		return p, nil
	}
	if len(doc.Runs) > 1 {
		p.Sections = append(p.Sections, section{ID: "overview", Heading: "Every scale", Blocks: []block{
			{Table: qwenOverview(doc.Runs)},
			{Note: "Beside their pooled TPOT stands our per-token ITL, the figure that matches it. " + itlNote},
		}})
	}
	p.Sections = append(p.Sections, section{ID: "differ", Heading: "Why mini-sglang's figures and ours differ", Blocks: []block{
		{Note: "Theirs are computed from our records with the formulas of mini-sglang's client (client.py); where a record lacks an instant their client keeps, the nearest one recorded stands in."},
		{List: qwenDiffers},
	}})
	budget := opts.MaxTimeline
	if budget == 0 {
		budget = DefaultMaxTimeline
	}
	for i, r := range doc.Runs {
		sec, err := qwenScale(i, r, len(doc.Runs), budget)
		if err != nil {
			return view{}, err
		}
		p.Sections = append(p.Sections, sec)
	}
	return p, nil
}

// scaleKey is the data-key prefix of scale i's figures.
func scaleKey(i int) string { return fmt.Sprintf("scale%d.", i) }

// qwenSummary is a scale's summary; the zero Summary when it has none.
func qwenSummary(d benchkit.LoadDocument) benchkit.Summary {
	if runs := d.AllRuns(); len(runs) > 0 {
		return runs[0].Summary
	}
	return benchkit.Summary{}
}

// qwenOverview is the headline figures of every scale, theirs beside
// ours with its interval: TTFT p50 and p90, their TPOT beside our ITL
// (mean and p90), output tokens and requests per second.
func qwenOverview(runs []QwenScale) *table {
	t := &table{
		Caption: "Every scale: mini-sglang's figure beside ours (ours with its 95 % interval; the throughputs count one run, with no interval)",
		Head: []string{"Scale", "TTFT p50 (ms) theirs", "TTFT p50 (ms) ours [interval]", "TTFT p90 (ms) theirs", "TTFT p90 (ms) ours [interval]",
			"TPOT avg (ms) theirs", "ITL mean (ms) ours [interval]", "TPOT p90 (ms) theirs", "ITL p90 (ms) ours [interval]",
			"output (token/s) theirs", "output (tokens/s) ours", "requests/s theirs", "requests/s ours"},
	}
	for i, r := range runs {
		s, m := qwenSummary(r.Load), r.Mini
		k := "overview." + scaleKey(i)
		mk := k + "minisglang."
		theirs := func(v float64, prec int, key string) cell {
			if m == nil {
				return numCell("none", key)
			}
			return numCell(num(v, prec), key)
		}
		var mm MiniSGLang
		if m != nil {
			mm = *m
		}
		t.Rows = append(t.Rows, row{Head: fmt.Sprintf("%g", r.Scale), Cells: []cell{
			theirs(mm.TTFTms.P50, 2, mk+"ttft.p50"), numCell(withCI(s.TTFT.P50, s.TTFT.P50CI), k+"ttft.p50"),
			theirs(mm.TTFTms.P90, 2, mk+"ttft.p90"), numCell(withCI(s.TTFT.P90, s.TTFT.P90CI), k+"ttft.p90"),
			theirs(mm.TPOTms.Avg, 2, mk+"tpot.avg"), numCell(withCI(s.ITL.Mean, s.ITL.MeanCI), k+"itl.mean"),
			theirs(mm.TPOTms.P90, 2, mk+"tpot.p90"), numCell(withCI(s.ITL.P90, s.ITL.P90CI), k+"itl.p90"),
			theirs(mm.TokensPS, 1, mk+"token_per_s"), numCell(ptr(s.OutputThroughput, 1, "none"), k+"output_throughput"),
			theirs(mm.ReqPS, 2, mk+"req_per_s"), numCell(ptr(s.RequestThroughput, 2, "none"), k+"request_throughput"),
		}})
	}
	return t
}

// qwenScale is scale i's section.
func qwenScale(i int, r QwenScale, nscales, budget int) (section, error) {
	s, k := qwenSummary(r.Load), scaleKey(i)
	heading := fmt.Sprintf("Scale %g", r.Scale)
	if s.Interrupted {
		heading += " (interrupted)"
	}
	sec := section{ID: fmt.Sprintf("scale-%d", i), Heading: heading}
	var reqs []benchkit.Request
	for _, lr := range r.Load.AllRuns() {
		reqs = append(reqs, lr.Requests...)
	}
	if len(reqs) > 0 {
		first, last := reqs[0].IntendedSendS, reqs[0].IntendedSendS
		for _, q := range reqs {
			first, last = min(first, q.IntendedSendS), max(last, q.IntendedSendS)
		}
		sec.Blocks = append(sec.Blocks, block{Note: fmt.Sprintf("The trace's timestamps × %g: requests due from the scale's start + %s s to + %s s.", r.Scale, num(first, 1), num(last, 1))})
	}
	counts := [][2]string{
		{"Requests measured", fmt.Sprint(s.Requests)},
		{"Completed", fmt.Sprint(s.Completed)},
		{"Failed", fmt.Sprint(s.Failed)},
		{"Peak in flight (requests)", fmt.Sprint(s.PeakInFlight)},
		{"Schedule lag p99 (ms)", ms(s.ScheduleLag.P99)},
		{"Prefix hit rate, the server's (%)", pctOf(s.PrefixHitRate)},
		{"Prefix hit rate, the trace's own (%)", pctOf(s.TheoreticalHitRate)},
	}
	keys := []string{k + "requests", k + "completed", k + "failed", k + "peak_in_flight", k + "schedule_lag.p99", k + "prefix_hit_rate", k + "theoretical_prefix_hit_rate"}
	sec.Blocks = append(sec.Blocks, block{Table: pairsTable("Counts", "Figure (unit)", "Value", counts, keys)})
	mk := k + "minisglang."
	if m := r.Mini; m != nil {
		t := &table{Caption: "mini-sglang's figures (client.py's formulas on our records; percentiles sorted[int(n·q)])",
			Head: []string{"Figure", "n", "avg (ms)", "p50 (ms)", "p90 (ms)", "p99 (ms)", "max (ms)"}}
		for _, f := range []struct {
			name, key string
			n         int
			d         MiniSGLangDist
			toMS      float64
		}{
			{"TTFT: send to first chunk", "ttft", m.Requests, m.TTFTms, 1},
			{"TPOT: every chunk gap, pooled", "tpot", m.Tokens - 2*m.Requests, m.TPOTms, 1},
			{"E2E: send to end", "e2e", m.Requests, m.E2Es, 1000},
		} {
			t.Rows = append(t.Rows, row{Head: f.name, Cells: []cell{
				numCell(fmt.Sprint(f.n), ""),
				numCell(num(f.d.Avg*f.toMS, 2), mk+f.key+".avg"), numCell(num(f.d.P50*f.toMS, 2), mk+f.key+".p50"),
				numCell(num(f.d.P90*f.toMS, 2), mk+f.key+".p90"), numCell(num(f.d.P99*f.toMS, 2), mk+f.key+".p99"),
				numCell(num(f.d.Max*f.toMS, 2), mk+f.key+".max")}})
		}
		sec.Blocks = append(sec.Blocks, block{Table: t})
		if m.LeftOut > 0 {
			sec.Blocks = append(sec.Blocks, block{Note: fmt.Sprintf("mini-sglang's figures leave out %d requests without streamed timing (a failed one would have stopped their run).", m.LeftOut)})
		}
	} else {
		sec.Blocks = append(sec.Blocks, block{Note: "mini-sglang's figures: none (no request of this scale has streamed timing)."})
	}
	sec.Blocks = append(sec.Blocks,
		block{Table: ptrTable(latencyTable("Ours (benchkit's), each figure with its 95 % interval", latencyRows(s, k)))},
		block{Note: itlNote})
	tp := &table{Caption: "Throughput (one run's counts: no interval)", Head: []string{"Side", "output (tokens/s)", "requests/s", "tokens counted", "over (s)"}}
	if m := r.Mini; m != nil {
		tp.Rows = append(tp.Rows, row{Head: "mini-sglang: instants (chunks + 1 a request), first send to last end", Cells: []cell{
			numCell(num(m.TokensPS, 1), mk+"token_per_s"), numCell(num(m.ReqPS, 2), mk+"req_per_s"),
			numCell(fmt.Sprint(m.Tokens), mk+"num_tokens"), numCell(num(m.DurationS, 2), mk+"duration_s")}})
	}
	tp.Rows = append(tp.Rows, row{Head: "ours: output tokens, the scale's start to the last end", Cells: []cell{
		numCell(ptr(s.OutputThroughput, 1, "none"), k+"output_throughput"), numCell(ptr(s.RequestThroughput, 2, "none"), k+"request_throughput"),
		numCell(fmt.Sprint(s.TotalOutputTokens), k+"total_output_tokens"), numCell(num(s.DurationS, 2), k+"duration_s")}})
	sec.Blocks = append(sec.Blocks, block{Table: tp})
	if len(s.Warnings) > 0 {
		sec.Blocks = append(sec.Blocks, block{Sub: "Warnings of this scale"}, block{Warnings: warningsOf(s.Warnings)})
	}
	if errs := errorCounts(reqs); len(errs) > 0 {
		t := &table{Caption: "Errors of the failed requests (most frequent first)", Head: []string{"Error", "Requests"}}
		for _, e := range errs {
			t.Rows = append(t.Rows, row{Head: e.Error, Cells: []cell{numCell(fmt.Sprint(e.Count), "")}})
		}
		sec.Blocks = append(sec.Blocks, block{Table: t})
	}
	if budget > 0 && len(reqs) > 0 {
		f, err := timelineFigure(reqs, max(1, budget/nscales))
		if err != nil {
			return section{}, err
		}
		if f != nil {
			f.Caption = fmt.Sprintf("Per-request timeline of scale %g. ", r.Scale) + f.Caption
			sec.Blocks = append(sec.Blocks, block{Figure: f})
		}
	}
	return sec, nil
}
