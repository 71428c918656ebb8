// Package browser opens a page in headless Chromium and reports what a
// reader's browser would do with it: the errors it logged, every request it
// made besides the document itself, the figures it shows (each element's
// data-key and text), its title and plots, a full-page screenshot, and how
// long it took to load. The report pages (benchkit/report) are checked with
// it: a page must fetch nothing, log no error, and show the results file's
// figures.
//
// It drives Chromium through the DevTools protocol (chromedp), started with
// --headless --no-sandbox --disable-gpu --disable-background-networking.
// The executable is $INFERBENCH_CHROMIUM, else the first of chromium,
// chromium-browser, google-chrome and google-chrome-stable on the PATH;
// scripts/chromium.sh installs Debian's chromium where it is missing.
package browser

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Env names the environment variable that gives the browser's executable.
const Env = "INFERBENCH_CHROMIUM"

// Names are the executables looked up on the PATH, in order, when Env is
// not set.
var Names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Install says how to get a browser, for the errors and skips that lack one.
const Install = "run `bash scripts/chromium.sh` (apt-get install chromium, as root or through sudo), " +
	"or set " + Env + " to a Chromium or Chrome executable"

// ErrNoBrowser is the error of Find, Start and Open when no browser is found.
var ErrNoBrowser = errors.New("browser: no Chromium found")

// Defaults of Options.
const (
	// DefaultTimeout bounds the browser's start, and each page's open.
	DefaultTimeout = time.Minute
	// DefaultWidth and DefaultHeight are the viewport's size in CSS pixels.
	DefaultWidth  = 1280
	DefaultHeight = 900
)

// Options shape a browser.
type Options struct {
	// Exec is the browser's executable; "" finds one (Find).
	Exec string
	// Timeout bounds the start and each open; 0 means DefaultTimeout.
	Timeout time.Duration
	// Width and Height are the viewport in CSS pixels; 0 means the
	// defaults. A full-page screenshot is Width wide and as tall as the
	// page.
	Width, Height int
	// NoScreenshot leaves Result.Screenshot empty, for a timing.
	NoScreenshot bool
}

func (o Options) timeout() time.Duration {
	if o.Timeout <= 0 {
		return DefaultTimeout
	}
	return o.Timeout
}

// Find returns the browser's executable: $INFERBENCH_CHROMIUM when set (an
// error when it names no executable), else the first of Names on the PATH.
// It returns an error wrapping ErrNoBrowser, saying how to install one,
// when there is none.
func Find() (string, error) {
	if p := os.Getenv(Env); p != "" {
		abs, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%w: %s=%q is not an executable (%v); %s", ErrNoBrowser, Env, p, err, Install)
		}
		return abs, nil
	}
	for _, n := range Names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: none of %s on the PATH; %s", ErrNoBrowser, strings.Join(Names, ", "), Install)
}

// Result is what a browser did with a page.
type Result struct {
	// URL is the file:// URL opened; Bytes is the page's size on disk.
	URL   string
	Bytes int64
	// Title is the document's <title>.
	Title string
	// Errors are the console's messages at the error level, the uncaught
	// exceptions, the browser's own error log entries (a failed load, a
	// blocked resource) and any dialog the page opened (alert, confirm,
	// prompt), each as "kind: text".
	Errors []string
	// Requests are the URLs of every request the page made besides the
	// document itself, in order: a self-contained page has none.
	Requests []string
	// Failed are the requests that failed, the document's included, each
	// as "URL: error".
	Failed []string
	// Keys maps each element's data-key to its text content, in the
	// document's order (Dups lists every key that appears more than once;
	// Keys holds its first element's text).
	Keys map[string]string
	Dups []string
	// SVGs are the aria-labels of the page's <svg> elements, in order (""
	// for one without).
	SVGs []string
	// Overflows names each table, figure, plot or preformatted block whose
	// right edge is past the viewport, so that a reader must scroll
	// sideways to see it whole.
	Overflows []string
	// Width and Height are the page's scroll size in CSS pixels.
	Width, Height int
	// Load is the time from the navigation's start to the load event;
	// Painted is the time to two animation frames after it, when the
	// page has been laid out and drawn.
	Load, Painted time.Duration
	// Screenshot is a full-page PNG, Options.Width wide, unless
	// Options.NoScreenshot.
	Screenshot []byte
}

// Browser is a running headless Chromium that opens pages one after the
// other in its one tab (a tab of its own for each costs the start of a
// renderer, a large part of a small page's open). Its methods may be
// called from one goroutine at a time.
type Browser struct {
	opts   Options
	ctx    context.Context // the browser's chromedp context
	cancel context.CancelFunc
}

// Start starts a headless browser, waiting at most Options.Timeout (or
// until ctx ends) for it to answer. Close it when done.
func Start(ctx context.Context, opts Options) (*Browser, error) {
	if opts.Exec == "" {
		p, err := Find()
		if err != nil {
			return nil, err
		}
		opts.Exec = p
	}
	if opts.Width <= 0 {
		opts.Width = DefaultWidth
	}
	if opts.Height <= 0 {
		opts.Height = DefaultHeight
	}
	flags := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(opts.Exec),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.WindowSize(opts.Width, opts.Height),
	)
	// The browser lives until Close, not until ctx ends: ctx bounds only
	// the wait for it to start.
	actx, acancel := chromedp.NewExecAllocator(context.Background(), flags...)
	bctx, bcancel := chromedp.NewContext(actx)
	b := &Browser{opts: opts, ctx: bctx, cancel: func() { bcancel(); acancel() }}
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(bctx, chromedp.EmulateViewport(int64(opts.Width), int64(opts.Height))) }()
	timer := time.NewTimer(opts.timeout())
	defer timer.Stop()
	select {
	case err := <-started:
		if err != nil {
			b.cancel()
			return nil, fmt.Errorf("browser: start %s: %w", opts.Exec, err)
		}
		return b, nil
	case <-timer.C:
		b.cancel()
		return nil, fmt.Errorf("browser: %s did not start within %v", opts.Exec, opts.timeout())
	case <-ctx.Done():
		b.cancel()
		return nil, fmt.Errorf("browser: start %s: %w", opts.Exec, ctx.Err())
	}
}

// Close stops the browser and removes its profile directory.
func (b *Browser) Close() {
	b.cancel()
}

// Open opens path in a headless browser of its own (Start, Browser.Open,
// Close).
func Open(ctx context.Context, path string, opts Options) (Result, error) {
	b, err := Start(ctx, opts)
	if err != nil {
		return Result{}, err
	}
	defer b.Close()
	return b.Open(ctx, path)
}

// recorder collects a tab's events; the tab's reader goroutine writes it.
type recorder struct {
	mu       sync.Mutex
	doc      string
	urls     map[network.RequestID]string
	errors   []string
	requests []string
	failed   []string
	dialogs  int
}

func (r *recorder) event(ev any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			r.errors = append(r.errors, "console."+string(e.Type)+": "+argsText(e.Args))
		}
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		text := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			text += " " + strings.SplitN(d.Exception.Description, "\n", 2)[0]
		}
		r.errors = append(r.errors, "exception: "+text)
	case *log.EventEntryAdded:
		if e.Entry != nil && e.Entry.Level == log.EntryLevelError {
			r.errors = append(r.errors, "log ("+string(e.Entry.Source)+"): "+e.Entry.Text+urlSuffix(e.Entry.URL))
		}
	case *page.EventJavascriptDialogOpening:
		r.errors = append(r.errors, "dialog ("+string(e.Type)+"): "+e.Message)
		r.dialogs++
	case *network.EventRequestWillBeSent:
		if e.Request == nil {
			return
		}
		u := e.Request.URL
		r.urls[e.RequestID] = u
		if u != r.doc || e.RedirectResponse != nil {
			r.requests = append(r.requests, u)
		}
	case *network.EventLoadingFailed:
		u := r.urls[e.RequestID]
		if u == "" {
			u = "request " + string(e.RequestID)
		}
		why := e.ErrorText
		if e.BlockedReason != "" {
			why += " (blocked: " + string(e.BlockedReason) + ")"
		}
		r.failed = append(r.failed, u+": "+why)
	}
}

func urlSuffix(u string) string {
	if u == "" {
		return ""
	}
	return " (" + u + ")"
}

// argsText is a console call's arguments as text.
func argsText(args []*runtime.RemoteObject) string {
	parts := make([]string, 0, len(args))
	for _, a := range args {
		switch {
		case a == nil:
		case a.Type == runtime.RemoteObjectTypeString:
			s, err := strconv.Unquote(string(a.Value))
			if err != nil {
				s = string(a.Value)
			}
			parts = append(parts, s)
		case a.Description != "":
			parts = append(parts, a.Description)
		case len(a.Value) > 0:
			parts = append(parts, string(a.Value))
		default:
			parts = append(parts, string(a.UnserializableValue))
		}
	}
	return strings.Join(parts, " ")
}

// pageInfo is what the page's DOM and timing say, read by script after the
// load.
type pageInfo struct {
	Title     string      `json:"title"`
	Keys      [][2]string `json:"keys"`
	SVGs      []string    `json:"svgs"`
	Overflows []string    `json:"overflows"`
	Width     float64     `json:"width"`
	Height    float64     `json:"height"`
	Load      float64     `json:"load"`
	Painted   float64     `json:"painted"`
}

// readPage waits for two animation frames after the load (the page laid
// out and drawn) and reads the DOM and the navigation's timing, in ms
// from its start.
const readPage = `new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(() => {
  const painted = performance.now();
  const nav = performance.getEntriesByType('navigation')[0];
  const vw = document.documentElement.clientWidth;
  const keys = [];
  for (const e of document.querySelectorAll('[data-key]')) keys.push([e.getAttribute('data-key'), e.textContent]);
  const overflows = [];
  for (const e of document.querySelectorAll('table, figure, svg, pre')) {
    const r = e.getBoundingClientRect();
    if (r.right > vw + 1) {
      const name = (e.querySelector('caption') || {}).textContent || e.getAttribute('aria-label') || e.textContent.slice(0, 60);
      overflows.push('<' + e.tagName.toLowerCase() + '> ' + JSON.stringify(name.trim().slice(0, 80)) + ' ends at ' + Math.round(r.right) + ' px, past the viewport width ' + vw + ' px');
    }
  }
  resolve({
    title: document.title,
    keys,
    svgs: Array.from(document.querySelectorAll('svg'), s => s.getAttribute('aria-label') || ''),
    overflows,
    width: document.documentElement.scrollWidth,
    height: document.documentElement.scrollHeight,
    load: nav ? nav.loadEventStart : -1,
    painted,
  });
})))`

// Open opens the file at path in the browser's tab, waits for its load
// event and two animation frames, reads it and takes its screenshot; all
// within Options.Timeout. It fails when the page cannot be
// opened or read, not when the page itself is wrong: Result says that
// (Problems).
func (b *Browser) Open(ctx context.Context, path string) (Result, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Result{}, fmt.Errorf("browser: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return Result{}, fmt.Errorf("browser: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return Result{}, fmt.Errorf("browser: %s is not a file", abs)
	}
	u := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	res := Result{URL: u, Bytes: fi.Size()}

	tctx, cancel := context.WithTimeout(b.ctx, b.opts.timeout())
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()

	// The tab goes to a blank page first, so that nothing the previous
	// page did is heard as this one's.
	if err := chromedp.Do(tctx, chromedp.Navigate("about:blank")); err != nil {
		return res, b.err("clear the tab", tctx, err)
	}
	rec := &recorder{doc: u, urls: map[network.RequestID]string{}}
	if err := chromedp.Listen(tctx, func(ev any) {
		rec.event(ev)
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			// A dialog holds the page until answered; answer it from
			// another goroutine (a listener may not send commands).
			go func() {
				_, _ = chromedp.Call(tctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
			}()
		}
	}); err != nil {
		return res, b.err("open a tab", tctx, err)
	}
	if err := chromedp.Do(tctx, chromedp.Navigate(u)); err != nil {
		return res, b.err("load "+u, tctx, err)
	}
	info, err := chromedp.Run(tctx, chromedp.Evaluate[pageInfo](readPage, chromedp.EvalAwaitPromise))
	if err != nil {
		return res, b.err("read "+u, tctx, err)
	}
	if !b.opts.NoScreenshot {
		png, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
		if err != nil {
			return res, b.err("screenshot "+u, tctx, err)
		}
		res.Screenshot = png
	}

	rec.mu.Lock()
	res.Errors = slices.Clone(rec.errors)
	res.Requests = slices.Clone(rec.requests)
	res.Failed = slices.Clone(rec.failed)
	rec.mu.Unlock()
	res.Title, res.SVGs, res.Overflows = info.Title, info.SVGs, info.Overflows
	res.Width, res.Height = int(info.Width), int(info.Height)
	res.Load, res.Painted = msDuration(info.Load), msDuration(info.Painted)
	res.Keys = make(map[string]string, len(info.Keys))
	for _, kv := range info.Keys {
		if _, dup := res.Keys[kv[0]]; dup {
			if !slices.Contains(res.Dups, kv[0]) {
				res.Dups = append(res.Dups, kv[0])
			}
			continue
		}
		res.Keys[kv[0]] = kv[1]
	}
	return res, nil
}

// err wraps a failed step, saying so when it ran out of time.
func (b *Browser) err(step string, ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("browser: %s: not done within %v: %w", step, b.opts.timeout(), err)
	}
	return fmt.Errorf("browser: %s: %w", step, err)
}

func msDuration(ms float64) time.Duration {
	if ms < 0 {
		return -1
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// Problems lists what is wrong with the page: each error it logged, each
// request it made or that failed, a missing title, a plot without an
// accessible name, a data-key used twice, a part wider than the window
// (Overflows), and each key of want whose cell
// is missing or does not show want's text. A cell shows a text when it is
// that text, or starts with it followed by a space ("12.34" matches the
// cell "12.34 [11.20, 13.10]").
func (r Result) Problems(want map[string]string) []string {
	var out []string
	for _, e := range r.Errors {
		out = append(out, "error: "+e)
	}
	for _, u := range r.Requests {
		out = append(out, "the page requested "+u+" (it must fetch nothing)")
	}
	for _, f := range r.Failed {
		out = append(out, "request failed: "+f)
	}
	if strings.TrimSpace(r.Title) == "" {
		out = append(out, "the page has no title")
	}
	for i, l := range r.SVGs {
		if strings.TrimSpace(l) == "" {
			out = append(out, fmt.Sprintf("plot %d (<svg>) has no aria-label", i+1))
		}
	}
	for _, k := range r.Dups {
		out = append(out, "data-key "+strconv.Quote(k)+" names more than one element")
	}
	for _, o := range r.Overflows {
		out = append(out, "wider than the window: "+o)
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		got, ok := r.Keys[k]
		switch {
		case !ok:
			out = append(out, "no element has data-key "+strconv.Quote(k)+" (want "+strconv.Quote(want[k])+")")
		case !Shows(got, want[k]):
			out = append(out, "data-key "+strconv.Quote(k)+" shows "+strconv.Quote(got)+", want "+strconv.Quote(want[k]))
		}
	}
	return out
}

// Shows reports whether a cell's text (spaces around it ignored) is want,
// or starts with want followed by a space.
func Shows(cell, want string) bool {
	cell = strings.TrimSpace(cell)
	return cell == want || strings.HasPrefix(cell, want+" ")
}

// Number parses the number a cell's text starts with ("12.34" of
// "12.34 [11.20, 13.10]"); ok is false when it starts with none.
func Number(cell string) (v float64, ok bool) {
	f := strings.Fields(cell)
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}
