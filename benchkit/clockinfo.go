package benchkit

// ClockInfo says what a host's clocks were when a segment ran, so that a
// merge can tell how far the segments' shared timeline may be trusted:
// the offsets of rows on the shared timeline rest on each host's wall
// clock (synchronised by NTP or PTP, or not), while every latency is a
// difference of the host's monotonic clock and needs no synchronisation.
type ClockInfo struct {
	// Source is the kernel's clock source (Linux's current_clocksource:
	// tsc, kvm-clock, hpet, arch_sys_counter, …); "" where unknown.
	Source string `json:"source,omitempty"`
	// Monotonic names the clock latencies are measured on.
	Monotonic string `json:"monotonic"`
	// Synced is the kernel's word on whether the wall clock is
	// synchronised (adjtimex: not STA_UNSYNC); null where unknown.
	Synced *bool `json:"synced,omitempty"`
	// MaxErrorS and EstErrorS are the kernel's maximum and estimated
	// error of the wall clock, in seconds (adjtimex), as the
	// synchronisation daemon last set them; null where unknown.
	MaxErrorS *float64 `json:"max_error_s,omitempty"`
	EstErrorS *float64 `json:"est_error_s,omitempty"`
}

// monotonicClock names the clock Go's time.Now carries for differences.
const monotonicClock = "Go runtime monotonic clock (CLOCK_MONOTONIC on Linux)"

// readClockInfo reads this host's clock source and synchronisation
// status, best effort: what the platform cannot tell is left empty.
func readClockInfo() ClockInfo {
	c := ClockInfo{Monotonic: monotonicClock}
	readPlatformClock(&c)
	return c
}
