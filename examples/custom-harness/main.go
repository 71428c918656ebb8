// Command custom-harness is the program to copy to build your own tool: harness.go builds
// token-exact prompts (promptsize), sends them as one prewarmed, barrier-released burst with
// one call (benchkit.SendPrompts), prints each request's client timing and the burst's skew
// and aggregates, and integrates the power sampled over the burst (energy), in under 60
// lines, against the embedded simulated engine (every figure it prints is simulated).
// benchkit's Example_handWiredBurst shows the same burst wired by hand.
//
// It takes no flags: edit the constants in harness.go. -h or --help says
// so and exits 0; any other argument exits 2.
//
// Exit status: 0 when every request succeeded, 1 when one failed, 2 for an
// argument, 130 when interrupted.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/inferbench/inferbench/benchkit/cli"
)

// helpRequested reports whether args ask for help (-h, -help, --help), and
// then writes the help to w.
func helpRequested(args []string, w io.Writer) bool {
	if len(args) != 1 || !slices.Contains([]string{"-h", "-help", "--help"}, args[0]) {
		return false
	}
	fmt.Fprintln(w, "usage: custom-harness\n\nMeasures one burst against the embedded simulated engine. It takes no flags:\nedit the constants in harness.go, the program to copy.")
	return true
}

func main() {
	if helpRequested(os.Args[1:], os.Stderr) {
		os.Exit(cli.ExitOK)
	}
	ctx, stop := cli.NotifyContext(context.Background(), "custom-harness", os.Stderr)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "custom-harness:", err)
	}
	os.Exit(cli.ExitCode(err))
}
