package report

import (
	"html"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit/warncode"
)

// TestWarningCodesOnPage renders a page whose run and summary warnings
// are known kinds, an unknown one and a hostile one: each is shown with
// its code and what to do, the hostile one as text under "other".
func TestWarningCodesOnPage(t *testing.T) {
	doc := loadDoc(10)
	run := "no shared start (--start-at): each segment's offsets are from its own start, so the union's window and throughput assume the segments started together"
	failed := "3 of 10 requests failed (3 timeout); their rows say why"
	hostile := "<script>alert(1)</script> 3 of 10 requests failed ("
	doc.Meta.Warnings = []string{run, "a warning of a newer version"}
	doc.Summary.Warnings = []string{failed, hostile}
	page := render(t, doc, Options{MaxTimeline: -1})
	text := html.UnescapeString(page)
	for _, c := range []struct{ warning, code string }{
		{run, "no_shared_start"}, {failed, "requests_failed"}, {"a warning of a newer version", warncode.Other}, {hostile, warncode.Other},
	} {
		code, advice := advise(c.warning)
		if code != c.code {
			t.Errorf("advise(%q) = %s, want %s", c.warning, code, c.code)
		}
		if want := "<code>" + code + "</code> " + c.warning + "<span class=\"todo\">What to do: " + advice + "</span>"; !strings.Contains(text, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") {
		t.Error("a hostile warning is markup on the page")
	}
}
