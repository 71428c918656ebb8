package energy

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the error table in doc.go")

// errorTable renders, for every fixture and window length, the mean and
// largest relative error of Integrate and of ExoWindowEnergy over the
// window placements, and Integrate's mean Bound relative to the truth.
func errorTable(t *testing.T) []string {
	lines := []string{
		fmt.Sprintf("%-9s %7s %6s  %12s %11s %11s  %12s %11s", "fixture", "window", "n", "ours mean", "ours max", "ours bound", "exo mean", "exo max"),
	}
	for _, f := range fixtures() {
		tr := sampled(f)
		for _, l := range windowLengths {
			var om, ox, ob, em, ex float64
			ps := placements(l)
			for _, a := range ps {
				w := win(a, a+l)
				truth := f.Integral(a, a+l)
				ours, err := Integrate(tr, w)
				if err != nil {
					t.Fatal(err)
				}
				exo, err := ExoWindowEnergy(tr, w)
				if err != nil {
					t.Fatal(err)
				}
				oe := math.Abs(ours.Joules-truth) / truth
				ee := math.Abs(exo.Joules-truth) / truth
				om += oe
				ox = math.Max(ox, oe)
				ob += ours.Bound / truth
				em += ee
				ex = math.Max(ex, ee)
			}
			n := float64(len(ps))
			lines = append(lines, fmt.Sprintf("%-9s %6gs %6d  %11.3f%% %10.3f%% %10.3f%%  %11.3f%% %10.3f%%",
				f.Name, l, len(ps), 100*om/n, 100*ox, 100*ob/n, 100*em/n, 100*ex))
		}
	}
	return lines
}

// TestErrorTable renders the package doc's table of Integrate's error
// against exo's method and checks that doc.go holds exactly that table.
// Run with -v to print it, with -update to rewrite it in doc.go.
func TestErrorTable(t *testing.T) {
	lines := errorTable(t)
	for _, l := range lines {
		t.Log(l)
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var block bytes.Buffer
	for _, l := range lines {
		fmt.Fprintf(&block, "//\t%s\n", strings.TrimRight(l, " "))
	}
	if bytes.Contains(doc, block.Bytes()) {
		return
	}
	// The table is the indented block that starts with the header line.
	header := []byte(fmt.Sprintf("//\t%s\n", strings.TrimRight(lines[0], " ")))
	i := bytes.Index(doc, []byte("//\tfixture "))
	if !*update {
		t.Fatalf("doc.go does not hold the current error table; run go test -run TestErrorTable -update ./energy, or paste:\n%s", block.String())
	}
	if i < 0 {
		t.Fatalf("doc.go has no table starting with %q to update", header)
	}
	j := i
	for j < len(doc) && bytes.HasPrefix(doc[j:], []byte("//\t")) {
		j += bytes.IndexByte(doc[j:], '\n') + 1
	}
	out := append(append(append([]byte{}, doc[:i]...), block.Bytes()...), doc[j:]...)
	if err := os.WriteFile("doc.go", out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestExoLosesTheEdges checks what the table shows: on every fixture and
// window length exo's method is off by more than Integrate on average,
// unless both are exact (a constant over 1 s windows, where exactly one
// sample falls inside and exo's p × duration rule is right), and windows
// shorter than the sampling interval can count nothing at all.
func TestExoLosesTheEdges(t *testing.T) {
	for _, f := range fixtures() {
		tr := sampled(f)
		for _, l := range windowLengths {
			var ours, exo, sum float64
			zero := 0
			for _, a := range placements(l) {
				truth := f.Integral(a, a+l)
				o, err := Integrate(tr, win(a, a+l))
				if err != nil {
					t.Fatal(err)
				}
				e, err := ExoWindowEnergy(tr, win(a, a+l))
				if err != nil {
					t.Fatal(err)
				}
				sum += truth
				ours += math.Abs(o.Joules - truth)
				exo += math.Abs(e.Joules - truth)
				if e.Joules == 0 {
					zero++
				}
			}
			if exo <= ours && exo > 1e-9*sum {
				t.Errorf("%s, %gs windows: exo's total error %.6g J not above ours %.6g J", f.Name, l, exo, ours)
			}
			if l < 1 && zero == 0 {
				t.Errorf("%s, %gs windows: exo's method never counted 0 J, yet half of such windows hold no sample", f.Name, l)
			}
		}
	}
}
