package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize/hf"
	"github.com/inferbench/inferbench/promptsize/hf/hftest"
)

// TestFaultsThroughTheProgram runs exo-bench against a sim that injects a
// fault into every second request (benchkit's fault matrix covers every
// kind; this covers the program around it): the faulted requests are rows
// with the fault's error kind, the sweep goes to the end, the JSONL and the
// results JSON hold every row, the exit status is 1, and no goroutine
// outlives the run.
func TestFaultsThroughTheProgram(t *testing.T) {
	tokDir := hftest.WriteTokenizer(t)
	tok, err := hf.Load(tokDir)
	if err != nil {
		t.Fatal(err)
	}
	// Only the stall needs --timeout to fire: the stall lasts far longer
	// than any bound here (the sim ends it when the client goes away),
	// while the healthy requests, a few milliseconds of simulated work
	// each, end within stallTimeout unless the machine is heavily loaded;
	// when one does not, the case tested nothing and is run again with
	// twice the timeout, up to maxStallTimeout. The other faults get a
	// timeout no request comes near.
	const (
		stallTimeout    = 2 * time.Second
		maxStallTimeout = 16 * stallTimeout
		caseTimeout     = time.Minute
	)
	for _, tc := range []struct {
		fault   sim.Fault
		want    engine.Kind
		timeout time.Duration
	}{
		{sim.Fault{Kind: sim.FaultStatus503}, engine.KindStatus, caseTimeout},
		{sim.Fault{Kind: sim.FaultResetMidStream, After: 2}, engine.KindTruncated, caseTimeout},
		{sim.Fault{Kind: sim.FaultStall, After: 1, Duration: 10 * time.Minute}, engine.KindTimeout, stallTimeout},
	} {
		t.Run(string(tc.fault.Kind), func(t *testing.T) {
			before := runtime.NumGoroutine()
			var dir string
			var doc exoDocument
			for timeout := tc.timeout; ; timeout *= 2 {
				srv := sim.NewServer(sim.Options{Preset: sim.Fast(), Nodes: 1, NoInstance: true, LoadDelay: -1, Counter: tok,
					Fault: tc.fault, FaultEvery: 2})
				u, _ := url.Parse(srv.URL)
				dir = t.TempDir()
				out := filepath.Join(dir, "out.json")
				var stdout, stderr bytes.Buffer
				err := run(context.Background(), []string{"--host", u.Hostname(), "--port", u.Port(), "--model", srv.Model(),
					"--tokenizer", tokDir, "--pp", "64", "--tg", "4", "--repeat", "4", "--stream", "--max-nodes", "1",
					"--settle-timeout", "0", "--pause-repeat", "0", "--pause-group", "0", "--no-system-metrics",
					"--timeout", fmt.Sprint(timeout.Seconds()), "--json-out", out}, &stdout, &stderr)
				srv.Close()
				if code := exitCode(err, &bytes.Buffer{}); code != 1 {
					t.Fatalf("exit %d (err %v), want 1; stderr:\n%s", code, err, stderr.String())
				}
				b, rerr := os.ReadFile(out)
				if rerr != nil {
					t.Fatal(rerr)
				}
				doc = exoDocument{}
				if err := json.Unmarshal(b, &doc); err != nil {
					t.Fatalf("results JSON is not valid: %v", err)
				}
				healthyTimedOut := false
				for _, r := range doc.Runs {
					healthyTimedOut = healthyTimedOut || r.RepeatIndex%2 == 0 && engine.Kind(r.ErrorKind) == engine.KindTimeout
				}
				if !healthyTimedOut || timeout >= maxStallTimeout {
					break
				}
				t.Logf("a healthy request took longer than %v; again with %v", timeout, 2*timeout)
			}
			jl, rerr := os.ReadFile(filepath.Join(dir, "out.jsonl"))
			if rerr != nil {
				t.Fatal(rerr)
			}
			// The first line is the run header.
			if n := bytes.Count(jl, []byte("\n")) - 1; len(doc.Runs) != 4 || n != 4 {
				t.Fatalf("results JSON %d rows, JSONL %d row lines; want 4 each", len(doc.Runs), n)
			}
			for _, r := range doc.Runs {
				want := engine.KindNone
				if r.RepeatIndex%2 == 1 {
					want = tc.want
				}
				if engine.Kind(r.ErrorKind) != want || want != engine.KindNone && r.Error == "" {
					t.Errorf("repeat %d: kind %q (%s), want %q", r.RepeatIndex, r.ErrorKind, r.Error, want)
				}
			}
			// A bound on a wait, not a measurement: far above how long
			// the goroutines take to end on a loaded machine.
			deadline := time.Now().Add(30 * time.Second)
			for runtime.NumGoroutine() > before {
				if time.Now().After(deadline) {
					t.Fatalf("%d goroutines run, %d before", runtime.NumGoroutine(), before)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
