package main

import (
	"encoding/json"
	"html"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/internal/browser/browsertest"
	"github.com/inferbench/inferbench/internal/progtest"
)

// readPage reads a page written by --html and checks that it fetches
// and runs nothing.
func readPage(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the page: %v", err)
	}
	page := string(b)
	if !strings.HasPrefix(page, "<!DOCTYPE html>") {
		t.Errorf("%s is no HTML page: %.80q", path, page)
	}
	progtest.FetchesNothing(t, page)
	return page
}

// cells are a page's cells that carry a data-key, by key, as text.
func cells(page string) map[string]string {
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`data-key="([^"]*)">([^<]*)<`).FindAllStringSubmatch(page, -1) {
		out[m[1]] = html.UnescapeString(m[2])
	}
	return out
}

// firstNumber is the first number a cell prints.
func firstNumber(s string) (float64, bool) {
	m := regexp.MustCompile(`[-+]?\d+(\.\d+)?(e[-+]?\d+)?`).FindString(s)
	v, err := strconv.ParseFloat(m, 64)
	return v, err == nil
}

// TestHTMLPage: two predicted runs of the embedded engine, B's preset
// decoding 10 % slower, compared with --html: the page is written,
// fetches nothing, and shows every figure of the JSON under its
// data-key as the JSON has it; stdout and the exit status, with a gate,
// are the same with --html as without; a refused comparison still
// writes its page, naming the difference; --html may not name a file
// compared.
func TestHTMLPage(t *testing.T) {
	code, _, help := runCode("-h")
	if code != cli.ExitOK {
		t.Errorf("-h: exit %d, want %d", code, cli.ExitOK)
	}
	progtest.DescribesHTML(t, help)
	dir := t.TempDir()
	a, b, page := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json"), filepath.Join(dir, "sub", "c.html")
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); measure(t, slower(false), 1, a) }()
	go func() { defer wg.Done(); measure(t, slower(true), 2, b) }()
	wg.Wait() // bounded: each run's context ends within 60 s
	if t.Failed() {
		t.FailNow()
	}
	args := []string{"--format", "json", "--allow", "preset", "--threshold", "5%", "--gate-figures", "tpot_mean", a, b}
	code, out, errOut := runCode(args...)
	codeHTML, outHTML, errHTML := runCode(append([]string{"--html", page}, args...)...)
	if code != codeHTML || out != outHTML || errOut != errHTML {
		t.Errorf("--html changed the outcome: exit %d → %d\n%s\n%s", code, codeHTML, errOut, errHTML)
	}
	if code != cli.ExitOK && code != cli.ExitRegression {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Rows []struct {
			Group, Figure, Unit, Verdict string
			MeanA                        *float64 `json:"mean_a"`
			MeanB                        *float64 `json:"mean_b"`
			P                            *float64 `json:"p"`
			PHolm                        *float64 `json:"p_holm"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Rows) == 0 {
		t.Fatalf("--format json: %v, %d rows", err, len(doc.Rows))
	}
	p := readPage(t, page)
	got := cells(p)
	groups := map[string]int{}
	for _, r := range doc.Rows {
		gi, ok := groups[r.Group]
		if !ok {
			gi = len(groups)
			groups[r.Group] = gi
		}
		k := "g" + strconv.Itoa(gi) + "." + r.Figure + "."
		scale := map[string]float64{"s": 1e3, "fraction": 100}[r.Unit]
		if scale == 0 {
			scale = 1
		}
		for _, f := range []struct {
			key      string
			v        *float64
			tol, rel float64
		}{{"mean_a", r.MeanA, 0.005, 0}, {"mean_b", r.MeanB, 0.005, 0}, {"p", r.P, 0, 0.05}, {"p_holm", r.PHolm, 0, 0.05}} {
			text, ok := got[k+f.key]
			if !ok {
				t.Errorf("the page has no cell %s%s", k, f.key)
				continue
			}
			if f.v == nil {
				if text != "none" {
					t.Errorf("%s%s: %q, want none", k, f.key, text)
				}
				continue
			}
			want := *f.v
			if f.key == "mean_a" || f.key == "mean_b" {
				want *= scale
			}
			if v, ok := firstNumber(text); !ok || math.Abs(v-want) > f.tol+f.rel*math.Abs(want)+1e-12 {
				t.Errorf("%s%s: %q, the JSON's %g", k, f.key, text, want)
			}
		}
		if !strings.HasPrefix(got[k+"verdict"], r.Verdict) {
			t.Errorf("%sverdict: %q, the JSON's %s", k, got[k+"verdict"], r.Verdict)
		}
	}
	outcome := map[int]string{cli.ExitOK: "passed", cli.ExitRegression: "failed (exit 4)"}[code]
	if !strings.HasPrefix(got["gate.outcome"], outcome) {
		t.Errorf("exit %d, yet the page's gate says %q", code, got["gate.outcome"])
	}
	if !strings.Contains(p, "SIMULATED") || !strings.Contains(p, `aria-label="SIMULATED: Relative change of each figure, B against A"`) {
		t.Error("the page lacks its banner or its plot")
	}

	// The text checked above against the JSON is what a browser shows,
	// with no error logged and nothing fetched.
	browsertest.CheckAsShown(t, page)

	// Refused: two presets without --allow. The page names the preset.
	refusedPage := filepath.Join(dir, "refused.html")
	if code, _, errOut := runCode("--html", refusedPage, a, b); code != cli.ExitFailed || !strings.Contains(errOut, "preset:") {
		t.Errorf("refused: exit %d (%s), want 1 naming the preset", code, errOut)
	}
	if rp := readPage(t, refusedPage); !strings.Contains(rp, "The comparison was refused") || !strings.Contains(rp, `<th scope="row">preset</th>`) {
		t.Error("the refused comparison's page does not name the preset")
	}

	// --html naming a file compared is bad usage and leaves it alone.
	before, _ := os.ReadFile(a)
	if code, _, _ := runCode("--html", a, "--allow", "preset", a, b); code != cli.ExitUsage {
		t.Errorf("--html A: exit %d, want %d", code, cli.ExitUsage)
	}
	if after, _ := os.ReadFile(a); string(after) != string(before) {
		t.Error("--html A changed A")
	}
	// A comparison that fails removes an earlier page.
	if code, _, _ := runCode("--html", page, a, filepath.Join(dir, "none.json")); code != cli.ExitFailed {
		t.Errorf("a missing file: exit %d, want 1", code)
	}
	if _, err := os.Stat(page); !os.IsNotExist(err) {
		t.Errorf("the earlier page is still there after a failed comparison (%v)", err)
	}
}
