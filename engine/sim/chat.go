package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/inferbench/inferbench/promptsize"
)

type dialect int

const (
	dialectExo dialect = iota
	dialectVLLM
	dialectOllama   // Ollama's native API (its own writers)
	dialectLlamaCpp // the LlamaCpp profile (its own writers)
)

// chatRequest is the union of exo's ChatCompletionRequest (with the bench
// field) and vLLM's extensions. Unknown fields are ignored, as both do.
type chatRequest struct {
	Model               *string         `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	UsePrefixCache      bool            `json:"use_prefix_cache"`
	Seed                *int64          `json:"seed"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	Stop                json.RawMessage `json:"stop"`
	MinTokens           int             `json:"min_tokens"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	CacheSalt           *string         `json:"cache_salt"`
	reasoningFields
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func validRole(r string) bool {
	switch r {
	case "system", "user", "assistant", "developer", "tool", "function":
		return true
	}
	return false
}

// text extracts a message's text: a string, a {"type":"text","text":...}
// part, a list of parts (text parts concatenated) or null.
func (m chatMessage) text() (string, error) {
	c := bytes.TrimSpace(m.Content)
	if len(c) == 0 || string(c) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s, nil
	}
	type part struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	var p part
	if c[0] == '{' && json.Unmarshal(c, &p) == nil {
		return p.Text, nil
	}
	var ps []part
	if err := json.Unmarshal(c, &ps); err != nil {
		return "", fmt.Errorf("content: expected a string, a part or a list of parts, found %.40s", c)
	}
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// errorBody is the error envelope exo (and current vLLM) send.
type errorBody struct {
	Error errorInfo `json:"error"`
}

type errorInfo struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "sim: encoding response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
}

// exoError writes exo's HTTPException envelope; type is the reason phrase.
func exoError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorBody{errorInfo{Message: msg, Type: http.StatusText(code), Code: code}})
}

// vllmError writes vLLM's envelope; type is an OpenAI error class name.
func vllmError(w http.ResponseWriter, code int, msg string) {
	typ := map[int]string{400: "BadRequestError", 404: "NotFoundError", 500: "InternalServerError", 503: "ServiceUnavailableError"}[code]
	if typ == "" {
		typ = http.StatusText(code)
	}
	writeJSON(w, code, errorBody{errorInfo{Message: msg, Type: typ, Code: code}})
}

func (d dialect) fail(w http.ResponseWriter, code int, msg string) {
	if d == dialectVLLM {
		vllmError(w, code, msg)
		return
	}
	exoError(w, code, msg)
}

// invalid reports a request that fails validation: FastAPI's 422 detail
// list for exo, a 400 envelope for vLLM.
func (d dialect) invalid(w http.ResponseWriter, loc []string, msg string) {
	if d == dialectVLLM {
		vllmError(w, http.StatusBadRequest, msg)
		return
	}
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
		"detail": []map[string]any{{"type": "value_error", "loc": loc, "msg": msg}},
	})
}

// naturalLength is where a request with EOS allowed ends by itself:
//
//	L = 1 + splitmix64(FNV-1a(prompt token ids) xor seed) mod NaturalLength
func naturalLength(ids []int, seed uint64, span int) int {
	return 1 + int(mix(promptHash(ids)^seed)%uint64(span))
}

func (s *Server) chat(d dialect, bench bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req chatRequest
		if !readRequest(d, w, r, &req, &req.Model) {
			return
		}
		if len(req.Messages) == 0 {
			d.invalid(w, []string{"body", "messages"}, "Field required: messages (expected at least one)")
			return
		}
		if d == dialectVLLM && req.StreamOptions != nil && !req.Stream {
			// vLLM's ChatCompletionRequest validator refuses it (400).
			d.fail(w, http.StatusBadRequest, "Value error, Stream options can only be defined when `stream=True`.")
			return
		}
		msgs := make([]promptsize.Message, len(req.Messages))
		system := []promptsize.Message{}
		for i, m := range req.Messages {
			if !validRole(m.Role) {
				d.invalid(w, []string{"body", "messages", fmt.Sprint(i), "role"},
					fmt.Sprintf("role %q: expected system, user, assistant, developer, tool or function", m.Role))
				return
			}
			t, err := m.text()
			if err != nil {
				d.invalid(w, []string{"body", "messages", fmt.Sprint(i), "content"}, err.Error())
				return
			}
			msgs[i] = promptsize.Message{Role: m.Role, Content: t}
			if m.Role == "system" {
				system = append(system, msgs[i])
			}
		}
		fault, err := s.faultFor(r)
		if err != nil {
			d.fail(w, http.StatusBadRequest, err.Error())
			return
		}
		if s.preFault(w, r, d, fault, *req.Model) {
			return
		}
		inst, err := s.route(*req.Model)
		switch {
		case errors.Is(err, errPrefillOnly):
			d.fail(w, http.StatusServiceUnavailable, fmt.Sprintf("every instance of model %s is prefill-only (exo would hold this request until the client times out)", *req.Model))
			return
		case inst == nil && d == dialectVLLM:
			vllmError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist.", *req.Model))
			return
		case inst == nil:
			exoError(w, http.StatusNotFound, "No instance found for model "+*req.Model)
			return
		}
		var ctl thinkControl
		if d == dialectExo {
			ctl, err = exoControl(req.reasoningFields)
		} else {
			ctl, err = openAIControl(s.reasoningAPI(), req.reasoningFields)
		}
		if err != nil {
			d.invalid(w, []string{"body", strings.SplitN(err.Error(), ":", 2)[0]}, err.Error())
			return
		}
		prompt, err := s.countChat(r.Context(), msgs, ctl.vars)
		if err != nil {
			d.fail(w, http.StatusBadRequest, "counting prompt tokens: "+err.Error())
			return
		}
		maxTok := DefaultMaxTokens
		if d == dialectVLLM {
			maxTok = inst.model.ContextLength - prompt
		}
		if req.MaxCompletionTokens != nil && d == dialectVLLM {
			maxTok = *req.MaxCompletionTokens
		} else if req.MaxTokens != nil {
			maxTok = *req.MaxTokens
		}
		sysTokens := 0
		if len(system) > 0 {
			sysTokens = len(templateIDs(system))
		}
		g := generation{
			model: *req.Model, ids: chatIDs(msgs, ctl.vars), prompt: prompt, system: sysTokens,
			bench: bench, maxTokens: maxTok, ignoreEOS: req.IgnoreEOS, minTokens: req.MinTokens,
			seed: req.Seed, stop: req.Stop, stream: req.Stream, streamOptions: req.StreamOptions,
			useCache: d == dialectExo && (!bench || req.UsePrefixCache), fault: fault,
			think: ctl,
		}
		if req.CacheSalt != nil {
			g.salt = *req.CacheSalt
		}
		s.generate(w, r, d, inst, g)
	}
}

// streamOptions is the stream_options field of both APIs.
type streamOptions struct {
	IncludeUsage         bool `json:"include_usage"`
	ContinuousUsageStats bool `json:"continuous_usage_stats"`
}

// generation is a validated request, chat or completion, ready for the
// scheduler: its prompt as token identities and as the server counts it,
// and what bounds its generation.
type generation struct {
	model         string
	ids           []int // token identities of the prompt
	prompt        int   // prompt_tokens
	system        int   // tokens of the system messages (exo's cache update rule)
	bench         bool  // exo's bench path
	completion    bool  // the vLLM API's /v1/completions
	maxTokens     int   // max_tokens, defaults resolved
	ignoreEOS     bool
	minTokens     int
	seed          *int64
	stop          json.RawMessage
	stream        bool
	streamOptions *streamOptions
	useCache      bool   // exo's KVPrefixCache
	salt          string // cache_salt (the vLLM API)
	fault         Fault
	think         thinkControl // the thinking controls (chat requests)
}

// generate runs g on inst and writes its response: the checks of
// max_tokens against the context, the request's end (bench, natural
// length, stop strings), then the job through the scheduler.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, d dialect, inst *instance, g generation) {
	prompt, maxTok := g.prompt, g.maxTokens
	if maxTok < 1 {
		d.invalid(w, []string{"body", "max_tokens"}, fmt.Sprintf("max_tokens=%d: expected at least 1", maxTok))
		return
	}
	if d == dialectVLLM && prompt+maxTok > inst.model.ContextLength {
		in := "messages"
		if g.completion {
			in = "prompt"
		}
		vllmError(w, http.StatusBadRequest, fmt.Sprintf(
			"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the %s, %d in the completion). Please reduce the length of the %s or completion.",
			inst.model.ContextLength, prompt+maxTok, prompt, in, maxTok, in))
		return
	}
	j, cut, err := s.newJob(d, g)
	if err != nil {
		d.invalid(w, []string{"body", "stop"}, err.Error())
		return
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
	}()
	if !s.admit(r.Context()) {
		return
	}
	if !inst.submit(j) {
		d.fail(w, http.StatusServiceUnavailable, "instance "+inst.id+" was deleted")
		return
	}
	rs := &response{s: s, d: d, bench: g.bench, completion: g.completion, j: j, inst: inst, model: g.model, fault: g.fault,
		created: time.Now().Unix(), cut: cut}
	if g.streamOptions != nil {
		rs.includeUsage = g.streamOptions.IncludeUsage
		rs.continuous = g.streamOptions.IncludeUsage && g.streamOptions.ContinuousUsageStats
	}
	if g.stream {
		rs.stream(w, r)
	} else {
		rs.whole(w, r)
	}
}

// newJob is the job of the validated request g: its seed, its thinking
// plan, where it ends (max_tokens, the natural length when EOS is
// allowed, a stop string) and its prompt's identities for the caches. cut
// is where the text ends in the word that completes a stop string (-1:
// none). The error is a stop field that does not parse.
func (s *Server) newJob(d dialect, g generation) (j *job, cut int, err error) {
	maxTok := g.maxTokens
	seed := uint64(42)
	if g.seed != nil && (*g.seed != 0 || d == dialectVLLM) {
		seed = uint64(*g.seed)
	}
	// The reasoning mode's thinking comes first: its tokens are generated
	// tokens, under max_tokens with the answer's.
	var plan thinkPlan
	if !g.completion {
		plan = s.opts.Reasoning.plan(g.think, g.ids, seed)
	}
	target, reason := maxTok, "length"
	eosBanned := g.bench || (d == dialectVLLM && g.ignoreEOS)
	if !eosBanned {
		l := plan.span() + naturalLength(g.ids, seed, s.opts.natural())
		if d == dialectVLLM {
			l = max(l, g.minTokens)
		}
		if l < maxTok {
			target, reason = l, "stop"
		}
	}
	stops, err := parseStop(g.stop)
	if err != nil {
		return nil, 0, err
	}
	cut = -1
	if k, at := stopAt(plan.wordFunc(s.vocab, seed), target, stops); k > 0 {
		target, reason, cut = k, "stop", at
	}
	j = &job{
		id:       s.newID(),
		ids:      g.ids,
		prompt:   g.prompt,
		system:   g.system,
		useCache: g.useCache && s.opts.PrefixCache.reuse(),
		blocks:   d == dialectVLLM,
		target:   target,
		reason:   reason,
		seed:     seed,
		think:    plan,
		notify:   make(chan struct{}, 1),
	}
	if j.blocks {
		// The block cache's own copy of the ids, with room for the
		// generated tokens it appends.
		ids := make([]int, len(g.ids), len(g.ids)+target)
		copy(ids, g.ids)
		j.seq = blockSeq{ids: ids, prompt: len(g.ids), salt: saltHash(g.salt)}
	}
	return j, cut, nil
}

// maxRequestBody bounds the request bodies the server reads.
const maxRequestBody = 256 << 20

// readRequest decodes a JSON request body into v and requires the model
// field *model to be set; when it cannot, it answers in the dialect's error
// shape (400 for an unreadable body, 422 for a bad one) and reports false.
func readRequest(d dialect, w http.ResponseWriter, r *http.Request, v any, model **string) bool {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	if err != nil {
		d.fail(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		d.invalid(w, []string{"body"}, "expected a JSON object: "+err.Error())
		return false
	}
	if *model == nil || **model == "" {
		d.invalid(w, []string{"body", "model"}, "Field required: model")
		return false
	}
	return true
}

// faultFor returns the fault for this request: the header's, else the
// server's when FaultEvery selects this request.
func (s *Server) faultFor(r *http.Request) (Fault, error) {
	n := s.chats.Add(1)
	if v, ok := r.Header[http.CanonicalHeaderKey(FaultHeader)]; ok && len(v) > 0 {
		return ParseFault(v[0])
	}
	if s.opts.Fault.Kind == FaultNone {
		return Fault{}, nil
	}
	if every := int64(max(s.opts.FaultEvery, 1)); n%every != 0 {
		return Fault{}, nil
	}
	return s.opts.Fault, nil
}

// preFault handles the faults that fire before any generation; it reports
// whether the response is done.
func (s *Server) preFault(w http.ResponseWriter, r *http.Request, d dialect, f Fault, model string) bool {
	if f.Kind != FaultNone {
		s.log.Debug("sim: injecting a fault", "fault", f.String(), "path", r.URL.Path)
	}
	switch f.Kind {
	case FaultStatus500:
		d.fail(w, http.StatusInternalServerError, "simulated runner error (fault injection: 500)")
	case FaultStatus503:
		d.fail(w, http.StatusServiceUnavailable, "simulated overload (fault injection: 503)")
	case FaultUnknownModel:
		if d == dialectVLLM {
			vllmError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist.", model))
		} else {
			exoError(w, http.StatusNotFound, "No instance found for model "+model)
		}
	default:
		return writeFault(w, f.Kind, "<!doctype html><html><head><title>exo (simulated)</title></head><body>dashboard</body></html>\n", "application/json")
	}
	return true
}

// writeFault writes the faults that look alike in every dialect: a reset
// before the headers, a page of HTML in place of the answer (page), an
// empty body of JSON's content type (jsonType). It reports whether kind
// was one of them.
func writeFault(w http.ResponseWriter, kind FaultKind, page, jsonType string) bool {
	switch kind {
	case FaultResetBeforeHeader:
		resetConn(w, false)
	case FaultWrongContentType:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, page)
	case FaultEmptyBody:
		w.Header().Set("Content-Type", jsonType)
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
	default:
		return false
	}
	return true
}

// response writes one chat or completion response from the job's events.
type response struct {
	s            *Server
	d            dialect
	bench        bool
	completion   bool // a text_completion of the vLLM API
	j            *job
	inst         *instance
	model        string
	fault        Fault
	created      int64
	includeUsage bool
	continuous   bool
	fired        bool
	cut          int // byte offset where a stop string starts, or -1
	sent         int // bytes of generated text passed through clip
}

// clip passes a token's text through, cutting the generated text where a
// stop string starts (the stop string itself is not returned).
func (rs *response) clip(text string) string {
	start := rs.sent
	rs.sent += len(text)
	if rs.cut < 0 || rs.sent <= rs.cut {
		return text
	}
	return text[:max(rs.cut-start, 0)]
}

// parseStop reads the stop field: a string, a list of strings or null.
func parseStop(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("stop: expected a string or a list of strings, found %.40s", raw)
	}
	out := list[:0]
	for _, x := range list {
		if x != "" {
			out = append(out, x)
		}
	}
	return out, nil
}

// stopAt finds the first of the n generated tokens (word(i) the i-th's
// text) after which the text contains a stop string; it returns that
// token count and the byte offset where the earliest stop string starts,
// or 0, -1 when none occurs.
func stopAt(word func(int) string, n int, stops []string) (int, int) {
	if len(stops) == 0 {
		return 0, -1
	}
	longest := 0
	for _, x := range stops {
		longest = max(longest, len(x))
	}
	var text strings.Builder
	for i := range n {
		prev := text.Len()
		text.WriteString(word(i))
		t := text.String()
		from := max(prev-longest+1, 0)
		best := -1
		for _, x := range stops {
			if at := strings.Index(t[from:], x); at >= 0 && (best < 0 || from+at < best) {
				best = from + at
			}
		}
		if best >= 0 {
			return i + 1, best
		}
	}
	return 0, -1
}

var errCancelled = errors.New("cancelled")

// next waits for the job's next events; it returns nil and an error when
// the client or the server went away. While it waits, idle is called every
// Options.KeepAlive (when not nil); an error from idle ends the wait.
func (rs *response) next(r *http.Request, idle func() error) ([]event, error) {
	var tick <-chan time.Time
	if idle != nil {
		t := time.NewTicker(rs.s.opts.keepAlive())
		defer t.Stop()
		tick = t.C
	}
	for {
		if ev := rs.j.take(); len(ev) > 0 {
			return ev, nil
		}
		select {
		case <-rs.j.notify:
		case <-tick:
			if err := idle(); err != nil {
				return nil, err
			}
		case <-r.Context().Done():
			return nil, r.Context().Err()
		case <-rs.s.closed:
			return nil, errors.New("server closed")
		}
		// A cancel via /v1/cancel leaves no event: notice it here.
		if rs.j.aborted.Load() {
			if ev := rs.j.take(); len(ev) > 0 {
				return ev, nil
			}
			return nil, errCancelled
		}
	}
}

// usage returns the usage block of the job so far; st is set on the final
// one.
func (rs *response) usage(st *finalStats, generated int) map[string]any {
	prompt := rs.j.prompt
	u := map[string]any{"prompt_tokens": prompt, "completion_tokens": generated, "total_tokens": prompt + generated}
	if rs.d == dialectVLLM {
		if d := rs.vllmUsageOf(st, generated).Details; d != nil {
			u["prompt_tokens_details"] = d
		}
	}
	if rs.d == dialectExo {
		cached := 0
		if st != nil {
			cached = st.cached
		}
		u["prompt_tokens_details"] = map[string]int{"cached_tokens": cached, "audio_tokens": 0}
		u["completion_tokens_details"] = map[string]int{"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
	}
	if st != nil && rs.s.opts.Reasoning.Enabled {
		rs.reasoningUsage(u, st.generated)
	}
	return u
}

func (rs *response) genStats(st *finalStats, memKey string) map[string]any {
	return map[string]any{
		"prompt_tps":        st.promptTPS,
		"generation_tps":    st.generationTPS,
		"prompt_tokens":     st.promptTokens,
		"generation_tokens": st.generated,
		"peak_memory_usage": map[string]int64{memKey: st.peakBytes},
		"prefix_cache_hit":  st.hit,
	}
}

// simInfo is the sim's own block: the request's schedule, labelled
// simulated.
func (rs *response) simInfo(st *finalStats) map[string]any {
	m := map[string]any{
		"simulated":       true,
		"preset":          rs.s.preset.Name,
		"instance_id":     rs.inst.id,
		"arrival_s":       st.arrival.Seconds(),
		"admitted_s":      st.admitted.Seconds(),
		"prefill_start_s": st.prefillStart.Seconds(),
		"prefill_end_s":   st.prefillEnd.Seconds(),
		"first_token_s":   st.first.Seconds(),
		"last_token_s":    st.last.Seconds(),
		"cached_tokens":   st.cached,
		"max_batch":       st.maxBatch,
		"remote_prefill":  st.remote,
	}
	if p := rs.j.think; p.on {
		m["thinking_tokens"] = min(p.span(), st.generated)
		m["reasoning_tokens"] = min(p.n, max(st.generated-boolInt(p.markers), 0))
	}
	return m
}

func (rs *response) chunkID() string {
	if rs.d == dialectVLLM {
		return "chatcmpl-" + rs.j.id
	}
	return rs.j.id
}

// dataChunk renders one streamed data chunk of the answer.
func (rs *response) dataChunk(text string, first bool, finish string, usage map[string]any) []byte {
	return rs.dataChunkKind(text, tokAnswer, first, finish, usage)
}

// dataChunkKind renders one streamed data chunk whose text is of kind
// (the answer's content, or reasoning in the dialect's field).
func (rs *response) dataChunkKind(text string, kind tokenKind, first bool, finish string, usage map[string]any) []byte {
	if rs.completion {
		var u *vllmUsage
		if usage != nil {
			u = rs.vllmUsageOf(nil, usage["completion_tokens"].(int))
		}
		return rs.completionData(text, finish, u)
	}
	delta := map[string]any{"content": text}
	if kind == tokReasoning {
		delta = map[string]any{rs.reasoningKey(): text}
	}
	choice := map[string]any{"index": 0, "delta": delta}
	obj := "chat.completion"
	if rs.d == dialectExo {
		delta["role"] = "assistant"
		if finish != "" {
			choice["finish_reason"] = finish
		}
	} else {
		obj = "chat.completion.chunk"
		if first {
			delta["role"] = "assistant"
		}
		choice["logprobs"] = nil
		if finish != "" {
			choice["finish_reason"] = finish
		} else {
			choice["finish_reason"] = nil
		}
	}
	m := map[string]any{"id": rs.chunkID(), "object": obj, "created": rs.created, "model": rs.model,
		"choices": []any{choice}}
	if usage != nil {
		m["usage"] = usage
	}
	b, _ := json.Marshal(m)
	return append(append([]byte("data: "), b...), '\n', '\n')
}

// stream writes an SSE response (exo-api.md §1.6 for exo; vLLM's chunk
// format otherwise), applying mid-stream faults.
func (rs *response) stream(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if rs.d == dialectExo {
		h.Set("Connection", "close")
	}
	w.WriteHeader(http.StatusOK)
	o := newOut(w, r, rs.s.closed, rs.fault)
	// vLLM sends its headers at once but its role chunk only with the
	// engine's first output, the step that produced the first token
	// (chat_completion_stream_generator's first iteration): a client that
	// times the first chunk reads the time to the first token, not 0.
	// A completion stream has no role chunk: its first chunk is the first
	// token's (serving_completion.py).
	roleSent := rs.d == dialectExo || rs.completion
	sendRole := func() bool {
		if roleSent {
			return true
		}
		roleSent = true
		first := rs.dataChunk("", true, "", nil)
		if rs.continuous {
			first = rs.dataChunk("", true, "", rs.usage(nil, 0))
		}
		return o.write(first) == nil
	}
	if rs.d == dialectExo {
		if o.write([]byte(": keep-alive\n\n")) != nil {
			return
		}
	} else if o.rc.Flush() != nil {
		return
	}
	k := rs.s.opts.streamChunk()
	chunks, generated := 0, 0
	var buf strings.Builder
	pending := 0
	bufKind, bufAt := tokAnswer, 0 // the buffered text's kind, and the tokens generated at its last
	// emit writes a data chunk, firing the fault when its turn comes. It
	// reports whether the stream goes on.
	emit := func(b []byte) bool {
		if !rs.fired && rs.fault.Kind != FaultNone && chunks >= rs.fault.after() {
			rs.fired = true
			switch rs.fault.Kind {
			case FaultResetMidStream:
				resetConn(w, true)
				return false
			case FaultCutWithoutDone:
				return false
			case FaultErrorEvent:
				o.write([]byte(`data: {"error":{"message":"simulated runner error (fault injection: error-event)","type":"InternalServerError","code":500}}` + "\n\n"))
				o.write([]byte("data: [DONE]\n\n"))
				return false
			case FaultMalformedChunk:
				if o.write([]byte(`data: {"id":"`+rs.chunkID()+`","object":"chat.completion","choices":[{"index":0,"delta":{"content":`+"\n\n")) != nil {
					return false
				}
			case FaultStall:
				if !wait(r.Context(), rs.s.closed, rs.fault.stall()) {
					return false
				}
			case FaultOversizedLine:
				if o.write(rs.dataChunk(strings.Repeat("x", rs.fault.size()), false, "", nil)) != nil {
					return false
				}
			}
		}
		chunks++
		return o.write(b) == nil
	}
	var idle func() error
	if rs.d == dialectExo {
		idle = func() error { return o.write([]byte(": keep-alive\n\n")) }
	}
	for {
		evs, err := rs.next(r, idle)
		if err != nil {
			if errors.Is(err, errCancelled) {
				if pending > 0 {
					emit(rs.dataChunkKind(buf.String(), bufKind, false, "", nil))
				}
				o.write([]byte("data: [DONE]\n\n"))
			}
			return
		}
		for _, e := range evs {
			switch e.kind {
			case evProgress:
				if rs.d != dialectExo {
					continue
				}
				b, _ := json.Marshal(map[string]any{"PrefillProgressChunk": map[string]any{
					"model": rs.model, "processed_tokens": e.processed, "total_tokens": e.total}})
				if o.write(append(append([]byte(": prefill_progress "), b...), '\n', '\n')) != nil {
					return
				}
			case evToken:
				if !sendRole() {
					return
				}
				text := rs.clip(e.text)
				generated = e.cumulative
				// A chunk carries one kind; a thinking tag is sent by no
				// reasoning parser.
				switch kind := rs.kindAt(generated); {
				case kind == tokMarker:
				case pending > 0 && kind != bufKind:
					var u map[string]any
					if rs.continuous {
						u = rs.usage(nil, bufAt)
					}
					if !emit(rs.dataChunkKind(buf.String(), bufKind, false, "", u)) {
						return
					}
					buf.Reset()
					pending = 0
					fallthrough
				default:
					buf.WriteString(text)
					bufKind, bufAt = kind, generated
					pending++
				}
				if pending >= k && generated < rs.j.target {
					var u map[string]any
					if rs.continuous {
						u = rs.usage(nil, generated)
					}
					if !emit(rs.dataChunkKind(buf.String(), bufKind, false, "", u)) {
						return
					}
					buf.Reset()
					pending = 0
				}
			case evDone:
				if !sendRole() {
					return
				}
				st := e.stats
				var u map[string]any
				if rs.d == dialectExo {
					u = rs.usage(st, st.generated)
				} else if rs.continuous {
					// vLLM's continuous usage has no details; the usage
					// chunk after it does.
					u = rs.usage(nil, st.generated)
				}
				if !emit(rs.dataChunkKind(buf.String(), bufKind, false, st.reason, u)) {
					return
				}
				if rs.d == dialectExo {
					b, _ := json.Marshal(rs.genStats(st, "in_bytes"))
					o.write(append(append([]byte(": generation_stats "), b...), '\n', '\n'))
					b, _ = json.Marshal(rs.simInfo(st))
					o.write(append(append([]byte(": sim "), b...), '\n', '\n'))
				} else if rs.includeUsage && rs.completion {
					o.write(rs.completionUsageData(st))
				} else if rs.includeUsage {
					b, _ := json.Marshal(map[string]any{"id": rs.chunkID(), "object": "chat.completion.chunk",
						"created": rs.created, "model": rs.model, "choices": []any{}, "usage": rs.usage(st, st.generated)})
					o.write(append(append([]byte("data: "), b...), '\n', '\n'))
				}
				o.write([]byte("data: [DONE]\n\n"))
				return
			case evError:
				msg, _ := json.Marshal(e.err.Error())
				o.write([]byte(`data: {"error":{"message":` + string(msg) + `,"type":"InternalServerError","code":500}}` + "\n\n"))
				o.write([]byte("data: [DONE]\n\n"))
				return
			}
		}
	}
}

// whole writes a non-streaming response once the job is done.
func (rs *response) whole(w http.ResponseWriter, r *http.Request) {
	var text, thought strings.Builder
	var st *finalStats
	generated := 0
collect:
	for {
		evs, err := rs.next(r, nil)
		if errors.Is(err, errCancelled) {
			break
		}
		if err != nil {
			return
		}
		for _, e := range evs {
			switch e.kind {
			case evToken:
				t := rs.clip(e.text)
				generated = e.cumulative
				switch rs.kindAt(generated) {
				case tokAnswer:
					text.WriteString(t)
				case tokReasoning:
					thought.WriteString(t)
				}
				if f := rs.fault; !rs.fired && f.Kind == FaultResetMidStream && generated >= f.after() {
					rs.fired = true
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusOK)
					io.WriteString(w, `{"id":"`+rs.chunkID()+`","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"`)
					resetConn(w, true)
					return
				}
			case evDone:
				st = e.stats
				break collect
			case evError:
				rs.d.fail(w, http.StatusInternalServerError, e.err.Error())
				return
			}
		}
	}
	if rs.completion {
		b, err := rs.completionBody(text.String(), st, generated)
		if err != nil {
			rs.d.fail(w, http.StatusInternalServerError, "sim: encoding response: "+err.Error())
			return
		}
		rs.wholeFault(w, r, b)
		return
	}
	msg := map[string]any{"role": "assistant", "content": text.String()}
	choice := map[string]any{"index": 0, "logprobs": nil, "message": msg}
	finish := "stop"
	if st != nil {
		finish = st.reason
	}
	choice["finish_reason"] = finish
	resp := map[string]any{"id": rs.chunkID(), "object": "chat.completion", "created": rs.created,
		"model": rs.model, "choices": []any{choice}}
	switch {
	case rs.d == dialectVLLM:
		if rs.s.opts.Reasoning.Enabled {
			msg[rs.reasoningKey()] = nil
			if thought.Len() > 0 {
				msg[rs.reasoningKey()] = thought.String()
				if text.Len() == 0 {
					msg["content"] = nil
				}
			}
		}
		msg["tool_calls"] = []any{}
		choice["stop_reason"] = nil
		resp["usage"] = rs.usage(st, generated)
	case rs.bench:
		for _, k := range []string{"reasoning_content", "name", "tool_calls", "tool_call_id", "function_call"} {
			msg[k] = nil
		}
		resp["usage"] = nil
		resp["service_tier"] = nil
		resp["generation_stats"] = nil
		resp["power_usage"] = nil
		if st != nil {
			resp["generation_stats"] = rs.genStats(st, "inBytes")
			ids := make([]string, len(rs.s.nodes))
			for i, n := range rs.s.nodes {
				ids[i] = n.id
			}
			resp["power_usage"] = rs.s.power.usage(ids, st.arrival, st.first, st.last)
		}
	default:
		for _, k := range []string{"reasoning_content", "name", "tool_calls", "tool_call_id", "function_call"} {
			msg[k] = nil
		}
		if thought.Len() > 0 {
			msg["reasoning_content"] = thought.String()
		}
		resp["usage"] = rs.usage(st, generated)
		resp["service_tier"] = nil
	}
	if st != nil {
		resp["sim"] = rs.simInfo(st)
	}
	b, err := json.Marshal(resp)
	if err != nil {
		rs.d.fail(w, http.StatusInternalServerError, "sim: encoding response: "+err.Error())
		return
	}
	rs.wholeFault(w, r, b)
}

// wholeFault writes a non-streaming body b, applying the body faults.
func (rs *response) wholeFault(w http.ResponseWriter, r *http.Request, b []byte) {
	f := rs.fault
	switch f.Kind {
	case FaultErrorEvent:
		rs.d.fail(w, http.StatusInternalServerError, "simulated runner error (fault injection: error-event)")
		return
	case FaultStall:
		if !wait(r.Context(), rs.s.closed, f.stall()) {
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
	w.Header().Set("Content-Type", "application/json")
	if f.Kind != FaultCutWithoutDone && f.Kind != FaultSlowDrip {
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	}
	w.WriteHeader(http.StatusOK)
	newOut(w, r, rs.s.closed, f).write(b)
}
