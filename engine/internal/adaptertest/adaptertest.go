// Package adaptertest holds the test helpers the engine adapters' tests
// share (package openai, package ollama, package exo): a controlled clock,
// a reader that hands a recording over one message per read, the checks
// of recorded answers against their expected chunks and golden files, and
// the loopback sim with its conformance faults. Only _test files import
// it.
package adaptertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/enginetest"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/timing"
)

// A StepClock is a controlled clock: each reading is the previous one plus
// Step, the first one Base. It is safe for concurrent use.
type StepClock struct {
	Base time.Time
	Step time.Duration

	mu sync.Mutex
	n  int
}

// NewStepClock returns a StepClock from 2026-01-02 03:04:05 UTC in steps
// of a millisecond.
func NewStepClock() *StepClock {
	return &StepClock{Base: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Step: time.Millisecond}
}

// Now returns the next reading.
func (c *StepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.Base.Add(time.Duration(c.n) * c.Step)
	c.n++
	return t
}

// Readings returns how many times Now has been read.
func (c *StepClock) Readings() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// A Feeder reads a recording one message per Read, each through its
// separator (a line's "\n", an event's "\n\n"), as a server that flushes
// every message writes it, so that a reader's clock is read once per
// message.
type Feeder struct {
	rest []byte
	sep  []byte
}

// NewFeeder returns a Feeder of body whose messages end with sep.
func NewFeeder(body []byte, sep string) *Feeder {
	return &Feeder{rest: body, sep: []byte(sep)}
}

func (r *Feeder) Read(p []byte) (int, error) {
	if len(r.rest) == 0 {
		return 0, io.EOF
	}
	n := len(r.rest)
	if i := bytes.Index(r.rest, r.sep); i >= 0 {
		n = i + len(r.sep)
	}
	n = copy(p, r.rest[:n])
	r.rest = r.rest[n:]
	return n, nil
}

// CheckChunks reports an error unless res's chunks carry tokens, in
// order, and its warnings are as many as warns, each wrapping its
// counterpart.
func CheckChunks(t testing.TB, res engine.Result, tokens []int, warns []error) {
	t.Helper()
	var got []int
	for _, ch := range res.Trace.Chunks {
		got = append(got, ch.Tokens)
	}
	if diff := cmp.Diff(tokens, got); diff != "" {
		t.Errorf("chunk tokens (-want +got):\n%s", diff)
	}
	if len(res.Warnings) != len(warns) {
		t.Errorf("warnings %v, want %d wrapping %v", res.Warnings, len(warns), warns)
	}
	for i, w := range warns {
		if i < len(res.Warnings) && !errors.Is(res.Warnings[i], w) {
			t.Errorf("warning %d = %v, want one wrapping %v", i, res.Warnings[i], w)
		}
	}
}

// A GoldenChunk is a chunk of a golden file: its instant in milliseconds
// after the StepClock's Base, its token count and its kind, left out for
// an answer chunk.
type GoldenChunk struct {
	AtMS   int64  `json:"at_ms"`
	Tokens int    `json:"tokens"`
	Kind   string `json:"kind,omitempty"`
}

// GoldenChunks returns the chunks of res for a golden file, with instants
// counted from base; never nil, so that no chunks are written [], not
// null.
func GoldenChunks(base time.Time, res engine.Result) []GoldenChunk {
	out := []GoldenChunk{}
	for _, ch := range res.Trace.Chunks {
		g := GoldenChunk{AtMS: ch.At.Sub(base).Milliseconds(), Tokens: ch.Tokens}
		if ch.Kind != timing.Answer {
			g.Kind = ch.Kind.String()
		}
		out = append(out, g)
	}
	return out
}

// CheckKinds reports an error unless res's chunks are of kinds, in order.
func CheckKinds(t testing.TB, res engine.Result, kinds []timing.ChunkKind) {
	t.Helper()
	got := []timing.ChunkKind{}
	for _, ch := range res.Trace.Chunks {
		got = append(got, ch.Kind)
	}
	if kinds == nil {
		kinds = []timing.ChunkKind{}
	}
	if diff := cmp.Diff(kinds, got); diff != "" {
		t.Errorf("chunk kinds (-want +got):\n%s", diff)
	}
}

// Strings returns the texts of errs; never nil, so that no errors are
// written [], not null.
func Strings(errs []error) []string {
	out := []string{}
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// CheckGolden compares the indented JSON of v with the golden file
// testdata/name.golden.json, or writes it there when update is set (a
// test binary's -update flag).
func CheckGolden(t testing.TB, name string, v any, update bool) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden.json")
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, '\n')
	if update {
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(out)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// NewSim starts the sim with o (sim.Fast unless o names a preset) and
// closes it when the test ends.
func NewSim(t testing.TB, o sim.Options) *sim.Server {
	t.Helper()
	if o.Preset.Name == "" {
		o.Preset = sim.Fast()
	}
	s := sim.NewServer(o)
	t.Cleanup(s.Close)
	return s
}

// An idler is a client whose idle connections can be closed.
type idler interface{ CloseIdleConnections() }

// NewClient returns the client newFn makes of base and o, failing the
// test on an error, and closes its idle connections when the test ends.
func NewClient[C idler, O any](t testing.TB, newFn func(string, *O) (C, error), base string, o *O) C {
	t.Helper()
	c, err := newFn(base, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// NewAt returns an enginetest.Config.NewAt that makes a client with newFn
// and o, failing the test on an error.
func NewAt[C engine.Engine, O any](t testing.TB, newFn func(string, *O) (C, error), o *O) func(string) engine.Engine {
	return func(base string) engine.Engine {
		c, err := newFn(base, o)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// A SimFault is a fault the sim injects (its sim.FaultHeader value) and
// the kinds of error an adapter makes of it, unstreamed and streamed. An
// empty Unstreamed leaves the unstreamed request out.
type SimFault struct {
	Header               string
	Unstreamed, Streamed engine.Kind
}

// Fault is the SimFault of header with the kinds unstreamed and streamed.
func Fault(header string, unstreamed, streamed engine.Kind) SimFault {
	return SimFault{Header: header, Unstreamed: unstreamed, Streamed: streamed}
}

// simFaults are the sim's faults with the kinds of error an HTTP adapter
// makes of them.
var simFaults = []SimFault{
	Fault("500", engine.KindStatus, engine.KindStatus),
	Fault("503", engine.KindStatus, engine.KindStatus),
	Fault("unknown-model", engine.KindStatus, engine.KindStatus),
	Fault("reset-mid-stream; after=2", engine.KindTruncated, engine.KindTruncated),
	Fault("cut-without-done; after=2", engine.KindMalformed, engine.KindTruncated), // JSON: half a body
	Fault("malformed-chunk; after=2", engine.KindMalformed, engine.KindMalformed),
	Fault("error-event; after=2", engine.KindStatus, engine.KindStreamError), // JSON: a 500
	Fault("wrong-content-type", engine.KindMalformed, engine.KindMalformed),
	// Unstreamed, a large JSON field within the body's bound.
	Fault("oversized-line; after=1", "", engine.KindMalformed),
	Fault("empty-body", engine.KindMalformed, engine.KindMalformed),
}

// SimFaults returns the conformance faults of the sim's faults, each
// with the kinds an HTTP adapter makes of it, except where an override
// of the same Header says otherwise, in the sim's order (see faults).
func SimFaults(overrides ...SimFault) []enginetest.Fault {
	fs := append([]SimFault(nil), simFaults...)
	for _, o := range overrides {
		for i := range fs {
			if fs[i].Header == o.Header {
				fs[i] = o
			}
		}
	}
	return faults(fs...)
}

// faults returns the conformance faults of fs: for each, the unstreamed
// request (named by the header) unless its kind is empty, then the
// streamed one (named by the header and " (streamed)").
func faults(fs ...SimFault) []enginetest.Fault {
	var out []enginetest.Fault
	for _, f := range fs {
		h := http.Header{sim.FaultHeader: {f.Header}}
		if f.Unstreamed != "" {
			out = append(out, enginetest.Fault{Name: f.Header, Header: h, Want: f.Unstreamed})
		}
		out = append(out, enginetest.Fault{Name: f.Header + " (streamed)", Header: h, Stream: true, Want: f.Streamed})
	}
	return out
}
