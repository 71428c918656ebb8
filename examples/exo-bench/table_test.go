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
// it is, and no column may be all "—".
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
		if strings.Contains(l, "placement") && strings.Contains(l, "conc") {
			hi = i
		}
	}
	if hi < 0 {
		t.Fatalf("no table header in:\n%s", o.String())
	}
	header := splitColumns(lines[hi])
	col := -1
	for i, h := range header {
		if strings.HasPrefix(h, "energy J") {
			col = i
		}
	}
	if col < 0 || !strings.Contains(lines[hi], "energy J (server)") {
		t.Fatalf("header %q: want an energy column labelled with its source (server)", lines[hi])
	}
	for _, h := range header {
		if strings.Contains(h, "tok/s") && !strings.HasSuffix(h, "± 95 % CI (sd)") {
			t.Errorf("header %q does not say what its ± is", h)
		}
	}
	var body [][]string
	for _, l := range lines[hi+1:] {
		if strings.TrimSpace(l) == "" {
			break
		}
		body = append(body, splitColumns(l))
	}
	for _, cells := range body {
		if len(cells) != len(header) {
			t.Fatalf("line %q has %d columns, header %d", cells, len(cells), len(header))
		}
		v, pm, ok := strings.Cut(cells[col], " ± ")
		if !ok {
			continue
		}
		pm, sd, ok := strings.Cut(pm, " (sd ")
		if !ok || !strings.HasSuffix(sd, ")") {
			t.Errorf("energy %q: no standard deviation beside the ±", cells[col])
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
