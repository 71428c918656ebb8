// Package enginetest is a conformance kit for engine adapters, in the
// manner of testing/slogtest: an adapter's own tests point it at a server
// (engine/sim, or a real one) and run
//
//	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
//	defer srv.Close()
//	enginetest.Run(t, enginetest.Config{
//		Engine: newAdapter(srv.URL),
//		Model:  srv.Model(), // the model the server serves
//		Stream: true,
//		Bench:  true,
//		Stats:  enginetest.Both,
//	})
//
// Each finding is reported at the line of the test that called Run, in a
// subtest named after its check.
//
// The Config states what the adapter claims; the kit checks every claim
// and the contracts of engine.Engine that hold for all adapters: a
// successful request returns a trace that passes timing.Trace.Validate with
// its start, headers and end set; cancelling the context stops a running
// request promptly with an error of kind canceled (timeout for a
// deadline); an unknown model is an error callers can branch on (a 4xx
// *engine.StatusError or another typed kind), and so are the faults the
// caller lists; concurrent requests succeed. Optional capabilities are
// checked when the engine has them: a Prewarmer prewarms and then serves a
// burst, a Preparer prepares without sending and sends exactly once, a
// ModelLister lists the model, a TokenCounter counts the prompt as the server
// does.
//
// Check runs the same checks outside a test and returns what it found.
package enginetest
