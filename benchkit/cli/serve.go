package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/remote"
)

// ErrRequestsFailed is wrapped by the error of a program whose run
// completed but some of whose requests failed; their rows say why.
// ErrClientSaturated is wrapped by the error of a program whose load
// generator could not keep up (benchkit.ClientHealth.Saturated, or a
// burst's skew beyond its bound): its latencies include its own queueing.
// ErrRegression is wrapped by the error of a comparison used as a gate
// (examples/compare --threshold) that found a figure worse beyond its
// threshold.
var (
	ErrRequestsFailed  = errors.New("some requests failed")
	ErrClientSaturated = errors.New("the client was the bottleneck")
	ErrRegression      = errors.New("a figure regressed beyond the threshold")
)

// Exit codes of the example programs, which map a run's error with
// ExitCode.
const (
	ExitOK          = 0   // every request succeeded
	ExitFailed      = 1   // some requests failed (rows say why), or the run did
	ExitUsage       = 2   // bad flags: nothing was sent
	ExitSaturated   = 3   // the client itself was the bottleneck (ErrClientSaturated)
	ExitRegression  = 4   // a compared figure regressed beyond the gate's threshold (ErrRegression)
	ExitInterrupted = 130 // SIGINT or SIGTERM: measured rows were written
)

// A UsageError is a bad command line: a flag that does not parse or a
// combination that makes no sense. Nothing has been sent when a program
// returns one.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a *UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ExitCode maps a program's error to its exit status: nil is ExitOK;
// a *UsageError, or any error wrapping [benchkit.ErrBadLoad], [benchkit.ErrBadPlan] or
// ErrOutputInUse (checked before anything was sent), is ExitUsage; an error wrapping
// context.Canceled is ExitInterrupted; one wrapping [ErrClientSaturated]
// (and no failed request) is ExitSaturated; one wrapping [ErrRegression]
// is ExitRegression; anything else,
// [ErrRequestsFailed] included, is ExitFailed.
func ExitCode(err error) int {
	var ue *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue), errors.Is(err, benchkit.ErrBadLoad), errors.Is(err, benchkit.ErrBadPlan), errors.Is(err, ErrOutputInUse):
		return ExitUsage
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.Is(err, ErrClientSaturated) && !errors.Is(err, ErrRequestsFailed):
		return ExitSaturated
	case errors.Is(err, ErrRegression):
		return ExitRegression
	}
	return ExitFailed
}

// DefaultRequestTimeout is how long serve-load and offline let one request
// take, from dialing to the end of its answer, unless --timeout says
// otherwise: an endless stream, or a server that never sends its headers,
// then ends as a row of kind timeout instead of hanging the run. It also
// bounds their control-plane calls (the model list, /tokenize).
const DefaultRequestTimeout = 10 * time.Minute

// DefaultGCPercent is the garbage collector's setting serve-load and
// offline run their schedules with (benchkit.Load.GCPercent) unless
// --gc-percent says otherwise: the heap may grow to five times what was
// live before a collection, a quarter as many collections as Go's
// default of 100, each of whose pauses delays every reader. A collection
// cannot move a chunk's arrival instant (the adapters take it from the
// kernel), but a read delayed past the next chunk's arrival shares that
// chunk's instant.
const DefaultGCPercent = 400

// GCPercentUsage is the help text of --gc-percent.
const GCPercentUsage = "garbage collector's target percentage while the schedule runs (Go's default is 100; -1: no collection during the run; 0: leave GOGC's)"

// AuthHeader returns the header that carries the bearer token held in the
// environment variable env (Authorization: Bearer <token>), for requests
// made beside an openai.Client with Options.APIKeyEnv set to env, such
// as /tokenize. It is nil when env is empty or the variable is unset or
// blank.
func AuthHeader(env string) http.Header {
	if env == "" {
		return nil
	}
	key := strings.TrimSpace(os.Getenv(env))
	if key == "" {
		return nil
	}
	return http.Header{"Authorization": {"Bearer " + key}}
}

// ServerCounter returns a [promptsize.Counter] that asks the server at
// baseURL (its root, or its OpenAI API under /v1, which is dropped) to
// count, in the shape it speaks, checked with one chat first: vLLM's and
// SGLang's /tokenize, else llama.cpp's /apply-template and /tokenize
// (ResolveServerCounter with CounterAuto). header is sent with every
// request (credentials) and redacted from errors. Each request is bounded
// by remote.DefaultTimeout and ctx. The error wraps remote.ErrNoEndpoint
// when the server has neither.
func ServerCounter(ctx context.Context, baseURL, model string, header http.Header) (promptsize.Counter, error) {
	return ServerCounterTimeout(ctx, baseURL, model, header, 0)
}

// ServerCounterTimeout is ServerCounter with each request bounded by
// timeout (remote.DefaultTimeout when zero, only ctx when negative): a
// program passes its --timeout, so that /tokenize is held to the run's
// bound.
func ServerCounterTimeout(ctx context.Context, baseURL, model string, header http.Header, timeout time.Duration) (promptsize.Counter, error) {
	c, _, err := ResolveServerCounter(ctx, baseURL, model, header, timeout, CounterAuto)
	return c, err
}

// How a server counts prompts (a Target's --server-counter).
const (
	// CounterAuto asks vLLM's and SGLang's /tokenize, and llama.cpp's
	// /apply-template and /tokenize when the server has no /tokenize of
	// that shape or answers it with no tokens (llama.cpp's /tokenize
	// does, to a body without "content").
	CounterAuto = "auto"
	// CounterTokenize is vLLM's and SGLang's /tokenize (remote.VLLM).
	CounterTokenize = "tokenize"
	// CounterLlamaCpp is llama.cpp's /apply-template and /tokenize
	// (remote.LlamaCpp), which count as the server does: its
	// usage.prompt_tokens.
	CounterLlamaCpp = "llamacpp"
)

// counterKinds are the values of --server-counter.
var counterKinds = []string{CounterAuto, CounterTokenize, CounterLlamaCpp}

// ResolveServerCounter returns the counter of kind (CounterAuto when
// empty) of the server at baseURL, checked with one chat, and what it is
// for the run's information (RunInfo.Tokenizer). baseURL is the server's
// root or its OpenAI API under /v1, which is dropped: these endpoints are
// at the root. header, timeout and the errors are ServerCounterTimeout's.
func ResolveServerCounter(ctx context.Context, baseURL, model string, header http.Header, timeout time.Duration, kind string) (promptsize.Counter, string, error) {
	root := serverRoot(baseURL)
	vllm := &remote.VLLM{BaseURL: root, Model: model, Header: header, Timeout: timeout}
	llama := &remote.LlamaCpp{BaseURL: root, Header: header, Timeout: timeout}
	const (
		vllmWhat  = "the server's /tokenize"
		llamaWhat = "llama.cpp's /apply-template and /tokenize"
	)
	switch kind {
	case CounterTokenize:
		return vllm, vllmWhat, checkCounter(ctx, vllm, vllmWhat, root)
	case CounterLlamaCpp:
		return llama, llamaWhat, checkCounter(ctx, llama, llamaWhat, root)
	case CounterAuto, "":
	default:
		return nil, "", fmt.Errorf("cli: server counter %q: want one of %s", kind, strings.Join(counterKinds, ", "))
	}
	err := checkCounter(ctx, vllm, vllmWhat, root)
	if err == nil {
		return vllm, vllmWhat, nil
	}
	if !errors.Is(err, remote.ErrNoEndpoint) && !errors.Is(err, remote.ErrNoTokens) {
		// The endpoint is there and refused (a key, a model): no other
		// shape would do better.
		return nil, "", err
	}
	lerr := checkCounter(ctx, llama, llamaWhat, root)
	if lerr == nil {
		return llama, llamaWhat, nil
	}
	return nil, "", fmt.Errorf("%w; and %w", err, lerr)
}

// checkCounter counts a one-word chat with c, which must find a token.
func checkCounter(ctx context.Context, c promptsize.Counter, what, root string) error {
	n, err := c.Count(ctx, []promptsize.Message{{Role: "user", Content: "Hello"}})
	if err != nil {
		return fmt.Errorf("cli: %s at %s: %w", what, root, err)
	}
	if n < 1 {
		return fmt.Errorf("cli: %s at %s counted %d tokens for a one-word chat; want at least 1", what, root, n)
	}
	return nil
}

// serverRoot is a server's root: url without its OpenAI API's /v1 (vLLM,
// SGLang and llama.cpp serve /tokenize, /metrics and the like beside /v1,
// not under it).
func serverRoot(url string) string {
	return strings.TrimSuffix(strings.TrimRight(url, "/"), "/v1")
}
