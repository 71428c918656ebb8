package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inferbench/inferbench/promptsize"
)

// Defaults for the zero Options.
const (
	// DefaultNodes is the number of simulated nodes.
	DefaultNodes = 2
	// DefaultMaxRunning is exo's EXO_MAX_CONCURRENT_REQUESTS: the number
	// of requests decoded together; more wait in the queue.
	DefaultMaxRunning = 8
	// DefaultLoadDelay is how long a new instance stays loading.
	DefaultLoadDelay = 250 * time.Millisecond
	// DefaultNaturalLength bounds where a request with EOS allowed
	// stops by itself; see the package documentation.
	DefaultNaturalLength = 512
	// DefaultKeepAlive is how long an exo stream stays silent before the
	// server sends ": keep-alive", as exo's with_sse_keepalive does.
	DefaultKeepAlive = 10 * time.Second
	// DefaultMaxTokens is exo's MAX_TOKENS, used when a request leaves
	// max_tokens null.
	DefaultMaxTokens = 32168
	// SimHeader is the response header that labels every response as
	// simulated; its value names the preset.
	SimHeader = "X-Inferbench-Sim"
	// FaultHeader is the request header that injects a fault into one
	// request; see ParseFault.
	FaultHeader = "X-Sim-Fault"
)

// Options configures a Server. The zero value serves the default preset
// (M3UltraGemma27B) on DefaultNodes nodes with one ready instance.
type Options struct {
	// Preset is the simulated hardware and model; the zero Preset means
	// M3UltraGemma27B.
	Preset Preset
	// Nodes is the number of simulated nodes (0 means DefaultNodes).
	Nodes int
	// MaxRunning caps the running batch (0 means the preset's
	// Fitted.MaxRunning where it has one, else DefaultMaxRunning).
	MaxRunning int
	// PrefillChunk is the prefill chunk size in tokens (0 means
	// DefaultPrefillChunk).
	PrefillChunk int
	// StreamChunk is the number of tokens per streamed data chunk (0 or
	// 1: one token per chunk, as exo and vLLM send them).
	StreamChunk int
	// Counter counts prompt tokens; nil means the built-in Counter. Hand
	// in a real tokenizer's Counter so prompt_tokens match what a real
	// engine reports.
	Counter promptsize.Counter
	// NoInstance starts the server with no instance, so that a client
	// must place one (GET /instance/previews, POST /instance) first. By
	// default one ready instance of the preset's model runs on the first
	// node.
	NoInstance bool
	// LoadDelay is how long a POSTed instance loads before it is ready
	// (0 means DefaultLoadDelay; negative means ready at once).
	LoadDelay time.Duration
	// NoDisaggregation turns off the instance-link endpoints, as exo
	// without ENABLE_DISAGGREGATION=true.
	NoDisaggregation bool
	// KVTransferBandwidth is the bandwidth of a remote prefill's KV
	// transfer in bytes/s (0 means the preset's Hardware.LinkBandwidth).
	KVTransferBandwidth float64
	// NaturalLength is the range of lengths at which a request with EOS
	// allowed ends (0 means DefaultNaturalLength).
	NaturalLength int
	// KeepAlive is the silence after which an exo stream gets a
	// ": keep-alive" comment (0 means DefaultKeepAlive).
	KeepAlive time.Duration
	// Fault is injected into chat requests that carry no FaultHeader.
	Fault Fault
	// FaultEvery applies Fault to every n-th chat request only (0 or 1:
	// every request).
	FaultEvery int
	// PrefixCache selects whether prompts reuse cached KV:
	// PrefixCacheRadix (the zero value) or PrefixCacheNaive. See the
	// package documentation's Prefix cache section.
	PrefixCache PrefixCacheMode
	// BlockSize is the number of tokens in a KV cache block of the vLLM
	// API's prefix cache (0 means DefaultBlockSize, vLLM's 16): hits are
	// whole blocks.
	BlockSize int
	// KVCacheBlocks bounds each instance's KV cache on the vLLM API, in
	// blocks; cached blocks no running request holds are evicted, least
	// recently used first, beyond it. 0 means the preset's
	// KVCacheBlocks(BlockSize, nodes of the instance).
	KVCacheBlocks int
	// NoPromptTokensDetails leaves usage.prompt_tokens_details out of the
	// vLLM API's answers, as vLLM does without
	// --enable-prompt-tokens-details (its default). By default the sim
	// reports cached_tokens as vLLM does with it.
	NoPromptTokensDetails bool
	// Metrics selects the Prometheus families of GET /metrics (and
	// /vllm/metrics): MetricsVLLM (the zero value), MetricsSGLang, or
	// MetricsOff (404). With the LlamaCpp profile: MetricsLlamaCpp (its
	// zero value there) or MetricsOff (501, as llama-server without
	// --metrics). See the package documentation's Metrics section.
	Metrics MetricsMode
	// Profile selects the server the Server behaves as: ProfileSim (the
	// zero value: exo's API, vLLM's under /vllm, Ollama's under /ollama)
	// or LlamaCpp (llama.cpp's llama-server at the root). See the package
	// documentation's llama.cpp section.
	Profile Profile
	// LlamaCpp configures the LlamaCpp profile: its slots, their context,
	// the batch, the slot choice, the served name and the vocabulary's
	// BOS.
	LlamaCpp LlamaCppOptions
	// RequestOverhead is how long after a generation request reaches the
	// server it reaches the scheduler: a measured server's path outside
	// its engine (Ollama renders the template, tokenizes the prompt and
	// hands it to its runner over HTTP). The handler's own reading and
	// parsing of the request count toward it, so that a twin served live
	// does not pay its fitted path and the embedded engine's on top of
	// each other; only the client's and the loopback's own time (a
	// fraction of a millisecond) still adds. Every request of every
	// profile waits it, in parallel unless RequestOverheadSlots says
	// otherwise, so it adds to TTFT and E2E and holds no slot of the
	// scheduler. A prediction (Predict) waits all of it. 0 (the default)
	// adds nothing.
	RequestOverhead time.Duration
	// RequestOverheadSlots is how many requests' RequestOverhead run at
	// once; the others wait their turn, first come first served. 0 (the
	// default) means all of them: the path outside the engine has cores
	// of its own. A server whose path shares the host's cores with its
	// engine (Ollama on a small CPU host: the HTTP handler, the chat
	// template and the tokenizer beside one compute thread) passes its
	// requests through it one or two at a time, so that under a burst
	// the k-th request's TTFT holds about ⌈k / slots⌉ overheads.
	RequestOverheadSlots int
	// Reasoning turns on the reasoning mode, in which the served model
	// thinks before it answers, and shapes it; the zero value is off. See
	// the package documentation's Reasoning section.
	Reasoning ReasoningOptions
	// Logger receives the server's log; nil means none.
	Logger *slog.Logger
}

func (o Options) maxRunning() int {
	if f := o.Preset.Fitted; o.MaxRunning <= 0 && f != nil && f.MaxRunning > 0 {
		return f.MaxRunning
	}
	return orDefault(o.MaxRunning, DefaultMaxRunning)
}
func (o Options) prefillChunk() int { return orDefault(o.PrefillChunk, DefaultPrefillChunk) }
func (o Options) streamChunk() int  { return orDefault(o.StreamChunk, 1) }
func (o Options) nodes() int        { return orDefault(o.Nodes, DefaultNodes) }
func (o Options) natural() int      { return orDefault(o.NaturalLength, DefaultNaturalLength) }
func (o Options) blockSize() int    { return orDefault(o.BlockSize, DefaultBlockSize) }

// check reports options no server can run with.
func (o Options) check() error {
	if _, err := ParsePrefixCacheMode(string(o.PrefixCache)); err != nil {
		return err
	}
	m, err := ParseMetricsMode(string(o.Metrics))
	if err != nil {
		return err
	}
	p, err := ParseProfile(string(o.Profile))
	if err != nil {
		return err
	}
	switch {
	case p == LlamaCpp && m != MetricsOff && m != MetricsLlamaCpp && o.Metrics != "":
		return fmt.Errorf("sim: the llamacpp profile serves llama.cpp's metrics: Metrics %q, expected llamacpp, off or empty", o.Metrics)
	case p != LlamaCpp && m == MetricsLlamaCpp:
		return fmt.Errorf("sim: Metrics %q needs the llamacpp profile (its slots keep the figures)", o.Metrics)
	case p == LlamaCpp && o.NoInstance:
		return errors.New("sim: the llamacpp profile serves one loaded model: NoInstance is not for it")
	}
	if err := o.LlamaCpp.check(); err != nil {
		return err
	}
	if err := o.Reasoning.check(); err != nil {
		return err
	}
	if o.RequestOverhead < 0 || o.RequestOverheadSlots < 0 {
		return fmt.Errorf("sim: RequestOverhead=%v and RequestOverheadSlots=%d: expected both ≥ 0", o.RequestOverhead, o.RequestOverheadSlots)
	}
	if o.BlockSize < 0 || o.KVCacheBlocks < 0 {
		return fmt.Errorf("sim: BlockSize=%d and KVCacheBlocks=%d: expected both ≥ 0", o.BlockSize, o.KVCacheBlocks)
	}
	return nil
}

func (o Options) keepAlive() time.Duration {
	if o.KeepAlive <= 0 {
		return DefaultKeepAlive
	}
	return o.KeepAlive
}

func (o Options) loadDelay() time.Duration {
	switch {
	case o.LoadDelay < 0:
		return 0
	case o.LoadDelay == 0:
		return DefaultLoadDelay
	}
	return o.LoadDelay
}

func orDefault(v, d int) int {
	if v <= 0 {
		return d
	}
	return v
}

// A Server is a running simulated inference server on a loopback port.
type Server struct {
	// URL is the exo API's base URL, "http://127.0.0.1:port".
	URL string
	// VLLMURL is the base URL of the vLLM-flavoured OpenAI API,
	// URL + "/vllm" (append "/v1/chat/completions", "/v1/models",
	// "/tokenize").
	VLLMURL string

	opts    Options
	preset  Preset
	counter promptsize.Counter
	// overheadSlots holds a token for each request in its
	// RequestOverhead, when RequestOverheadSlots bounds them.
	overheadSlots chan struct{}
	vocab         []string
	epoch         time.Time
	power         *powerLog
	log           *slog.Logger
	ln            net.Listener
	srv           *http.Server
	lc            *llamaCpp // the LlamaCpp profile's state; nil otherwise

	seq      atomic.Uint64 // ids
	chats    atomic.Int64  // chat requests seen, for FaultEvery
	cache    cacheCounters
	metrics  *serverMetrics         // nil when metrics are off
	trace    atomic.Pointer[tracer] // tests and predictions: the schedule's truth
	virt     *virtualClock          // a prediction's clock (predict.go); nil for a live server
	handlers sync.WaitGroup
	closed   chan struct{}
	once     sync.Once

	mu        sync.Mutex
	nodes     []simNode
	instances []*instance
	links     []instanceLink
	jobs      map[string]*job
	cards     []Model // custom cards from POST /models/add
	events    int
	downloads []map[string]*download // per node, by model id (downloads.go)
}

type simNode struct {
	id, name, ip string
}

type instanceLink struct {
	ID      string   `json:"linkId"`
	Prefill []string `json:"prefillInstances"`
	Decode  []string `json:"decodeInstances"`
}

// NewServer starts a Server on a free loopback port, as httptest.NewServer
// does, and panics if it cannot listen or opts are invalid (an unknown
// PrefixCache mode, a negative BlockSize or KVCacheBlocks). Close it when
// done.
func NewServer(opts Options) *Server {
	if err := opts.check(); err != nil {
		panic(err.Error())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("sim: failed to listen on a loopback port: %v", err))
	}
	return serve(ln, opts)
}

// Start starts a Server listening on addr ("127.0.0.1:52415", or ":0" for
// any free port). The server stops when ctx is done or Close is called.
func Start(ctx context.Context, addr string, opts Options) (*Server, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sim: listening on %q: %w", addr, err)
	}
	s := serve(ln, opts)
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.closed:
		}
	}()
	return s, nil
}

func serve(ln net.Listener, opts Options) *Server {
	s := newState(opts)
	s.ln = ln
	host := ln.Addr().String()
	s.URL = "http://" + host
	s.VLLMURL = s.URL + "/vllm"
	if s.opts.Profile == LlamaCpp {
		s.lc = newLlamaCpp(s, s.opts.LlamaCpp)
	}
	if !s.opts.NoInstance {
		spec := s.newSpec(s.preset.Model, []int{0}, "Pipeline", "MlxRing")
		s.mu.Lock()
		s.startInstance(spec, 0)
		s.mu.Unlock()
	}
	s.srv = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	if s.lc != nil {
		s.srv.Handler = s.lcRoutes()
		s.srv.IdleTimeout = lcKeepAlive
		s.srv.ConnContext = lcConnContext
	}
	go s.srv.Serve(ln)
	s.log.Info("sim: serving (all figures simulated)", "url", s.URL, "preset", s.preset.Name, "nodes", len(s.nodes))
	return s
}

// newState is a server's state with no listener and no instance: its
// options resolved, its nodes, power log and metrics.
func newState(opts Options) *Server {
	p := opts.Preset
	if p.Name == "" {
		p = M3UltraGemma27B()
	}
	opts.PrefixCache, _ = ParsePrefixCacheMode(string(opts.PrefixCache))
	opts.Metrics, _ = ParseMetricsMode(string(opts.Metrics))
	opts.Profile, _ = ParseProfile(string(opts.Profile))
	opts.Reasoning.API, _ = ParseReasoningAPI(string(opts.Reasoning.API))
	if opts.Profile == LlamaCpp && opts.Metrics != MetricsOff {
		opts.Metrics = MetricsLlamaCpp
	}
	s := &Server{
		opts:    opts,
		preset:  p,
		counter: opts.Counter,
		vocab:   strings.Fields(vocabulary),
		epoch:   time.Now(),
		log:     opts.Logger,
		closed:  make(chan struct{}),
		jobs:    map[string]*job{},
		metrics: newServerMetrics(opts.Metrics),
	}
	if opts.RequestOverhead > 0 && opts.RequestOverheadSlots > 0 {
		s.overheadSlots = make(chan struct{}, opts.RequestOverheadSlots)
	}
	if s.counter == nil {
		s.counter = Counter{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	n := opts.nodes()
	s.power = newPowerLog(p.Hardware, n)
	for i := range n {
		s.nodes = append(s.nodes, simNode{
			id:   fmt.Sprintf("12D3KooWSimNode%02d", i+1),
			name: fmt.Sprintf("sim-node-%d (simulated %s)", i+1, p.Hardware.Chip),
			ip:   fmt.Sprintf("10.0.0.%d", i+1),
		})
	}
	return s
}

// Close stops the server: it closes the listener and every connection,
// ends the running requests and waits for every goroutine it started. It
// is safe to call more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.closed)
		s.srv.Close()
		s.mu.Lock()
		ins := slices.Clone(s.instances)
		s.mu.Unlock()
		for _, in := range ins {
			in.halt()
		}
		s.handlers.Wait()
	})
}

// Preset returns the preset the server simulates.
func (s *Server) Preset() Preset { return s.preset }

// Model returns the id of the preset's model, the model of the default
// instance.
func (s *Server) Model() string { return s.preset.Model.ID }

// Counter returns the promptsize.Counter the server counts prompt tokens
// with, so a client builds exact prompts without HTTP. With the LlamaCpp
// profile and the built-in tokenizer it counts the BOS the server adds.
func (s *Server) Counter() promptsize.Counter {
	if _, builtin := s.counter.(Counter); builtin && s.lc != nil {
		return llamaCppCounter{}
	}
	return s.counter
}

// elapsed is the schedule's present: the time since the server started,
// or a prediction's virtual instant.
func (s *Server) elapsed() time.Duration {
	if s.virt != nil {
		return s.virt.now
	}
	return time.Since(s.epoch)
}

// cacheCounters are the server's running totals of prompt work, updated by
// the schedulers.
type cacheCounters struct {
	prompt, cached, prefilled, evicted atomic.Int64
}

// CacheStats are the sim's own account of prompt work since the server
// started, over every instance and both APIs: what it prefilled, not what
// it reported. A test checks a client's sums of usage against them.
type CacheStats struct {
	// PromptTokens is the sum of the prompt_tokens of the requests
	// admitted to a batch.
	PromptTokens int64
	// CachedTokens is the sum of the tokens of those prompts served from a
	// prefix cache: what each reports as cached_tokens.
	CachedTokens int64
	// PrefilledTokens is the number of prompt tokens the cost model
	// computed: every prefill chunk's tokens, and each request's last
	// prompt token, which its first decode step computes. For requests
	// that ran to their first token it is PromptTokens − CachedTokens.
	PrefilledTokens int64
	// EvictedBlocks counts the vLLM API's cached blocks evicted for want
	// of KV memory.
	EvictedBlocks int64
	// Blocks is the number of KV blocks the vLLM API's caches hold now,
	// in use or cached; BudgetBlocks the sum of their budgets.
	Blocks, BudgetBlocks int64
}

// CacheStats returns the server's prompt-work totals so far.
func (s *Server) CacheStats() CacheStats {
	st := CacheStats{
		PromptTokens:    s.cache.prompt.Load(),
		CachedTokens:    s.cache.cached.Load(),
		PrefilledTokens: s.cache.prefilled.Load(),
		EvictedBlocks:   s.cache.evicted.Load(),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, in := range s.instances {
		st.Blocks += in.kv.gauge.Load()
		st.BudgetBlocks += int64(in.kv.budget)
	}
	return st
}

// powerHistory is how much power history is kept beyond what running
// requests need (/state/nodeSystem reads the last second).
const powerHistory = 10 * time.Second

// trimPower drops power segments that no running request's power_usage
// and no /state reading can need any more.
func (s *Server) trimPower() {
	keep := s.elapsed() - powerHistory
	s.mu.Lock()
	for _, j := range s.jobs {
		keep = min(keep, time.Duration(j.arrived.Load()))
	}
	s.mu.Unlock()
	s.power.trim(keep)
}

func (s *Server) linkBandwidth() float64 {
	if s.opts.KVTransferBandwidth > 0 {
		return s.opts.KVTransferBandwidth
	}
	return s.preset.Hardware.LinkBandwidth
}

// newID mints a UUID-shaped id, deterministic per server.
func (s *Server) newID() string {
	n := s.seq.Add(1)
	return fmt.Sprintf("51a1%04x-0000-4000-8000-%012x", n>>48&0xffff, n)
}

// spec is an instance's placement before it runs.
type spec struct {
	id       string
	model    Model
	nodes    []int
	runners  []string
	sharding string
	meta     string
	port     int
}

func (s *Server) newSpec(m Model, nodes []int, sharding, meta string) spec {
	sp := spec{id: s.newID(), model: m, nodes: nodes, sharding: sharding, meta: meta}
	for range nodes {
		sp.runners = append(sp.runners, s.newID())
	}
	sp.port = 50000 + int(s.seq.Load()%10000)
	return sp
}

func (s *Server) hop(meta string) time.Duration {
	if meta == "MlxJaccl" {
		return s.preset.Hardware.RDMALatency
	}
	return s.preset.Hardware.RingLatency
}

// instancePreset is the preset an instance of m runs on: the server's
// hardware, and its fitted coefficients when m is the model they were
// fitted on.
func (s *Server) instancePreset(m Model) Preset {
	p := Preset{Name: s.preset.Name, Hardware: s.preset.Hardware, Model: m}
	if m.ID == s.preset.Model.ID {
		p.Fitted = s.preset.Fitted
	}
	return p
}

// startInstance starts a scheduler for sp, ready after delay. s.mu is held.
func (s *Server) startInstance(sp spec, delay time.Duration) *instance {
	in := &instance{
		s: s, id: sp.id, model: sp.model, nodes: sp.nodes,
		cost:     cost{p: s.instancePreset(sp.model), nodes: len(sp.nodes), tensor: sp.sharding == "Tensor" && len(sp.nodes) > 1, hop: s.hop(sp.meta)},
		sharding: sp.sharding, meta: sp.meta, runners: sp.runners, port: sp.port,
		readyAt: s.elapsed() + delay,
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	if delay == 0 {
		in.readyAt = 0
	}
	budget := s.opts.KVCacheBlocks
	if budget <= 0 {
		budget = in.cost.p.KVCacheBlocks(s.opts.blockSize(), len(sp.nodes))
	}
	in.kv = newBlockCache(s.opts.blockSize(), budget, s.opts.PrefixCache.reuse(), &s.cache)
	in.met = s.metrics.engine(sp.model.ID, in.kv)
	s.instances = append(s.instances, in)
	s.events++
	switch {
	case s.virt != nil:
		// A prediction runs the scheduler itself, on its virtual clock.
	case s.lc != nil:
		go in.runSlots()
	default:
		go in.run()
	}
	return in
}

// halt stops the instance's scheduler and waits for it.
func (in *instance) halt() {
	in.mu.Lock()
	select {
	case <-in.stop:
	default:
		close(in.stop)
	}
	in.mu.Unlock()
	<-in.done
}

// deleteInstance removes an instance and prunes it from instance links.
func (s *Server) deleteInstance(id string) bool {
	s.mu.Lock()
	i := slices.IndexFunc(s.instances, func(in *instance) bool { return in.id == id })
	if i < 0 {
		s.mu.Unlock()
		return false
	}
	in := s.instances[i]
	s.instances = slices.Delete(s.instances, i, i+1)
	for k := range s.links {
		l := &s.links[k]
		l.Prefill = slices.DeleteFunc(l.Prefill, func(x string) bool { return x == id })
		l.Decode = slices.DeleteFunc(l.Decode, func(x string) bool { return x == id })
	}
	s.events++
	s.mu.Unlock()
	in.halt()
	return true
}

// model returns the card for id: the preset's model or a custom card.
func (s *Server) model(id string) (Model, bool) {
	if id == s.preset.Model.ID {
		return s.preset.Model, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.cards {
		if m.ID == id {
			return m, true
		}
	}
	return Model{}, false
}

// prefillOnly reports whether instance id is in some link's prefill list
// and in no link's decode list. s.mu is held.
func (s *Server) prefillOnly(id string) bool {
	pre, dec := false, false
	for _, l := range s.links {
		pre = pre || slices.Contains(l.Prefill, id)
		dec = dec || slices.Contains(l.Decode, id)
	}
	return pre && !dec
}

var errPrefillOnly = errors.New("prefill-only")

// route picks the least-busy instance of model that is not prefill-only.
func (s *Server) route(model string) (*instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best *instance
	bestLoad, found := 0, false
	for _, in := range s.instances {
		if in.model.ID != model {
			continue
		}
		found = true
		if s.prefillOnly(in.id) {
			continue
		}
		if l := in.load(); best == nil || l < bestLoad {
			best, bestLoad = in, l
		}
	}
	if best == nil && found {
		return nil, errPrefillOnly
	}
	return best, nil
}

// prefillInstanceFor returns the least-busy ready prefill instance linked
// to decode instance d, or nil.
func (s *Server) prefillInstanceFor(d *instance) *instance {
	if s.opts.NoDisaggregation {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.elapsed()
	var best *instance
	bestLoad := 0
	for _, l := range s.links {
		if !slices.Contains(l.Decode, d.id) {
			continue
		}
		for _, id := range l.Prefill {
			for _, in := range s.instances {
				if in.id != id || in == d || in.readyAt > now {
					continue
				}
				if ld := in.load(); best == nil || ld < bestLoad {
					best, bestLoad = in, ld
				}
			}
		}
	}
	return best
}

// ramUsed is the memory the instances hold on node n. s.mu is held.
func (s *Server) ramUsed(n int) int64 {
	var used int64
	for _, in := range s.instances {
		if i := slices.Index(in.nodes, n); i >= 0 {
			used += memoryShare(int64(in.model.WeightBytes()), len(in.nodes), i)
		}
	}
	return used
}

// memoryShare splits total bytes evenly over k nodes, the remainder going
// to the first ones, as exo's memory_delta_by_node does.
func memoryShare(total int64, k, i int) int64 {
	share := total / int64(k)
	if int64(i) < total%int64(k) {
		share++
	}
	return share
}

// track wraps every handler so Close waits for them.
func (s *Server) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.handlers.Add(1)
		defer s.handlers.Done()
		w.Header().Set(SimHeader, "simulated; preset="+s.preset.Name)
		if s.opts.RequestOverhead > 0 {
			r = r.WithContext(context.WithValue(r.Context(), arrivedKey{}, time.Now()))
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /bench/chat/completions", s.chat(dialectExo, true))
	mux.HandleFunc("POST /v1/chat/completions", s.chat(dialectExo, false))
	mux.HandleFunc("POST /vllm/v1/chat/completions", s.chat(dialectVLLM, false))
	mux.HandleFunc("POST /vllm/v1/completions", s.completions)
	mux.HandleFunc("GET /models", s.handleModels)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /vllm/v1/models", s.handleVLLMModels)
	mux.HandleFunc("POST /models/add", s.handleAddModel)
	mux.HandleFunc("POST /tokenize", s.handleTokenize)
	mux.HandleFunc("POST /vllm/tokenize", s.handleTokenize)
	mux.HandleFunc("GET /vllm/health", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /metrics", s.handleMetrics)
	mux.HandleFunc("GET /vllm/metrics", s.handleMetrics)
	mux.HandleFunc("POST /ollama/api/chat", s.ollamaChat)
	mux.HandleFunc("GET /ollama/api/tags", s.ollamaTags)
	mux.HandleFunc("GET /ollama/api/version", s.ollamaVersion)
	mux.HandleFunc("GET /state", s.handleState)
	mux.HandleFunc("GET /state/{path...}", s.handleState)
	mux.HandleFunc("GET /instance/previews", s.handlePreviews)
	mux.HandleFunc("POST /instance", s.handleCreateInstance)
	mux.HandleFunc("GET /instance/{id}", s.handleGetInstance)
	mux.HandleFunc("DELETE /instance/{id}", s.handleDeleteInstance)
	mux.HandleFunc("GET /v1/feature-flags", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"disaggregation": !s.opts.NoDisaggregation})
	})
	mux.HandleFunc("GET /v1/instance-links", s.handleListLinks)
	mux.HandleFunc("POST /v1/instance-links", s.handlePutLink)
	mux.HandleFunc("PUT /v1/instance-links/{id}", s.handlePutLink)
	mux.HandleFunc("DELETE /v1/instance-links/{id}", s.handleDeleteLink)
	mux.HandleFunc("POST /v1/cancel/{id}", s.handleCancel)
	s.harnessRoutes(mux)
	mux.HandleFunc("GET /node_id", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.nodes[0].id)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		exoError(w, http.StatusNotFound, fmt.Sprintf("no route %s %s in the simulated exo API", r.Method, r.URL.Path))
	})
	return s.track(mux)
}

// arrivedKey keys the instant a request reached the server in its
// context, where Options.RequestOverhead is set.
type arrivedKey struct{}

// admit waits until Options.RequestOverhead has passed since the request
// reached the server (its handler's own reading and parsing count toward
// it) before the request goes on to the scheduler. It reports false when
// the request's context ended first.
//
// With RequestOverheadSlots set, the request first waits for one of them
// and then holds it for the overhead less its handler's own time.
func (s *Server) admit(ctx context.Context) bool {
	d := s.opts.RequestOverhead
	if d <= 0 {
		return true
	}
	if at, ok := ctx.Value(arrivedKey{}).(time.Time); ok {
		d -= time.Since(at)
	}
	if s.overheadSlots != nil {
		select {
		case s.overheadSlots <- struct{}{}:
			defer func() { <-s.overheadSlots }()
		case <-ctx.Done():
			return false
		}
	}
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
