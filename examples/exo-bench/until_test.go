package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit/cli"
)

// TestUntil: --until repeats each cell of the embedded engine until its
// target is met, or to --max-repeat when the target cannot be met within
// it, and the table and the results JSON say which per cell.
func TestUntil(t *testing.T) {
	for _, c := range []struct {
		until, stopped string
	}{
		{"prompt_tps.mean:5%", "target met"},
		{"prompt_tps.p99:5%", "cap reached"}, // 6 repeats cannot bound a p99
	} {
		out := filepath.Join(t.TempDir(), "out.json")
		var o, e bytes.Buffer
		args := []string{"--allow-saturated", "--preset", "fast", "--pp", "64", "--tg", "4", "--concurrency", "1", "--repeat", "2",
			"--until", c.until, "--max-repeat", "6", "--json-out", out}
		if err := run(context.Background(), args, &o, &e); err != nil {
			t.Fatalf("%s: %v\n%s", c.until, err, e.String())
		}
		if !strings.Contains(o.String(), c.stopped+" after") {
			t.Errorf("%s: the table does not say %q:\n%s", c.until, c.stopped, o.String())
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Summary []struct {
				Repeats   int    `json:"repeats"`
				Stopped   string `json:"stopped"`
				Precision []struct {
					Met    bool     `json:"met"`
					Margin *float64 `json:"margin"`
				} `json:"precision"`
			} `json:"summary"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Summary) != 1 || doc.Summary[0].Stopped != c.stopped || len(doc.Summary[0].Precision) != 1 {
			t.Fatalf("%s: summary %+v; want one cell stopped by %q", c.until, doc.Summary, c.stopped)
		}
		s := doc.Summary[0]
		switch met := s.Precision[0]; c.stopped {
		case "target met":
			if !met.Met || met.Margin == nil || *met.Margin > 0.05 || s.Repeats > 6 {
				t.Errorf("%s: %d repeats, %+v; want met within 5 %% in at most 6", c.until, s.Repeats, met)
			}
		default:
			if met.Met || s.Repeats != 6 {
				t.Errorf("%s: %d repeats, %+v; want 6, not met", c.until, s.Repeats, met)
			}
		}
	}
}

// TestUntilBadFlags: targets without a cap, or a cap without targets, are
// usage errors before anything is sent.
func TestUntilBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--until", "gen_tps.mean:5%"}, "max_repeat=0"},
		{[]string{"--max-repeat", "5"}, "without targets"},
		{[]string{"--until", "tpot.mean:5%", "--max-repeat", "5"}, "a cell knows the figures"},
		{[]string{"--until", "gen_tps.mean", "--max-repeat", "5"}, "FIGURE.STAT:MARGIN%"},
	} {
		_, err := parse(c.args, &bytes.Buffer{})
		if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("parse(%q) = %v; want a usage error naming %q", c.args, err, c.want)
		}
	}
}
