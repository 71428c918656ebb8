package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/openai"
)

// The targets of the stream readers: per token in steady state.
const (
	sseTargetNs     = 1000
	sseTargetAllocs = 0.1 // the amortised growth of a result's slices, below one allocation per ten tokens
)

// runSSE measures the stream readers on in-memory streams (through the
// packages' own benchmarks) and the ingest rate of many concurrent
// loopback streams.
func runSSE(ctx context.Context, cfg config, rep *report) error {
	if cfg.goTest {
		if err := inMemory(ctx, rep); err != nil {
			rep.skip("sse in-memory benchmarks: %v", err)
		}
	} else {
		rep.skip("sse in-memory benchmarks: -gotest=false (they run with go test ./engine ./engine/exo ./engine/openai)")
	}
	return ingestAll(ctx, cfg, rep)
}

// benchLine is one result line of go test -bench output.
type benchLine struct {
	pkg, name string
	values    map[string]float64
}

// parseBench reads the result lines of go test -bench -benchmem output,
// with the package each belongs to ("pkg:" lines).
func parseBench(out []byte) []benchLine {
	var lines []benchLine
	pkg := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		bl := benchLine{pkg: pkg, name: f[0], values: map[string]float64{}}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			bl.values[f[i+1]] = v
		}
		lines = append(lines, bl)
	}
	return lines
}

// inMemory runs BenchmarkSSEReader of engine and BenchmarkReadStream of
// both adapters, which read whole streams from memory, three times each,
// and reports the fastest run's ns and allocations per token (the least
// disturbed by other work on a shared machine). allocs/token is allocs/op
// × (ns/token ÷ ns/op): the benchmark's tokens per op recovered from its
// two time units.
func inMemory(ctx context.Context, rep *report) error {
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^Benchmark(SSEReader|ReadStream)$",
		"-benchmem", "-count", "3", "./engine", "./engine/exo", "./engine/openai")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go test: %w\n%s", err, out)
	}
	rows, err := inMemoryRows(parseBench(out))
	if err != nil {
		return fmt.Errorf("%w in:\n%s", err, out)
	}
	for _, r := range rows {
		rep.add(r)
	}
	return nil
}

// inMemoryRows turns the benchmark lines into rows, keeping the fastest
// line of each benchmark.
func inMemoryRows(lines []benchLine) ([]Row, error) {
	type best struct{ perToken, allocs float64 }
	var order []string
	fastest := map[string]best{}
	for _, bl := range lines {
		v := bl.values
		var key string
		var b best
		switch {
		case strings.HasPrefix(bl.name, "BenchmarkSSEReader/events_per_read=64"):
			key, b = "engine.SSEReader", best{v["ns/op"], v["allocs/op"]}
		case strings.HasPrefix(bl.name, "BenchmarkReadStream"):
			per := v["ns/token"]
			if per == 0 {
				per = v["ns/chunk"]
			}
			if per == 0 || v["ns/op"] == 0 {
				continue
			}
			key, b = bl.pkg[strings.LastIndex(bl.pkg, "/")+1:]+" stream reader", best{per, v["allocs/op"] * per / v["ns/op"]}
		default:
			continue
		}
		old, seen := fastest[key]
		if !seen {
			order = append(order, key)
		}
		if !seen || b.perToken < old.perToken {
			fastest[key] = b
		}
	}
	if len(order) != 3 {
		return nil, fmt.Errorf("expected results of 3 benchmarks (SSEReader, exo and openai ReadStream), found %d", len(order))
	}
	var rows []Row
	for _, key := range order {
		b := fastest[key]
		unit, allocTarget, allocMet := "token", "0 (< 0.1 amortised)", b.allocs < sseTargetAllocs
		if key == "engine.SSEReader" {
			unit, allocTarget, allocMet = "event", "0", b.allocs == 0
		}
		rows = append(rows,
			Row{Section: "sse", Name: fmt.Sprintf("%s in memory, ns/%s (fastest of 3)", key, unit), Value: b.perToken, Unit: "ns",
				Target: "≤ 1µs", Met: ptr(b.perToken <= sseTargetNs)},
			Row{Section: "sse", Name: fmt.Sprintf("%s in memory, allocs/%s", key, unit), Value: b.allocs, Unit: "allocs",
				Target: allocTarget, Met: ptr(allocMet)})
	}
	return rows, nil
}

// streamServer answers every chat completion with a canned stream, exo's
// shape or vLLM's by the X-Shape header, written at once: the client's
// reading is the bottleneck.
type streamServer struct {
	bodies map[shape][]byte
}

func (s *streamServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		io.WriteString(w, "{}")
		return
	}
	io.Copy(io.Discard, r.Body)
	body, ok := s.bodies[shape(r.Header.Get("X-Shape"))]
	if !ok {
		http.Error(w, "X-Shape must be exo or openai", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Write(body)
}

// ingestAll measures, for each adapter, one stream alone and
// cfg.sseStreams streams at once.
func ingestAll(ctx context.Context, cfg config, rep *report) error {
	ss := &streamServer{bodies: map[shape][]byte{"exo": shape("exo").stream(cfg.sseTokens), "openai": shape("openai").stream(cfg.sseTokens)}}
	srv, err := listen(ss)
	if err != nil {
		return err
	}
	defer srv.Close()
	ex, err := exo.New(srv.URL, &exo.Options{MaxBurst: cfg.sseStreams})
	if err != nil {
		return err
	}
	defer ex.CloseIdleConnections()
	oa, err := openai.New(srv.URL, &openai.Options{MaxBurst: cfg.sseStreams})
	if err != nil {
		return err
	}
	defer oa.CloseIdleConnections()
	for _, a := range []struct {
		sh  shape
		eng interface {
			engine.Engine
			engine.Prewarmer
		}
	}{{"exo", ex}, {"openai", oa}} {
		for _, streams := range []int{1, cfg.sseStreams} {
			rounds := 1
			if streams == 1 {
				rounds = 20
			}
			m, err := ingest(ctx, a.eng, a.sh, streams, rounds, cfg.sseTokens)
			if err != nil {
				return fmt.Errorf("%s, %d streams: %w", a.sh, streams, err)
			}
			name := fmt.Sprintf("%s loopback, %d stream(s) × %d tokens", a.sh, streams, cfg.sseTokens)
			rep.add(Row{Section: "sse", Name: name + ", tokens/s", Value: m.tokensPerSec, Unit: "tok/s"})
			if m.cpuOK {
				rep.add(Row{Section: "sse", Name: name + ", CPU (user+sys)/wall", Value: m.cores, Unit: "cores",
					Note: ""})
				rep.add(Row{Section: "sse", Name: name + ", CPU per token", Value: m.cpuPerToken, Unit: "ns",
					Note: "process CPU time ÷ tokens; the server writing the streams runs in the same process"})
			}
			rep.add(Row{Section: "sse", Name: name + ", allocs/token", Value: m.allocsPerToken, Unit: "allocs",
				Note: "process-wide mallocs ÷ tokens, server side included"})
		}
	}
	return nil
}

// ingestResult is what one ingest run measured.
type ingestResult struct {
	tokensPerSec, cores, cpuPerToken, allocsPerToken float64
	cpuOK                                            bool
}

// ingest reads rounds × streams streams of tokens tokens each, streams at
// a time, and measures wall time, process CPU time and allocations.
func ingest(ctx context.Context, eng interface {
	engine.Engine
	engine.Prewarmer
}, sh shape, streams, rounds, tokens int) (ingestResult, error) {
	if err := eng.Prewarm(ctx, streams); err != nil {
		return ingestResult{}, err
	}
	req := engine.Request{Model: "perf", Messages: []engine.Message{{Role: "user", Content: "stream"}},
		MaxTokens: tokens, Stream: true, Header: http.Header{"X-Shape": {string(sh)}}}
	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0, cpuOK := cpuTime()
	start := time.Now()
	errs := make([]error, streams)
	var wg sync.WaitGroup
	for s := range streams {
		wg.Go(func() {
			for range rounds {
				res, err := eng.Complete(ctx, req)
				if err != nil {
					errs[s] = err
					return
				}
				if got := res.Trace.Tokens(); got != tokens {
					errs[s] = fmt.Errorf("read %d tokens, expected %d", got, tokens)
					return
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	cpu1, _ := cpuTime()
	runtime.ReadMemStats(&ms1)
	for _, err := range errs {
		if err != nil {
			return ingestResult{}, err
		}
	}
	total := float64(streams * rounds * tokens)
	r := ingestResult{
		tokensPerSec:   total / wall.Seconds(),
		allocsPerToken: float64(ms1.Mallocs-ms0.Mallocs) / total,
		cpuOK:          cpuOK,
	}
	if cpuOK {
		cpu := cpu1 - cpu0
		r.cores = cpu.Seconds() / wall.Seconds()
		r.cpuPerToken = float64(cpu.Nanoseconds()) / total
	}
	return r, nil
}
