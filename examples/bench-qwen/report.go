package main

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	htmlreport "github.com/inferbench/inferbench/benchkit/report"
	"github.com/inferbench/inferbench/internal/termwidth"
)

// document is --json-out: every scale run so far, in order (the
// results file report.WriteQwen draws as a page).
type document = htmlreport.QwenDocument

// documentOf is the results document of the scales run so far.
func documentOf(o options, runs []scaleRun) document {
	return document{Program: "bench-qwen", Trace: o.trace, Rows: len(o.scaled[0]), Scales: o.scales, LeadInS: leadIn.Seconds(), Runs: runs}
}

func writeJSON(o options, runs []scaleRun) error {
	return cli.WriteResults(o.jsonOut, documentOf(o, runs))
}

// writeHTML writes --html: the page of the scales run so far.
func writeHTML(o options, runs []scaleRun) error {
	return cli.WriteFileAtomic(o.htmlPath, func(w io.Writer) error {
		return htmlreport.WriteQwen(w, documentOf(o, runs), htmlreport.Options{})
	})
}

// summary is a run's summary; the zero Summary when it has none.
func summary(d benchkit.LoadDocument) benchkit.Summary {
	if runs := d.AllRuns(); len(runs) > 0 {
		return runs[0].Summary
	}
	return benchkit.Summary{}
}

// report writes every scale's table of both sides, one line per scale of
// the headline figures and why the two sides differ.
func report(w io.Writer, o options, info benchkit.RunInfo, runs []scaleRun) error {
	title := info.Model + ", " + filepath.Base(o.trace)
	if info.Simulated {
		title = "SIMULATED (" + info.Preset + "): " + title
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: mini-sglang's bench_qwen.py figures beside ours\n", title)
	b.WriteString("(theirs computed from our records as its client.py does; their clock starts at the response headers,\n" +
		"which we do not keep, so here at the send: see below)\n")
	if info.Simulated {
		b.WriteString("All figures are simulated (embedded engine), not measurements of real hardware.\n")
	}
	for _, r := range runs {
		b.WriteString("\n")
		scaleTable(&b, r)
	}
	if len(runs) > 1 {
		b.WriteString("\n")
		headlines(&b, runs)
	}
	b.WriteString("\n" + whyTheyDiffer)
	_, err := io.WriteString(w, b.String())
	return err
}

// fmtMini formats a figure as client.py's _fmt does, without its width:
// an integer from 1000, two decimals from 10, four below.
func fmtMini(x float64) string {
	switch {
	case x >= 1000:
		return fmt.Sprintf("%d", int(x))
	case x >= 10:
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.4f", x)
}

// ours formats one of benchkit's quantiles in the unit scale (1000: ms).
func ours(v *float64, scale float64) string {
	if v == nil {
		return "-"
	}
	return fmtMini(*v * scale)
}

// scaleTable writes one scale's figures: each of mini-sglang's beside
// its counterpart of ours, mean (their avg) and percentiles.
func scaleTable(b *strings.Builder, r scaleRun) {
	s := summary(r.Load)
	first, last := math.Inf(1), 0.0
	for _, rq := range r.Load.AllRuns() {
		for _, q := range rq.Requests {
			first, last = min(first, q.IntendedSendS), max(last, q.IntendedSendS)
		}
	}
	if last == 0 {
		first = 0
	}
	fmt.Fprintf(b, "scale %g: %d/%d requests completed, sent from start + %.1f s to + %.1f s", r.Scale, s.Completed, s.Requests, first, last)
	if s.Interrupted {
		b.WriteString(" (INTERRUPTED)")
	}
	b.WriteString("\n")
	row := func(fig, side, what string, vals ...string) {
		fmt.Fprintf(b, "  %-8s %-12s %-24s", fig, side, what)
		for _, v := range vals {
			fmt.Fprintf(b, " %9s", v)
		}
		b.WriteString("\n")
	}
	mini := func(d miniDist) []string {
		return []string{fmtMini(d.Avg), fmtMini(d.P50), fmtMini(d.P90), fmtMini(d.P99), fmtMini(d.Max)}
	}
	q := func(v benchkit.Quantiles, scale float64) []string {
		return []string{ours(v.Mean, scale), ours(v.P50, scale), ours(v.P90, scale), ours(v.P99, scale), ours(v.Max, scale)}
	}
	m := r.Mini
	if m == nil {
		m = &miniFigures{}
	}
	row("", "", "", "avg/mean", "p50", "p90", "p99", "max")
	row("TTFT ms", "mini-sglang", "send → first chunk", mini(m.TTFTms)...)
	row("", "ours TTFT", "send → first text", q(s.TTFT, 1000)...)
	row("TPOT ms", "mini-sglang", "every chunk gap, pooled", mini(m.TPOTms)...)
	row("", "ours TPOT", "per request", q(s.TPOT, 1000)...)
	row("", "ours ITL", "per token, pooled", q(s.ITL, 1000)...)
	row("E2E s", "mini-sglang", "send → end", mini(m.E2Es)...)
	row("", "ours E2E", "send → end", q(s.E2E, 1)...)
	fmt.Fprintf(b, "  throughput mini-sglang: %d instants (chunks + 1) / %s s (first send → last end) = %s token/s, %s req/s\n",
		m.Tokens, fmtMini(m.DurationS), fmtMini(m.TokensPS), fmtMini(m.ReqPS))
	fmt.Fprintf(b, "             ours:        %d output tokens / %s s (scale start → last end) = %s tok/s, %s req/s\n",
		s.TotalOutputTokens, fmtMini(s.DurationS), ours(s.OutputThroughput, 1), ours(s.RequestThroughput, 1))
	fmt.Fprintf(b, "  ours also: schedule lag p99 %s ms, peak in flight %d, prefix cache hits %s%% (server) of %s%% (the trace's own)\n",
		ours(s.ScheduleLag.P99, 1000), s.PeakInFlight, pct(s.PrefixHitRate), pct(s.TheoreticalHitRate))
	if r.Load.Meta.ClientSaturated {
		b.WriteString(termwidth.Wrap("  CLIENT SATURATED: the load generator could not keep its schedule, so latencies include its own queueing: "+r.Load.Meta.Saturation()) + "\n")
	}
	if m.LeftOut > 0 {
		fmt.Fprintf(b, "  mini-sglang's figures leave out %d requests without streamed timing (failed ones would have stopped their run)\n", m.LeftOut)
	}
	for _, w := range s.Warnings {
		b.WriteString(termwidth.Wrap("  note: "+w) + "\n")
	}
}

func pct(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v*100)
}

// short formats a headline figure to about three significant digits.
func short(x float64) string {
	switch {
	case x >= 1000:
		return fmt.Sprintf("%d", int(x))
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// headlines writes one line per scale of the figures mini-sglang's README
// plots (throughput, TTFT p90, the time between tokens) and a few more,
// theirs | ours.
func headlines(b *strings.Builder, runs []scaleRun) {
	b.WriteString("every scale, mini-sglang's figure | ours (beside their pooled TPOT, our per-token ITL)\n")
	// Two grids, latency then the rest, so that each fits a terminal's
	// 120 columns.
	latency := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(latency, "scale\tTTFT p50 ms\tTTFT p90 ms\tTPOT|ITL avg ms\tTPOT|ITL p90 ms\t")
	var rest strings.Builder
	tw := tabwriter.NewWriter(&rest, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scale\tE2E avg s\ttoken/s\treq/s\t")
	for _, r := range runs {
		s, m := summary(r.Load), r.Mini
		if m == nil {
			m = &miniFigures{}
		}
		// ours carries the larger side of its 95 % interval where it has
		// one (ci), "±none" where too few samples bound it.
		pair := func(theirs float64, v *float64, ci *[2]float64, scale float64, withCI bool) string {
			o := "-"
			if v != nil {
				o = short(*v * scale)
				switch {
				case !withCI:
				case ci == nil:
					o += " ±none"
				default:
					o += " ±" + short(max(*v-ci[0], ci[1]-*v)*scale)
				}
			}
			return short(theirs) + " | " + o
		}
		fmt.Fprintf(latency, "%g\t%s\t%s\t%s\t%s\t\n", r.Scale,
			pair(m.TTFTms.P50, s.TTFT.P50, s.TTFT.P50CI, 1000, true), pair(m.TTFTms.P90, s.TTFT.P90, s.TTFT.P90CI, 1000, true),
			pair(m.TPOTms.Avg, s.ITL.Mean, s.ITL.MeanCI, 1000, true), pair(m.TPOTms.P90, s.ITL.P90, s.ITL.P90CI, 1000, true))
		fmt.Fprintf(tw, "%g\t%s\t%s\t%s\t\n", r.Scale,
			pair(m.E2Es.Avg, s.E2E.Mean, s.E2E.MeanCI, 1, true), pair(m.TokensPS, s.OutputThroughput, nil, 1, false),
			pair(m.ReqPS, s.RequestThroughput, nil, 1, false))
	}
	latency.Flush()
	tw.Flush()
	b.WriteString("\n" + rest.String())
	b.WriteString("ours: ± is the larger side of a 95 % interval (means Student-t, percentiles order statistics; the ITL's pools\n" +
		"the gaps of each request, correlated, so it is too narrow); token/s and req/s count one whole run: no interval\n")
}

// whyTheyDiffer is said once, after the tables.
const whyTheyDiffer = `Why mini-sglang's figures and ours differ:
- Clock start. Their client starts each request's clock when create() returns, at the response headers; we keep
  the send instant, not the headers', so their TTFT and E2E are shown from the send: the server's wait before
  its headers (near zero for vLLM, SGLang, mini-sglang and the embedded engine) is in ours and not in theirs.
- TTFT. Theirs ends at the first SSE chunk, a role-only chunk where the server writes one (vLLM, SGLang, the
  embedded engine); ours at the first chunk with text.
- TPOT. Theirs pools every gap between chunks of every request, role chunk and finish chunk included (one
  near-zero gap each), every chunk taken for a token, so long replies weigh more; it is a time between tokens.
  Our TPOT is per request, (E2E - TTFT)/(n - 1); our ITL pools per-token gaps (a chunk of k tokens gives k).
- The last instant. We do not keep the chunk after the last text (mini-sglang's server sends an empty finish
  chunk); their last instant stands at our end of the response ([DONE] read). Where the last text chunk carries
  the finish (vLLM, the embedded engine) their client sees no such chunk, and we count one instant and one
  near-zero gap per request more than it would; our stream also asks for a usage chunk, theirs does not.
- Percentiles. Theirs are sorted[int(n*q)], the value above the rank (p99 of 1000 is the 991st); ours are
  interpolated (numpy's linear).
- Throughput. Theirs counts instants, chunks + 1 per request (output_length + 2 on mini-sglang's server), over
  the first send to the last end; ours counts output tokens over the scale from its start, 1 s before the
  first send.
- Prompts. Theirs are prefixes of one random text, so their README runs the server with --cache naive; ours are
  built from each row's hash ids, so a prefix cache sees the trace's own sharing, each scale with blocks of its
  own. A failed request stops their run; ours records it and leaves it out of their figures.
`
