// Package energy turns power telemetry into energy figures for inference
// benchmarks: power traces and cumulative energy counters, integration over
// exact windows with a stated error bound, the prefill/generation split,
// sums over the nodes of a cluster, an idle baseline, J per token, a
// Sampler that polls Sources on its own goroutine, and Sources for Linux
// powercap (RAPL), nvidia-smi and any command that prints watts.
//
// It is a leaf: it imports nothing else of this module, so any tool can
// use it alone. Adapters elsewhere provide further Sources (exo's node
// metrics, the simulated engine).
//
// # Energy over a window
//
// Integrate computes the energy of a PowerTrace over exactly [Start, End]
// with the trapezoid rule (gonum's integrate.Trapezoidal), the power at
// Start and End interpolated on the line between the neighbouring
// samples. ExoWindowEnergy is exo's client method (bench/exo_bench.py,
// SystemMetricsSampler.energy_between): it integrates only the samples
// that fall inside the window and drops the rest, so with samples Δ apart
// it loses up to Δ at each edge and a window with no sample counts 0 J.
// CounterTrace.Energy reads a cumulative counter (RAPL energy_uj, NVML
// total energy) at both edges, undoing wraparound; readings inside the
// window are exact.
//
// Power samples are of two kinds (PowerTrace.Kind, SampleKind):
// instantaneous readings, and means over the interval that ends at each
// stamp (macmon's sysPower, hence exo's node metrics, is the mean over the
// last second). A Source declares means by implementing PowerKinder; the
// Sampler labels its traces. Integrate integrates means by reconstructing
// the cumulative energy from them instead of treating each as the power at
// its stamp, which for a window about one interval long loses about half
// the energy (TestIntegrateMeanShortWindow).
//
// Every figure is an Estimate: Joules, a Bound on its error, the window,
// the samples used and Warnings (sentinels ErrExtrapolated,
// ErrSingleSample, ErrGap, ErrMissedWrap, …) for what limits it. Nothing
// is silently set to zero. What happens near the ends of a trace, and the
// assumptions behind each Bound, are in the doc comments of Integrate and
// CounterTrace.Energy.
//
// Measure puts it together for one run: per node (counter when there is
// one, power trace otherwise), split at the first token into prefill and
// generation, an idle Baseline (see Idle) subtracted on request, sums over
// nodes, average watts and J per prompt and generated token.
//
// # Sampling
//
// A Sampler polls Sources at an interval (DefaultInterval 1 s, no less
// than MinInterval 50 ms) on its own goroutine, reading all sources at
// once and stamping each source's readings with the midpoint of its own
// Read call; Poll adds a reading at an instant that matters (the first
// token), Stop takes a last one and returns the Recording: one Series per
// node and metric, PowerTraces and CounterTraces for Measure, and a
// Summary of every metric as min/max/mean/samples, the shape of exo's
// system_metrics. Failed reads are counted in Warnings, never printed.
// The clock and ticker are injectable (WithClock).
//
// A Source has one method, Read(ctx) ([]Reading, error); SourceFunc adapts
// a function. A Reading names a node, a metric (MetricPower in watts,
// MetricEnergy as a cumulative counter in joules, or any other, such as
// exo's gpuUsage and temp) and a value. A Source that also implements
// Counter tells the Sampler where its counters wrap. This package
// provides:
//
//   - Powercap: Linux RAPL package and dram counters from
//     /sys/class/powercap (root injectable), with max_energy_range_uj as
//     the wraparound; on other systems it reports ErrUnavailable.
//   - NvidiaSMI: GPU power.draw and total_energy_consumption from
//     nvidia-smi's CSV, through an injectable Runner.
//   - Command: any command that prints watts.
//
// Other packages provide more (exo's node metrics, the simulated engine).
// The package energy/sourcetest checks any Source against the contract
// with one call.
//
// # Error against exo's method
//
// The table compares Integrate ("ours") with ExoWindowEnergy ("exo") on
// five true power curves with closed-form integrals, each sampled at 1 Hz
// over 30 s: constant 50 W; a ramp 20 → 140 W; "load", piecewise linear
// with breakpoints on whole seconds (idle, prefill burst, decode, idle);
// a step 30 → 150 W at 10.4 s, between samples; a sine 80 ± 40 W with a
// 7 s period. For each window length, n windows start every π/8 s from
// 1.1 s, never on a sample. Columns: mean and largest |error| / truth, and
// ours' mean Bound / truth.
//
//	fixture    window      n     ours mean    ours max  ours bound      exo mean     exo max
//	constant     0.5s     70        0.000%      0.000%      0.000%       52.857%    100.000%
//	constant       1s     69        0.000%      0.000%      0.000%        0.000%      0.000%
//	constant       2s     66        0.000%      0.000%      0.000%       50.000%     50.000%
//	constant       5s     59        0.000%      0.000%      0.000%       20.000%     20.000%
//	constant      10s     46        0.000%      0.000%      0.000%       10.000%     10.000%
//	ramp         0.5s     70        0.000%      0.000%      4.486%       53.198%    100.000%
//	ramp           1s     69        0.000%      0.000%      4.064%        1.532%      6.061%
//	ramp           2s     66        0.000%      0.000%      3.507%       49.974%     52.444%
//	ramp           5s     59        0.000%      0.000%      3.045%       19.979%     23.285%
//	ramp          10s     46        0.000%      0.000%      2.794%        9.968%     12.918%
//	load         0.5s     70        0.000%      0.000%     11.476%       53.619%    100.000%
//	load           1s     69        0.000%      0.000%     10.699%        3.564%     42.212%
//	load           2s     66        0.000%      0.000%      9.976%       50.145%     64.701%
//	load           5s     59        0.000%      0.000%      7.521%       19.592%     32.306%
//	load          10s     46        0.000%      0.000%      5.509%        9.409%     15.688%
//	step         0.5s     70        0.758%     22.921%      6.549%       52.857%    100.000%
//	step           1s     69        0.806%     24.038%      5.946%        1.230%     57.583%
//	step           2s     66        0.525%      9.387%      5.361%       50.604%     76.280%
//	step           5s     59        0.728%      5.386%      5.438%       21.318%     47.192%
//	step          10s     46        0.808%      3.125%      5.904%       11.332%     30.998%
//	sine         0.5s     70        2.511%      8.579%     25.692%       54.795%    100.000%
//	sine           1s     69        2.425%      6.150%     23.929%        8.041%     25.410%
//	sine           2s     66        2.148%      5.056%     21.197%       50.061%     58.964%
//	sine           5s     59        0.753%      1.393%     18.003%       20.980%     30.433%
//	sine          10s     46        0.459%      0.806%     17.305%        9.769%     13.331%
//
// The table is produced and checked against this comment by
//
//	go test -run TestErrorTable -v ./energy
//
// (add -update to rewrite it here). Integrate is exact wherever the
// samples hold every breakpoint, and within its Bound on every window
// (TestIntegrateFixtures). exo's method loses a share of about Δ/length of
// the energy for most windows; windows of exactly one interval happen to
// hold exactly one sample, and its power × duration rule then does well
// (exact on the constant), but a window of half an interval often holds
// none and counts 0 J. The bound is loose on smooth curves (the sine's
// bound is about ten times its error): it is a worst case over every curve
// consistent with the samples and the stated assumptions, not an estimate
// of the error.
package energy
