package progtest

import (
	"regexp"
	"strings"
	"testing"
)

// netFetch matches anything in a page that a browser would fetch from
// the network or run.
var netFetch = regexp.MustCompile(`(?i)(\b(src|href|xlink:href|action|poster|data)\s*=\s*["']?\s*(https?:)?//)|url\(\s*["']?\s*(https?:)?//|@import|<script|<link|<iframe|<object|<embed`)

// FetchesNothing fails t where page, a program's --html page as text,
// holds anything a browser would fetch from the network or run (a
// script, a link, a remote source, an @import), quoting it.
func FetchesNothing(t testing.TB, page string) {
	t.Helper()
	if m := netFetch.FindStringIndex(page); m != nil {
		t.Errorf("page fetches or runs something: %q", page[max(0, m[0]-60):min(len(page), m[1]+60)])
	}
}

// keyedCell matches a page's element that names its figure (data-key)
// and its text.
var keyedCell = regexp.MustCompile(`data-key="([^"]+)">([^<]*)<`)

// PageKeys are the figures a page's text shows by data-key: each key's
// text as written in the page (escaped as the page escapes it).
func PageKeys(page string) map[string]string {
	keys := map[string]string{}
	for _, m := range keyedCell.FindAllStringSubmatch(page, -1) {
		keys[m[1]] = m[2]
	}
	return keys
}

// DescribesHTML fails t unless help, a program's -h output, describes its
// --html flag as the programs do ("self-contained HTML page").
func DescribesHTML(t testing.TB, help string) {
	t.Helper()
	if !strings.Contains(help, "-html") || !strings.Contains(help, "self-contained HTML page") {
		t.Errorf("help does not describe --html:\n%s", help)
	}
}
