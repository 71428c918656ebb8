package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/internal/browser/browsertest"
)

// TestShot writes a page's screenshot and says what it saw; a page with a
// problem exits 1 naming it, and bad usage exits 2.
func TestShot(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"only-one.html"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage: shot") {
		t.Errorf("one argument: exit %d, stderr %q", code, errb.String())
	}
	browsertest.Need(t)
	dir := t.TempDir()
	page, shot := filepath.Join(dir, "p.html"), filepath.Join(dir, "p.png")
	if err := os.WriteFile(page, []byte(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>T</title></head><body><p data-key="k">1</p>`+
		`<script>console.error("bad")</script></body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	code := run([]string{"-width", "600", page, shot}, &out, &errb)
	if code != 1 || !strings.Contains(out.String(), "problem: error: console.error: bad") || !strings.Contains(out.String(), `"T"`) {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if w := img.Bounds().Dx(); w != 600 {
		t.Errorf("screenshot %d px wide, want 600", w)
	}
}
