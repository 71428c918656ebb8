package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/timing"
)

// TestRunQuick runs every section at tiny sizes and checks that each
// produced its rows (or, for the tokenizer sections, said why not), that
// the table and the JSON agree, and that every target row says whether it
// was met.
func TestRunQuick(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	jsonPath := filepath.Join(t.TempDir(), "perf.json")
	var stdout, stderr bytes.Buffer
	args := []string{"-quick", "-model", "qwen3", "-json", jsonPath,
		"-models", filepath.Join(root, "testdata", "models"), "-node", filepath.Join(root, "scripts", "node")}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Quick || rep.Machine.CPUs < 1 || rep.Machine.GoVersion == "" {
		t.Errorf("machine %+v, quick %v: expected quick and a described machine", rep.Machine, rep.Quick)
	}
	counts := map[string]int{}
	for _, r := range rep.Rows {
		counts[r.Section]++
		if r.Target != "" && r.Met == nil {
			t.Errorf("row %q has target %q but no verdict", r.Name, r.Target)
		}
		if !strings.Contains(stdout.String(), r.Name) {
			t.Errorf("row %q is in the JSON but not in the table", r.Name)
		}
	}
	// skew: 5 methods (raw, two adapters prepared, two through
	// Complete); n=1 gives a round trip and a release-to-send row per
	// method, n=8 a spread and a p99 row per method. sse: 2 adapters × 2
	// stream counts × 4 rows. itl: 2 adapters × 2 concurrencies × 2 rows,
	// and 2 serve-load modes × 2 rows.
	// energy: 5 curves.
	want := map[string]int{"skew": 5*2 + 5*2, "sse": 16, "itl": 8 + 4, "energy": 5}
	missing := false
	if _, err := os.Stat(filepath.Join(root, "testdata", "models", "qwen3", "tokenizer.json")); err == nil {
		want["prompt"], want["tokenizer"] = 2, 2
	} else {
		missing = true
	}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("rows per section (-want +got):\n%s", diff)
	}
	if missing && !strings.Contains(strings.Join(rep.Skipped, "\n"), "qwen3: tokenizer files missing") {
		t.Errorf("qwen3 is missing but the skips do not say so: %q", rep.Skipped)
	}
	// Energy on piecewise-linear truth is exact, whatever the machine.
	for _, r := range rep.Rows {
		if r.Section == "energy" && r.Met != nil && !*r.Met {
			t.Errorf("energy row %q: %v%%, expected within 1%%", r.Name, r.Value)
		}
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-only", "skew,nope"}, {"extra"}, {"-nosuchflag"}} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, &stdout, &stderr); err == nil {
			t.Errorf("run(%q) succeeded, expected an error", args)
		}
	}
}

func TestParseBench(t *testing.T) {
	out := []byte(`goos: linux
pkg: github.com/inferbench/inferbench/engine/exo
cpu: AMD EPYC
BenchmarkReadStream-2   	     553	   2048000 ns/op	 112.20 MB/s	      2000 ns/token	  763024 B/op	   15436 allocs/op
PASS
pkg: github.com/inferbench/inferbench/engine
BenchmarkSSEReader/events_per_read=64-2        	29065669	        41.22 ns/op	5337.02 MB/s	       0 B/op	       0 allocs/op
ok  	github.com/inferbench/inferbench/engine	2.417s
`)
	got := parseBench(out)
	want := []benchLine{
		{pkg: "github.com/inferbench/inferbench/engine/exo", name: "BenchmarkReadStream-2",
			values: map[string]float64{"ns/op": 2048000, "MB/s": 112.2, "ns/token": 2000, "B/op": 763024, "allocs/op": 15436}},
		{pkg: "github.com/inferbench/inferbench/engine", name: "BenchmarkSSEReader/events_per_read=64-2",
			values: map[string]float64{"ns/op": 41.22, "MB/s": 5337.02, "B/op": 0, "allocs/op": 0}},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(benchLine{})); diff != "" {
		t.Errorf("parseBench (-want +got):\n%s", diff)
	}
}

func TestParseSpeed(t *testing.T) {
	got, err := parseSpeed([]byte("qwen3\t262144 tokens\tcold 410k tok/s\twarm 1234k tok/s\ngemma3\t300000 tokens\tcold 221k tok/s\twarm 900k tok/s\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]jsSpeed{"qwen3": {262144, 410e3, 1234e3}, "gemma3": {300000, 221e3, 900e3}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(jsSpeed{})); diff != "" {
		t.Errorf("parseSpeed (-want +got):\n%s", diff)
	}
	if _, err := parseSpeed([]byte("qwen3\tcold 410k tok/s\n")); err == nil {
		t.Error("a line of 2 fields parsed without error")
	}
}

// TestAccuracy checks the error arithmetic on hand-made instants: the
// client reads chunk j at flush_j + 10µs·j; chunk 3 carries 3 tokens.
func TestAccuracy(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(x float64) time.Time { return base.Add(time.Duration(x * float64(time.Millisecond))) }
	var flushes []flush
	for _, f := range []time.Time{ms(5), ms(7), ms(9), ms(15), ms(17)} {
		flushes = append(flushes, flush{f, f}) // flushes of no width
	}
	tr := timing.Trace{Start: ms(0)}
	for j, f := range flushes {
		tr.Chunks = append(tr.Chunks, timing.Chunk{At: f.After.Add(time.Duration(j) * 10 * time.Microsecond), Tokens: chunkTokens(j)})
	}
	ttft, itl, err := accuracy(tr, flushes)
	if err != nil {
		t.Fatal(err)
	}
	if ttft != 0 {
		t.Errorf("TTFT error %v, expected 0", ttft)
	}
	// Gaps: chunks 1 and 2 give one gap each, +10µs; chunk 3 (3 tokens,
	// 6ms + 10µs after chunk 2) gives three gaps, each +10µs/3 against the
	// server's 2ms (within the nanoseconds timing rounds); chunk 4 gives +10µs.
	third := time.Duration(10*time.Microsecond) / 3
	want := []time.Duration{10 * time.Microsecond, 10 * time.Microsecond, third, third, third, 10 * time.Microsecond}
	if diff := cmp.Diff(want, itl, cmp.Comparer(func(a, b time.Duration) bool { return max(a-b, b-a) <= 2 })); diff != "" {
		t.Errorf("ITL errors (-want +got):\n%s", diff)
	}
	tr.Chunks[3].Tokens = 1
	if _, _, err := accuracy(tr, flushes); err == nil {
		t.Error("a chunk counted with the wrong token count passed")
	}
	if _, _, err := accuracy(tr, flushes[:4]); err == nil {
		t.Error("4 flushes for 5 chunks passed")
	}
}

// TestAccuracyInterval: an instant inside the server's flush interval is
// no error; one outside is its distance from the nearer end, and the ITL
// gaps are taken between those nearest points.
func TestAccuracyInterval(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	us := func(x int) time.Time { return base.Add(time.Duration(x) * time.Microsecond) }
	flushes := []flush{{us(2000), us(2400)}, {us(4000), us(4010)}, {us(6000), us(6010)}}
	for _, c := range []struct {
		name       string
		at         []int // the client's instants, µs
		ttft       time.Duration
		itl0, itl1 time.Duration
	}{
		{"inside", []int{2100, 4005, 6005}, 0, 0, 0},
		{"late", []int{2500, 4005, 6005}, 100 * time.Microsecond, -100 * time.Microsecond, 0},
		{"early", []int{1990, 3990, 6005}, -10 * time.Microsecond, 0, 10 * time.Microsecond},
	} {
		tr := timing.Trace{Start: us(0)}
		for j, at := range c.at {
			tr.Chunks = append(tr.Chunks, timing.Chunk{At: us(at), Tokens: chunkTokens(j)})
		}
		ttft, itl, err := accuracy(tr, flushes)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if ttft != c.ttft || len(itl) != 2 || itl[0] != c.itl0 || itl[1] != c.itl1 {
			t.Errorf("%s: TTFT error %v, ITL errors %v; want %v, [%v %v]", c.name, ttft, itl, c.ttft, c.itl0, c.itl1)
		}
	}
	if _, _, err := accuracy(timing.Trace{Start: us(0), Chunks: []timing.Chunk{{At: us(1), Tokens: 1}}}, []flush{{us(5), us(4)}}); err == nil {
		t.Error("a flush that ends before it begins passed")
	}
}

func TestFormatValue(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		unit string
		want string
	}{
		{1500, "ns", "1.5µs"}, {0.25, "%", "0.250%"}, {2.5e6, "tok/s", "2.5M tok/s"},
		{45000, "tok/s", "45k tok/s"}, {3, "calls", "3 calls"}, {0.05, "allocs", "0.05 allocs"},
	} {
		if got := formatValue(tc.v, tc.unit); got != tc.want {
			t.Errorf("formatValue(%v, %q) = %q, expected %q", tc.v, tc.unit, got, tc.want)
		}
	}
}

func TestTokenizerTextIsExactSize(t *testing.T) {
	for _, n := range []int{1000, 4096} {
		if got := len(tokenizerText(n)); got > n || got < n-3 {
			t.Errorf("tokenizerText(%d) has %d bytes, expected %d less at most 3 for a cut rune", n, got, n)
		}
	}
}

// TestInMemoryRows keeps the fastest of repeated lines and derives
// allocs/token = allocs/op × ns/token ÷ ns/op: 1024 × 500 ÷ 512000 = 1.
func TestInMemoryRows(t *testing.T) {
	line := func(pkg, name string, kv ...float64) benchLine {
		units := []string{"ns/op", "ns/token", "allocs/op"}
		if strings.HasSuffix(pkg, "openai") {
			units[1] = "ns/chunk"
		}
		if strings.HasPrefix(name, "BenchmarkSSE") {
			units = []string{"ns/op", "allocs/op"}
		}
		v := map[string]float64{}
		for i, u := range units {
			v[u] = kv[i]
		}
		return benchLine{pkg: pkg, name: name, values: v}
	}
	const exo, oa, eng = "m/engine/exo", "m/engine/openai", "m/engine"
	rows, err := inMemoryRows([]benchLine{
		line(eng, "BenchmarkSSEReader/events_per_read=1-2", 90, 0),
		line(eng, "BenchmarkSSEReader/events_per_read=64-2", 45, 0),
		line(eng, "BenchmarkSSEReader/events_per_read=64-2", 41, 0),
		line(exo, "BenchmarkReadStream-2", 2048000, 2000, 15436),
		line(exo, "BenchmarkReadStream-2", 512000, 500, 1024),
		line(oa, "BenchmarkReadStream-2", 1024000, 1000, 51.2),
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, r := range rows {
		got[r.Name] = r.Value
	}
	want := map[string]float64{
		"engine.SSEReader in memory, ns/event (fastest of 3)":     41,
		"engine.SSEReader in memory, allocs/event":                0,
		"exo stream reader in memory, ns/token (fastest of 3)":    500,
		"exo stream reader in memory, allocs/token":               1,
		"openai stream reader in memory, ns/token (fastest of 3)": 1000,
		"openai stream reader in memory, allocs/token":            0.05,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if _, err := inMemoryRows(nil); err == nil {
		t.Error("no benchmark lines gave no error")
	}
}

func TestSpeedPick(t *testing.T) {
	s := jsSpeed{tokens: 10, cold: 410e3, warm: 1.234e6}
	if s.pick("cold") != 410e3 || s.pick("warm") != 1.234e6 {
		t.Errorf("pick: cold %v, warm %v", s.pick("cold"), s.pick("warm"))
	}
	if got := siTok(410e3) + " " + siTok(1.234e6); got != "410k 1.23M" {
		t.Errorf("siTok = %q, want \"410k 1.23M\"", got)
	}
}

// TestMain lets the test binary serve as the itl section's pace server
// process, as the perf binary does: the section starts os.Executable.
func TestMain(m *testing.M) {
	if os.Getenv(paceEnv) != "" {
		os.Exit(servePace(os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
