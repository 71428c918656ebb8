package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDefaultTableIsHonest runs exo-bench with its defaults (the embedded
// engine's default preset and plan) and reads its table: no energy figure
// may have a ± larger than itself, the energy column must say whose figure
// it is, the table must say what its ± is and where each figure's sd is,
// and no column may be all "—". The terminal table may say those once,
// below its lines, instead of in every header (benchkit.WriteTable keeps
// it within 120 columns); the placement, when every cell shares it, may be
// said there too instead of in a column.
func TestDefaultTableIsHonest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the default plan (about 20 s)")
	}
	var o, e bytes.Buffer
	// --allow-saturated: the table is under test, not the bursts' skew,
	// which a loaded machine may push past the gate.
	if err := run(context.Background(), []string{"--allow-saturated", "--json-out", filepath.Join(t.TempDir(), "out.json")}, &o, &e); err != nil {
		t.Fatalf("run: %v\n%s", err, e.String())
	}
	lines := strings.Split(strings.TrimSpace(o.String()), "\n")
	hi := -1
	for i, l := range lines {
		if f := splitColumns(l); len(f) > 2 && (f[0] == "pp" || f[0] == "placement") && strings.Contains(l, "conc") {
			hi = i
		}
	}
	if hi < 0 {
		t.Fatalf("no table header in:\n%s", o.String())
	}
	header := splitColumns(lines[hi])
	var body [][]string
	end := len(lines)
	for i, l := range lines[hi+1:] {
		if strings.TrimSpace(l) == "" {
			end = hi + 1 + i
			break
		}
		body = append(body, splitColumns(l))
	}
	below := strings.Join(lines[end:], "\n")
	if !strings.Contains(lines[hi], "placement") && !strings.Contains(below, "placement: ") {
		t.Errorf("the table names no placement, in a column or below it:\n%s", o.String())
	}
	col := -1
	for i, h := range header {
		if strings.HasPrefix(h, "energy J") || col < 0 && strings.HasPrefix(h, "J/tok") {
			col = i
		}
	}
	if col < 0 || !strings.Contains(header[col], "(server)") && !strings.Contains(below, "the server's energy") {
		t.Fatalf("header %q: want an energy column labelled with its source (server), in its header or below the table:\n%s", lines[hi], o.String())
	}
	legendPM := strings.Contains(below, "± is the half width of each figure's 95 % confidence interval")
	legendSD := strings.Contains(below, "the JSON has each with its sd")
	for _, h := range header {
		if strings.Contains(h, "tok/s") && !strings.HasSuffix(h, "± 95 % CI (sd)") && !legendPM {
			t.Errorf("header %q does not say what its ± is, nor does the table", h)
		}
	}
	for _, cells := range body {
		if len(cells) != len(header) {
			t.Fatalf("line %q has %d columns, header %d", cells, len(cells), len(header))
		}
		v, pm, ok := strings.Cut(cells[col], " ±")
		if !ok {
			continue
		}
		pm = strings.TrimSpace(pm)
		pm, sd, withSD := strings.Cut(pm, " (sd ")
		if withSD && !strings.HasSuffix(sd, ")") || !withSD && !legendSD {
			t.Errorf("energy %q: no standard deviation beside the ±, and the table does not say where it is", cells[col])
		}
		x, err1 := strconv.ParseFloat(v, 64)
		y, err2 := strconv.ParseFloat(pm, 64)
		if err1 != nil || err2 != nil || y > x {
			t.Errorf("energy %q: the ± exceeds the figure", cells[col])
		}
	}
	for i, h := range header {
		all := len(body) > 0
		for _, cells := range body {
			all = all && cells[i] == "—"
		}
		if all {
			t.Errorf("column %q is all —", h)
		}
	}
}

// splitColumns splits a tabwriter line on runs of two or more spaces.
func splitColumns(l string) []string {
	var out []string
	for _, f := range strings.Split(strings.TrimSpace(l), "  ") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
