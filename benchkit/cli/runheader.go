package cli

import (
	"os"
	"time"

	"github.com/inferbench/inferbench/benchkit"
)

// NewRunHeader returns the header of a run of program starting now in
// this process.
func NewRunHeader(program string) benchkit.RunHeader {
	host, _ := os.Hostname()
	return benchkit.RunHeader{Program: program, PID: os.Getpid(), Host: host, Started: time.Now().UTC().Format(time.RFC3339Nano)}
}
