//go:build integration

// Package integration runs the SDK against a real inference server, as a
// user would: scripts/integration.sh (make integration) builds a pinned
// Ollama, imports a tiny random-weight Llama model with the real Llama 3.1
// tokenizer (integration/cmd/tinymodel), serves it and runs these tests with
// the environment below. Without it every test skips and says what to set.
//
//	INFERBENCH_OLLAMA_URL    the server's root, e.g. http://127.0.0.1:11434
//	INFERBENCH_OLLAMA_MODEL  the model name the server serves
//	INFERBENCH_TOKENIZER     the model's tokenizer directory (default: testdata/models/llama3_1)
//	INFERBENCH_OLLAMA_BIN    the ollama binary, for the tests that start and stop a server of their own
//	INFERBENCH_OLLAMA_MODELS that server's OLLAMA_MODELS (the directory the model was created in)
//	INFERBENCH_SERVER        ollama (the default) or openai: any other OpenAI-compatible server
//	INFERBENCH_ALLOW_EOS     1 accepts replies that end before max_tokens (a real model on Ollama)
//	INFERBENCH_SIM_PROFILE   llamacpp: no server is needed; the suite starts the embedded
//	                         engine in that profile (engine/sim), counting with the tokenizer
//	                         and serving INFERBENCH_OLLAMA_MODEL (default "tiny"), and measures
//	                         it as INFERBENCH_SERVER=openai
//
// The tests need of the model only that its server counts prompts with the
// tokenizer's chat template and streams one token per chunk; docs/INTEGRATION.md
// says how to point them at another server.
package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/hf"
)

// target is the server under test, read from the environment once.
type target struct {
	url   string // the server's root, no /v1
	model string
	tok   *hf.Tokenizer
	dir   string // the tokenizer's directory
	// kind is "ollama", whose stream is checked for one token a chunk and
	// no anchor, or "openai", any server, checked for what every stream
	// states.
	kind string
	// allowEOS accepts a reply shorter than max_tokens that ended at the
	// end of sequence.
	allowEOS bool
}

func (tg *target) ollama() bool { return tg.kind == "ollama" }

// needOllama skips a test that reads what only Ollama (and the tiny model's
// template) does.
func needOllama(t *testing.T) *target {
	t.Helper()
	tg := needServer(t)
	if !tg.ollama() {
		t.Skipf("reads Ollama's own stream and template; INFERBENCH_SERVER is %s", tg.kind)
	}
	return tg
}

var (
	targetOnce sync.Once
	theTarget  *target
	targetErr  error
)

// needServer returns the server under test, or skips the test saying what
// to set.
func needServer(t *testing.T) *target {
	t.Helper()
	url, model := os.Getenv("INFERBENCH_OLLAMA_URL"), os.Getenv("INFERBENCH_OLLAMA_MODEL")
	profile := os.Getenv("INFERBENCH_SIM_PROFILE")
	if profile == "" && (url == "" || model == "") {
		t.Skip("no server: set INFERBENCH_OLLAMA_URL and INFERBENCH_OLLAMA_MODEL (make integration does), or INFERBENCH_SIM_PROFILE=llamacpp")
	}
	targetOnce.Do(func() {
		dir := os.Getenv("INFERBENCH_TOKENIZER")
		if dir == "" {
			dir = filepath.Join("..", "testdata", "models", "llama3_1")
		}
		tok, err := hf.Load(dir)
		if err != nil {
			targetErr = fmt.Errorf("loading the tokenizer from %s (bash scripts/testdata.sh fetches it): %w", dir, err)
			return
		}
		kind := os.Getenv("INFERBENCH_SERVER")
		if profile != "" {
			if model == "" {
				model = "tiny"
			}
			url, targetErr = startSim(profile, model, tok)
			if targetErr != nil {
				return
			}
			kind = "openai"
		}
		switch kind {
		case "":
			kind = "ollama"
		case "ollama", "openai":
		default:
			targetErr = fmt.Errorf("INFERBENCH_SERVER is %q: want ollama or openai", kind)
			return
		}
		theTarget = &target{url: strings.TrimSuffix(strings.TrimSuffix(url, "/"), "/v1"), model: model, tok: tok, dir: dir,
			kind: kind, allowEOS: os.Getenv("INFERBENCH_ALLOW_EOS") == "1"}
	})
	if targetErr != nil {
		t.Fatal(targetErr)
	}
	return theTarget
}

// builder makes exact prompts for the server under test with promptsize's
// default atoms, as the programs do: their content ends in a letter, which
// Llama 3's Hugging Face template and Ollama's count alike
// (TestTrailingWhitespace).
func (tg *target) builder() *promptsize.Builder {
	return &promptsize.Builder{Counter: tg.tok}
}

// countingCounter is the client's counter of generated text, counting how
// often it is asked: a stream of one token per chunk never needs it.
type countingCounter struct {
	promptsize.Counter
	calls atomic.Int64
}

func (c *countingCounter) Count(ctx context.Context, msgs []promptsize.Message) (int, error) {
	c.calls.Add(1)
	return c.Counter.Count(ctx, msgs)
}

// observed collects what the engine returned, for checks below the records.
type observed struct {
	mu      sync.Mutex
	results []engine.Result
}

func (o *observed) keep(r engine.Result) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.results = append(o.results, r)
}

func (o *observed) all() []engine.Result {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]engine.Result(nil), o.results...)
}

// client is an engine/openai client of url's OpenAI API, with its results
// observed and its text counter counted. e is what the SDK is given: the
// observed client, still a Preparer and a Prewarmer.
type client struct {
	e       engine.Engine
	raw     *openai.Client
	counter *countingCounter
	seen    *observed
}

func newClient(t *testing.T, tg *target, url string) *client {
	t.Helper()
	cc := &countingCounter{Counter: tg.tok}
	c, err := openai.New(url+"/v1", &openai.Options{Counter: cc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	seen := &observed{}
	return &client{e: engine.Observe(c, seen.keep), raw: c, counter: cc, seen: seen}
}

// checkRow fails unless r is a measured request whose every count is the
// server's: the prompt as long as asked and as the server counted it, the
// reply as long as asked (or, with allowEOS, ended by the model), and,
// streamed, one gap per token after the first.
func checkRow(t *testing.T, tg *target, r benchkit.Request) {
	t.Helper()
	id := fmt.Sprintf("run %d request %d", r.Run, r.Index)
	if r.Failed() {
		t.Errorf("%s failed (%s): %s", id, r.ErrorKind, r.Error)
		return
	}
	if r.ServerPromptTokens == nil {
		t.Errorf("%s: no server prompt count", id)
	} else if *r.ServerPromptTokens != r.PPTokens {
		t.Errorf("%s: prompt %d tokens by the client, %d by the server", id, r.PPTokens, *r.ServerPromptTokens)
	}
	if r.PPTarget > 0 && r.PPTokens != r.PPTarget {
		t.Errorf("%s: prompt of %d tokens, %d asked", id, r.PPTokens, r.PPTarget)
	}
	stopped := tg.allowEOS && r.FinishReason == "stop"
	if r.CompletionTokens == nil {
		t.Errorf("%s: no completion count", id)
	} else if n := *r.CompletionTokens; n != r.TGTarget && !(stopped && n < r.TGTarget) {
		t.Errorf("%s: %d completion tokens, %d asked (finish %q)", id, n, r.TGTarget, r.FinishReason)
	}
	if r.FinishReason != "length" && !stopped {
		t.Errorf("%s: finish reason %q, want length", id, r.FinishReason)
	}
	for _, w := range r.Warnings {
		switch {
		case stopped && w.Code == benchkit.WarnShortGeneration:
		case !tg.ollama() && w.Code == benchkit.WarnEngine:
			t.Logf("%s: warning %s: %s", id, w.Code, w.Message)
		default:
			t.Errorf("%s: warning %s: %s", id, w.Code, w.Message)
		}
	}
	if !r.Stream {
		if r.ITLS != nil {
			t.Errorf("%s: unstreamed, yet %d ITL gaps", id, len(r.ITLS))
		}
		return
	}
	n := r.Tokens()
	if r.TTFTS == nil || r.TPOTS == nil || r.E2ES == nil {
		t.Errorf("%s: TTFT %v, TPOT %v, E2E %v: want all three", id, r.TTFTS, r.TPOTS, r.E2ES)
	}
	if !tg.ollama() {
		// A first chunk of k0 tokens with no anchor before it leaves
		// n − k0 gaps; checkAnyStreams checks the exact number.
		if len(r.ITLS) > n-1 {
			t.Errorf("%s: %d ITL gaps for %d tokens, want at most %d", id, len(r.ITLS), n, n-1)
		}
		return
	}
	if len(r.ITLS) != n-1 {
		t.Errorf("%s: %d ITL gaps for %d tokens, want %d", id, len(r.ITLS), n, n-1)
	}
	if want := n - 1; stopped {
		// The end of sequence has no chunk: it goes to the last one.
		if len(r.ICLS) != want-1 {
			t.Errorf("%s: %d chunk gaps for %d tokens ending in EOS, want %d", id, len(r.ICLS), n, want-1)
		}
	} else if len(r.ICLS) != want {
		t.Errorf("%s: %d chunk gaps for %d tokens, want %d (one token a chunk)", id, len(r.ICLS), n, want)
	}
	if r.TTFTFirstChunkS != nil {
		t.Errorf("%s: a first-chunk anchor %v: Ollama writes nothing before the first text", id, *r.TTFTFirstChunkS)
	}
}

// checkStreams fails unless every streamed result the client saw carried one
// token per content chunk, as many chunks as the server's completion_tokens,
// with no warning (no estimate, no hidden first tokens) and the counter
// never asked. Against another server (INFERBENCH_SERVER=openai) it checks
// what any stream states: the chunks' tokens add up to completion_tokens,
// none unknown.
func checkStreams(t *testing.T, tg *target, c *client) {
	t.Helper()
	if !tg.ollama() {
		checkAnyStreams(t, c)
		return
	}
	for i, res := range c.seen.all() {
		if res.Usage == nil {
			t.Errorf("result %d: no usage", i)
			continue
		}
		if tg.allowEOS && res.FinishReason == "stop" {
			if got, want := len(res.Trace.Chunks), res.Usage.CompletionTokens-1; got != want {
				t.Errorf("result %d: %d content chunks for completion_tokens %d ending in EOS", i, got, want+1)
			}
			continue
		}
		if got, want := len(res.Trace.Chunks), res.Usage.CompletionTokens; got != want {
			t.Errorf("result %d: %d content chunks for completion_tokens %d", i, got, want)
		}
		for j, ch := range res.Trace.Chunks {
			if ch.Tokens != 1 {
				t.Errorf("result %d chunk %d: %d tokens, want 1", i, j, ch.Tokens)
				break
			}
		}
		if !res.Trace.FirstChunk.IsZero() {
			t.Errorf("result %d: a first-chunk anchor; Ollama writes none", i)
		}
		for _, w := range res.Warnings {
			switch {
			case errors.Is(w, openai.ErrEstimatedTokens):
				t.Errorf("result %d: token counts re-counted: %v", i, w)
			case errors.Is(w, openai.ErrHiddenFirstTokens):
				t.Errorf("result %d: first tokens hidden: %v", i, w)
			default:
				t.Errorf("result %d: warning: %v", i, w)
			}
		}
	}
	if n := c.counter.calls.Load(); n != 0 {
		t.Errorf("the client counted generated text %d times; a one-token-a-chunk stream needs no count", n)
	}
}

func checkAnyStreams(t *testing.T, c *client) {
	t.Helper()
	for i, res := range c.seen.all() {
		if res.Usage == nil {
			t.Errorf("result %d: no usage", i)
			continue
		}
		sum := 0
		for _, ch := range res.Trace.Chunks {
			sum += ch.Tokens
		}
		if sum != res.Usage.CompletionTokens {
			t.Errorf("result %d: chunks carry %d tokens, completion_tokens %d", i, sum, res.Usage.CompletionTokens)
		}
		// n − 1 gaps from an anchor (a role chunk before the first
		// token); without one the first chunk's k0 tokens leave n − k0.
		if len(res.Trace.Chunks) > 0 {
			want := sum - 1
			if res.Trace.FirstChunk.IsZero() {
				want = sum - res.Trace.Chunks[0].Tokens
			}
			if got := len(res.Trace.ITL()); got != want {
				t.Errorf("result %d: %d ITL gaps for %d tokens (first chunk %d, anchor %v), want %d",
					i, got, sum, res.Trace.Chunks[0].Tokens, !res.Trace.FirstChunk.IsZero(), want)
			}
		}
		for _, w := range res.Warnings {
			if errors.Is(w, openai.ErrTokenMismatch) || errors.Is(w, openai.ErrUnknownTokens) {
				t.Errorf("result %d: %v", i, w)
			} else {
				t.Logf("result %d: %v", i, w)
			}
		}
	}
}

func timeout(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// server is an Ollama of the test's own, on its own port, over the same
// models directory, so that a test may stop it.
type server struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
	log  *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var listening = regexp.MustCompile(`Listening on (127\.0\.0\.1:[0-9]+)`)

// startServer starts `ollama serve` on a free loopback port and waits until
// it answers; the test's cleanup stops it.
func startServer(t *testing.T) *server {
	t.Helper()
	bin, models := os.Getenv("INFERBENCH_OLLAMA_BIN"), os.Getenv("INFERBENCH_OLLAMA_MODELS")
	if bin == "" || models == "" {
		t.Skip("set INFERBENCH_OLLAMA_BIN and INFERBENCH_OLLAMA_MODELS to let this test start and stop an Ollama of its own (make integration does)")
	}
	cmd := exec.Command(bin, "serve") // bounded: a server for the whole test, which stop (the test's cleanup) interrupts, then kills
	// Its own home (Ollama writes a key pair in ~/.ollama) and its CPU
	// backend by path (a set LD_LIBRARY_PATH replaces where it looks).
	cmd.Env = append(os.Environ(), "OLLAMA_HOST=127.0.0.1:0", "OLLAMA_MODELS="+models, "OLLAMA_NUM_PARALLEL=4",
		"OLLAMA_KEEP_ALIVE=5m", "HOME="+t.TempDir(), "LD_LIBRARY_PATH="+filepath.Join(filepath.Dir(bin), "..", "lib", "ollama"))
	pr, pw := io.Pipe()
	s := &server{cmd: cmd, done: make(chan struct{}), log: &lockedBuffer{}}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); pw.Close(); close(s.done) }()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sent := false
		for sc.Scan() {
			fmt.Fprintln(s.log, sc.Text())
			if m := listening.FindStringSubmatch(sc.Text()); m != nil && !sent {
				addr <- m[1]
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	t.Cleanup(func() { s.stop(t) })
	select {
	case a := <-addr:
		s.url = "http://" + a
	case <-s.done:
		t.Fatalf("ollama serve exited before listening:\n%s", s.log.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("ollama serve did not listen within 60 s:\n%s", s.log.String())
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := testkit.Client.Get(s.url + "/api/version")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not answer: %v", s.url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return s
}

// stop sends SIGINT (Ollama closes every connection and its runners, then
// exits) and waits, killing it after 20 s.
func (s *server) stop(t *testing.T) {
	t.Helper()
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		t.Logf("ollama serve ignored SIGINT for 20 s; killing it")
		_ = s.cmd.Process.Kill()
		<-s.done // bounded: the process was killed
	}
}
