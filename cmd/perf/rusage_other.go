//go:build !unix

package main

import "time"

// cpuTime reports false: getrusage is a Unix call.
func cpuTime() (time.Duration, bool) { return 0, false }
