package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/inferbench/inferbench/promptsize"
)

// A Profile selects which server the Server behaves as. The zero value
// is the sim's own: exo's API at the root, the OpenAI API as vLLM serves
// it under /vllm and Ollama's native API under /ollama.
type Profile string

// The profiles.
const (
	// ProfileSim is the sim's own behaviour, the zero value.
	ProfileSim Profile = ""
	// LlamaCpp serves llama.cpp's llama-server at the root, with its
	// slots, its streams, its connection handling and its /metrics; see
	// the package documentation's llama.cpp section and LlamaCppOptions.
	LlamaCpp Profile = "llamacpp"
)

// ParseProfile reads a profile as a flag gives it: "" or "sim" for the
// sim's own, "llamacpp" (or "llama.cpp", "llama-server").
func ParseProfile(s string) (Profile, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "sim", "default":
		return ProfileSim, nil
	case "llamacpp", "llama.cpp", "llama-server":
		return LlamaCpp, nil
	}
	return "", fmt.Errorf("sim: profile %q: expected llamacpp, or empty for the sim's own", s)
}

// LlamaCppOptions configures the LlamaCpp profile, the way llama-server's
// command line does. The zero value is llama-server's defaults.
type LlamaCppOptions struct {
	// Slots is the number of parallel slots, -np (0 means
	// DefaultLlamaCppSlots). A request that finds no free slot waits,
	// deferred, and its wait is in none of its timings.
	Slots int
	// SlotContext is each slot's context in tokens, meta.n_ctx of
	// /v1/models (0 means the model's ContextLength / Slots, as
	// -c n_ctx_train -np Slots splits the KV cache). A prompt of
	// SlotContext tokens or more is refused with HTTP 400.
	SlotContext int
	// Batch is the logical batch, -b: the most tokens one decode takes
	// (0 means DefaultLlamaCppBatch).
	Batch int
	// SlotPromptSimilarity is --slot-prompt-similarity: a free slot whose
	// cached tokens cover more than this fraction of a prompt is chosen
	// for it before the least recently used one (0 means
	// DefaultSlotPromptSimilarity; negative: by LRU alone).
	SlotPromptSimilarity float64
	// Alias is --alias, the served model's name: /v1/models' id and every
	// response's model (empty: the preset model's id).
	Alias string
	// NoAddBOS imitates a GGUF whose vocabulary does not add a BOS
	// (tokenizer.ggml.add_bos_token = false, as Ollama's converter writes
	// it). By default the vocabulary adds one (as llama.cpp's converter
	// writes for Llama 3 models): /apply-template then returns the prompt
	// without the template's BOS, and /tokenize counts it only with
	// add_special.
	NoAddBOS bool
}

// llamaCpp is the LlamaCpp profile's server state.
type llamaCpp struct {
	s          *Server
	slots      int
	nCtx       int
	batch      int
	similarity float64
	alias      string
	addBOS     bool
	met        lcMetrics
	created    int64
	fp         string // system_fingerprint, the build_info
}

func newLlamaCpp(s *Server, o LlamaCppOptions) *llamaCpp {
	lc := &llamaCpp{s: s, slots: orDefault(o.Slots, DefaultLlamaCppSlots), batch: orDefault(o.Batch, DefaultLlamaCppBatch),
		similarity: o.SlotPromptSimilarity, alias: o.Alias, addBOS: !o.NoAddBOS, created: time.Now().Unix(),
		fp: "b0-sim"}
	lc.nCtx = o.SlotContext
	if lc.nCtx <= 0 {
		lc.nCtx = max(s.preset.Model.ContextLength/lc.slots, 1)
	}
	if lc.similarity == 0 {
		lc.similarity = DefaultSlotPromptSimilarity
	}
	if lc.alias == "" {
		lc.alias = s.preset.Model.ID
	}
	return lc
}

func (o LlamaCppOptions) check() error {
	if o.Slots < 0 || o.SlotContext < 0 || o.Batch < 0 {
		return fmt.Errorf("sim: LlamaCpp Slots=%d, SlotContext=%d and Batch=%d: expected all ≥ 0", o.Slots, o.SlotContext, o.Batch)
	}
	if o.SlotPromptSimilarity >= 1 {
		return fmt.Errorf("sim: LlamaCpp SlotPromptSimilarity=%v: expected below 1", o.SlotPromptSimilarity)
	}
	return nil
}

// OpenAIURL returns the base URL of the server's OpenAI-compatible API:
// URL with the LlamaCpp profile (llama-server serves /v1 at its root),
// VLLMURL otherwise.
func (s *Server) OpenAIURL() string {
	if s.opts.Profile == LlamaCpp {
		return s.URL
	}
	return s.VLLMURL
}

// Connection handling of llama-server's HTTP library (cpp-httplib):
// every response offers "Keep-Alive: timeout=5, max=100", an idle
// connection is closed after 5 s, and the 100th request of a connection
// is answered with "Connection: close".
const (
	lcKeepAlive    = 5 * time.Second
	lcKeepAliveMax = 100
)

type lcConnKey struct{}

// lcConnContext counts the requests of each connection.
func lcConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, lcConnKey{}, new(atomic.Int64))
}

// lcRoutes are llama-server's routes (tools/server/server.cpp), every one
// at the root.
func (s *Server) lcRoutes() http.Handler {
	mux := http.NewServeMux()
	for _, p := range []string{"/completion", "/completions"} {
		mux.HandleFunc("POST "+p, s.lcHandler(lcNative))
	}
	mux.HandleFunc("POST /v1/completions", s.lcHandler(lcCompletion))
	for _, p := range []string{"/chat/completions", "/v1/chat/completions"} {
		mux.HandleFunc("POST "+p, s.lcHandler(lcChat))
	}
	mux.HandleFunc("POST /tokenize", s.lcTokenizeHandler)
	mux.HandleFunc("POST /apply-template", s.lcApplyTemplate)
	for _, p := range []string{"/health", "/v1/health"} {
		mux.HandleFunc("GET "+p, func(w http.ResponseWriter, r *http.Request) {
			lcJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		})
	}
	for _, p := range []string{"/models", "/v1/models"} {
		mux.HandleFunc("GET "+p, s.lcModels)
	}
	mux.HandleFunc("GET /metrics", s.handleLlamaCppMetrics)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		lcJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
			"message": "File Not Found", "type": "not_found_error", "code": 404}})
	})
	return s.track(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Server", "llama.cpp")
		h["Date"] = nil // cpp-httplib writes none
		if o := r.Header.Get("Origin"); o != "" {
			h.Set("Access-Control-Allow-Origin", o)
		}
		n := int64(1)
		if c, ok := r.Context().Value(lcConnKey{}).(*atomic.Int64); ok {
			n = c.Add(1)
		}
		if r.Close || n >= lcKeepAliveMax {
			h.Set("Connection", "close")
		} else {
			h.Set("Keep-Alive", fmt.Sprintf("timeout=%d, max=%d", int(lcKeepAlive/time.Second), lcKeepAliveMax))
		}
		mux.ServeHTTP(w, r)
	}))
}

// lcJSON writes v as llama-server's res->ok and res->error do: compact
// JSON, "application/json; charset=utf-8".
func lcJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "sim: encoding response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	w.Write(b)
}

// lcErrorObject is format_error_response's object (server-common.cpp),
// with the context sizes of an exceed_context_size_error.
type lcErrorObject struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Type    string `json:"type"`
	NPrompt *int   `json:"n_prompt_tokens,omitempty"`
	NCtx    *int   `json:"n_ctx,omitempty"`
}

func (e *lcError) object() lcErrorObject {
	o := lcErrorObject{Code: e.code, Message: e.msg, Type: e.typ}
	if e.exceedsContext {
		o.NPrompt, o.NCtx = &e.nPrompt, &e.nCtx
	}
	return o
}

// lcFail answers with llama-server's error envelope; the status is the
// error's code.
func lcFail(w http.ResponseWriter, e *lcError) {
	lcJSON(w, e.code, map[string]lcErrorObject{"error": e.object()})
}

func lcInvalid(msg string) *lcError {
	return &lcError{code: http.StatusBadRequest, typ: "invalid_request_error", msg: msg}
}

func lcServerError(msg string) *lcError {
	return &lcError{code: http.StatusInternalServerError, typ: "server_error", msg: msg}
}

// lcKind is the response type of a completion request
// (task_response_type).
type lcKind int

const (
	lcNative     lcKind = iota // /completion: TASK_RESPONSE_TYPE_NONE
	lcCompletion               // /v1/completions: TASK_RESPONSE_TYPE_OAI_CMPL
	lcChat                     // /v1/chat/completions: TASK_RESPONSE_TYPE_OAI_CHAT
)

// lcBody is a request body as llama-server reads it: json_value takes a
// field of the wrong type as absent (server-common.h).
type lcBody map[string]json.RawMessage

func (b lcBody) has(k string) bool {
	v, ok := b[k]
	return ok && string(bytes.TrimSpace(v)) != "null"
}

func (b lcBody) int(k string) (int, bool) {
	var f float64
	if !b.has(k) || json.Unmarshal(b[k], &f) != nil || f != float64(int64(f)) || f > 1<<31 || f < -(1<<31) {
		return 0, false
	}
	return int(f), true
}

func (b lcBody) bool(k string, def bool) bool {
	var v bool
	if !b.has(k) || json.Unmarshal(b[k], &v) != nil {
		return def
	}
	return v
}

// parseLcBody reads a request body; a body that is not a JSON object is
// the 500 nlohmann's parse error gives.
func parseLcBody(r *http.Request) (lcBody, *lcError) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	if err != nil {
		return nil, lcServerError("reading the request body: " + err.Error())
	}
	var b lcBody
	if err := json.Unmarshal(raw, &b); err != nil || b == nil {
		return nil, lcServerError("[json.exception.parse_error.101] parse error: expected a JSON object")
	}
	return b, nil
}

// lcPrompt is a parsed prompt: its token ids, and its text when it was
// text (for the native answer's prompt field).
type lcPrompt struct {
	ids  []int
	text string
	isText,
	mixed bool
}

// lcVocab is the size of the profile's vocabulary: the built-in ids
// (256 + 2¹⁷); a token id beyond it is invalid.
const lcVocab = 256 + 1<<17

// parsePrompt reads a completion prompt as tokenize_input_prompts does:
// a string; a list of token ids (no BOS added); a list mixing strings and
// ids (a BOS when it starts with a string); or a list of one such prompt
// (the sim serves one prompt a request). Strings are tokenized with
// add_special (the BOS when the vocabulary adds one) and parse_special.
func (lc *llamaCpp) parsePrompt(raw json.RawMessage) (lcPrompt, *lcError) {
	raw = bytes.TrimSpace(raw)
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return lcPrompt{ids: lcTokenize(text, lc.addBOS, true), text: text, isText: true}, nil
	}
	var list []json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &list) != nil {
		return lcPrompt{}, lcInvalid(fmt.Sprintf("\"prompt\" must be a string, a list of tokens, a list of mixed strings and tokens, or a list of prompts; found %.40s", raw))
	}
	strs, nums := 0, 0
	for _, e := range list {
		e = bytes.TrimSpace(e)
		switch {
		case len(e) > 0 && e[0] == '"':
			strs++
		case len(e) > 0 && (e[0] == '-' || e[0] >= '0' && e[0] <= '9'):
			nums++
		}
	}
	if strs+nums == len(list) && (nums > 0 || len(list) == 0) {
		// One prompt of tokens, or of strings and tokens mixed.
		p := lcPrompt{ids: []int{}, mixed: strs > 0}
		for i, e := range list {
			var s string
			if json.Unmarshal(e, &s) == nil {
				p.ids = append(p.ids, lcTokenize(s, lc.addBOS && i == 0, true)...)
				continue
			}
			var id int64
			if err := json.Unmarshal(e, &id); err != nil || id < 0 || id >= lcVocab {
				return lcPrompt{}, lcInvalid("Prompt contains invalid tokens")
			}
			p.ids = append(p.ids, int(id))
		}
		return p, nil
	}
	if len(list) != 1 {
		return lcPrompt{}, lcInvalid(fmt.Sprintf("the simulated llama-server serves one prompt a request; found a list of %d prompts", len(list)))
	}
	return lc.parsePrompt(list[0])
}

// lcRequest is a validated completion request.
type lcRequest struct {
	kind         lcKind
	stream       bool
	includeUsage bool
	ids          []int
	prompt       int // prompt_tokens as the server counts them
	promptText   string
	maxTokens    int // n_predict, −1 unlimited
	ignoreEOS    bool
	seed         *int64
	stop         json.RawMessage
	params       lcParams
	fault        Fault
	think        thinkControl // a chat's thinking controls
}

// lcHandler serves one of llama-server's completion routes.
func (s *Server) lcHandler(kind lcKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		lc := s.lc
		body, e := parseLcBody(r)
		if e != nil {
			lcFail(w, e)
			return
		}
		req := lcRequest{kind: kind, maxTokens: -1, params: lcParams{idSlot: -1, cachePrompt: body.bool("cache_prompt", true)}}
		req.stream = body.bool("stream", false)
		if body.has("stream_options") {
			var so struct {
				IncludeUsage bool `json:"include_usage"`
			}
			if json.Unmarshal(body["stream_options"], &so) == nil {
				req.includeUsage = so.IncludeUsage
			}
		}
		// n_predict, else max_completion_tokens, else max_tokens
		// (params_from_json_cmpl).
		for _, k := range []string{"max_tokens", "max_completion_tokens", "n_predict"} {
			if n, ok := body.int(k); ok {
				req.maxTokens = n
			}
		}
		if id, ok := body.int("id_slot"); ok && id >= 0 {
			req.params.idSlot = id
		}
		req.ignoreEOS = body.bool("ignore_eos", false)
		if body.has("seed") {
			var seed int64
			if json.Unmarshal(body["seed"], &seed) == nil {
				req.seed = &seed
			}
		}
		req.stop = body["stop"]
		req.think = noControl()
		if kind == lcChat {
			msgs, e := lcMessages(body)
			if e != nil {
				lcFail(w, e)
				return
			}
			ctl, err := llamaCppControl(reasoningFields{ChatTemplateKwargs: body["chat_template_kwargs"],
				ThinkingBudgetToks: body["thinking_budget_tokens"]})
			if err != nil {
				lcFail(w, lcInvalid(err.Error()))
				return
			}
			req.think = ctl
			req.ids = lcChatIDs(msgs, lc.addBOS)
			req.promptText = lcRender(msgs, true)
			if thinkingOffVars(ctl.vars) {
				// The template's empty thinking block, as the built-in
				// template writes it (Counter.WithTemplateVars).
				req.ids = append(req.ids, emptyThinkIDs()...)
				req.promptText += thinkOpen + "\n\n" + thinkClose + "\n\n"
			}
			req.prompt = len(req.ids)
			if _, builtin := s.counter.(Counter); !builtin {
				n, err := s.countChat(r.Context(), msgs, ctl.vars)
				if err != nil {
					lcFail(w, lcInvalid("counting prompt tokens: "+err.Error()))
					return
				}
				req.prompt = n
			}
		} else {
			if !body.has("prompt") {
				lcFail(w, lcInvalid("[json.exception.out_of_range.403] key 'prompt' not found"))
				return
			}
			p, e := lc.parsePrompt(body["prompt"])
			if e != nil {
				lcFail(w, e)
				return
			}
			req.ids, req.prompt, req.promptText = p.ids, len(p.ids), p.text
			if _, builtin := s.counter.(Counter); !builtin && (p.isText || p.mixed) {
				n, err := lc.countText(r.Context(), p)
				if err != nil {
					lcFail(w, lcInvalid(err.Error()))
					return
				}
				req.prompt = n
			}
		}
		fault, err := s.faultFor(r)
		if err != nil {
			lcFail(w, lcInvalid(err.Error()))
			return
		}
		req.fault = fault
		if s.lcPreFault(w, r, fault) {
			return
		}
		s.lcGenerate(w, r, req)
	}
}

// countText counts a text prompt with the caller's Counter, which must be
// a promptsize.TokenEnder (its tokens of the text, and the BOS).
func (lc *llamaCpp) countText(ctx context.Context, p lcPrompt) (int, error) {
	te, ok := lc.s.counter.(promptsize.TokenEnder)
	if !ok || p.mixed {
		return 0, errors.New("a text prompt needs the built-in tokenizer or a Counter that is a promptsize.TokenEnder; this server counts chat messages with a caller's Counter (send token ids)")
	}
	ends, err := te.TokenEnds(ctx, p.text, nil)
	if err != nil {
		return 0, fmt.Errorf("counting the prompt's tokens: %w", err)
	}
	n := len(ends)
	if lc.addBOS {
		n++
	}
	return n, nil
}

// lcMessages reads a chat's messages: a list of {role, content} with text
// content (oaicompat_chat_params_parse).
func lcMessages(body lcBody) ([]promptsize.Message, *lcError) {
	if !body.has("messages") {
		return nil, lcInvalid("'messages' is required")
	}
	var ms []chatMessage
	if err := json.Unmarshal(body["messages"], &ms); err != nil {
		return nil, lcInvalid("Expected 'messages' to be an array of {role, content}")
	}
	if len(ms) == 0 {
		return nil, lcInvalid("Expected 'messages' to be a non-empty array")
	}
	msgs := make([]promptsize.Message, len(ms))
	for i, m := range ms {
		t, err := m.text()
		if err != nil {
			return nil, lcInvalid(fmt.Sprintf("messages[%d]: %v", i, err))
		}
		if m.Role == "" {
			return nil, lcInvalid(fmt.Sprintf("messages[%d]: missing role", i))
		}
		msgs[i] = promptsize.Message{Role: m.Role, Content: t}
	}
	return msgs, nil
}

// lcGenerate runs req on the server's one instance and writes its answer.
func (s *Server) lcGenerate(w http.ResponseWriter, r *http.Request, req lcRequest) {
	lc := s.lc
	s.mu.Lock()
	var inst *instance
	if len(s.instances) > 0 {
		inst = s.instances[0]
	}
	s.mu.Unlock()
	if inst == nil {
		lcFail(w, &lcError{code: http.StatusServiceUnavailable, typ: "unavailable_error", msg: "Loading model"})
		return
	}
	seed := uint64(42)
	if req.seed != nil {
		seed = uint64(*req.seed)
	}
	// The generation's end: n_predict, the slot's context (the server
	// stops a slot whose context is full, truncated), the end of sequence
	// unless ignore_eos (counted, never sent) or a stop string.
	var plan thinkPlan
	if req.kind == lcChat {
		plan = s.opts.Reasoning.plan(req.think, req.ids, seed)
	}
	target, reason, eos := lc.nCtx-req.prompt, "length", false
	if req.maxTokens >= 0 {
		target = min(target, req.maxTokens)
	}
	if !req.ignoreEOS {
		if l := plan.span() + naturalLength(req.ids, seed, s.opts.natural()); l <= target {
			target, reason, eos = l, "stop", true
		}
	}
	stops, err := parseStop(req.stop)
	if err != nil {
		lcFail(w, lcInvalid(err.Error()))
		return
	}
	cut := -1
	if k, at := stopAt(plan.wordFunc(s.vocab, seed), max(target, 0), stops); k > 0 && (!eos || k < target) {
		target, reason, cut, eos = k, "stop", at, false
	}
	if target < 1 && req.prompt < lc.nCtx {
		// n_predict 0: llama-server still samples one token.
		target, reason, eos = 1, "length", false
	}
	j := &job{
		id:     s.newID(),
		ids:    req.ids,
		prompt: req.prompt,
		target: max(target, 1),
		reason: reason,
		seed:   seed,
		lc:     &req.params,
		think:  plan,
		notify: make(chan struct{}, 1),
	}
	s.mu.Lock()
	s.jobs[j.id] = j
	s.events++
	s.mu.Unlock()
	defer func() {
		j.cancelled.Store(true)
		s.mu.Lock()
		delete(s.jobs, j.id)
		s.mu.Unlock()
		inst.poke()
	}()
	if !s.admit(r.Context()) {
		return
	}
	if !inst.submit(j) {
		lcFail(w, lcServerError("the model was unloaded"))
		return
	}
	lr := &lcResponse{rs: &response{s: s, d: dialectLlamaCpp, j: j, inst: inst, model: lc.alias, fault: req.fault, cut: cut},
		lc: lc, req: req, eos: eos, id: lcCompletionID(j.id), created: time.Now().Unix()}
	if req.stream {
		lr.stream(w, r)
	} else {
		lr.whole(w, r)
	}
}

// lcCompletionID is gen_chatcmplid's shape, "chatcmpl-" and an id.
func lcCompletionID(id string) string {
	return "chatcmpl-" + strings.ReplaceAll(id, "-", "")
}

// lcPreFault handles the faults that fire before any generation, in
// llama-server's shapes; it reports whether the response is done.
func (s *Server) lcPreFault(w http.ResponseWriter, r *http.Request, f Fault) bool {
	if f.Kind != FaultNone {
		s.log.Debug("sim: injecting a fault", "fault", f.String(), "path", r.URL.Path)
	}
	switch f.Kind {
	case FaultStatus500:
		lcFail(w, lcServerError("simulated server error (fault injection: 500)"))
	case FaultStatus503:
		lcFail(w, &lcError{code: http.StatusServiceUnavailable, typ: "unavailable_error", msg: "Loading model"})
	case FaultUnknownModel:
		lcFail(w, &lcError{code: http.StatusNotFound, typ: "not_found_error", msg: "model not found (fault injection: unknown-model)"})
	default:
		return writeFault(w, f.Kind, "<!doctype html><html><head><title>llama.cpp (simulated)</title></head><body>web ui</body></html>\n", "application/json; charset=utf-8")
	}
	return true
}

// lcResponse writes one completion answer from the job's events.
type lcResponse struct {
	rs      *response // the job, its events (next), the stop-string cut (clip), the fault
	lc      *llamaCpp
	req     lcRequest
	eos     bool // the last token is the end of sequence: counted, not sent
	id      string
	created int64
}

// text is token e's text: none for the end of sequence.
func (lr *lcResponse) text(e event) string {
	if lr.eos && e.cumulative >= lr.rs.j.target {
		return ""
	}
	return lr.rs.clip(e.text)
}

// lcUsage is usage_json_oaicompat.
type lcUsage struct {
	CompletionTokens int            `json:"completion_tokens"`
	PromptTokens     int            `json:"prompt_tokens"`
	TotalTokens      int            `json:"total_tokens"`
	Details          lcUsageDetails `json:"prompt_tokens_details"`
}

type lcUsageDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

func (lr *lcResponse) usage(tm *lcTimings) lcUsage {
	p := lr.rs.j.prompt
	return lcUsage{CompletionTokens: tm.PredictedN, PromptTokens: p, TotalTokens: p + tm.PredictedN,
		Details: lcUsageDetails{CachedTokens: tm.CacheN}}
}

// finish is the answer's finish_reason: "stop" for the end of sequence
// or a stop string, "length" for n_predict or a full context.
func (lr *lcResponse) finish() string { return lr.rs.j.reason }

// The OpenAI shapes, fields in llama-server's order (server-task.cpp,
// to_json_oaicompat_chat_stream and its neighbours).

type lcChatChunk struct {
	Choices           []lcChatChoice `json:"choices"`
	Created           int64          `json:"created"`
	ID                string         `json:"id"`
	Model             string         `json:"model"`
	SystemFingerprint string         `json:"system_fingerprint"`
	Object            string         `json:"object"`
	Usage             *lcUsage       `json:"usage,omitempty"`
	Timings           *lcTimings     `json:"timings,omitempty"`
}

type lcChatChoice struct {
	FinishReason *string         `json:"finish_reason"`
	Index        int             `json:"index"`
	Delta        json.RawMessage `json:"delta"`
}

type lcCmplChunk struct {
	Choices           []lcCmplChoice `json:"choices"`
	Created           int64          `json:"created"`
	Model             string         `json:"model"`
	SystemFingerprint string         `json:"system_fingerprint"`
	Object            string         `json:"object"`
	Usage             *lcUsage       `json:"usage,omitempty"`
	ID                string         `json:"id"`
	Timings           *lcTimings     `json:"timings,omitempty"`
}

type lcCmplChoice struct {
	Text         string  `json:"text"`
	Index        int     `json:"index"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

type lcChatWhole struct {
	Choices           []lcChatWholeChoice `json:"choices"`
	Created           int64               `json:"created"`
	Model             string              `json:"model"`
	SystemFingerprint string              `json:"system_fingerprint"`
	Object            string              `json:"object"`
	Usage             lcUsage             `json:"usage"`
	ID                string              `json:"id"`
	Timings           *lcTimings          `json:"timings"`
}

type lcChatWholeChoice struct {
	FinishReason string `json:"finish_reason"`
	Index        int    `json:"index"`
	Message      struct {
		Role             string `json:"role"`
		Content          string `json:"content"`
		ReasoningContent string `json:"reasoning_content,omitempty"`
	} `json:"message"`
}

// lcNativePartial is a /completion stream's chunk
// (to_json_non_oaicompat of a partial result).
type lcNativePartial struct {
	Index           int    `json:"index"`
	Content         string `json:"content"`
	Tokens          []int  `json:"tokens"`
	Stop            bool   `json:"stop"`
	IDSlot          int    `json:"id_slot"`
	TokensPredicted int    `json:"tokens_predicted"`
	TokensEvaluated int    `json:"tokens_evaluated"`
}

// lcNativeFinal is /completion's final object.
type lcNativeFinal struct {
	Index              int            `json:"index"`
	Content            string         `json:"content"`
	Tokens             []int          `json:"tokens"`
	IDSlot             int            `json:"id_slot"`
	Stop               bool           `json:"stop"`
	Model              string         `json:"model"`
	TokensPredicted    int            `json:"tokens_predicted"`
	TokensEvaluated    int            `json:"tokens_evaluated"`
	GenerationSettings map[string]any `json:"generation_settings"`
	Prompt             string         `json:"prompt"`
	HasNewLine         bool           `json:"has_new_line"`
	Truncated          bool           `json:"truncated"`
	StopType           string         `json:"stop_type"`
	StoppingWord       string         `json:"stopping_word"`
	TokensCached       int            `json:"tokens_cached"`
	Timings            *lcTimings     `json:"timings"`
}

func sse(v any) []byte {
	b, _ := json.Marshal(v)
	return append(append([]byte("data: "), b...), '\n', '\n')
}

// contentChunk renders the stream's chunk for a token's text, generated
// tokens in; first adds the role chunk before it (written together: the
// role chunk is flushed with the first token).
func (lr *lcResponse) contentChunk(text string, first bool, generated int) []byte {
	return lr.chunkKind(text, tokAnswer, first, generated)
}

// chunkKind is contentChunk for text of kind: a chat's reasoning goes in
// delta.reasoning_content (common_chat_msg_diff_to_json_oaicompat).
func (lr *lcResponse) chunkKind(text string, kind tokenKind, first bool, generated int) []byte {
	switch lr.req.kind {
	case lcNative:
		return sse(lcNativePartial{Content: text, Tokens: []int{}, IDSlot: -1,
			TokensPredicted: generated, TokensEvaluated: lr.rs.j.prompt})
	case lcCompletion:
		return sse(lcCmplChunk{Choices: []lcCmplChoice{{Text: text}}, Created: lr.created, Model: lr.rs.model,
			SystemFingerprint: lr.lc.fp, Object: "text_completion", ID: lr.id})
	}
	var out []byte
	chunk := func(delta string) {
		out = append(out, sse(lcChatChunk{Choices: []lcChatChoice{{Delta: json.RawMessage(delta)}},
			Created: lr.created, ID: lr.id, Model: lr.rs.model, SystemFingerprint: lr.lc.fp, Object: "chat.completion.chunk"})...)
	}
	if first {
		chunk(`{"role":"assistant","content":null}`)
	}
	if text != "" {
		key := "content"
		if kind == tokReasoning {
			key = "reasoning_content"
		}
		d, _ := json.Marshal(map[string]string{key: text})
		chunk(string(d))
	}
	return out
}

// finalChunks renders the stream's end: the chat's finish chunk and, with
// include_usage, its usage chunk, the last carrying the timings; the
// completion's one final chunk with usage and timings; the native final
// object. The OpenAI streams end with [DONE], the native one does not.
func (lr *lcResponse) finalChunks(tm *lcTimings) []byte {
	finish := lr.finish()
	switch lr.req.kind {
	case lcNative:
		return sse(lr.nativeFinal(tm, ""))
	case lcCompletion:
		u := lr.usage(tm)
		return append(sse(lcCmplChunk{Choices: []lcCmplChoice{{FinishReason: &finish}}, Created: lr.created,
			Model: lr.rs.model, SystemFingerprint: lr.lc.fp, Object: "text_completion", Usage: &u, ID: lr.id,
			Timings: tm}), "data: [DONE]\n\n"...)
	}
	fin := lcChatChunk{Choices: []lcChatChoice{{FinishReason: &finish, Delta: json.RawMessage(`{}`)}},
		Created: lr.created, ID: lr.id, Model: lr.rs.model, SystemFingerprint: lr.lc.fp, Object: "chat.completion.chunk"}
	if !lr.req.includeUsage {
		fin.Timings = tm
		return append(sse(fin), "data: [DONE]\n\n"...)
	}
	u := lr.usage(tm)
	use := lcChatChunk{Choices: []lcChatChoice{}, Created: lr.created, ID: lr.id, Model: lr.rs.model,
		SystemFingerprint: lr.lc.fp, Object: "chat.completion.chunk", Usage: &u, Timings: tm}
	return append(append(sse(fin), sse(use)...), "data: [DONE]\n\n"...)
}

func (lr *lcResponse) nativeFinal(tm *lcTimings, content string) lcNativeFinal {
	stopType := "limit"
	switch {
	case lr.rs.cut >= 0:
		stopType = "word"
	case lr.eos:
		stopType = "eos"
	}
	return lcNativeFinal{Content: content, Tokens: []int{}, IDSlot: tm.slot, Stop: true, Model: lr.rs.model,
		TokensPredicted: tm.PredictedN, TokensEvaluated: lr.rs.j.prompt,
		GenerationSettings: map[string]any{"n_predict": lr.req.maxTokens, "max_tokens": lr.req.maxTokens,
			"seed": lr.rs.j.seed, "ignore_eos": lr.req.ignoreEOS, "stream": lr.req.stream},
		Prompt: lr.req.promptText, Truncated: tm.truncated, StopType: stopType,
		TokensCached: tm.tokensInKV, Timings: tm}
}

// lcErrorEvent is a stream's error after its headers: the error object
// as one data event, and no [DONE].
func lcErrorEvent(e *lcError) []byte {
	return sse(map[string]lcErrorObject{"error": e.object()})
}

func lcErrorOf(err error) *lcError {
	var e *lcError
	if errors.As(err, &e) {
		return e
	}
	return lcServerError(err.Error())
}

// stream writes the SSE answer. The headers wait for a slot to take the
// prompt (an error before that, such as a prompt too long for the slot,
// is an ordinary JSON answer); the role chunk goes with the first token;
// one chunk per token (Options.StreamChunk tokens); then the end. The
// server then closes the connection although its headers offered to keep
// it: cpp-httplib ends a chunked response whose content provider returns
// false, as llama-server's does after its last chunk, by closing the
// connection (server-http.cpp, process_handler_response).
func (lr *lcResponse) stream(w http.ResponseWriter, r *http.Request) {
	rs := lr.rs
	var o *out
	begin := func() bool {
		if o != nil {
			return true
		}
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		o = newOut(w, r, rs.s.closed, rs.fault)
		return o.rc.Flush() == nil
	}
	chunks := 0
	emit := func(b []byte) bool {
		if f := rs.fault; !rs.fired && f.Kind != FaultNone && chunks >= f.after() {
			rs.fired = true
			switch f.Kind {
			case FaultResetMidStream:
				resetConn(w, true)
				return false
			case FaultCutWithoutDone:
				lcCloseConn(w)
				return false
			case FaultErrorEvent:
				o.write(lcErrorEvent(lcServerError("simulated server error (fault injection: error-event)")))
				lcCloseConn(w)
				return false
			case FaultMalformedChunk:
				if o.write([]byte(`data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":`+"\n\n")) != nil {
					return false
				}
			case FaultStall:
				if !wait(r.Context(), rs.s.closed, f.stall()) {
					return false
				}
			case FaultOversizedLine:
				if o.write(lr.contentChunk(strings.Repeat("x", f.size()), false, 0)) != nil {
					return false
				}
			}
		}
		chunks++
		return o.write(b) == nil
	}
	k := rs.s.opts.streamChunk()
	var buf strings.Builder
	pending, first, generated := 0, true, 0
	bufKind := tokAnswer
	for {
		evs, err := rs.next(r, nil)
		if err != nil {
			return
		}
		for _, e := range evs {
			switch e.kind {
			case evBegin:
				if !begin() {
					return
				}
			case evToken:
				if !begin() {
					return
				}
				generated = e.cumulative
				// A chunk carries one kind; a thinking tag makes no diff
				// of the parsed message, so no chunk.
				if t, kind := lr.text(e), rs.kindAt(generated); t != "" && kind != tokMarker {
					if buf.Len() > 0 && kind != bufKind {
						if !emit(lr.chunkKind(buf.String(), bufKind, first, generated-1)) {
							return
						}
						first = false
						buf.Reset()
						pending = 0
					}
					buf.WriteString(t)
					bufKind = kind
					pending++
				}
				if pending >= k && buf.Len() > 0 {
					if !emit(lr.chunkKind(buf.String(), bufKind, first, generated)) {
						return
					}
					first = false
					buf.Reset()
					pending = 0
				}
			case evDone:
				if !begin() {
					return
				}
				if buf.Len() > 0 || first && lr.req.kind == lcChat && generated > 0 {
					if !emit(lr.chunkKind(buf.String(), bufKind, first, generated)) {
						return
					}
				}
				if !emit(lr.finalChunks(e.timings)) {
					return
				}
				lcCloseConn(w)
				return
			case evError:
				if o == nil {
					lcFail(w, lcErrorOf(e.err))
					return
				}
				o.write(lcErrorEvent(lcErrorOf(e.err)))
				lcCloseConn(w)
				return
			}
		}
	}
}

// lcCloseConn ends a chunked response with its last chunk and closes the
// connection.
func lcCloseConn(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	conn, _, err := rc.Hijack()
	if err != nil {
		return
	}
	conn.SetWriteDeadline(time.Now().Add(time.Second))
	io.WriteString(conn, "0\r\n\r\n")
	conn.Close()
}

// whole writes a non-streaming answer once the task is done; the
// connection stays open.
func (lr *lcResponse) whole(w http.ResponseWriter, r *http.Request) {
	rs := lr.rs
	var text, thought strings.Builder
	for {
		evs, err := rs.next(r, nil)
		if err != nil {
			return
		}
		for _, e := range evs {
			switch e.kind {
			case evToken:
				switch t := lr.text(e); rs.kindAt(e.cumulative) {
				case tokAnswer:
					text.WriteString(t)
				case tokReasoning:
					thought.WriteString(t)
				}
				if f := rs.fault; !rs.fired && f.Kind == FaultResetMidStream && e.cumulative >= f.after() {
					rs.fired = true
					w.Header().Set("Content-Type", "application/json; charset=utf-8")
					w.WriteHeader(http.StatusOK)
					io.WriteString(w, `{"choices":[{"finish_reason":"length","index":0,"message":{"role":"assistant","content":"`)
					resetConn(w, true)
					return
				}
			case evError:
				lcFail(w, lcErrorOf(e.err))
				return
			case evDone:
				lr.wholeFault(w, r, lr.wholeBody(e.timings, text.String(), thought.String()))
				return
			}
		}
	}
}

func (lr *lcResponse) wholeBody(tm *lcTimings, text, thought string) []byte {
	finish := lr.finish()
	var v any
	switch lr.req.kind {
	case lcNative:
		v = lr.nativeFinal(tm, text)
	case lcCompletion:
		u := lr.usage(tm)
		v = lcCmplChunk{Choices: []lcCmplChoice{{Text: text, FinishReason: &finish}}, Created: lr.created,
			Model: lr.rs.model, SystemFingerprint: lr.lc.fp, Object: "text_completion", Usage: &u, ID: lr.id, Timings: tm}
	default:
		c := lcChatWholeChoice{FinishReason: finish}
		c.Message.Role, c.Message.Content, c.Message.ReasoningContent = "assistant", text, thought
		v = lcChatWhole{Choices: []lcChatWholeChoice{c}, Created: lr.created, Model: lr.rs.model,
			SystemFingerprint: lr.lc.fp, Object: "chat.completion", Usage: lr.usage(tm), ID: lr.id, Timings: tm}
	}
	b, _ := json.Marshal(v)
	return b
}

// wholeFault writes a non-streaming body b, applying the body faults.
func (lr *lcResponse) wholeFault(w http.ResponseWriter, r *http.Request, b []byte) {
	f := lr.rs.fault
	switch f.Kind {
	case FaultErrorEvent:
		lcFail(w, lcServerError("simulated server error (fault injection: error-event)"))
		return
	case FaultStall:
		if !wait(r.Context(), lr.rs.s.closed, f.stall()) {
			return
		}
	case FaultMalformedChunk:
		b = append(b[:len(b)/2:len(b)/2], []byte(`,,"malformed":}`)...)
	case FaultCutWithoutDone:
		b = b[:len(b)/2]
	case FaultOversizedLine:
		pad, _ := json.Marshal(strings.Repeat("x", f.size()))
		b = append(append(append(b[:len(b)-1:len(b)-1], []byte(`,"padding":`)...), pad...), '}')
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if f.Kind != FaultCutWithoutDone && f.Kind != FaultSlowDrip {
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	}
	w.WriteHeader(http.StatusOK)
	newOut(w, r, lr.rs.s.closed, f).write(b)
}

// lcTokenizeHandler serves POST /tokenize: {"content", "add_special",
// "parse_special", "with_pieces"} → {"tokens": [...]}; a body without
// content gets no tokens.
func (s *Server) lcTokenizeHandler(w http.ResponseWriter, r *http.Request) {
	body, e := parseLcBody(r)
	if e != nil {
		lcFail(w, e)
		return
	}
	tokens := []any{}
	if _, ok := body["content"]; ok {
		ids, e := s.lc.tokenizeContent(body["content"], body.bool("add_special", false), body.bool("parse_special", true))
		if e != nil {
			lcFail(w, e)
			return
		}
		pieces := body.bool("with_pieces", false)
		for _, id := range ids {
			if pieces {
				tokens = append(tokens, map[string]any{"id": id, "piece": lcPiece(id)})
			} else {
				tokens = append(tokens, id)
			}
		}
	}
	lcJSON(w, http.StatusOK, map[string]any{"tokens": tokens})
}

// tokenizeContent is tokenize_mixed: a string, or a list of strings and
// ids (add_special only before a leading string).
func (lc *llamaCpp) tokenizeContent(raw json.RawMessage, addSpecial, parseSpecial bool) ([]int, *lcError) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return lcTokenize(text, addSpecial && lc.addBOS, parseSpecial), nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, lcServerError(fmt.Sprintf("[json.exception.type_error.302] content must be a string or a list of strings and token ids, found %.40s", raw))
	}
	ids := []int{}
	for i, e := range list {
		if json.Unmarshal(e, &text) == nil {
			ids = append(ids, lcTokenize(text, addSpecial && lc.addBOS && i == 0, parseSpecial)...)
			continue
		}
		var id int64
		if json.Unmarshal(e, &id) != nil {
			return nil, lcServerError(fmt.Sprintf("[json.exception.type_error.302] content[%d] must be a string or a token id, found %.40s", i, e))
		}
		ids = append(ids, int(id))
	}
	return ids, nil
}

// lcPiece is a token's text as far as the profile's vocabulary knows it.
func lcPiece(id int) string {
	for _, sp := range lcSpecial {
		if sp.id == id {
			return sp.text
		}
	}
	return Counter{}.Decode([]int{id})
}

// lcApplyTemplate serves POST /apply-template: the chat rendered with the
// generation prompt, without the template's BOS when the vocabulary adds
// one (common/chat.cpp strips it; the server adds it back).
func (s *Server) lcApplyTemplate(w http.ResponseWriter, r *http.Request) {
	body, e := parseLcBody(r)
	if e != nil {
		lcFail(w, e)
		return
	}
	msgs, e := lcMessages(body)
	if e != nil {
		lcFail(w, e)
		return
	}
	lcJSON(w, http.StatusOK, map[string]string{"prompt": lcRender(msgs, !s.lc.addBOS)})
}

// lcModels serves GET /v1/models (and /models): the one served model
// (get_res_models, server-context.cpp).
func (s *Server) lcModels(w http.ResponseWriter, r *http.Request) {
	lc := s.lc
	m := s.preset.Model
	ftype := map[string]string{"Q4_K_M": "Q4_K - Medium", "Q8_0": "Q8_0", "F16": "F16"}[ollamaQuant(m.BitsPerWeight)]
	info := lcModelInfo{ID: lc.alias, Aliases: []string{}, Tags: []string{}, Object: "model", Created: lc.created,
		OwnedBy: "llamacpp", Meta: lcModelMeta{VocabType: 2, NVocab: lcVocab, NCtx: lc.nCtx, NCtxTrain: m.ContextLength,
			NEmbd: m.HiddenSize, NParams: int64(m.Params), Size: int64(m.WeightBytes()), Ftype: ftype}}
	entry := lcModelEntry{Name: lc.alias, Model: lc.alias, Type: "model", Tags: []string{""},
		Capabilities: []string{"completion"}}
	entry.Details.Format, entry.Details.Families = "gguf", []string{""}
	lcJSON(w, http.StatusOK, lcModelList{Models: []lcModelEntry{entry}, Object: "list", Data: []lcModelInfo{info}})
}

// lcModelList is get_res_models' object: Ollama's shape and OpenAI's.
type lcModelList struct {
	Models []lcModelEntry `json:"models"`
	Object string         `json:"object"`
	Data   []lcModelInfo  `json:"data"`
}

type lcModelEntry struct {
	Name         string   `json:"name"`
	Model        string   `json:"model"`
	ModifiedAt   string   `json:"modified_at"`
	Size         string   `json:"size"`
	Digest       string   `json:"digest"`
	Type         string   `json:"type"`
	Description  string   `json:"description"`
	Tags         []string `json:"tags"`
	Capabilities []string `json:"capabilities"`
	Parameters   string   `json:"parameters"`
	Details      struct {
		ParentModel       string   `json:"parent_model"`
		Format            string   `json:"format"`
		Family            string   `json:"family"`
		Families          []string `json:"families"`
		ParameterSize     string   `json:"parameter_size"`
		QuantizationLevel string   `json:"quantization_level"`
	} `json:"details"`
}

// lcModelInfo is get_res_model_info's object.
type lcModelInfo struct {
	ID      string      `json:"id"`
	Aliases []string    `json:"aliases"`
	Tags    []string    `json:"tags"`
	Object  string      `json:"object"`
	Created int64       `json:"created"`
	OwnedBy string      `json:"owned_by"`
	Meta    lcModelMeta `json:"meta"`
}

type lcModelMeta struct {
	VocabType int    `json:"vocab_type"`
	NVocab    int    `json:"n_vocab"`
	NCtx      int    `json:"n_ctx"`
	NCtxTrain int    `json:"n_ctx_train"`
	NEmbd     int    `json:"n_embd"`
	NParams   int64  `json:"n_params"`
	Size      int64  `json:"size"`
	Ftype     string `json:"ftype"`
}
