package benchkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
)

// faultCase is one row of the fault matrix: the fault the sim injects into
// every second chat request, and the error kind the faulted rows must carry
// for a non-streaming and a streaming request ("" where the request must
// succeed).
type faultCase struct {
	fault                sim.Fault
	wantJSON, wantStream engine.Kind
}

// The fault matrix's per-request bounds. Only the stall case needs its
// timeout to fire: the stall lasts stallFor, which no bound here comes
// near (the sim ends it when the client goes away), while the case's
// healthy requests, a few milliseconds of simulated work each, end within
// stallTimeout unless the machine is heavily loaded; when one does not,
// the case is run again with a longer timeout (healthyTimedOut). Every
// other case gets caseTimeout, which its requests never come near: a
// 2 MiB body decoded under the race detector, or a slow drip, takes
// seconds on a loaded machine, and must not be cut.
const (
	stallTimeout = 2 * time.Second
	caseTimeout  = time.Minute
	stallFor     = 10 * time.Minute
)

// maxStallTimeout bounds the retries of the stall case: a case whose
// healthy request took longer than its timeout is run again with twice
// the timeout, up to this.
const maxStallTimeout = 16 * stallTimeout

// healthyTimedOut says whether a healthy row of a fault matrix sweep (an
// even repeat) timed out: the machine ran the request slower than the
// stall case's bound, so the case tested nothing and is run again.
func healthyTimedOut(rows []Request) bool {
	for _, r := range rows {
		if r.Repeat%2 == 0 && engine.Kind(r.ErrorKind) == engine.KindTimeout {
			return true
		}
	}
	return false
}

// timeout is the first request timeout of the case's sweep.
func (c faultCase) timeout() time.Duration {
	if c.fault.Kind == sim.FaultStall {
		return stallTimeout
	}
	return caseTimeout
}

// goroutineWait bounds waitGoroutines.
const goroutineWait = 30 * time.Second

func faultMatrix() []faultCase {
	return []faultCase{
		{sim.Fault{Kind: sim.FaultStatus500}, engine.KindStatus, engine.KindStatus},
		{sim.Fault{Kind: sim.FaultStatus503}, engine.KindStatus, engine.KindStatus},
		// A reset before any byte of an answer, on the keep-alive
		// connection the request reused, is a server that had closed it:
		// the request goes out again on another connection (into the
		// sim's next, healthy, slot), and its row says so (resent). On a
		// connection opened for it, a reset is final (engine/internal/
		// httpconn's tests).
		{sim.Fault{Kind: sim.FaultResetBeforeHeader}, engine.KindNone, engine.KindNone},
		{sim.Fault{Kind: sim.FaultResetMidStream, After: 2}, engine.KindTruncated, engine.KindTruncated},
		// A JSON body that ends cleanly half way is, to the client, JSON
		// that does not parse ("unexpected end of JSON input").
		{sim.Fault{Kind: sim.FaultCutWithoutDone, After: 2}, engine.KindMalformed, engine.KindTruncated},
		{sim.Fault{Kind: sim.FaultMalformedChunk, After: 1}, engine.KindMalformed, engine.KindMalformed},
		{sim.Fault{Kind: sim.FaultErrorEvent, After: 1}, engine.KindStatus, engine.KindStreamError},
		{sim.Fault{Kind: sim.FaultStall, After: 1, Duration: stallFor}, engine.KindTimeout, engine.KindTimeout},
		{sim.Fault{Kind: sim.FaultSlowDrip, Duration: 200 * time.Microsecond}, engine.KindNone, engine.KindNone},
		{sim.Fault{Kind: sim.FaultWrongContentType}, engine.KindMalformed, engine.KindMalformed},
		// A 2 MiB field in a JSON body is valid JSON, well under the
		// adapters' 64 MiB bound on a body; in a stream it is a line over
		// the SSE reader's 1 MiB bound.
		{sim.Fault{Kind: sim.FaultOversizedLine, After: 1}, engine.KindNone, engine.KindMalformed},
		{sim.Fault{Kind: sim.FaultUnknownModel}, engine.KindStatus, engine.KindStatus},
		{sim.Fault{Kind: sim.FaultEmptyBody}, engine.KindMalformed, engine.KindMalformed},
	}
}

// TestFaultMatrixCoversEveryKind keeps the matrix in step with the sim's
// list of faults.
func TestFaultMatrixCoversEveryKind(t *testing.T) {
	var have []sim.FaultKind
	for _, c := range faultMatrix() {
		have = append(have, c.fault.Kind)
	}
	if diff := cmp.Diff(sim.FaultKinds(), have); diff != "" {
		t.Errorf("fault matrix and sim.FaultKinds differ (-sim +matrix):\n%s", diff)
	}
}

// waitGoroutines waits (boundedly) until no more goroutines run than
// before, and fails the test with a dump otherwise. The bound is not what
// is measured: it only has to outlast the slowest exit of a goroutine on a
// loaded machine, and a passing test waits no longer than that exit.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(goroutineWait)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines run, %d before the sweep:\n%s", runtime.NumGoroutine(), before, buf[:n])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sweepFixture is an exo client and a sweep over one sim, whose rows go to
// a JSONL buffer.
type sweepFixture struct {
	client *exo.Client
	sweep  *ExoSweep
	jsonl  *bytes.Buffer
}

func newSweep(t *testing.T, url string, model string, counter promptsize.Counter, sinks ...Sink) sweepFixture {
	t.Helper()
	client, err := exo.New(url, &exo.Options{RetryWaitMin: time.Millisecond, RetryWaitMax: 10 * time.Millisecond, PollInterval: 5 * time.Millisecond, MaxBurst: 2})
	if err != nil {
		t.Fatal(err)
	}
	card, err := client.ResolveModel(context.Background(), model, false)
	if err != nil {
		t.Fatal(err)
	}
	var jl bytes.Buffer
	return sweepFixture{client: client, jsonl: &jl, sweep: &ExoSweep{
		Client: client, Card: card,
		Filter:          exo.Filter{MaxNodes: 1},
		Sources:         []energy.Source{client.PowerSource()},
		MetricsInterval: 50 * time.Millisecond,
		Runner: Runner{
			Builder:        &promptsize.Builder{Counter: counter},
			RequestTimeout: caseTimeout,
			Simulated:      true,
			Sinks:          append([]Sink{NewJSONLSink(&jl)}, sinks...),
		},
	}}
}

// checkOutputs checks what a program keeps of a sweep: one JSONL line per
// attempted request, each decoding to the row the sweep returned, and a
// results document that is valid JSON holding every row.
func checkOutputs(t *testing.T, res ExoResult, jsonl []byte, want int) {
	t.Helper()
	if len(res.Requests) != want {
		t.Fatalf("%d rows, want one per attempted request (%d)", len(res.Requests), want)
	}
	if n := bytes.Count(jsonl, []byte("\n")); n != want {
		t.Errorf("JSONL has %d lines, want %d", n, want)
	}
	var back []Request
	jr := NewJSONLReader(bytes.NewReader(jsonl))
	for jr.Scan() {
		if err := jr.LineErr(); err != nil {
			t.Errorf("JSONL line does not decode: %v", err)
		}
		back = append(back, jr.Request())
	}
	if err := jr.Err(); err != nil {
		t.Error(err)
	}
	// Compare through JSON: a row's JSON form is what a file keeps.
	if diff := cmp.Diff(jsonRoundTrip(t, res.Requests), back); diff != "" {
		t.Errorf("JSONL rows differ from the sweep's (-sweep +jsonl):\n%s", diff)
	}
	var doc bytes.Buffer
	if err := WriteJSON(&doc, Document{Runs: res.Requests, Cluster: res.Cluster, SystemMetrics: res.SystemMetrics, Meta: &Meta{Tool: "inferbench", Warnings: res.Warnings}}); err != nil {
		t.Fatalf("results JSON: %v", err)
	}
	var d Document
	if err := json.Unmarshal(doc.Bytes(), &d); err != nil {
		t.Fatalf("results JSON is not valid: %v", err)
	}
	if len(d.Runs) != want {
		t.Errorf("results JSON holds %d runs, want %d", len(d.Runs), want)
	}
}

func jsonRoundTrip(t *testing.T, rows []Request) []Request {
	t.Helper()
	var out []Request
	for _, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back Request
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		out = append(out, back)
	}
	return out
}

// TestExoSweepFaultMatrix runs a sweep of four requests against the sim's
// exo API for every fault, streamed and not, with the fault injected into
// the second and fourth requests: the faulted requests become rows with
// the expected error kind and a message, the healthy ones succeed, the
// sweep goes on to the end, the JSONL and the results JSON keep every row,
// the program's exit status is 1, and no goroutine outlives the sweep.
func TestExoSweepFaultMatrix(t *testing.T) {
	for _, fc := range faultMatrix() {
		for _, stream := range []bool{false, true} {
			want := fc.wantJSON
			if stream {
				want = fc.wantStream
			}
			t.Run(fmt.Sprintf("%s/stream=%v", fc.fault.Kind, stream), func(t *testing.T) {
				before := runtime.NumGoroutine()
				var srv *sim.Server
				var f sweepFixture
				var res ExoResult
				var err error
				for timeout := fc.timeout(); ; timeout *= 2 {
					srv = sim.NewServer(sim.Options{Preset: sim.Fast(), Nodes: 1, NoInstance: true, LoadDelay: -1, KeepAlive: time.Hour,
						Fault: fc.fault, FaultEvery: 2})
					f = newSweep(t, srv.URL, srv.Model(), srv.Counter())
					f.sweep.Runner.RequestTimeout = timeout
					plan := Plan{PP: []int{40}, TG: []int{4}, Repeat: 4, Stream: stream}
					res, err = f.sweep.Run(context.Background(), plan)
					if !healthyTimedOut(res.Requests) || timeout >= maxStallTimeout {
						break
					}
					// The bound is too short for this machine now, which is
					// not what the case tests: the case is run again.
					t.Logf("a healthy request took longer than %v; again with %v", timeout, 2*timeout)
					f.client.CloseIdleConnections()
					srv.Close()
				}
				failed, resent := 0, 0
				for i, r := range res.Requests {
					faulted := r.Repeat%2 == 1
					switch {
					case faulted && engine.Kind(r.ErrorKind) != want:
						t.Errorf("row %d (faulted): kind %q, want %q; error %q", i, r.ErrorKind, want, r.Error)
					case faulted && want != engine.KindNone && !strings.Contains(r.Error, "engine:"):
						t.Errorf("row %d (faulted): error message %q does not say what failed", i, r.Error)
					case !faulted && r.Failed():
						t.Errorf("row %d (healthy): failed with %s: %s", i, r.ErrorKind, r.Error)
					}
					if r.Resent > 0 {
						resent++
					}
					if !faulted && (r.Stats == nil && !stream || r.Tokens() != 4) {
						t.Errorf("row %d (healthy): stats %v, %d tokens", i, r.Stats, r.Tokens())
					}
					if r.Failed() {
						failed++
					}
				}
				checkOutputs(t, res, f.jsonl.Bytes(), 4)
				if err != nil || res.Interrupted {
					t.Errorf("sweep stopped: %v (interrupted %v)", err, res.Interrupted)
				}
				wantFailed := 2
				if want == engine.KindNone {
					wantFailed = 0
				}
				if failed != wantFailed {
					t.Errorf("%d failed rows, want %d", failed, wantFailed)
				}
				// Each replay moves the sim's faulted slots by one, so
				// which rows were resent is not fixed: the first faulted
				// one was.
				if reset := fc.fault.Kind == sim.FaultResetBeforeHeader; reset != (resent > 0) || reset && res.Requests[1].Resent == 0 {
					t.Errorf("%d rows resent (row 1: %d times), want some, row 1 among them, for a reset before headers only", resent, res.Requests[1].Resent)
				}
				if perr := programError(err, failed); errors.Is(perr, errRequestsFailed) != (wantFailed > 0) {
					t.Errorf("program error %v with %d failed rows", perr, failed)
				}
				// The sweep deleted the instance it created.
				if ins, err := f.client.Instances(context.Background()); err != nil || len(ins) != 0 {
					t.Errorf("instances left after the sweep: %v, %v", ins, err)
				}
				f.client.CloseIdleConnections()
				srv.Close()
				waitGoroutines(t, before)
			})
		}
	}
}

// errRequestsFailed stands for the program's error of failed requests.
var errRequestsFailed = errors.New("some requests failed")

// programError is the error an example program returns for a sweep that
// ended with err and failed rows, as examples/exo-bench does.
func programError(err error, failed int) error {
	if err == nil && failed > 0 {
		return fmt.Errorf("%w: %d", errRequestsFailed, failed)
	}
	return err
}

// TestExoSweepServerRestarted stops the server after the first request of
// a sweep and starts a new one on the same port after the second: the
// request sent while nothing listens is a connect error row, the sweep
// goes on, and the requests after the restart succeed on fresh
// connections.
func TestExoSweepServerRestarted(t *testing.T) {
	before := runtime.NumGoroutine()
	opts := sim.Options{Preset: sim.Fast(), Nodes: 1, NoInstance: true, LoadDelay: -1, KeepAlive: time.Hour}
	srv := sim.NewServer(opts)
	addr := strings.TrimPrefix(srv.URL, "http://")
	var second *sim.Server
	n := 0
	restart := SinkFunc(func(r Request) error {
		n++
		switch n {
		case 1:
			srv.Close()
		case 2:
			// The new server runs the preset's default instance, so the
			// remaining requests have a model to run on.
			o := opts
			o.NoInstance = false
			s, err := sim.Start(context.Background(), addr, o)
			if err != nil {
				return err
			}
			second = s
		}
		return nil
	})
	f := newSweep(t, srv.URL, srv.Model(), srv.Counter(), restart)
	f.sweep.Sources = nil // the sampler would only log the gap
	res, err := f.sweep.Run(context.Background(), Plan{PP: []int{40}, TG: []int{4}, Repeat: 4, Stream: true})
	if err != nil {
		t.Fatalf("sweep stopped: %v", err)
	}
	if second == nil {
		t.Fatal("the second server never started")
	}
	var kinds []string
	for _, r := range res.Requests {
		kinds = append(kinds, r.ErrorKind)
	}
	if diff := cmp.Diff([]string{"", string(engine.KindConnect), "", ""}, kinds); diff != "" {
		t.Errorf("row error kinds (-want +got):\n%s\nrows: %+v", diff, res.Requests)
	}
	if !strings.Contains(res.Requests[1].Error, "connect") {
		t.Errorf("the request to the stopped server: %q", res.Requests[1].Error)
	}
	// The instance the sweep created died with the first server; deleting
	// it on the second is a not-found, which is no warning.
	for _, w := range res.Warnings {
		if strings.Contains(w, "delete instance") {
			t.Errorf("cleanup warning: %s", w)
		}
	}
	checkOutputs(t, res, f.jsonl.Bytes(), 4)
	if perr := programError(err, 1); !errors.Is(perr, errRequestsFailed) {
		t.Errorf("program error %v, want one wrapping errRequestsFailed", perr)
	}
	f.client.CloseIdleConnections()
	second.Close()
	waitGoroutines(t, before)
}
