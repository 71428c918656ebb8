// Package browsertest checks a page in headless Chromium from a test: a
// program's test writes its --html page and its results file, then
//
//	res := browsertest.CheckPage(t, page, map[string]string{
//		"run0.ttft.p50": report.FormatMS(*doc.Summary.TTFT.P50),
//	})
//
// fails the test on any error the page logged, any request it made besides
// itself, and any figure (by data-key) that does not show the text wanted,
// writes its screenshot, and returns what the browser saw. Without a
// browser the test is skipped with a line saying how to install one, or
// failed under CI=true (testkit.MissingData).
package browsertest

import (
	"context"
	"errors"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/internal/browser"
	"github.com/inferbench/inferbench/internal/testkit"
)

// EnvScreenshots names the environment variable giving the folder where
// CheckPage writes its screenshots; unset, they go to the test's temporary
// folder (removed after it).
const EnvScreenshots = "INFERBENCH_SCREENSHOTS"

// Need returns the browser's executable, or skips t (fails it under
// CI=true) with a line saying how to install one. Call it before the work
// a browser check needs.
func Need(t testing.TB) string {
	t.Helper()
	p, err := browser.Find()
	if err != nil {
		testkit.MissingData(t, err.Error())
	}
	return p
}

// Start starts a headless browser for t, closed when t ends, or skips t
// (fails it under CI=true) when there is none (Need).
func Start(t testing.TB) *browser.Browser {
	t.Helper()
	exe := Need(t)
	b, err := browser.Start(context.Background(), browser.Options{Exec: exe, Timeout: testkit.Patience})
	if errors.Is(err, browser.ErrNoBrowser) {
		testkit.MissingData(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// CheckPage opens the page at path in a headless browser of its own and
// checks it (Check).
func CheckPage(t testing.TB, path string, want map[string]string) browser.Result {
	t.Helper()
	b := Start(t)
	defer b.Close()
	return Check(t, b, path, want)
}

// Check opens the page at path in b, fails t for each of its problems
// (browser.Result.Problems of want: an error it logged, a request it made,
// a figure it does not show as wanted), writes its screenshot and logs
// where, and returns what the browser saw.
func Check(t testing.TB, b *browser.Browser, path string, want map[string]string) browser.Result {
	t.Helper()
	res, err := b.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Problems(want) {
		t.Errorf("%s: %s", path, p)
	}
	shot := "none taken"
	if len(res.Screenshot) > 0 {
		shot = Screenshot(t, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), res.Screenshot)
	}
	t.Logf("%s: %d bytes, load event at %v, drawn at %v; screenshot %s", path, res.Bytes, res.Load, res.Painted, shot)
	return res
}

// unsafeName matches what a file name should not hold.
var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Screenshot writes png to $INFERBENCH_SCREENSHOTS (made if missing), else
// to t's temporary folder, named after the test and name
// ("TestX_page.png"), and returns its path.
func Screenshot(t testing.TB, name string, png []byte) string {
	t.Helper()
	dir := os.Getenv(EnvScreenshots)
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, unsafeName.ReplaceAllString(t.Name()+"_"+name, "_")+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// keyedText matches a cell that names its figure, in a page's text.
var keyedText = regexp.MustCompile(`data-key="([^"]*)"[^>]*>([^<]*)<`)

// CheckAsShown opens the page at path in a headless browser of its own
// and checks that every figure it shows by data-key is the text the
// page's file holds for it, and that it logs no error and requests
// nothing (CheckPage): a test that has checked the file's text against
// the results file then knows that a browser shows the results file's
// figures.
func CheckAsShown(t testing.TB, path string) browser.Result {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, m := range keyedText.FindAllStringSubmatch(string(b), -1) {
		want[m[1]] = html.UnescapeString(m[2])
	}
	if len(want) == 0 {
		t.Fatalf("%s: no figure carries a data-key", path)
	}
	res := CheckPage(t, path, want)
	if len(res.Keys) != len(want) {
		t.Errorf("%s: the browser shows %d figures by data-key, the file holds %d", path, len(res.Keys), len(want))
	}
	return res
}
