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
// connections opened before the measurement (MaxIdleConnsPerHost = n; a
// dials/op metric would appear if any connection were opened during it, and
// none appeared). Skew is measured from the server's arrival stamps, pooled
// over all bursts.
//
// Figures from the machine this package was developed on: 2 cores (AMD
// EPYC, linux/amd64, Go 1.26) shared with other work (load average about 5
// during the run), so the tails are noisy. Commands:
//
//	go test -run '^$' -bench . -benchtime 200x -count 6 ./concurrency/ > bench.txt
//	benchstat bench.txt
//
// Medians of 6 runs of 200 bursts; ± is benchstat's 95 % interval:
//
//	n     p50 skew        p99 skew        max skew   p50 spread      burst round trip
//	  8    35.8 µs ±  2 %  178 µs ±  12 %  0.97 ms     66.1 µs ±  5 %  256 µs ± 10 %
//	 64     419 µs ± 29 %  4.34 ms ±  51 %  9.5 ms     1.12 ms ± 31 %  2.81 ms ± 37 %
//	256    3.47 ms ± 20 %  20.5 ms ± 123 %  84 ms      7.97 ms ± 51 %  15.0 ms ± 57 %
//
// (A burst of 1 has no skew; its round trip was 32.5 µs.) The barrier
// itself is a small part of this: BenchmarkBurst, with no-op senders,
// costs 5.2 µs for a burst of 1 and 1.1–1.2 µs per request for 64 and 256,
// and the spread of the workers' Dispatch offsets is 30 µs at n = 64 and
// 124 µs at n = 256. The rest is net/http's per-request client work and the
// server's, serialised on two cores: the p50 spread per request grows with
// n (8 µs at n = 8, 18 µs at 64, 31 µs at 256). More cores should spread
// less; that was not measured here.
// The client's own marks (send-p99-skew-ns, send-max-skew-ns) agree with
// the server's stamps to within the noise.
package concurrency
