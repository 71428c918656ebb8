package openai

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/httpconn"
)

// tgiHeaders are the timing headers text-generation-inference sets on a
// response that is not streamed (router/src/server.rs, generate_internal):
// whole milliseconds, from its own clock.
//
//	x-validation-time  request accepted → queued (validation, tokenization)
//	x-queue-time       queued → batch start
//	x-inference-time   batch start → done (prefill and decode together)
//	x-total-time       request accepted → done
//	x-time-per-token   inference time / generated tokens (prefill included)
//	x-prompt-tokens, x-generated-tokens
//
// Streams carry none of them.
const (
	tgiQueue     = "X-Queue-Time"
	tgiInference = "X-Inference-Time"
	tgiTotal     = "X-Total-Time"
	tgiPrompt    = "X-Prompt-Tokens"
	tgiGenerated = "X-Generated-Tokens"
)

// tgiStats decodes TGI's timing headers into server stats: nil when the
// response has none of them. A header that is not a whole number ≥ 0 is
// left out with a warning; a generated count past the plausible bound is an
// error of kind implausible_usage.
func tgiStats(h http.Header, maxTokens int) (*engine.ServerStats, []error, error) {
	if h.Get(tgiQueue) == "" && h.Get(tgiInference) == "" && h.Get(tgiTotal) == "" {
		return nil, nil, nil
	}
	st := &engine.ServerStats{Source: "tgi", PrefixCacheHit: engine.PrefixCacheNone}
	var warns []error
	whole := func(name string) (int64, bool) {
		v := strings.TrimSpace(h.Get(name))
		if v == "" {
			return 0, false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			warns = append(warns, fmt.Errorf("openai: header %s = %q, want a whole number ≥ 0; left out", name, httpconn.Excerpt([]byte(v))))
			return 0, false
		}
		return n, true
	}
	ms := func(name string) *time.Duration {
		n, ok := whole(name)
		if !ok || n > int64(time.Duration(1<<62)/time.Millisecond) {
			return nil
		}
		d := time.Duration(n) * time.Millisecond
		return &d
	}
	st.Queue, st.Inference, st.Total = ms(tgiQueue), ms(tgiInference), ms(tgiTotal)
	if n, ok := whole(tgiPrompt); ok {
		if err := engine.CheckCount("x-prompt-tokens", int(min(n, 1<<40)), engine.NoMaxTokensBound); err != nil {
			return nil, nil, err
		}
		st.PromptTokens = int(n)
	}
	if n, ok := whole(tgiGenerated); ok {
		if err := engine.CheckCount("x-generated-tokens", int(min(n, 1<<40)), engine.MaxPlausibleCount(maxTokens)); err != nil {
			return nil, nil, err
		}
		st.GenerationTokens = int(n)
		if n >= 1 && st.Inference != nil && *st.Inference > 0 {
			// TGI's own rate: its inference time includes the prefill.
			st.GenerationTPS = float64(n) / st.Inference.Seconds()
		}
	}
	return st, warns, nil
}
