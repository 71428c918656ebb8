// Command shot opens an HTML page in headless Chromium, writes its
// full-page screenshot as PNG, and prints what the browser saw: the load
// time, the page's size, its plots, and every problem (an error it logged,
// a request it made, a plot without a name, a part wider than the window).
// It exits 1 when the page has a problem, 2 on bad usage.
//
//	go run ./internal/browser/cmd/shot [-width 1280] [-height 900] page.html out.png
//
// The browser is $INFERBENCH_CHROMIUM or the first of chromium,
// chromium-browser, google-chrome on the PATH (scripts/chromium.sh installs
// it).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/inferbench/inferbench/internal/browser"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	width := fs.Int("width", browser.DefaultWidth, "viewport width in CSS pixels (the screenshot's width)")
	height := fs.Int("height", browser.DefaultHeight, "viewport height in CSS pixels")
	timeout := fs.Duration("timeout", browser.DefaultTimeout, "longest wait for the browser to start, and for the page to open")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: shot [flags] page.html out.png\n\nOpens page.html in headless Chromium, writes its full-page screenshot to out.png, and prints what the browser saw.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return 2
	}
	page, out := fs.Arg(0), fs.Arg(1)
	res, err := browser.Open(context.Background(), page, browser.Options{Width: *width, Height: *height, Timeout: *timeout})
	if err != nil {
		fmt.Fprintln(stderr, "shot:", err)
		return 1
	}
	if err := os.WriteFile(out, res.Screenshot, 0o644); err != nil {
		fmt.Fprintln(stderr, "shot:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %q, %d bytes, %d × %d px, load event at %.0f ms, drawn at %.0f ms, %d figures (data-key), %d plots\n",
		page, res.Title, res.Bytes, res.Width, res.Height, ms(res.Load), ms(res.Painted), len(res.Keys), len(res.SVGs))
	for _, l := range res.SVGs {
		fmt.Fprintf(stdout, "  plot: %s\n", l)
	}
	fmt.Fprintf(stdout, "screenshot: %s\n", out)
	problems := res.Problems(nil)
	for _, p := range problems {
		fmt.Fprintln(stdout, "problem:", p)
	}
	if len(problems) > 0 {
		return 1
	}
	return 0
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }
