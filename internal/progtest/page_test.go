package progtest

import "testing"

// TestNetFetch: what a browser would fetch or run is caught, an inline
// page is not.
func TestNetFetch(t *testing.T) {
	for _, p := range []string{`<img src="http://x/y">`, `<script>1</script>`, `<link rel=stylesheet href=//cdn/x.css>`,
		`<style>@import "x.css"</style>`, `<div style="background:url(https://x/y)">`, `<svg><image xlink:href="//x/y"/></svg>`} {
		if netFetch.FindStringIndex(p) == nil {
			t.Errorf("%s: not caught", p)
		}
	}
	if m := netFetch.FindStringIndex(`<svg xmlns="http://www.w3.org/2000/svg"><text>a</text></svg><td data-key="a">1</td>`); m != nil {
		t.Errorf("an inline page caught at %v", m)
	}
}
