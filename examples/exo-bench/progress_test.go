package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/internal/progtest"
)

// TestProgressOnATerminal runs the program under script(1), whose pty
// makes stderr a terminal, over every placement of the embedded 2-node
// cluster: the bar's count goes up at each redraw across the placements
// (it never starts again; redraws come at most one each cli.Progress's
// Every, so a count may be skipped) to the sweep's total, the requests of
// every placement in the results, and every redraw has an elapsed time
// and an ETA, the last one 0s.
func TestProgressOnATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	bin := progtest.Build(t)
	out := filepath.Join(t.TempDir(), "out.json")
	got := progtest.OnTerminal(t, bin, "--allow-saturated", "--preset", "fast", "--pp", "64", "--tg", "4", "--concurrency", "1,2",
		"--repeat", "1", "--max-nodes", "2", "--no-system-metrics", "--json-out", out)
	re := regexp.MustCompile(`\r\[[# ]+\] (\d+)/(\d+)  (placement=[^ ]+) rep \d+  failed 0  \S+ req/s  \S+  ETA (\S+) `)
	ms := re.FindAllSubmatch(got, -1)
	if len(ms) == 0 {
		t.Fatalf("no progress bar on a terminal:\n%q", got)
	}
	placements := map[string]bool{}
	total := string(ms[0][2])
	prev := 0
	for i, m := range ms {
		if done, _ := strconv.Atoi(string(m[1])); done <= prev || string(m[2]) != total {
			t.Errorf("redraw %d reads %s/%s; want more than %d, of %s", i, m[1], m[2], prev, total)
		} else {
			prev = done
		}
		place, _, _ := strings.Cut(string(m[3]), "/")
		placements[place] = true
	}
	if len(placements) < 2 {
		t.Errorf("the bar named %d placement(s), want at least 2: %v", len(placements), placements)
	}
	last := ms[len(ms)-1]
	if string(last[1]) != total || string(last[4]) != "0s" {
		t.Errorf("the last redraw reads %s/%s, ETA %s; want the total and 0s", last[1], last[2], last[4])
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc exoDocument
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if strconv.Itoa(len(doc.Runs)) != total {
		t.Errorf("the bar's total is %s, the sweep measured %d requests", total, len(doc.Runs))
	}
}
