//go:build !unix

package benchkit

import "time"

// processCPU cannot tell the process's CPU time on this platform.
func processCPU() (time.Duration, bool) { return 0, false }
