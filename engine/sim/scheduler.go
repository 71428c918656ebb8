package sim

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// remotePrefillMinTokens is exo's REMOTE_PREFILL_MIN_TOKENS: a prompt is
// prefilled on a linked prefill instance only when more than this many of
// its tokens are uncached.
const remotePrefillMinTokens = 1000

// errInstanceGone ends the requests of a deleted instance.
var errInstanceGone = errors.New("instance deleted while the request was running")

type eventKind int

const (
	evProgress eventKind = iota
	evToken
	evDone
	evError
	evBegin // the LlamaCpp profile: a slot took the prompt
)

type event struct {
	kind       eventKind
	text       string
	processed  int
	total      int
	cumulative int // tokens generated so far (evToken)
	stats      *finalStats
	timings    *lcTimings // evDone of the LlamaCpp profile
	err        error
}

// finalStats is what a finished request reports, every instant on the
// schedule (durations since the server started).
type finalStats struct {
	promptTokens, generated, cached int
	promptTPS, generationTPS        float64
	hit, reason                     string
	arrival, admitted               time.Duration
	prefillStart, prefillEnd        time.Duration
	first, last                     time.Duration
	maxBatch                        int
	remote                          bool
	peakBytes                       int64
}

const (
	jobQueued int32 = iota
	jobRunning
	jobDone
)

// job is one request inside the scheduler.
type job struct {
	id        string
	ids       []int // token identities of the prompt (built-in ids, or a completion's own), for the prefix caches
	prompt    int   // prompt_tokens as the server counts them
	system    int
	useCache  bool // exo's KVPrefixCache is looked up and saved
	blocks    bool // the vLLM API: the instance's block cache
	target    int
	reason    string
	seed      uint64
	arrival   time.Duration
	arrived   atomic.Int64 // arrival, for trimPower on other goroutines
	cancelled atomic.Bool  // the scheduler drops the job
	aborted   atomic.Bool  // cancelled through /v1/cancel
	state     atomic.Int32
	instID    atomic.Value // string

	// Owned by whichever scheduler holds the job.
	notBefore   time.Duration
	remoteStart time.Duration
	remote      int // 0 local, 1 at the prefill instance, 2 injected
	// remoteIdleAt is the schedule instant the prefill instance went idle,
	// when it was idle as the request was handed to it; -1 otherwise.
	remoteIdleAt time.Duration
	home         *instance
	cacheIdx     int
	admitted     time.Duration
	prefillStart time.Duration
	prefillEnd   time.Duration
	first, last  time.Duration
	generated    int
	ctx          int
	cached       int
	hit          string
	promptTPS    float64
	maxBatch     int
	seq          blockSeq  // the block cache's view of the request (blocks)
	lc           *lcParams // the LlamaCpp profile's request parameters
	think        thinkPlan // where its thinking falls (the reasoning mode)

	met   *engineMetrics // the home instance's metrics; set on arrival
	gauge atomic.Int32   // gaugeNone, gaugeWaiting or gaugeRunning (metrics.go)

	mu     sync.Mutex
	events []event
	notify chan struct{}
	quiet  bool // a prediction's job: no handler reads its events
}

func (j *job) push(e event) {
	if j.quiet {
		return
	}
	j.mu.Lock()
	j.events = append(j.events, e)
	j.mu.Unlock()
	select {
	case j.notify <- struct{}{}:
	default:
	}
}

// take returns and clears the pending events.
func (j *job) take() []event {
	j.mu.Lock()
	defer j.mu.Unlock()
	ev := j.events
	j.events = nil
	return ev
}

// instance is one placed model with its own batch and scheduler goroutine.
type instance struct {
	s        *Server
	id       string
	model    Model
	cost     cost
	nodes    []int
	sharding string // "Pipeline" or "Tensor"
	meta     string // "MlxRing" or "MlxJaccl"
	runners  []string
	readyAt  time.Duration
	port     int

	mu        sync.Mutex
	queue     []*job
	nrunning  int
	busy      bool
	idleAt    time.Duration // schedule instant the instance last went idle
	stopped   bool
	stepStart time.Duration
	stepEnd   time.Duration
	cut       time.Duration // schedule instant the scheduler last took its queue
	lastIn    time.Duration // the latest arrival so far: arrivals never go back
	wake      chan struct{}
	stop      chan struct{}
	done      chan struct{}

	// Owned by the scheduler goroutine.
	cache      prefixCache // exo's API
	kv         *blockCache // the vLLM API; set before the scheduler starts
	peakTokens int         // high-water mark of KV tokens held at once

	met *engineMetrics // the instance's series (metrics.go); nil when metrics are off
}

// peakBytes is what exo reports as peak_memory_usage for rank 0: its share
// of the weights and of the largest KV cache held so far, scaled by
// 1.073741824 as exo's Memory.from_gb(bytes / 1e9) does.
func (in *instance) peakBytes() int64 {
	m := in.model
	b := (m.WeightBytes() + m.KVBytesPerToken()*float64(in.peakTokens)) / float64(len(in.nodes))
	return int64(b * 1.073741824)
}

// load is the number of requests queued or running, for routing.
func (in *instance) load() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.queue) + in.nrunning
}

// submit queues j. It reports false when the instance has stopped.
func (in *instance) submit(j *job) bool {
	in.mu.Lock()
	if in.stopped {
		in.mu.Unlock()
		return false
	}
	now := in.s.elapsed()
	if j.remote == 0 {
		if in.busy {
			// The request arrived during the step in progress, after
			// the scheduler took its queue: a boundary it missed is
			// behind it.
			j.arrival = max(min(max(now, in.stepStart), in.stepEnd), in.cut+1)
		} else {
			j.arrival = now
		}
		// Queued after the requests already there, it arrives no
		// earlier than they did (a scheduler that woke late to an
		// early arrival is behind the clock of those queued meanwhile).
		j.arrival = max(j.arrival, in.lastIn)
		in.lastIn = j.arrival
		j.arrived.Store(int64(j.arrival))
		j.instID.Store(in.id)
		j.met = in.met
		j.met.arrive(j)
	}
	if j.remote == 1 {
		j.remoteIdleAt = -1
		if !in.busy {
			j.remoteIdleAt = in.idleAt
		}
	}
	in.queue = append(in.queue, j)
	in.mu.Unlock()
	in.poke()
	return true
}

func (in *instance) poke() {
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

// sleepUntil waits until the schedule instant t is reached in real time.
// It reports false when the instance is stopping.
func (in *instance) sleepUntil(t time.Duration) bool {
	if v := in.s.virt; v != nil {
		v.advance(t)
		return true
	}
	d := t - in.s.elapsed()
	if d <= 0 {
		select {
		case <-in.stop:
			return false
		default:
			return true
		}
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-in.stop:
		return false
	}
}

// await waits, with nothing to run, until a request is submitted. It
// reports false when the instance is stopping (a prediction: when no
// request is left to arrive).
func (in *instance) await() bool {
	if v := in.s.virt; v != nil {
		return v.next()
	}
	select {
	case <-in.wake:
		return true
	case <-in.stop:
		return false
	}
}

func (in *instance) setStep(start, end time.Duration) {
	in.mu.Lock()
	in.stepStart, in.stepEnd = start, end
	in.mu.Unlock()
}

// record charges the step [start, end) to the instance's nodes.
func (in *instance) record(start, end time.Duration, mem, comp float64) {
	uc, um := in.cost.utilisation(mem, comp, end-start)
	trim := false
	for _, n := range in.nodes {
		trim = in.s.power.add(n, start, end, uc, um) || trim
	}
	if trim {
		in.s.trimPower()
	}
}

// run is the scheduler: it admits queued requests at step boundaries up to
// the running cap, prefills each newly admitted request in chunks (the
// running batch stalls meanwhile, as in exo's batch generator), then runs
// one decode step for the whole batch, sleeping each computed duration.
func (in *instance) run() {
	defer close(in.done)
	var running []*job
	var now time.Duration
	defer func() {
		in.mu.Lock()
		in.stopped = true
		queued := in.queue
		in.queue = nil
		in.mu.Unlock()
		for _, j := range append(running, queued...) {
			j.state.Store(jobDone)
			j.met.leave(j)
			j.push(event{kind: evError, err: errInstanceGone})
		}
		in.met.stop()
	}()
	if !in.sleepUntil(in.readyAt) {
		return
	}
	now = in.readyAt
	maxRunning := in.s.opts.maxRunning()
	for {
		in.mu.Lock()
		running = dropCancelled(running)
		in.queue = dropCancelled(in.queue)
		in.nrunning = len(running)
		if len(running) == 0 && len(in.queue) == 0 {
			in.busy = false
			in.idleAt = now
			in.mu.Unlock()
			if !in.await() {
				return
			}
			continue
		}
		if !in.busy {
			in.busy = true
			now = max(now, in.wokenAt())
		}
		in.cut = now
		// Admit what fits and is due: what arrived by now (requests
		// that reached an idle instance after the first one arrive at
		// its next boundary, as if it had woken at once).
		var admit []*job
		var rest []*job
		earliest := time.Duration(-1)
		for _, j := range in.queue {
			switch {
			case j.remote == 1 || len(running)+len(admit) < maxRunning && j.notBefore <= now && j.arrival <= now:
				admit = append(admit, j)
			default:
				if due := max(j.notBefore, j.arrival); due > now && (earliest < 0 || due < earliest) {
					earliest = due
				}
				rest = append(rest, j)
			}
		}
		in.queue = rest
		in.mu.Unlock()

		if len(running) == 0 && len(admit) == 0 {
			// Only requests whose remote prefill is still in transfer.
			if earliest > now {
				if !in.sleepUntil(earliest) {
					running = nil
					return
				}
				now = earliest
			} else if !in.await() {
				return
			}
			continue
		}
		for _, j := range admit {
			var run, ok bool
			now, run, ok = in.admit(j, now)
			if !ok {
				running = append(running, j)
				return
			}
			if run {
				running = append(running, j)
			}
		}
		in.mu.Lock()
		in.nrunning = len(running)
		in.mu.Unlock()
		if len(running) == 0 {
			continue
		}
		// One decode step for the running batch.
		ctx := make([]int, len(running))
		total := 0
		for i, j := range running {
			ctx[i] = j.ctx
			total += j.ctx
		}
		in.peakTokens = max(in.peakTokens, total+len(running))
		mem, comp := in.cost.roofDecode(ctx)
		dt := in.cost.decodeStep(ctx)
		in.setStep(now, now+dt)
		in.record(now, now+dt, mem, comp)
		if !in.sleepUntil(now + dt) {
			return
		}
		now += dt
		keep := running[:0]
		for _, j := range running {
			j.maxBatch = max(j.maxBatch, len(running))
			in.s.observeToken(j, now)
			if j.generated == 0 {
				j.first = now
				// The step computed the prompt's last token.
				in.s.cache.prefilled.Add(1)
			}
			j.last = now
			j.generated++
			j.ctx++
			word := j.think.word(in.s.vocab, j.seed, j.generated-1)
			if j.blocks {
				// The step computed the KV of the token before the new
				// one; the new one's comes with the next step.
				j.seq.ids = append(j.seq.ids, tokenID(word))
				in.kv.grow(&j.seq, j.seq.prompt-1+j.generated)
			}
			j.push(event{kind: evToken, text: word, cumulative: j.generated})
			if j.generated >= j.target {
				j.state.Store(jobDone)
				j.seq.drop()
				f := j.final()
				f.peakBytes = in.peakBytes()
				in.s.observeDone(j, f)
				j.push(event{kind: evDone, stats: f})
				continue
			}
			keep = append(keep, j)
		}
		clear(running[len(keep):])
		running = keep
	}
}

// wokenAt is the schedule instant an idle instance starts work: the
// earliest arrival in its queue, not the instant its goroutine happened to
// wake, so that the schedule is a function of the arrivals alone (a
// request handed over by another instance counts from now). in.mu is held.
func (in *instance) wokenAt() time.Duration {
	now := in.s.elapsed()
	t := now
	for _, j := range in.queue {
		if j.remote == 0 {
			t = min(t, j.arrival)
		} else {
			t = now
			break
		}
	}
	return t
}

// dropCancelled removes the cancelled jobs of js, freeing the blocks they
// hold (a job queued here, or at a remote prefill, holds none).
func dropCancelled(js []*job) []*job {
	keep := js[:0]
	for _, j := range js {
		if j.cancelled.Load() {
			j.state.Store(jobDone)
			j.met.leave(j)
			j.seq.drop()
			continue
		}
		keep = append(keep, j)
	}
	clear(js[len(keep):])
	return keep
}

// admit brings j into the batch at now: a prefix cache lookup, then the
// prefill of its uncached tokens, locally or on a linked prefill instance.
// It returns the schedule instant after the prefill, whether j joins this
// instance's running batch (false when it went to or came from a remote
// prefill elsewhere: j then belongs to another scheduler and must not be
// touched), and false if the instance stopped meanwhile.
func (in *instance) admit(j *job, now time.Duration) (next time.Duration, run, ok bool) {
	switch j.remote {
	case 1: // at the prefill instance: prefill, then transfer the KV home
		start := max(now, j.remoteStart)
		if j.remoteIdleAt >= 0 {
			// The prefill instance was idle at the hand-over: its prefill
			// starts at the hand-over instant of the schedule, not when
			// its goroutine happened to wake, so the rate stays exact on
			// a loaded machine.
			start = max(j.remoteStart, j.remoteIdleAt)
		}
		u := j.prompt - j.cached
		end, ok := in.prefillChunks(j, start, max(u-1, 0), j.cached)
		j.prefillStart = j.remoteStart
		if !ok {
			return end, false, false
		}
		xfer := seconds(in.model.KVBytesPerToken() * float64(u) / in.s.linkBandwidth())
		j.notBefore = end + xfer
		j.prefillEnd = j.notBefore
		j.remote = 2
		if !j.home.submit(j) {
			j.state.Store(jobDone)
			j.met.leave(j)
			j.push(event{kind: evError, err: errInstanceGone})
		}
		return end, false, true
	case 2: // back home with the KV injected
		p := max(j.prompt-j.cached-1, 0)
		if span := (j.prefillEnd - j.remoteStart).Seconds(); span > 0 {
			j.promptTPS = float64(p) / span
		}
		j.ctx = j.prompt - 1
		if j.useCache {
			in.cache.save(j.ids, j.cacheIdx, j.cachedIDs(), j.system, j.promptTPS)
		}
		if j.blocks {
			// The KV has arrived: its blocks are hits from now on.
			in.kv.grow(&j.seq, j.seq.prompt-1)
		}
		return now, true, true
	}
	j.admitted = now
	j.state.Store(jobRunning)
	j.cacheIdx = -1
	j.hit = HitNone
	common := 0
	switch {
	case j.blocks:
		if hit := in.kv.lookup(&j.seq); hit > 0 {
			// In the server's count: the same unless a caller's Counter
			// counts otherwise than the token identities, when the hit is
			// scaled and rounded down to whole blocks.
			j.cached = hit
			if len(j.ids) != j.prompt {
				j.cached = hit * j.prompt / len(j.ids)
				j.cached = min(j.cached-j.cached%in.kv.size, max(j.prompt-1, 0))
			}
			if j.cached > 0 {
				j.hit = HitPartial
			}
		}
	case j.useCache:
		j.cacheIdx, common, j.hit = in.cache.lookup(j.ids)
		if j.hit == HitExact {
			j.cached = j.prompt - 1
			j.promptTPS = in.cache.entries[j.cacheIdx].rate
		} else if common > 0 {
			// Scale the built-in prefix to the server's count (equal
			// when the server counts with the built-in tokenizer).
			j.cached = common * j.prompt / len(j.ids)
		}
	}
	in.s.cache.prompt.Add(int64(j.prompt))
	in.s.cache.cached.Add(int64(j.cached))
	j.met.admit(j, now, j.blocks && in.kv.reuse || j.useCache)
	u := j.prompt - j.cached
	if u > remotePrefillMinTokens {
		if p := in.s.prefillInstanceFor(in); p != nil {
			j.remoteStart = now
			j.remote = 1
			j.home = in
			j.prefillStart = now
			// Once submitted the job is the prefill instance's: it must
			// hold nothing of this instance's cache.
			j.seq.drop()
			if p.submit(j) {
				return now, false, true
			}
			j.remote = 0
			if j.blocks {
				in.kv.lookup(&j.seq)
			}
		}
	}
	if j.hit == HitExact {
		j.prefillStart, j.prefillEnd = now, now
		j.ctx = j.prompt - 1
		return now, true, true
	}
	end, ok := in.prefillChunks(j, now, max(u-1, 0), j.cached)
	if !ok {
		return end, true, false
	}
	if span := (end - now).Seconds(); span > 0 {
		j.promptTPS = float64(max(u-1, 0)) / span
	}
	j.ctx = j.prompt - 1
	if j.useCache {
		in.cache.save(j.ids, j.cacheIdx, common, j.system, j.promptTPS)
	}
	if j.blocks && !j.cancelled.Load() {
		// Computed blocks become hits for whoever is admitted next.
		in.kv.grow(&j.seq, j.seq.prompt-1)
	}
	return end, true, true
}

// cachedIDs is the cached length in built-in token ids.
func (j *job) cachedIDs() int {
	if j.prompt == 0 {
		return 0
	}
	return j.cached * len(j.ids) / j.prompt
}

// prefillChunks prefills n tokens after offset cached ones, chunk by chunk
// from start, emitting prefill progress. It returns the end instant.
func (in *instance) prefillChunks(j *job, start time.Duration, n, offset int) (time.Duration, bool) {
	j.prefillStart = start
	now := start
	chunk := in.s.opts.prefillChunk()
	for done := 0; done < n; {
		if j.cancelled.Load() {
			break
		}
		k := min(chunk, n-done)
		mem, comp := in.cost.roofPrefill(k, offset+done)
		dt := in.cost.prefillChunk(k, offset+done)
		in.setStep(now, now+dt)
		in.record(now, now+dt, mem, comp)
		if !in.sleepUntil(now + dt) {
			return now, false
		}
		now += dt
		done += k
		in.s.cache.prefilled.Add(int64(k))
		j.push(event{kind: evProgress, processed: done, total: n})
	}
	j.prefillEnd = now
	return now, true
}

// final snapshots the finished job's statistics.
func (j *job) final() *finalStats {
	f := &finalStats{
		promptTokens: j.prompt, generated: j.generated, cached: j.cached,
		promptTPS: j.promptTPS, hit: j.hit, reason: j.reason,
		arrival: j.arrival, admitted: j.admitted,
		prefillStart: j.prefillStart, prefillEnd: j.prefillEnd,
		first: j.first, last: j.last, maxBatch: j.maxBatch,
		remote: j.remote == 2,
	}
	if j.hit == "" {
		f.hit = HitNone
	}
	if span := (j.last - j.first).Seconds(); j.generated > 1 && span > 0 {
		f.generationTPS = float64(j.generated-1) / span
	}
	return f
}
