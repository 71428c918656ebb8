// Package twin fits the embedded engine (engine/sim) to a measured server,
// states how well the fit predicts runs it never saw, and loads the result
// as a preset: a calibrated twin.
//
// # The model
//
// The fit's model is the embedded engine's own cost model in its fitted
// form (sim.Coefficients, whose doc comment has the equations): a decode
// step is the larger of a memory term, DecodeBase + DecodePerContextToken ·
// Σ contexts, and a compute term, DecodePerRequest · batch, plus
// StepOverhead; a prefill chunk the larger of PrefillBase +
// PrefillPerCachedToken · offset and PrefillPerToken · n + PrefillPerPair ·
// (n · offset + n(n+1)/2), plus StepOverhead. The engine's schedule is
// exo's: a prompt of p tokens prefills p − 1 (in chunks of the prefill
// chunk), and the first decode step computes its last token and samples
// the first; a client's TTFT of a request sent alone is then
//
//	TTFT = client overhead + prefill(p − 1 − cached, cached) + decode step([p − 1])
//
// Records with llama.cpp's timings make a twin of profile ProfileLlamaCpp:
// llama-server samples the first token in the prompt's last batch, so
// there TTFT = client overhead + prefill(p − cached, cached), the chunks
// are its batch, and the engine serves the twin with its LlamaCpp profile.
// Ollama's timings do too (its runner schedules as llama-server), in
// OllamaBatch chunks a slot and OllamaBatch × slots a step (Twin.Batch).
// The engine serving a twin waits the client overhead per request before
// its scheduler (sim.Options.RequestOverhead).
//
// # What the fit reads
//
// From the rows of a Runner's bursts (twin.Probe's plan, or any run of
// benchkit):
//
//   - the server's own prefill time of each request sent alone: exo's
//     (p − cached − 1) / prompt_tps, llama.cpp's prompt_ms and Ollama's
//     prompt_eval_duration (p − cached tokens);
//   - the server's own decode time of each request: exo's
//     (n − 1) / generation_tps, llama.cpp's predicted_ms, Ollama's
//     eval_duration: for a request sent alone, n − 1 steps at batch 1 with
//     contexts p − 1 + k;
//   - the steps of every streamed burst: a server that batches by
//     iteration gives each running request one token per step, so each
//     request's tokens number the burst's steps, and each step has a batch
//     and a Σ context; each request whose decode no other request's
//     prefill interrupted is one observation, the sum of its steps, timed
//     by the server (generation_tps) where it says, else by the client
//     (last − first token);
//   - the client's TTFT of each request sent alone, streamed.
//
// The cached offset of a prefill is the server's count of the prompt's
// cached tokens (usage's cached_tokens, llama.cpp's cache_n), 0 where it
// reports none. The probe's cached plans (ProbeOptions.Prefixes) send
// prompts that share a prefix of a known length, after one request put it
// in the server's prefix cache; their prefill chunks of n uncached tokens
// on top of offset cached ones are
//
//	memory:  t = PrefillBase + PrefillPerCachedToken · offset + StepOverhead    ((W + kv · offset) / B)
//	compute: t = PrefillPerToken · n + PrefillPerPair · (n · offset + n(n+1)/2) + StepOverhead    ((2 · N · n + a · pairs) / F)
//
// so that a short suffix on a long prefix (memory-bound) gives
// PrefillPerCachedToken by its offsets, and a long one gives
// PrefillPerPair by its n · offset pairs as well as its own. Without such
// records (a server that reports no cached tokens, or prompts that share
// only the chat template) the cached terms keep the fallback: the
// decode's partner, and the chunk's own pairs; the Twin's notes say so.
//
// Open-loop rows are not fitted (their batches are unknown).
//
// # How it fits
//
// Least squares on relative errors (each observation divided by its
// measured time), through gonum's SVD, in three stages, each fixing the
// terms it identifies for the next: the server's own timings of requests
// sent alone (no network or client noise, batch 1 throughout); its
// timings of the bursts' decode spans (exact, but their batches read from
// the client's token instants); then the client's figures, for the rest
// (the decode's compute term where the server gave no timings, the client
// overhead). The max() of each step is piecewise: each piece (a decode
// step, a prefill chunk) is put in a regime, the linear fit made, each
// piece moved to the regime whose term the fit makes larger, until none
// moves; the search starts from every split of the steps by a batch
// threshold and of the chunks by a size threshold and keeps the least
// error, counting 25 % more error for each phase that uses both regimes,
// so that the client's jitter does not pass for a regime the server never
// entered. A term no record's regime uses, or the records cannot separate
// from the others, takes the value of its partner in the other phase (the
// roofline's identity: DecodeBase and PrefillBase read the weights,
// DecodePerContextToken and PrefillPerCachedToken the cached KV,
// DecodePerRequest and PrefillPerToken compute a token's matrix products);
// a term with no partner, or that comes out negative, is 0. The Twin's
// notes say which. After a first fit, an observation more than 8 scaled
// MADs from its group's median residual (and more than 1 % off) is left
// out and the fit repeated; the residuals are the fit's own, on the
// records it was fitted to. The running cap is the number of requests of
// a burst that got their first token before any of them ended, where a
// burst was larger than that.
//
// # Fidelity
//
// Measure runs held-out plans (bursts and loads the fit never saw) on an
// engine; run them on the server and on the embedded engine loaded with
// the twin (Twin.Options), and Compare pairs the runs and gives, per
// metric (TTFT, TPOT, ITL, E2E: mean, p50, p90, p99; output throughput),
// the MAPE, Pearson r and the bias's sign over the runs. The fitted runs'
// error is never reported as accuracy.
//
// docs/TWIN.md has the figures measured with it.
package twin
