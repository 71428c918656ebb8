package benchkit

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Saturation thresholds: a run's client is saturated when the p99 of its
// schedule lag (actual − intended send, less any dial) exceeds
// max(saturationMinLag, saturationGapShare × the mean intended gap), or
// when it sent at less than saturationMinRateShare of the intended rate.
// A schedule that sends everything at once (an infinite rate, a burst)
// has no gap: its bound is max(saturationMinLag, saturationSkewPerRequest
// × n), the dispatch skew of handing n requests to the network. Each
// result records the bound it was judged by (ClientHealth.LagBoundS,
// BurstHealth.BoundS); docs/PERFORMANCE.md gives the calibration.
//
// Calibrated with the embedded engine on a shared 2-core machine: 32
// requests at once lagged 2.4 ms at p99 and 200 lagged 53 ms (bound
// 100 ms); at 10 requests/s the p50 was 0.9 ms, though one request in 40
// could lag 28 ms while other work ran; at 5000 requests/s the client
// achieved 404 requests/s with a p99 lag of 4.4 s.
const (
	saturationMinLag         = 5 * time.Millisecond
	saturationGapShare       = 0.10
	saturationMinRateShare   = 0.90
	saturationSkewPerRequest = 500 * time.Microsecond
)

// ClientHealth is how well the load generator kept to its schedule in one
// run. Durations are in seconds.
type ClientHealth struct {
	// Run is the run's index in a sweep or search.
	Run int `json:"run"`
	// LagP50S, LagP99S and LagMaxS are quantiles of the schedule lag:
	// when each request's bytes began to go out less when it was meant
	// to, less the wait for a new connection (a dial is the network's,
	// not the client's).
	LagP50S float64 `json:"schedule_lag_p50_s"`
	LagP99S float64 `json:"schedule_lag_p99_s"`
	LagMaxS float64 `json:"schedule_lag_max_s"`
	// LagBoundS is the p99 lag allowed: max(5 ms, 10 % of the mean
	// intended gap), or for everything at once max(5 ms, 0.5 ms × n).
	LagBoundS float64 `json:"schedule_lag_bound_s"`
	// DispatchLagP50S, DispatchLagP99S and DispatchLagMaxS are quantiles
	// of the dispatch lag: when the runner handed each request to its
	// sender less when it was meant to go. The schedule lag is this lag
	// plus the sender's own time to its first byte; a large dispatch lag
	// says the schedule's goroutine got no core, a large schedule lag
	// over a small dispatch lag that the senders were slow. Null where
	// not measured (rows read back from a file). Not judged: the
	// schedule lag includes it.
	DispatchLagP50S *float64 `json:"dispatch_lag_p50_s"`
	DispatchLagP99S *float64 `json:"dispatch_lag_p99_s"`
	DispatchLagMaxS *float64 `json:"dispatch_lag_max_s"`
	// IntendedRate and AchievedRate are the send rates the schedule asked
	// for and the client kept, (n − 1) / (last − first send), requests/s;
	// null when the schedule sends everything at once.
	IntendedRate *float64 `json:"intended_rate"`
	AchievedRate *float64 `json:"achieved_rate"`
	// CPUOverWall is the process's CPU time (user + system, getrusage)
	// over the wall time of the measurement; null where unknown. Near the
	// number of cores, the client had no CPU to spare.
	CPUOverWall *float64 `json:"cpu_over_wall,omitempty"`
	// GCCycles is how many garbage collections this process completed
	// while the schedule ran, and GCPauseS their stop-the-world pauses in
	// all, seconds (runtime.MemStats); null where not measured. Each
	// pause delays every reader; a pause or a stretch of marking longer
	// than the gap between two chunks of a stream makes the earlier read
	// with the later one, carrying its instant. Load.GCPercent sets how
	// often collections run. Not judged.
	GCCycles *int64   `json:"gc_cycles,omitempty"`
	GCPauseS *float64 `json:"gc_pause_s,omitempty"`
	// Capped is true when a concurrency cap held requests back; their lag
	// is then the server's, and the gate is not applied.
	Capped bool `json:"capped,omitempty"`
	// Saturated is true when a threshold was crossed; Reason says which.
	Saturated bool   `json:"client_saturated"`
	Reason    string `json:"reason,omitempty"`
}

// checkRun measures a run's client health from its rows (their
// intended and actual send offsets and dial waits). capped says a
// concurrency cap was in force.
func checkRun(run LoadRun, capped bool) ClientHealth {
	var h ClientHealth
	var lags, intended, sent []float64
	for _, r := range run.Requests {
		if r.SendOffsetS == 0 && r.Failed() {
			continue // never went out
		}
		lag := r.SendOffsetS - r.IntendedSendS
		if r.ConnectS != nil {
			lag -= *r.ConnectS
		}
		lags = append(lags, max(lag, 0))
		intended = append(intended, r.IntendedSendS)
		sent = append(sent, r.SendOffsetS)
	}
	if len(run.Requests) > 0 {
		h.Run = run.Requests[0].Run
	}
	return checkClient(h, lags, intended, sent, capped)
}

func checkClient(h ClientHealth, lags, intended, sent []float64, capped bool) ClientHealth {
	h.Capped = capped
	if len(lags) == 0 {
		return h
	}
	slices.Sort(lags)
	slices.Sort(intended)
	slices.Sort(sent)
	h.LagP50S, h.LagP99S, h.LagMaxS = quantile(lags, 0.5), quantile(lags, 0.99), lags[len(lags)-1]
	n := len(intended)
	span := intended[n-1] - intended[0]
	meanGap := 0.0
	if n > 1 {
		meanGap = span / float64(n-1)
	}
	h.LagBoundS = max(saturationMinLag.Seconds(), saturationGapShare*meanGap)
	if span == 0 {
		h.LagBoundS = max(saturationMinLag.Seconds(), saturationSkewPerRequest.Seconds()*float64(n))
	}
	if n > 1 && span > 0 {
		ir := float64(n-1) / span
		h.IntendedRate = &ir
		if s := sent[n-1] - sent[0]; s > 0 {
			ar := float64(n-1) / s
			h.AchievedRate = &ar
		}
	}
	if capped {
		return h
	}
	switch {
	case h.LagP99S > h.LagBoundS:
		h.Saturated = true
		h.Reason = fmt.Sprintf("schedule lag p99 %.1f ms > %.1f ms (max(%v, %.0f%% of the mean gap %.1f ms))",
			h.LagP99S*1e3, h.LagBoundS*1e3, saturationMinLag, saturationGapShare*100, meanGap*1e3)
		if span == 0 {
			h.Reason = fmt.Sprintf("schedule lag p99 %.1f ms > %.1f ms (max(%v, %v × %d requests sent at once))",
				h.LagP99S*1e3, h.LagBoundS*1e3, saturationMinLag, saturationSkewPerRequest, n)
		}
	case h.IntendedRate != nil && h.AchievedRate != nil && *h.AchievedRate < saturationMinRateShare**h.IntendedRate:
		h.Saturated = true
		h.Reason = fmt.Sprintf("achieved %.4g requests/s < %.0f%% of the intended %.4g/s", *h.AchievedRate, saturationMinRateShare*100, *h.IntendedRate)
	}
	return h
}

// SetDispatchLags records the quantiles of a run's dispatch lags
// (dispatch − intended, seconds, one per dispatched request) in h.
func (h *ClientHealth) SetDispatchLags(lags []float64) {
	if len(lags) == 0 {
		return
	}
	xs := slices.Clone(lags)
	for i, x := range xs {
		xs[i] = max(x, 0)
	}
	slices.Sort(xs)
	p50, p99, mx := quantile(xs, 0.5), quantile(xs, 0.99), xs[len(xs)-1]
	h.DispatchLagP50S, h.DispatchLagP99S, h.DispatchLagMaxS = &p50, &p99, &mx
}

// quantile is the linearly interpolated p-quantile of sorted xs.
func quantile(xs []float64, p float64) float64 {
	if len(xs) == 1 {
		return xs[0]
	}
	pos := p * float64(len(xs)-1)
	i := int(math.Floor(pos))
	if i >= len(xs)-1 {
		return xs[len(xs)-1]
	}
	f := pos - float64(i)
	return xs[i]*(1-f) + xs[i+1]*f
}

// loadHealth is the client health of a Load's run: checkRun of its
// rows, its dispatch lags, and the CPU the process spent since cpu0 over
// wall.
func loadHealth(rows []Request, dispatchLags []float64, capped bool, cpu0 time.Duration, cpuOK bool, wall time.Duration) *ClientHealth {
	h := checkRun(LoadRun{Requests: rows}, capped)
	h.SetDispatchLags(dispatchLags)
	if cpu1, ok := processCPU(); ok && cpuOK && wall > 0 {
		v := (cpu1 - cpu0).Seconds() / wall.Seconds()
		h.CPUOverWall = &v
	}
	return &h
}

// gcStats is the collector's count and pause total at one instant.
type gcStats struct {
	cycles  uint32
	pauseNs uint64
}

// readGC reads the collector's figures. runtime.ReadMemStats stops the
// world briefly: call it outside measured windows.
func readGC() gcStats {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return gcStats{ms.NumGC, ms.PauseTotalNs}
}

// setGC records the collections between two readings.
func (h *ClientHealth) setGC(before, after gcStats) {
	n := int64(after.cycles - before.cycles)
	p := time.Duration(after.pauseNs - before.pauseNs).Seconds()
	h.GCCycles, h.GCPauseS = &n, &p
}

// clientHealths is each run's client health: its summary's (Load.Run
// measures it), else checkRun of its rows. saturated is true when any
// run's client was.
func clientHealths(runs []LoadRun, capped bool) (hs []ClientHealth, saturated bool) {
	for _, r := range runs {
		var h ClientHealth
		if r.Summary.Client != nil {
			h = *r.Summary.Client
		} else {
			h = checkRun(r, capped)
		}
		if len(r.Requests) > 0 {
			h.Run = r.Requests[0].Run
		}
		hs = append(hs, h)
		saturated = saturated || h.Saturated
	}
	return hs, saturated
}

// saturationReasons joins the reasons of the saturated runs in hs, each
// after its run's index: "run 0: schedule lag p99 …; run 2: …".
func saturationReasons(hs []ClientHealth) string {
	var rs []string
	for _, h := range hs {
		if h.Saturated {
			rs = append(rs, fmt.Sprintf("run %d: %s", h.Run, h.Reason))
		}
	}
	return strings.Join(rs, "; ")
}
