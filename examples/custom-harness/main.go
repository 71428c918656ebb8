// Command custom-harness is the program to copy to build your own tool: harness.go composes
// promptsize, an engine, concurrency.Burst, timing and energy by hand, in under 60 lines,
// against the embedded simulated engine (every figure it prints is simulated).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/inferbench/inferbench/benchkit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "custom-harness:", err)
	}
	os.Exit(benchkit.ExitCode(err))
}
