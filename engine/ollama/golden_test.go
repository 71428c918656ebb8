package ollama

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// stepClock is a controlled clock: each reading is the previous one plus
// step, starting at base.
type stepClock struct {
	mu   sync.Mutex
	base time.Time
	n    int
	step time.Duration
}

func newStepClock() *stepClock {
	return &stepClock{base: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), step: time.Millisecond}
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.base.Add(time.Duration(c.n) * c.step)
	c.n++
	return t
}

// lineFeeder returns one line (through its "\n") per Read, as Ollama
// flushes one line per write, so that the reader's clock is read once
// per line.
type lineFeeder struct{ rest []byte }

func (r *lineFeeder) Read(p []byte) (int, error) {
	if len(r.rest) == 0 {
		return 0, io.EOF
	}
	n := len(r.rest)
	if i := bytes.IndexByte(r.rest, '\n'); i >= 0 {
		n = i + 1
	}
	n = copy(p, r.rest[:n])
	r.rest = r.rest[n:]
	return n, nil
}

type goldenChunk struct {
	AtMS   int64 `json:"at_ms"`
	Tokens int   `json:"tokens"`
}

// golden is what a recorded answer parses into, times in milliseconds of
// the step clock.
type golden struct {
	Text         string              `json:"text"`
	Model        string              `json:"model"`
	FinishReason string              `json:"finish_reason"`
	Usage        *engine.Usage       `json:"usage"`
	Stats        *engine.ServerStats `json:"stats"`
	Chunks       []goldenChunk       `json:"chunks"`
	EndMS        int64               `json:"end_ms"`
	Warnings     []string            `json:"warnings"`
	ErrorKind    engine.Kind         `json:"error_kind,omitempty"`
	Error        string              `json:"error,omitempty"`
	Status       int                 `json:"status,omitempty"`
}

// parseRecorded reads a recorded stream (or, unstreamed, a body) with a
// step clock and returns what it produced.
func parseRecorded(t testing.TB, body []byte, req engine.Request) (engine.Result, golden, error) {
	t.Helper()
	clk := newStepClock()
	c, err := New("http://127.0.0.1:9", &Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	var res engine.Result
	var rerr error
	if req.Stream {
		rerr = c.readStream(context.Background(), &lineFeeder{rest: body}, nil, req, &res)
	} else {
		rerr = c.readBody(context.Background(), bytes.NewReader(body), req, &res)
	}
	return res, toGolden(clk.base, res, rerr), rerr
}

func toGolden(base time.Time, res engine.Result, err error) golden {
	g := golden{Text: res.Text, Model: res.Model, FinishReason: res.FinishReason, Usage: res.Usage, Stats: res.ServerStats,
		Chunks: []goldenChunk{}, Warnings: []string{}}
	if !res.Trace.End.IsZero() {
		g.EndMS = res.Trace.End.Sub(base).Milliseconds()
	}
	for _, ch := range res.Trace.Chunks {
		g.Chunks = append(g.Chunks, goldenChunk{AtMS: ch.At.Sub(base).Milliseconds(), Tokens: ch.Tokens})
	}
	for _, w := range res.Warnings {
		g.Warnings = append(g.Warnings, w.Error())
	}
	if err != nil {
		g.ErrorKind, g.Error = engine.KindOf(err), err.Error()
		var se *engine.StatusError
		if errors.As(err, &se) {
			g.Status = se.Code
		}
	}
	return g
}

// checkGolden compares g with testdata/name.golden.json, or writes it
// with -update.
func checkGolden(t *testing.T, name string, g golden) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden.json")
	out, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, '\n')
	if *update {
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

// TestGoldenStreams parses recorded answers, written line for line as
// Ollama v0.6.5's ChatHandler writes them (see the package doc), and
// compares the results with golden files. The token counts are also
// asserted by hand: they follow from the lines and eval_count.
func TestGoldenStreams(t *testing.T) {
	msgs := []engine.Message{{Role: "user", Content: "Say hello and offer help, in a few words."}}
	cases := []struct {
		name, file string
		req        engine.Request
		tokens     []int // hand-computed from the recording
		warns      []error
		kind       engine.Kind
	}{
		// 9 lines, eval_count 10, done_reason "stop": one token a line,
		// the end of sequence (counted, never sent) to the last.
		{name: "stop", req: engine.Request{MaxTokens: 64, Stream: true},
			tokens: []int{1, 1, 1, 1, 1, 1, 1, 1, 2}},
		// 6 lines, eval_count 6 = num_predict, done_reason "length".
		{name: "length", req: engine.Request{MaxTokens: 6, Stream: true},
			tokens: []int{1, 1, 1, 1, 1, 1}},
		// The same with IgnoreEOS asked for: sent without it, warned; the
		// generation reached max_tokens, so no short-generation warning.
		{name: "length_ignore_eos", file: "length", req: engine.Request{MaxTokens: 6, IgnoreEOS: true, Stream: true},
			tokens: []int{1, 1, 1, 1, 1, 1}, warns: []error{ErrUnsupported}},
		// 3 lines, eval_count 4 with "length": the emoji's two byte
		// tokens came as one line. The chunks keep one each; warned.
		{name: "held_back", req: engine.Request{MaxTokens: 4, Stream: true},
			tokens: []int{1, 1, 1}, warns: []error{ErrTokenMismatch}},
		// Two lines, then the runner's error line.
		{name: "error_midstream", req: engine.Request{MaxTokens: 64, Stream: true},
			tokens: []int{1, 1}, kind: engine.KindStreamError},
		// Three lines, then half a line and the end of the input.
		{name: "truncated", req: engine.Request{MaxTokens: 64, Stream: true},
			tokens: []int{1, 1, 1}, kind: engine.KindTruncated},
		// A non-streaming answer: no chunks, the same figures.
		{name: "whole", file: "whole.json", req: engine.Request{MaxTokens: 64}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := tc.file
			switch {
			case file == "":
				file = tc.name + ".ndjson"
			case filepath.Ext(file) == "":
				file += ".ndjson"
			}
			body, err := os.ReadFile(filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			tc.req.Model, tc.req.Messages = "llama3.2", msgs
			warns, err := requestWarnings(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			res, g, rerr := parseRecorded(t, body, tc.req)
			res.Warnings = append(warns, res.Warnings...)
			g.Warnings = append(errorStrings(warns), g.Warnings...)
			if got := engine.KindOf(rerr); got != tc.kind {
				t.Fatalf("error kind %q (%v), want %q", got, rerr, tc.kind)
			}
			var got []int
			for _, ch := range res.Trace.Chunks {
				got = append(got, ch.Tokens)
			}
			if diff := cmp.Diff(tc.tokens, got); diff != "" {
				t.Errorf("chunk tokens (-want +got):\n%s", diff)
			}
			if len(res.Warnings) != len(tc.warns) {
				t.Errorf("warnings %v, want %d wrapping %v", res.Warnings, len(tc.warns), tc.warns)
			}
			for i, w := range tc.warns {
				if i < len(res.Warnings) && !errors.Is(res.Warnings[i], w) {
					t.Errorf("warning %d = %v, want one wrapping %v", i, res.Warnings[i], w)
				}
			}
			checkGolden(t, tc.name, g)
		})
	}
}

// requestWarnings are the warnings Prepare gives req.
func requestWarnings(req engine.Request) ([]error, error) {
	_, w, err := requestBody(req)
	return w, err
}

func errorStrings(errs []error) []string {
	out := []string{}
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// TestGoldenUnknownModel replays Ollama's 404 for a model never pulled
// through a real HTTP exchange: an *engine.StatusError with Ollama's
// message, for a streaming and a non-streaming request alike.
func TestGoldenUnknownModel(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "unknown_model_404.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		w.Write(body)
	}))
	defer srv.Close()
	for _, stream := range []bool{false, true} {
		clk := newStepClock()
		c := newClient(t, srv.URL, &Options{Now: clk.Now})
		res, err := c.Complete(context.Background(), engine.Request{Model: "llama9", Stream: stream,
			Messages: []engine.Message{{Role: "user", Content: "hi"}}})
		var se *engine.StatusError
		if !errors.As(err, &se) || se.Code != 404 || se.Message != `model "llama9" not found, try pulling it first` {
			t.Fatalf("stream=%v: error %v, want a 404 *engine.StatusError with Ollama's message", stream, err)
		}
		g := toGolden(clk.base, res, err)
		g.Error = se.Error() // without the loopback port
		checkGolden(t, "unknown_model_404", g)
	}
}
