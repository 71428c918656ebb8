// Package plot draws inferbench results with gonum.org/v1/plot, in a
// subpackage so that benchkit itself never imports a plotting library:
//
//   - GenerationTPS: generation throughput against burst concurrency, from
//     benchkit's cell summaries (Σ tokens / wall beside exo's aggregate);
//   - TTFTByPromptLength: each request's time to first token against its
//     prompt length, from load-test rows;
//   - LatencyPanels: a load test's latency against the offered request
//     rate, a Figure of four panels (TTFT, TPOT, ITL, E2E) each with the
//     p50 and p99 of every run, from plain RatePoints, so that it does not
//     depend on benchkit's summary types; each panel's y axis is
//     logarithmic where its values span a decade or more, else linear
//     from 0, and each SLO objective is a dashed line in its panel
//     (RatePoints makes them of a load test's run summaries);
//   - Power: sampled power over time per node, the prefill and generation
//     phases shaded.
//
// Each plot function returns a *plot.Plot with a title and labelled axes;
// concurrencies and rates that double are on a log₂ axis with a tick at
// each measured value, a run at an infinite rate (all at once) is its own
// point one doubling beyond, ticked "inf" and not joined to the line, and
// tick labels carry no trailing zeros. WritePNG and SavePNG render a
// *plot.Plot at Width × Height and a *Figure at its size (FigureWidth ×
// FigureHeight, 1200 × 800 pixels, by default), the title on top and each
// legend below its data, never over it. Figures from the embedded engine
// should be titled as simulated: every function takes the title.
package plot
