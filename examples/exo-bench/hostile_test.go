package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/internal/hostile"
	"github.com/inferbench/inferbench/promptsize/hf"
	"github.com/inferbench/inferbench/promptsize/hf/hftest"
)

// hostileCluster is an exo cluster whose control plane is the simulated
// engine's and whose completion endpoints answer with attack (nil: the
// simulated engine's own answers).
func hostileCluster(t *testing.T, counter *hf.Tokenizer, attack http.Handler) *hostile.Server {
	t.Helper()
	srv := sim.NewServer(sim.Options{Preset: sim.Fast(), Nodes: 1, NoInstance: true, LoadDelay: -1, Counter: counter})
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	mux := http.NewServeMux()
	mux.Handle("/", httputil.NewSingleHostReverseProxy(u))
	if attack != nil {
		mux.Handle(exo.BenchPath, attack)
		mux.Handle(exo.ChatPath, attack)
	}
	return hostile.New(t, mux)
}

// runAgainst runs exo-bench for 2 requests of pp 64, tg 16 against s and
// returns its exit status, its results document, its JSONL lines, and the
// bytes the process allocated during the run.
func runAgainst(t *testing.T, s *hostile.Server, model, tokDir string, stream bool) (int, exoDocument, [][]byte, uint64) {
	t.Helper()
	u, _ := url.Parse(s.URL)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	args := []string{"--host", u.Hostname(), "--port", u.Port(), "--model", model,
		"--tokenizer", tokDir, "--pp", "64", "--tg", "16", "--repeat", "2", "--max-nodes", "1",
		"--settle-timeout", "0", "--pause-repeat", "0", "--pause-group", "0", "--no-system-metrics",
		"--timeout", "60", "--json-out", out}
	if stream {
		args = append(args, "--stream")
	}
	var stdout, stderr bytes.Buffer
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := run(context.Background(), args, &stdout, &stderr)
	runtime.ReadMemStats(&after)
	code := exitCode(err, &bytes.Buffer{})
	var doc exoDocument
	b, rerr := os.ReadFile(out)
	if rerr != nil {
		t.Fatalf("no results JSON (exit %d, %v): %v\nstderr:\n%s", code, err, rerr, stderr.String())
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("results JSON is not valid: %v", err)
	}
	jl, rerr := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if rerr != nil {
		t.Fatal(rerr)
	}
	var lines [][]byte
	for _, l := range bytes.Split(bytes.TrimSpace(jl), []byte("\n")) {
		if !json.Valid(l) {
			t.Errorf("JSONL line is not valid JSON: %.200s", l)
		}
		if _, header := benchkit.ParseRunHeader(l); header {
			continue
		}
		lines = append(lines, l)
	}
	return code, doc, lines, after.TotalAlloc - before.TotalAlloc
}

// TestHostileServerNumbers runs the program against a cluster whose
// completions lie about their numbers, streamed and not: a usage count
// that jumps to 1e18 or 2e7, absurd or negative generation_stats, text
// without end for 16 tokens. Every row is an implausible_usage error that
// names the number and its bound, with null figures; the run goes to its
// end, the JSONL and the results JSON are valid and whole, the exit status
// is 1, and the run allocates little more than an honest run does (the 2e7
// count used to cost 2.26 GB, the flood 677 MB).
func TestHostileServerNumbers(t *testing.T) {
	tokDir := hftest.WriteTokenizer(t)
	tok, err := hf.Load(tokDir)
	if err != nil {
		t.Fatal(err)
	}
	model := sim.Fast().Model.ID

	// The honest run's allocations, against which the attacks' are
	// bounded: whatever a run costs here, an attack may add at most
	// attackAlloc to it.
	const attackAlloc = 64 << 20
	baseline := map[bool]uint64{}
	for _, stream := range []bool{false, true} {
		code, doc, _, alloc := runAgainst(t, hostileCluster(t, tok, nil), model, tokDir, stream)
		if code != 0 || len(doc.Runs) != 2 {
			t.Fatalf("honest run (stream %v): exit %d, %d rows", stream, code, len(doc.Runs))
		}
		baseline[stream] = alloc
	}

	flood := func() *hostile.Flood { return &hostile.Flood{ChunkBytes: 4096, Total: 200 << 20} }
	for _, tc := range []struct {
		name   string
		stream bool
		attack func() http.Handler
		nums   []string
	}{
		{"stream usage 1e18", true, func() http.Handler {
			return hostile.UsageStream(hostile.Usage{Prompt: 70, Completion: 1}, hostile.Usage{Prompt: 70, Completion: 1e18})
		}, []string{"1000000000000000000", "32"}},
		{"stream usage 2e7", true, func() http.Handler {
			return hostile.UsageStream(hostile.Usage{Prompt: 70, Completion: 1}, hostile.Usage{Prompt: 70, Completion: 2e7})
		}, []string{"20000000", "32"}},
		{"stream text flood", true, func() http.Handler { return flood() }, []string{"32"}},
		{"body generation_tps 6.5e19", false, func() http.Handler {
			return hostile.JSON(http.StatusOK, hostile.CompletionBody("t", "", hostile.ExoStats(100, 6.5e19, 70, 16)))
		}, []string{"6.5e+19", "1e+07"}},
		{"body generation_tps negative", false, func() http.Handler {
			return hostile.JSON(http.StatusOK, hostile.CompletionBody("t", "", hostile.ExoStats(100, -3461.8, 70, 16)))
		}, []string{"-3461.8"}},
		{"body generation_tokens 2e18", false, func() http.Handler {
			return hostile.JSON(http.StatusOK, hostile.CompletionBody("t", "", hostile.ExoStats(100, 20, 70, 2e18)))
		}, []string{"2000000000000000000", "32"}},
		{"body usage 2e18", false, func() http.Handler {
			return hostile.JSON(http.StatusOK, hostile.CompletionBody("t", hostile.Usage{Prompt: 70, Completion: 2e18}.JSON(), hostile.ExoStats(100, 20, 70, 16)))
		}, []string{"2000000000000000000", "32"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attack := tc.attack()
			code, doc, lines, alloc := runAgainst(t, hostileCluster(t, tok, attack), model, tokDir, tc.stream)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if len(doc.Runs) != 2 || len(lines) != 2 {
				t.Fatalf("results JSON %d rows, JSONL %d lines; want 2 each", len(doc.Runs), len(lines))
			}
			for i, r := range doc.Runs {
				if r.ErrorKind != string(engine.KindImplausibleUsage) {
					t.Errorf("row %d: kind %q (%s), want implausible_usage", i, r.ErrorKind, r.Error)
				}
				for _, n := range tc.nums {
					if !strings.Contains(r.Error, n) {
						t.Errorf("row %d: error %q does not name %s", i, r.Error, n)
					}
				}
				if r.Stats != nil || r.GeneratedTokens != nil || r.TPOTS != nil || r.ClientGenerationTPS != nil || r.ITL != nil {
					t.Errorf("row %d keeps figures: stats %v, tokens %v, tpot %v, client tps %v, itl %v",
						i, r.Stats, r.GeneratedTokens, r.TPOTS, r.ClientGenerationTPS, r.ITL)
				}
				if len(r.OutputTextPreview) > 4*previewRunes {
					t.Errorf("row %d: preview of %d bytes", i, len(r.OutputTextPreview))
				}
			}
			for i, l := range lines {
				if !bytes.Contains(l, []byte(`"generated_tokens":null`)) {
					t.Errorf("JSONL line %d: generated_tokens is not null: %.300s", i, l)
				}
			}
			if f, ok := attack.(*hostile.Flood); ok && f.Written() > 16<<20 {
				t.Errorf("the flood wrote %d bytes before the program stopped reading", f.Written())
			}
			t.Logf("allocated %d bytes; an honest run %d", alloc, baseline[tc.stream])
			if limit := baseline[tc.stream] + attackAlloc; alloc > limit {
				t.Errorf("the run allocated %d bytes, more than an honest run's %d plus %d", alloc, baseline[tc.stream], attackAlloc)
			}
		})
	}
}

// previewRunes is how much of the generated text a row keeps
// (output_text_preview): benchkit's 64 runes.
const previewRunes = 64
