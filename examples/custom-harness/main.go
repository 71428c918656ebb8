// Command custom-harness is the program to copy to build your own tool: harness.go builds
// token-exact prompts (promptsize), sends them as one prewarmed, barrier-released burst with
// one call (benchkit.SendPrompts), prints each request's client timing and the burst's skew
// and aggregates, and integrates the power sampled over the burst (energy), in under 60
// lines, against the embedded simulated engine (every figure it prints is simulated).
// benchkit's Example_handWiredBurst shows the same burst wired by hand.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/inferbench/inferbench/benchkit"
)

func main() {
	ctx, stop := benchkit.NotifyContext(context.Background(), "custom-harness", os.Stderr)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "custom-harness:", err)
	}
	os.Exit(benchkit.ExitCode(err))
}
