package ollama

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/adaptertest"
	"github.com/inferbench/inferbench/timing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden is what a recorded answer parses into, times in milliseconds of
// the step clock.
type golden struct {
	Text         string                    `json:"text"`
	Model        string                    `json:"model"`
	FinishReason string                    `json:"finish_reason"`
	Usage        *engine.Usage             `json:"usage"`
	Stats        *engine.ServerStats       `json:"stats"`
	Chunks       []adaptertest.GoldenChunk `json:"chunks"`
	HiddenTokens int                       `json:"hidden_tokens,omitempty"`
	EndMS        int64                     `json:"end_ms"`
	Warnings     []string                  `json:"warnings"`
	ErrorKind    engine.Kind               `json:"error_kind,omitempty"`
	Error        string                    `json:"error,omitempty"`
	Status       int                       `json:"status,omitempty"`
}

// parseRecorded reads a recorded stream (or, unstreamed, a body) with a
// step clock and returns what it produced.
func parseRecorded(t testing.TB, body []byte, req engine.Request) (engine.Result, golden, error) {
	t.Helper()
	clk := adaptertest.NewStepClock()
	c, err := New("http://127.0.0.1:9", &Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	var res engine.Result
	var rerr error
	if req.Stream {
		rerr = c.readStream(context.Background(), adaptertest.NewFeeder(body, "\n"), nil, req, &res)
	} else {
		rerr = c.readBody(context.Background(), bytes.NewReader(body), req, &res)
	}
	return res, toGolden(clk.Base, res, rerr), rerr
}

func toGolden(base time.Time, res engine.Result, err error) golden {
	g := golden{Text: res.Text, Model: res.Model, FinishReason: res.FinishReason, Usage: res.Usage, Stats: res.ServerStats,
		Chunks: adaptertest.GoldenChunks(base, res), HiddenTokens: res.Trace.HiddenTokens, Warnings: adaptertest.Strings(res.Warnings)}
	if !res.Trace.End.IsZero() {
		g.EndMS = res.Trace.End.Sub(base).Milliseconds()
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
		kinds      []timing.ChunkKind // nil: answer chunks only
		hidden     int
		// The time per output token of the reasoning and of the answer
		// (Trace.TPOTReasoning, TPOTAnswer), hand-computed from the
		// golden's instants; nil: not checked.
		sides *[2]time.Duration
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
		// Qwen3 with think on, written as ChatHandler at
		// ollama/ollama@fb30760 writes it (server/routes.go; see the
		// package doc): 4 thinking lines, 2 content lines, eval_count 11,
		// "stop". One token a line, the end of sequence to the last; the
		// other 4 are <think>, the newline after it, </think> and the
		// blank line after it, which thinking/parser.go swallows: hidden.
		// Each side's TPOT, from the golden's instants (reasoning at 0, 1,
		// 2 and 3 ms, answer at 4 ms and, 2 tokens, 5 ms, End at 7 ms; no
		// first-chunk anchor): the reasoning's 3 tokens after its first
		// took 1 ms each, 3/3 = 1 ms; the answer's first token (its gap
		// from the reasoning left out) is followed by 2 sharing the 1 ms
		// gap to 5 ms, then the 2 ms to End: (1 + 2)/2 = 1.5 ms. The
		// hidden tokens are in neither.
		{name: "thinking", req: engine.Request{MaxTokens: 64, Stream: true},
			tokens: []int{1, 1, 1, 1, 1, 2}, warns: []error{ErrHiddenTokens}, hidden: 4,
			kinds: kinds(timing.Reasoning, timing.Reasoning, timing.Reasoning, timing.Reasoning, timing.Answer, timing.Answer),
			sides: &[2]time.Duration{time.Millisecond, 1500 * time.Microsecond}},
		// The response that ends the thinking and starts the answer in
		// one line (its runner response carried " two", </think>, "\n\n"
		// and "Four"): a chunk of each kind at its instant.
		// Each side's TPOT: reasoning at 0, 1, 2 and 3 ms, 3/3 = 1 ms;
		// the answer's first chunk at 3 ms, the reasoning's instant (its
		// gap, 0, left out), 2 tokens sharing the 1 ms to 4 ms, then the
		// 2 ms to End at 6 ms: (1 + 2)/2 = 1.5 ms.
		{name: "thinking_split", req: engine.Request{MaxTokens: 64, Stream: true},
			tokens: []int{1, 1, 1, 1, 1, 2}, warns: []error{ErrHiddenTokens}, hidden: 4,
			kinds: kinds(timing.Reasoning, timing.Reasoning, timing.Reasoning, timing.Reasoning, timing.Answer, timing.Answer),
			sides: &[2]time.Duration{time.Millisecond, 1500 * time.Microsecond}},
		// A tool call: Ollama's tool parser holds the call's text back
		// until it is whole and sends it on one line, which carried every
		// token but the end of sequence: 21, then the end of sequence, 22.
		{name: "tool_call", req: engine.Request{MaxTokens: 64, Stream: true},
			tokens: []int{22}, kinds: kinds(timing.ToolCall)},
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
			g.Warnings = append(adaptertest.Strings(warns), g.Warnings...)
			if got := engine.KindOf(rerr); got != tc.kind {
				t.Fatalf("error kind %q (%v), want %q", got, rerr, tc.kind)
			}
			adaptertest.CheckChunks(t, res, tc.tokens, tc.warns)
			want := tc.kinds
			if want == nil {
				want = make([]timing.ChunkKind, len(tc.tokens))
			}
			adaptertest.CheckKinds(t, res, want)
			if res.Trace.HiddenTokens != tc.hidden {
				t.Errorf("%d hidden tokens, want %d", res.Trace.HiddenTokens, tc.hidden)
			}
			if tc.sides != nil {
				// The stream reader sets no Start (Complete does): the
				// side figures need none.
				if got, err := res.Trace.TPOTReasoning(); err != nil || got != tc.sides[0] {
					t.Errorf("TPOT of the reasoning %v (%v), want %v", got, err, tc.sides[0])
				}
				if got, err := res.Trace.TPOTAnswer(); err != nil || got != tc.sides[1] {
					t.Errorf("TPOT of the answer %v (%v), want %v", got, err, tc.sides[1])
				}
			}
			adaptertest.CheckGolden(t, tc.name, g, *update)
		})
	}
}

func kinds(k ...timing.ChunkKind) []timing.ChunkKind { return k }

// requestWarnings are the warnings Prepare gives req.
func requestWarnings(req engine.Request) ([]error, error) {
	_, w, err := requestBody(req)
	return w, err
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
		clk := adaptertest.NewStepClock()
		c := newClient(t, srv.URL, &Options{Now: clk.Now})
		res, err := c.Complete(context.Background(), engine.Request{Model: "llama9", Stream: stream,
			Messages: []engine.Message{{Role: "user", Content: "hi"}}})
		var se *engine.StatusError
		if !errors.As(err, &se) || se.Code != 404 || se.Message != `model "llama9" not found, try pulling it first` {
			t.Fatalf("stream=%v: error %v, want a 404 *engine.StatusError with Ollama's message", stream, err)
		}
		g := toGolden(clk.Base, res, err)
		g.Error = se.Error() // without the loopback port
		adaptertest.CheckGolden(t, "unknown_model_404", g, *update)
	}
}
