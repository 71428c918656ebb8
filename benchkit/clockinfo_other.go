//go:build !linux

package benchkit

// readClockInfo knows nothing beyond Linux.
func readPlatformClock(*ClockInfo) {}
