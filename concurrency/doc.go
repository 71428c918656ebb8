// Package concurrency sends requests the ways a load test needs: a burst
// of n released at one instant, an open loop that follows an arrival
// schedule regardless of the responses, a closed loop of virtual users, and
// a search for the highest rate that meets an SLO.
//
// It knows nothing of engines or HTTP. A request is a SendFunc, generic
// over its result type, that receives the run's context, its index, and a
// mark function through which it reports the instant its bytes began to go
// out (for net/http, an httptrace callback). Every run records, per request,
// offsets from one start instant read from an injectable Clock: Intended
// (when the schedule meant it to go), Dispatch (when the runner let it go),
// Sent (the mark) and Done (when the sender returned). Results stream on a
// channel the run closes; a failed request is a result with its error and
// never stops the run; cancelling the context stops dispatch and reaches
// every request in flight.
//
// # Bursts
//
// Burst (or StartBurst, to stream) prepares n workers (each runs an
// optional Prepare step: open a connection, encode a body), parks them at a
// barrier, reads one start instant and releases them all by closing one
// channel. The dispatch skew is the spread of the send instants:
//
//	skew_i = Sent_i − min_j Sent_j,   spread = max_i skew_i
//
// summarised with percentiles (DurationStats) in Summary.Skew.
//
// # Open and closed loops
//
// An Arrivals yields the gaps between intended send instants: Poisson
// (exponential gaps), Gamma (shape = burstiness, mean gap 1/rate;
// burstiness 1 is Poisson), Constant and Replay. Those that draw take a
// math/rand/v2 Source, so a seeded run reproduces its schedule; Schedule
// computes one without sending. StartOpenLoop sends on schedule, optionally
// capped in flight, until a count, a duration, the end of the arrivals or
// the context. Late requests do not move the schedule: each one's lag,
// Sent − Intended, is kept and summarised in Summary.Lag, where queueing
// behind the cap or a slow client (coordinated omission) shows instead of
// disappearing. StartClosedLoop runs virtual users back to back with an
// optional think time. SearchRate brackets and bisects a rate against any
// measurement and SLO predicate, returning every probe.
//
// # Measured dispatch skew
//
// BenchmarkSkew releases bursts against a loopback HTTP server
// (net/http/httptest) that stamps each request's arrival, over keep-alive
// connections opened before the measurement, and reports the skew from
// those stamps; BenchmarkBurst measures the barrier alone with no-op
// senders. Figures, the machine they came from and how to reproduce them
// are in docs/PERFORMANCE.md of the repository.
package concurrency
