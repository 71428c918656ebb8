// Package exo is a client for an exo cluster (MLX on Apple silicon) that
// covers what a benchmark needs: bench completions with the server's own
// statistics and energy, models, placements, the instance lifecycle, the
// download planning phase, cluster snapshots, node metrics, instance links
// and cancellation.
//
// # Two kinds of call
//
// A benchmark request (Complete) goes out on a plain http.Client whose
// Transport keeps up to Options.MaxBurst idle connections to the cluster, so
// that Prewarm can open every connection of a burst before it is released,
// and Prepare (engine.Preparer) encodes each request's body and builds its
// headers before the release, leaving Send only the I/O. It is never
// retried: a failed request is a recorded error, not a second
// try hidden from the caller.
//
// Every other call (models, state, placements, instances, downloads, links,
// cancel) is a control-plane call, made through
// github.com/hashicorp/go-retryablehttp: connection errors and 5xx answers
// are retried with exponential backoff, 4xx answers never are, and the final
// error is an *APIError that counts the attempts, keeps the last status and
// wraps the cause. A 429's or 503's Retry-After is waited, at most 30 s,
// and a call gives up at once, with that answer, when even the capped wait
// would outlast its context's deadline. Control-plane calls follow a
// redirect within the API node's origin only; bench requests never follow
// one (the 3xx is a status error naming its Location). The retry library's own logging goes to the caller's
// slog.Logger at debug level, or nowhere.
//
// # Bench completions
//
// A Request with IgnoreEOS goes to POST /bench/chat/completions, where exo
// bans end-of-sequence so that exactly MaxTokens tokens are generated;
// any other Request goes to /v1/chat/completions. Non-streaming bench
// answers carry generation_stats (Result.ServerStats) and power_usage
// (Result.Power). Streaming answers give one timing.Chunk per generated
// token, the ": generation_stats" comment, ": prefill_progress" comments
// (see WithPrefillProgress) and, after a 200, error events that become
// errors of kind engine.KindStreamError. Both of exo's spellings of peak
// memory ("inBytes" in JSON bodies, "in_bytes" in stream comments) decode.
//
// With the real clock (Options.Now nil), a chunk's instant is its bytes'
// arrival: on Linux each read carries the kernel's receive instant
// (SO_TIMESTAMPNS), so readers woken late, by a burst's other streams or
// a garbage collection, still stamp each chunk when it came. A chunk read
// only after the next one arrived carries the next one's instant; the
// headers' instant is their read's. Elsewhere, and with a clock of the
// caller's, instants are taken when reads return.
//
// Every request carries an X-Request-Id header (the caller's, or a new
// one), kept in Result.RequestID; exo ignores it, and Result.ResponseID
// is its command id (docs/REQUEST-IDS.md). A request that failed before
// any byte of an answer on a reused connection the server had closed goes
// out again on another; Trace.Start is that attempt's and Result.Resent
// counts the others.
//
// # Placements and instances
//
// Placements fetches exo's previews, filters them as exo_bench does
// (instance meta ring/jaccl/both, sharding pipeline/tensor/both, node
// bounds, the skip rules), sorts them in exo_bench's order and retries with
// exo's settle backoff while none survive. Unlike exo_bench it labels each
// placement from the instance's own tag and shard tags: exo forces
// single-node placements to MlxRing with pipeline shards while keeping the
// requested labels on the preview, so a preview's labels can lie.
//
// CreateInstance, WaitReady, DeleteInstance and WaitGone drive an
// instance's life; FindInstance finds one to reuse; Plan runs the download
// planning phase (downloads, the disk check, and, only when asked,
// deleting other completed downloads to make room).
//
// # Cluster state and energy
//
// Snapshot captures the "cluster" object exo_bench writes into its result
// file (nodeIdentities, topology, nodeMemory, nodeSystem as raw JSON).
// NodeSystem and NodeSystems read the macmon metrics exo keeps per node
// (sysPower, gpuUsage, temp, pcpuUsage, ecpuUsage), and PowerSource makes
// them an energy.Source for package energy's Sampler. Links, CreateLink,
// UpdateLink and DeleteLink manage prefill/decode instance links; Cancel
// stops a running request by its command id.
//
// # Errors
//
// Control-plane failures are *APIError values; a 404 also matches
// ErrNotFound with errors.Is. Waits fail with *RunnerFailedError,
// *NotReadyError or ErrInstanceGone; model resolution with ErrModelNotFound;
// placement selection with *NoPlacementError; planning with *DiskSpaceError
// and *DownloadFailedError.
package exo
