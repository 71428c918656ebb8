// Command twin fits the embedded engine to a measured server and states
// how well the fitted twin predicts runs it was never fitted to.
//
// It sends the probe plan (twin.ProbeOptions: a few prompt lengths each
// alone, then a few concurrencies as bursts of equal-length requests) to
// the server, fits the cost model (twin.Fit), then, unless
// --no-fidelity, sends held-out runs (other lengths and concurrencies,
// and a Poisson rate) to the server and to the embedded engine loaded
// with the twin, prints the fidelity table (MAPE, Pearson r and bias per
// metric) and writes the twin file, fidelity included:
//
//	go run ./examples/twin --base-url http://127.0.0.1:8000 --out twin.json
//	go run ./examples/twin --sim-preset m4-max-llama3.1-8b-4bit --out twin.json
//	go run ./examples/serve-load --sim-preset twin.json ...   # run the twin
//
// Without --base-url it measures the embedded engine (--sim-preset), so
// every figure is simulated: a check of the fit against a known preset.
//
// Flags beyond the target's (--base-url, --model, --tokenizer, --api,
// --sim-preset, --timeout, …):
//
//	--out twin.json        the twin file to write
//	--probe-pp 64,256,1024 prompt lengths of the probe, each sent alone
//	--probe-concurrency 2,4,8,16  burst sizes of the probe
//	--probe-prefixes 512,2048  shared-prefix lengths of the probe's cached
//	                       requests, sent alone once the prefix is cached
//	--no-probe-prefixes    send no cached-prefix requests
//	--tg 32                generation length of every request
//	--repeat 3             repeats of each probe cell
//	--prefill-chunk 0      the server's prefill chunk in tokens (0: exo's 4096)
//	--base fast            built-in preset whose memory and power the twin keeps
//	--held-pp 96,384       held-out prompt lengths (bursts)
//	--held-concurrency 1,3,6,12  held-out burst sizes
//	--held-rate 0          held-out Poisson rate, requests/s (0: half the
//	                       request rate of the probe's largest burst)
//	--held-requests 40     requests of the held-out Poisson run
//	--no-fidelity          fit and write the twin without held-out runs
//
// Exit status: 0 on success, 1 when the run or the fit failed, 2 for bad
// usage.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/inferbench/inferbench/benchkit/cli"
)

func main() {
	ctx, stop := cli.NotifyContext(context.Background(), "twin", os.Stderr)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "twin:", err)
	}
	os.Exit(cli.ExitCode(err))
}
