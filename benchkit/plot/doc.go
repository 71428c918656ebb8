// Package plot draws inferbench results with gonum.org/v1/plot, in a
// subpackage so that benchkit itself never imports a plotting library:
//
//   - GenerationTPS: generation throughput against burst concurrency, from
//     benchkit's cell summaries (Σ tokens / wall beside exo's aggregate);
//   - TTFTByPromptLength: each request's time to first token against its
//     prompt length, from load-test rows;
//   - LatencyByRate: p99 TTFT, TPOT and E2E against the offered request
//     rate, with the SLO objectives as horizontal lines;
//   - Power: sampled power over time per node, the prefill and generation
//     phases shaded.
//
// Each function returns a *plot.Plot with a title and labelled axes; WritePNG
// and SavePNG render it at Width × Height. Figures from the embedded engine
// should be titled as simulated: every function takes the title.
package plot
