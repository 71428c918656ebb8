package sim

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// lcBucket is server_metrics::bucket (tools/server/server-common.h): a
// token count, the decode steps they took (a generation's first token is
// free: it comes from the prompt's last batch) and their time in µs.
type lcBucket struct {
	count, steps, timeUS uint64
}

func (b *lcBucket) add(n, steps, us uint64) {
	b.count += n
	b.steps += steps
	b.timeUS += us
}

// perSecond is n_per_second: steps per second, 0 without time.
func (b lcBucket) perSecond() float64 {
	if b.timeUS == 0 {
		return 0
	}
	return float64(b.steps) / float64(b.timeUS) * 1e6
}

// lcMetrics is llama-server's server_metrics, kept by the LlamaCpp
// profile's loop and read by GET /metrics.
type lcMetrics struct {
	processing, deferred atomic.Int64 // the loop's slots busy and tasks deferred

	mu                          sync.Mutex
	prompt, predict             lcBucket // since the start
	promptBucket, predictBucket lcBucket // since the last scrape
	nPromptCached               uint64
	nTokensMax                  uint64
	nDecode, nBusySlots         uint64
	// Prompt tokens decoded but not yet timed: llama_decode is
	// asynchronous, so their time is taken at the next synchronised
	// output, from the start of the first batch that held them
	// (metrics_queue_prompt, metrics_flush_prompt).
	queued      uint64
	queuedStart time.Duration
}

// cached counts a task's reused prompt tokens as its slot starts it
// (add_prompt_cached).
func (m *lcMetrics) cached(n int) {
	m.mu.Lock()
	m.nPromptCached += uint64(n)
	m.mu.Unlock()
}

// decoded records one llama_decode of the batch [start, end)
// (metrics_post_decode): busy slots, the longest slot, and its prompt
// tokens, whose time is flushed when the batch had output.
func (m *lcMetrics) decoded(busy, maxTokens, prompt int, output bool, start, end time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nDecode++
	m.nBusySlots += uint64(busy)
	m.nTokensMax = max(m.nTokensMax, uint64(maxTokens))
	if prompt > 0 {
		if m.queued == 0 {
			m.queuedStart = start
		}
		m.queued += uint64(prompt)
	}
	if output {
		m.flushLocked(end)
	}
}

// flushPrompt times the queued prompt tokens at end (metrics_flush_idle
// when every slot is idle).
func (m *lcMetrics) flushPrompt(end time.Duration) {
	m.mu.Lock()
	m.flushLocked(end)
	m.mu.Unlock()
}

func (m *lcMetrics) flushLocked(end time.Duration) {
	if m.queued == 0 {
		return
	}
	us := uint64(max(end.Microseconds()-m.queuedStart.Microseconds(), 0))
	m.prompt.add(m.queued, m.queued, us)
	m.promptBucket.add(m.queued, m.queued, us)
	m.queued = 0
}

// prediction records a released task's generation (metrics_on_prediction):
// its n tokens, n − 1 decode steps and t_gen_us, the time from its first
// token to its last.
func (m *lcMetrics) prediction(t *lcTask) {
	us := uint64(max(1, t.tGen.Microseconds()-t.tPrompt.Microseconds()))
	n := uint64(t.nGen)
	m.mu.Lock()
	m.predict.add(n, n-1, us)
	m.predictBucket.add(n, n-1, us)
	m.mu.Unlock()
}

func (m *lcMetrics) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.prompt, m.predict, m.promptBucket, m.predictBucket = lcBucket{}, lcBucket{}, lcBucket{}, lcBucket{}
	m.nPromptCached, m.nTokensMax, m.nDecode, m.nBusySlots = 0, 0, 0, 0
}

// lcMetricItem is one family of llama-server's /metrics.
type lcMetricItem struct {
	name, help string
	value      float64
}

// render writes the families as server_task_result_metrics::to_metrics
// does (tools/server/server-task.cpp): counters, then gauges, each as
// "# HELP", "# TYPE" and one sample, the value printed by a C++ stream
// (six significant digits, so a counter above 999999 is rounded), and
// resets the two per-scrape buckets (the scrape's metrics_reset_bucket).
// No speculative decoding runs, so no per-position series.
func (m *lcMetrics) render() string {
	processing, deferred := float64(m.processing.Load()), float64(m.deferred.Load())
	m.mu.Lock()
	counters := []lcMetricItem{
		{"prompt_tokens_total", "Number of prompt tokens processed, excluding cached tokens", float64(m.prompt.count)},
		{"prompt_tokens_cached_total", "Number of prompt tokens reused from the cache", float64(m.nPromptCached)},
		{"prompt_seconds_total", "Total time spent processing prompts", float64(m.prompt.timeUS) / 1e6},
		{"tokens_predicted_total", "Number of generation tokens processed", float64(m.predict.count)},
		{"tokens_predicted_seconds_total", "Total time spent generating tokens", float64(m.predict.timeUS) / 1e6},
		{"n_decode_total", "Total number of llama_decode() calls, excluding speculative decoding and multimodal decoding", float64(m.nDecode)},
		{"n_tokens_max", "Largest observed sequence length (prompt + generation)", float64(m.nTokensMax)},
		{"spec_decode_num_draft_tokens_total", "Speculative: Total draft tokens generated", 0},
		{"spec_decode_num_accepted_tokens_total", "Speculative: Total draft tokens accepted by the target model", 0},
		{"spec_decode_num_drafts_total", "Speculative: Total speculative decoding verification steps", 0},
	}
	gauges := []lcMetricItem{
		{"prompt_tokens_seconds", "Average prompt throughput in tokens/s", m.promptBucket.perSecond()},
		{"predicted_tokens_seconds", "Average generation throughput in tokens/s", m.predictBucket.perSecond()},
		{"requests_processing", "Number of requests processing", processing},
		{"requests_deferred", "Number of requests deferred", deferred},
		{"n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call", float64(m.nBusySlots) / max(float64(m.nDecode), 1)},
	}
	m.promptBucket, m.predictBucket = lcBucket{}, lcBucket{}
	m.mu.Unlock()
	var b strings.Builder
	for _, g := range []struct {
		typ   string
		items []lcMetricItem
	}{{"counter", counters}, {"gauge", gauges}} {
		for _, it := range g.items {
			b.WriteString("# HELP llamacpp:" + it.name + " " + it.help + "\n")
			b.WriteString("# TYPE llamacpp:" + it.name + " " + g.typ + "\n")
			b.WriteString("llamacpp:" + it.name + " " + cppDouble(it.value) + "\n")
		}
	}
	return b.String()
}

// cppDouble formats v as a C++ ostream does by default: %g with six
// significant digits.
func cppDouble(v float64) string {
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// handleLlamaCppMetrics serves the LlamaCpp profile's GET /metrics:
// text 0.0.4 as llama-server writes it, or 501 without metrics (as
// llama-server without --metrics).
func (s *Server) handleLlamaCppMetrics(w http.ResponseWriter, r *http.Request) {
	if s.opts.Metrics == MetricsOff {
		lcFail(w, &lcError{code: http.StatusNotImplemented, typ: "not_supported_error",
			msg: "This server does not support metrics endpoint. Start it with `--metrics`"})
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(s.lc.met.render()))
}
