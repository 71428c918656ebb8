package cli

import (
	"errors"
	"flag"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/inferbench/inferbench/benchkit"
)

func TestIntList(t *testing.T) {
	var l IntList
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(&l, "pp", "")
	if err := fs.Parse([]string{"--pp", "128,512", "--pp", "1024 2048"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(IntList{128, 512, 1024, 2048}, l); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := l.String(); got != "128,512,1024,2048" {
		t.Errorf("String() = %q", got)
	}
	if err := fs.Parse([]string{"--pp", "64,x"}); err == nil {
		t.Error("a list with x parsed")
	}
	if len(l) != 4 {
		t.Errorf("a bad list changed the value: %v", l)
	}
}

func TestParseRates(t *testing.T) {
	got, err := ParseRates(" 1, 2.5 ,inf")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float64{1, 2.5, math.Inf(1)}, got); diff != "" {
		t.Errorf("ParseRates (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"", "0", "-1", "1,,2", "x", "1,1", "NaN", "1e400"} {
		if _, err := ParseRates(bad); !errors.Is(err, benchkit.ErrBadLoad) {
			t.Errorf("ParseRates(%q) error = %v; want ErrBadLoad", bad, err)
		}
	}
}

func FuzzParseRates(f *testing.F) {
	for _, s := range []string{"1", "1,2,4", "inf", "0.5, inf", "", ",", "1e-3", "-2", "Inf,+inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rates, err := ParseRates(s)
		if err != nil {
			if !errors.Is(err, benchkit.ErrBadLoad) {
				t.Fatalf("ParseRates(%q) error %v does not wrap ErrBadLoad", s, err)
			}
			return
		}
		parts := make([]string, len(rates))
		for i, r := range rates {
			if !(r > 0) {
				t.Fatalf("ParseRates(%q) gave rate %g", s, r)
			}
			parts[i] = FormatRate(r)
		}
		again, err := ParseRates(strings.Join(parts, ","))
		if err != nil || !cmp.Equal(rates, again) {
			t.Fatalf("round trip of %q: %v, %v; want %v", s, again, err, rates)
		}
	})
}

// TestGCPercent: --gc-percent takes -1, 0 and positive percentages, and
// refuses the rest with an error that names the choices.
func TestGCPercent(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want GCPercent
		bad  string // in the error, "" when accepted
	}{
		{"400", 400, ""}, {"-1", -1, ""}, {"0", 0, ""}, {" 50 ", 50, ""},
		{"-2", 0, "want -1 (no collection during the run)"}, {"lots", 0, "want an integer"}, {"1.5", 0, "want an integer"},
	} {
		fs := flag.NewFlagSet("p", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		g := GCPercent(DefaultGCPercent)
		fs.Var(&g, "gc-percent", GCPercentUsage)
		err := fs.Parse([]string{"--gc-percent", tc.in})
		switch {
		case tc.bad == "" && (err != nil || g != tc.want):
			t.Errorf("%q: %v, %v; want %d", tc.in, g, err, tc.want)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad) || g != DefaultGCPercent):
			t.Errorf("%q: %v, value %v; want an error containing %q and the default kept", tc.in, err, g, tc.bad)
		}
	}
}
