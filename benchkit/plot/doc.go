// Package plot draws inferbench results with gonum.org/v1/plot, in a
// subpackage so that benchkit itself never imports a plotting library:
//
//   - GenerationTPS: generation throughput against burst concurrency, from
//     benchkit's cell summaries (Σ tokens / wall beside exo's aggregate);
//   - TTFTByPromptLength: each request's time to first token against its
//     prompt length, from load-test rows;
//   - LatencyByRate: p99 TTFT, TPOT and E2E against the offered request
//     rate, with the SLO objectives as horizontal lines and a run at an
//     infinite rate as its own point, ticked "inf";
//   - Power: sampled power over time per node, the prefill and generation
//     phases shaded.
//
// Each function returns a *plot.Plot with a title and labelled axes;
// concurrencies and rates that double are on a log₂ axis with a tick at
// each measured value, and tick labels carry no trailing zeros. WritePNG
// and SavePNG render it at Width × Height with the legend below the
// data, never over it. Figures from the embedded engine
// should be titled as simulated: every function takes the title.
package plot
