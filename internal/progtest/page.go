package progtest

import (
	"regexp"
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
