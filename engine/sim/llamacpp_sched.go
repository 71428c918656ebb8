package sim

import (
	"fmt"
	"math"
	"time"
)

// The LlamaCpp profile's scheduler: llama-server's loop over parallel
// slots (ggml-org/llama.cpp tools/server/server-context.cpp,
// server_context_impl: process_single_task, get_available_slot,
// update_slots, pre_decode, post_decode), on the sim's cost model.
//
// A request is a task. At the top of each iteration the loop takes the
// tasks that arrived and gives each a free slot (get_available_slot: the
// idle slot whose cached tokens share the longest common prefix with the
// task's, as a fraction of the task's tokens above
// LlamaCppOptions.SlotPromptSimilarity, else the least recently used idle
// slot, the last of equals); a task no slot takes is deferred and comes
// back, first in line, when a slot is released. Then one batch of at most
// Batch tokens is decoded: the token each generating slot sampled last,
// then the prompts of the slots that are processing theirs, in slot order,
// as many tokens as fit. A slot's prompt timing starts when its first
// prompt tokens enter a batch, so the wait for a slot is in no timing;
// its prompt reuses the longest common token prefix with what the slot
// holds (cache_n; at least one prompt token is always evaluated). The
// batch that holds a prompt's last token yields its first token; every
// later batch one more.
//
// A batch of generating slots with contexts c_i and prompt chunks of n_j
// tokens after o_j costs one forward pass:
//
//	t = max((W + kv · (Σ c_i + Σ o_j)) / B, (2 · N · (b + Σ n_j) + a · Σ (n_j · o_j + n_j(n_j+1)/2)) / F) + overhead
//
// which is DecodeStep for a batch of generating slots alone and
// PrefillChunkTime for one prompt chunk alone.

// Defaults of LlamaCppOptions' zero fields.
const (
	// DefaultLlamaCppSlots is llama-server's slot count (-np) when it
	// chooses it (tools/server: n_parallel auto).
	DefaultLlamaCppSlots = 4
	// DefaultLlamaCppBatch is llama-server's logical batch (-b, n_batch).
	DefaultLlamaCppBatch = 2048
	// DefaultSlotPromptSimilarity is --slot-prompt-similarity
	// (common/common.h, slot_prompt_similarity).
	DefaultSlotPromptSimilarity = 0.1
)

// lcParams are a task's llama.cpp request parameters the scheduler reads.
type lcParams struct {
	idSlot      int  // id_slot, -1: any
	cachePrompt bool // cache_prompt (default true)
}

// lcTask is a request inside the llama.cpp loop.
type lcTask struct {
	j         *job
	ids       []int // the task's tokens (task.tokens)
	started   bool  // its prompt processing began (t_start is set)
	done      int   // task tokens in the slot's KV
	nPast     int   // cache_n, in token identities
	processed int   // tokens prefilled
	nGen      int
	gen       []int // generated ids; the last is not in the KV yet
	tStart    time.Duration
	tPrompt   time.Duration // t_prompt_last: the first token
	tGen      time.Duration // t_gen_last: the last token
}

// lcSlot is one of llama-server's parallel slots.
type lcSlot struct {
	id       int
	tokens   []int         // what the slot's KV holds (slot.prompt.tokens)
	lastUsed time.Duration // t_last_used, -1 before the first release
	task     *lcTask
}

// lcChunk is one slot's prompt tokens in a batch.
type lcChunk struct {
	slot      *lcSlot
	n, offset int
}

// roofMixed returns the memory and compute times of one batch of
// generating slots holding contexts[i] tokens and prompt chunks.
func (c cost) roofMixed(contexts []int, chunks []lcChunk) (mem, comp float64) {
	m, h := c.p.Model, c.p.Hardware
	keys, tokens, pairs := 0.0, float64(len(contexts)), 0.0
	for _, x := range contexts {
		keys += float64(x)
	}
	genKeys := keys
	for _, ch := range chunks {
		n, o := float64(ch.n), float64(ch.offset)
		keys += o
		tokens += n
		pairs += n*o + n*(n+1)/2
	}
	if f := c.p.Fitted; f != nil {
		// The fitted form of Coefficients' mixed batch.
		base := f.PrefillBase
		if len(contexts) > 0 {
			base = f.DecodeBase
		}
		slots := float64(len(contexts))
		mem = base + f.DecodePerContextToken*genKeys + f.PrefillPerCachedToken*(keys-genKeys)
		if f.AttentionOverKV {
			// Every token of the batch against every key after it.
			after := genKeys
			for _, ch := range chunks {
				after += float64(ch.offset + ch.n)
			}
			pairs = tokens * after
		}
		comp = f.DecodePerRequest*slots + f.PrefillPerToken*(tokens-slots) + f.PrefillPerPair*pairs
		return mem, comp
	}
	mem = (m.WeightBytes() + m.KVBytesPerToken()*keys) / h.EffectiveBandwidth()
	comp = (2*m.active()*tokens + m.AttentionFLOPsPerPair()*pairs) / h.EffectiveFLOPS()
	return mem, comp
}

// lcTimings is a finished task's timings object (server_slot_stats:
// tools/server/server-common.h, to_json in server-common.cpp), its
// instants whole microseconds as ggml_time_us gives them.
type lcTimings struct {
	CacheN              int     `json:"cache_n"`
	PromptN             int     `json:"prompt_n"`
	PromptMS            float64 `json:"prompt_ms"`
	PromptPerTokenMS    float64 `json:"prompt_per_token_ms"`
	PromptPerSecond     float64 `json:"prompt_per_second"`
	PredictedN          int     `json:"predicted_n"`
	PredictedMS         float64 `json:"predicted_ms"`
	PredictedPerTokenMS float64 `json:"predicted_per_token_ms"`
	PredictedPerSecond  float64 `json:"predicted_per_second"`

	genUS      int64 // t_gen_us: at least 1
	tokensInKV int   // n_tokens_cached: the slot's tokens at the end
	slot       int
	truncated  bool
}

// timings computes the task's timings as llama-server does:
//
//	prompt_ms              = t_prompt_last − t_start          (the first token − the prompt's first batch)
//	predicted_ms           = max(1 µs, t_gen_last − t_prompt_last)
//	prompt_per_token_ms    = prompt_ms / prompt_n              (0 when prompt_n is 0)
//	prompt_per_second      = 1000 / prompt_ms · prompt_n       (0 when prompt_ms is 0)
//	predicted_per_token_ms = predicted_ms / (predicted_n − 1)  (n_gen_steps; 0 when predicted_n ≤ 1)
//	predicted_per_second   = 1000 / predicted_ms · (predicted_n − 1)
//
// cache_n and prompt_n are in the server's count (the token identities'
// scaled to a caller's Counter's).
func (t *lcTask) timings() *lcTimings {
	us := func(d time.Duration) int64 { return d.Microseconds() }
	cached, prompt := t.nPast, len(t.ids)
	if t.j.prompt != len(t.ids) && len(t.ids) > 0 {
		cached = min(t.nPast*t.j.prompt/len(t.ids), max(t.j.prompt-1, 0))
		prompt = t.j.prompt
	}
	tm := &lcTimings{CacheN: cached, PromptN: prompt - cached, PredictedN: t.nGen}
	if t.nGen > 0 {
		tm.PromptMS = float64(us(t.tPrompt)-us(t.tStart)) / 1000
		tm.genUS = max(1, us(t.tGen)-us(t.tPrompt))
		tm.PredictedMS = float64(tm.genUS) / 1000
	}
	if tm.PromptN > 0 {
		tm.PromptPerTokenMS = tm.PromptMS / float64(tm.PromptN)
	}
	if tm.PromptMS > 0 {
		tm.PromptPerSecond = 1e3 / tm.PromptMS * float64(tm.PromptN)
	}
	if steps := t.nGen - 1; steps > 0 {
		tm.PredictedPerTokenMS = tm.PredictedMS / float64(steps)
		tm.PredictedPerSecond = 1e3 / tm.PredictedMS * float64(steps)
	}
	return tm
}

// lcError is an error the llama.cpp loop answers a task with, in
// llama-server's error object (format_error_response).
type lcError struct {
	code           int
	typ, msg       string
	nPrompt, nCtx  int
	exceedsContext bool
}

func (e *lcError) Error() string { return e.msg }

// availableSlot is get_available_slot: the requested slot when the task
// names one, else the idle slot with the best prompt similarity above the
// threshold, else the least recently used idle slot (the last of equals,
// as llama.cpp's `<=` picks). It returns nil when none is free; a named
// slot may be returned busy (the task is then deferred).
func (lc *llamaCpp) availableSlot(slots []*lcSlot, t *lcTask) *lcSlot {
	var ret *lcSlot
	if id := t.j.lc.idSlot; id >= 0 {
		ret = slots[id%len(slots)]
	}
	if lc.similarity > 0 {
		best := 0.0
		for _, sl := range slots {
			if id := t.j.lc.idSlot; id >= 0 && sl.id != id%len(slots) {
				continue
			}
			if sl.task != nil || len(sl.tokens) == 0 || len(t.ids) == 0 {
				continue
			}
			sim := float64(commonPrefix(sl.tokens, t.ids)) / float64(len(t.ids))
			if sim > best && sim > lc.similarity {
				best, ret = sim, sl
			}
		}
	}
	if ret != nil {
		return ret
	}
	var last time.Duration
	for _, sl := range slots {
		if sl.task != nil {
			continue
		}
		if ret == nil || sl.lastUsed <= last {
			ret, last = sl, sl.lastUsed
		}
	}
	return ret
}

// runSlots is the LlamaCpp profile's scheduler goroutine: llama-server's
// loop, one batch an iteration, sleeping each batch's computed duration.
func (in *instance) runSlots() {
	defer close(in.done)
	s := in.s
	lc := s.lc
	slots := make([]*lcSlot, lc.slots)
	for i := range slots {
		slots[i] = &lcSlot{id: i, lastUsed: -1}
	}
	var queue, deferred []*lcTask
	defer func() {
		in.mu.Lock()
		in.stopped = true
		arrived := in.queue
		in.queue = nil
		in.mu.Unlock()
		gone := func(j *job) {
			j.state.Store(jobDone)
			j.push(event{kind: evError, err: errInstanceGone})
		}
		for _, sl := range slots {
			if sl.task != nil {
				gone(sl.task.j)
			}
		}
		for _, t := range append(queue, deferred...) {
			gone(t.j)
		}
		for _, j := range arrived {
			gone(j)
		}
		lc.met.processing.Store(0)
		lc.met.deferred.Store(0)
	}()
	if !in.sleepUntil(in.readyAt) {
		return
	}
	now := in.readyAt
	// release ends a slot's task at now (server_slot::release): the slot
	// keeps what its KV holds, the task's generation is counted
	// (metrics_on_prediction) and the first deferred task that may take
	// the slot goes back to the front of the queue (pop_deferred_task).
	release := func(sl *lcSlot) {
		t := sl.task
		sl.task = nil
		sl.lastUsed = now
		t.j.state.Store(jobDone)
		if t.nGen > 0 {
			lc.met.prediction(t)
		}
		for i, d := range deferred {
			if id := d.j.lc.idSlot; id < 0 || id%len(slots) == sl.id {
				deferred = append(deferred[:i:i], deferred[i+1:]...)
				queue = append([]*lcTask{d}, queue...)
				break
			}
		}
	}
	keepLive := func(ts []*lcTask) []*lcTask {
		out := ts[:0]
		for _, t := range ts {
			if t.j.cancelled.Load() {
				t.j.state.Store(jobDone)
				continue
			}
			out = append(out, t)
		}
		clear(ts[len(out):])
		return out
	}
	for {
		in.mu.Lock()
		for _, j := range in.queue {
			queue = append(queue, &lcTask{j: j, ids: j.ids})
		}
		in.queue = nil
		in.mu.Unlock()
		// A client that left cancels its task (SERVER_TASK_TYPE_CANCEL).
		queue, deferred = keepLive(queue), keepLive(deferred)
		for _, sl := range slots {
			if sl.task != nil && sl.task.j.cancelled.Load() {
				release(sl)
			}
		}
		// process_single_task for each queued task.
		for _, t := range queue {
			sl := lc.availableSlot(slots, t)
			if sl == nil || sl.task != nil {
				deferred = append(deferred, t)
				continue
			}
			sl.task = t
			t.j.state.Store(jobRunning)
		}
		queue = queue[:0]
		busy := 0
		for _, sl := range slots {
			if sl.task != nil {
				busy++
			}
		}
		lc.met.processing.Store(int64(busy))
		lc.met.deferred.Store(int64(len(deferred)))
		in.mu.Lock()
		in.nrunning = busy
		if busy == 0 {
			if len(in.queue) > 0 {
				in.mu.Unlock()
				continue
			}
			in.busy = false
			in.idleAt = now
			in.mu.Unlock()
			lc.met.flushPrompt(now)
			select {
			case <-in.wake:
				continue
			case <-in.stop:
				return
			}
		}
		if !in.busy {
			in.busy = true
			now = max(now, s.elapsed())
		}
		in.mu.Unlock()

		// pre_decode: the generating slots' last tokens, then prompts.
		var gen []*lcSlot
		var chunks []lcChunk
		size := 0
		for _, sl := range slots {
			if t := sl.task; t != nil && t.nGen > 0 {
				sl.tokens = append(sl.tokens, t.gen[len(t.gen)-1])
				gen = append(gen, sl)
				size++
			}
		}
		for _, sl := range slots {
			t := sl.task
			if t == nil || t.nGen > 0 {
				continue
			}
			if size >= lc.batch {
				break
			}
			if !t.started && !lc.startPrompt(sl, t, now) {
				release(sl)
				continue
			}
			if len(t.ids) == 0 {
				// An empty prompt: an empty answer at once.
				t.j.push(event{kind: evDone, stats: t.j.final(), timings: t.timings()})
				release(sl)
				continue
			}
			k := min(len(t.ids)-t.done, lc.batch-size)
			chunks = append(chunks, lcChunk{slot: sl, n: k, offset: t.done})
			sl.tokens = append(sl.tokens, t.ids[t.done:t.done+k]...)
			size += k
		}
		if size == 0 {
			continue
		}
		busy = lc.busySlots(slots)
		contexts := make([]int, len(gen))
		for i, sl := range gen {
			contexts[i] = len(sl.tokens)
		}
		mem, comp := in.cost.roofMixed(contexts, chunks)
		dt := in.cost.finish(math.Max(mem, comp))
		in.setStep(now, now+dt)
		in.record(now, now+dt, mem, comp)
		start := now
		if !in.sleepUntil(now + dt) {
			return
		}
		now += dt

		// post_decode: prompts advance, and each slot whose logits this
		// batch computed samples its next token.
		prompt, output := 0, len(gen) > 0
		maxTokens := 0
		for _, ch := range chunks {
			t := ch.slot.task
			t.done += ch.n
			t.processed += ch.n
			prompt += ch.n
			s.cache.prefilled.Add(int64(ch.n))
			if t.done == len(t.ids) {
				output = true
			}
		}
		for _, sl := range slots {
			maxTokens = max(maxTokens, len(sl.tokens))
		}
		lc.met.decoded(busy, maxTokens, prompt, output, start, now)
		for _, sl := range slots {
			t := sl.task
			if t == nil || t.done < len(t.ids) {
				continue
			}
			in.lcSample(t, now)
			if t.nGen >= t.j.target {
				tm := t.timings()
				tm.tokensInKV = len(sl.tokens)
				tm.slot = sl.id
				tm.truncated = t.j.reason == "length" && t.nGen >= lc.nCtx-t.j.prompt
				t.j.push(event{kind: evDone, stats: t.j.final(), timings: tm})
				release(sl)
			}
		}
		lc.met.processing.Store(int64(lc.busySlots(slots)))
		lc.met.deferred.Store(int64(len(deferred)))
	}
}

func (lc *llamaCpp) busySlots(slots []*lcSlot) int {
	n := 0
	for _, sl := range slots {
		if sl.task != nil {
			n++
		}
	}
	return n
}

// startPrompt begins t's prompt processing in sl at now (the
// SLOT_STATE_STARTED branch of pre_decode): the context check, then the
// reuse of the slot's cached tokens. It reports false when the task was
// answered with an error and the slot must be released.
func (lc *llamaCpp) startPrompt(sl *lcSlot, t *lcTask, now time.Duration) bool {
	t.started = true
	t.tStart = now
	if n := t.j.prompt; n >= lc.nCtx {
		t.j.push(event{kind: evError, err: &lcError{code: 400, typ: "exceed_context_size_error",
			msg:     fmt.Sprintf("request (%d tokens) exceeds the available context size (%d tokens), try increasing it", n, lc.nCtx),
			nPrompt: n, nCtx: lc.nCtx, exceedsContext: true}})
		return false
	}
	nPast := 0
	if t.j.lc.cachePrompt {
		nPast = commonPrefix(sl.tokens, t.ids)
	}
	if nPast == len(t.ids) && nPast > 0 {
		// At least one token is evaluated, for the first token's logits.
		nPast--
	}
	t.nPast, t.done = nPast, nPast
	sl.tokens = sl.tokens[:nPast:nPast]
	t.j.cached = t.timings().CacheN
	t.j.admitted = now
	lc.met.cached(t.j.cached)
	lc.s.cache.prompt.Add(int64(t.j.prompt))
	lc.s.cache.cached.Add(int64(t.j.cached))
	t.j.push(event{kind: evBegin})
	return true
}

// lcSample gives t its next token at now.
func (in *instance) lcSample(t *lcTask, now time.Duration) {
	j := t.j
	t.nGen++
	if t.nGen == 1 {
		t.tPrompt = now
		j.first = now
	}
	t.tGen = now
	j.last = now
	j.generated = t.nGen
	word := j.think.word(in.s.vocab, j.seed, t.nGen-1)
	t.gen = append(t.gen, tokenID(word))
	j.push(event{kind: evToken, text: word, cumulative: t.nGen})
}
