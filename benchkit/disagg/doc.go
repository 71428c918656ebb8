// Package disagg runs exo's prefill/decode disaggregation benchmark
// (bench/prefill_decode_bench.py) on an exo cluster, or on the embedded
// engine: a prefill instance and a decode instance of a model on disjoint
// nodes, linked so that the decode instance hands each long prompt's
// prefill to the prefill instance, measured with a [benchkit.Runner] per
// phase and compared with each instance alone.
//
// The pieces, each in the file of its name:
//
//   - plan.go: the phases and [CheckPlan], which refuses prompts too short
//     for remote prefill ([RemotePrefillMinTokens]).
//   - placement.go: [SelectPair] chooses a prefill and a decode placement
//     that share no node, each [Side] optionally pinned to a node found by
//     [ResolveNode]; the result is a [Pair].
//   - run.go: [Benchmark.Run] creates the instances and the link, measures
//     each phase (a [Row] per request, a [PhaseReport] per phase) and
//     returns a [Result].
//   - probe.go: after each phase one probe request asks the engine where
//     its prefill ran ([PrefillCheck]).
//   - link.go: removing the link and the instances, in the run and in the
//     cleanup that always follows it.
//   - compare.go: [Compare] turns rows into per-cell phase means and the
//     disaggregated phase's speedup over each baseline ([Speedup]).
//   - document.go and render.go: the results file ([Document], [WriteJSON])
//     and the terminal or Markdown table ([WriteTable]).
//
// A run, from placements to results:
//
//	pair, err := disagg.SelectPair(ctx, client, disagg.Side{Card: card}, disagg.Side{Card: card}, time.Minute)
//	b := &disagg.Benchmark{Client: client, Pair: pair, CompareBaseline: true,
//		Runner: benchkit.Runner{Builder: builder}}
//	res, err := b.Run(ctx, benchkit.Plan{PP: []int{4096}, TG: []int{128}})
//	doc := disagg.NewDocument(disagg.Meta{Tool: "mine", Engine: "exo"}, res)
//	disagg.WriteTable(os.Stdout, doc, false)
//
// examples/prefill-decode is the command built on it.
package disagg
