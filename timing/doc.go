// Package timing holds the arithmetic of inference measurement: the client's
// trace of one request, the server-side rate formulas exo reports, client
// latency metrics (TTFT, TPOT, E2E, ITL), burst aggregates, summaries with
// confidence intervals, and goodput against SLOs.
//
// It is pure: no I/O, no goroutines, no clock. Every function takes the
// instants or counts it needs, so the same numbers come out of the same input
// on every run, and tests use constructed instants rather than the machine's
// speed.
//
// # Formulas
//
// Each formula is written out in the doc comment of the function that
// computes it. In short, for a request with n generated tokens:
//
//	prefill TPS     = prompt tokens / prefill seconds                 (PrefillTPS)
//	generation TPS  = (n − 1) / (t_last − t_first)                    (GenerationTPS)
//	TTFT            = first content chunk − request written           (Trace.TTFT)
//	E2E             = end of response − request written               (Trace.E2E)
//	TPOT            = (E2E − TTFT) / (n − 1)                           (Trace.TPOT)
//	ICL             = gaps between consecutive content chunks          (Trace.ICL)
//	ITL             = per-token gaps: a chunk of k tokens arriving g
//	                  after the previous chunk gives k gaps of g/k      (Trace.ITL)
//	TTFA            = first answer chunk − request written             (Trace.TTFA)
//	LastReasoning   = last reasoning chunk − request written           (Trace.LastReasoning)
//	TPOT of a side  = the side's time after its first token
//	                  / (its tokens − 1)        (Trace.TPOTAnswer, Trace.TPOTReasoning)
//
// A chunk's Kind puts it on the reasoning side or the answer's (text and
// tool calls): a model that reasons before it answers has each side's
// figures beside the whole stream's, the reasoning ones undefined for a
// stream without reasoning, whose TTFA and answer TPOT are its TTFT and
// TPOT (Trace.TPOTAnswer says how a side's time is counted). Tokens a server counted but
// never sent (Trace.HiddenTokens) are in no rate measured from chunk
// arrivals, and reported.
//
// A rate over fewer than two tokens, or over a zero span, is undefined:
// the functions return ErrUndefined (wrapped with the values that made it
// so) rather than 0.
//
// Burst aggregates (AggregateBurst) always report exo's optimistic
// max(per-request generation TPS) × N beside the honest Σ tokens / wall time
// and the mean and median per-request rates.
package timing
