//go:build linux

package benchkit

import (
	"os"
	"strings"
	"syscall"
)

// readClockInfo fills c from sysfs and adjtimex(2) in read-only mode.
func readPlatformClock(c *ClockInfo) {
	if b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource"); err == nil {
		c.Source = strings.TrimSpace(string(b))
	}
	var tx syscall.Timex // Modes 0: read only
	state, err := syscall.Adjtimex(&tx)
	if err != nil {
		return
	}
	const staUnsync, timeError = 0x0040, 5
	synced := tx.Status&staUnsync == 0 && state != timeError
	maxErr, estErr := float64(tx.Maxerror)/1e6, float64(tx.Esterror)/1e6
	c.Synced, c.MaxErrorS, c.EstErrorS = &synced, &maxErr, &estErr
}
