package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/inferbench/inferbench/promptsize"
)

// The Ollama dialect, under /ollama: Ollama v0.6.5's native API as its
// server/routes.go writes it (ChatHandler, ListHandler, the version
// route), driven by the same scheduler as the other APIs.

// OllamaVersion is the version the Ollama dialect reports at
// /ollama/api/version: the release whose wire shapes it follows.
const OllamaVersion = "0.6.5"

// ollamaNumCtx is Ollama v0.6.5's default num_ctx
// (envconfig.ContextLength); a num_predict that is negative, absent or
// beyond 10·num_ctx is 10·num_ctx, as llm/server.go caps it.
const ollamaNumCtx = 2048

// ollamaChatRequest is api.ChatRequest as the sim reads it.
type ollamaChatRequest struct {
	Model    string                     `json:"model"`
	Messages []ollamaMessage            `json:"messages"`
	Stream   *bool                      `json:"stream"`
	Options  map[string]json.RawMessage `json:"options"`
	Think    *ollamaThink               `json:"think"`
}

// ollamaMessage is api.Message: Thinking is the thinking of a model that
// thinks (Ollama ≥ 0.9, with ChatRequest.Think), left out when empty.
type ollamaMessage struct {
	Role     string `json:"role"`
	Content  string `json:"content"`
	Thinking string `json:"thinking,omitempty"`
}

// ollamaChatResponse is api.ChatResponse with its embedded api.Metrics,
// field for field in Ollama's order and with its omitempty tags.
type ollamaChatResponse struct {
	Model              string        `json:"model"`
	CreatedAt          time.Time     `json:"created_at"`
	Message            ollamaMessage `json:"message"`
	DoneReason         string        `json:"done_reason,omitempty"`
	Done               bool          `json:"done"`
	TotalDuration      time.Duration `json:"total_duration,omitempty"`
	LoadDuration       time.Duration `json:"load_duration,omitempty"`
	PromptEvalCount    int           `json:"prompt_eval_count,omitempty"`
	PromptEvalDuration time.Duration `json:"prompt_eval_duration,omitempty"`
	EvalCount          int           `json:"eval_count,omitempty"`
	EvalDuration       time.Duration `json:"eval_duration,omitempty"`
}

// ollamaJSON writes v as gin's c.JSON does: json.Marshal, no newline,
// Content-Type "application/json; charset=utf-8".
func ollamaJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "sim: encoding response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	w.Write(b)
}

// ollamaError writes Ollama's error body, gin.H{"error": msg}.
func ollamaError(w http.ResponseWriter, code int, msg string) {
	ollamaJSON(w, code, map[string]string{"error": msg})
}

// ollamaLine is one NDJSON line of a stream: json.Marshal and "\n", as
// streamResponse writes it.
func ollamaLine(v any) []byte {
	b, _ := json.Marshal(v)
	return append(b, '\n')
}

// ollamaName strips Ollama's default tag, so that "m" and "m:latest" name
// the same model, as model.ParseName fills in the tag.
func ollamaName(name string) string { return strings.TrimSuffix(name, ":latest") }

// ollamaOptions are the options of api.Options the sim uses.
type ollamaOptions struct {
	numPredict int
	seed       *int64
	stop       json.RawMessage
}

// parseOllamaOptions reads num_predict, seed and stop; a value of the
// wrong type is an error, as Options.FromMap's (which Ollama answers with
// 500 through handleScheduleError).
func parseOllamaOptions(m map[string]json.RawMessage) (ollamaOptions, error) {
	o := ollamaOptions{numPredict: -1}
	if raw, ok := m["num_predict"]; ok {
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil {
			return o, fmt.Errorf("option %q must be of type integer", "num_predict")
		}
		o.numPredict = int(f)
	}
	if raw, ok := m["seed"]; ok {
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil {
			return o, fmt.Errorf("option %q must be of type integer", "seed")
		}
		s := int64(f)
		o.seed = &s
	}
	if raw, ok := m["stop"]; ok {
		var list []string
		if err := json.Unmarshal(raw, &list); err != nil {
			return o, fmt.Errorf("option %q must be of an array of strings", "stop")
		}
		o.stop = raw
	}
	if o.numPredict < 0 || o.numPredict > 10*ollamaNumCtx {
		o.numPredict = 10 * ollamaNumCtx
	}
	return o, nil
}

// ollamaChat serves POST /ollama/api/chat.
func (s *Server) ollamaChat(w http.ResponseWriter, r *http.Request) {
	start := s.elapsed() // ChatHandler's checkpointStart
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	if err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	if len(body) == 0 {
		ollamaError(w, http.StatusBadRequest, "missing request body")
		return
	}
	var req ollamaChatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Model == "" {
		ollamaError(w, http.StatusBadRequest, "model is required")
		return
	}
	fault, err := s.faultFor(r)
	if err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	if s.ollamaPreFault(w, r, fault, req.Model) {
		return
	}
	inst, err := s.route(ollamaName(req.Model))
	switch {
	case errors.Is(err, errPrefillOnly):
		ollamaError(w, http.StatusServiceUnavailable, "server busy, please try again.  maximum pending requests exceeded")
		return
	case inst == nil:
		ollamaError(w, http.StatusNotFound, fmt.Sprintf("model %q not found, try pulling it first", req.Model))
		return
	}
	opts, err := parseOllamaOptions(req.Options)
	if err != nil {
		ollamaError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if len(req.Messages) == 0 {
		ollamaJSON(w, http.StatusOK, ollamaChatResponse{Model: req.Model, CreatedAt: time.Now().UTC(),
			Message: ollamaMessage{Role: "assistant"}, Done: true, DoneReason: "load"})
		return
	}
	msgs := make([]promptsize.Message, len(req.Messages))
	var system []promptsize.Message
	for i, m := range req.Messages {
		msgs[i] = promptsize.Message{Role: m.Role, Content: m.Content}
		if m.Role == "system" {
			system = append(system, msgs[i])
		}
	}
	ctl := ollamaControl(req.Think)
	prompt, err := s.countChat(r.Context(), msgs, ctl.vars)
	if err != nil {
		ollamaError(w, http.StatusInternalServerError, "counting prompt tokens: "+err.Error())
		return
	}
	ids := chatIDs(msgs, ctl.vars)
	seed := uint64(42)
	if opts.seed != nil {
		seed = uint64(*opts.seed)
	}
	plan := s.opts.Reasoning.plan(ctl, ids, seed)
	// Ollama has no ignore_eos: a request ends at its end of sequence,
	// which the runner samples and counts (eval_count) but never sends,
	// or at num_predict.
	target, reason, eos := opts.numPredict, "length", false
	if l := plan.span() + naturalLength(ids, seed, s.opts.natural()); l <= target {
		target, reason, eos = l, "stop", true
	}
	stops, err := parseStop(opts.stop)
	if err != nil {
		ollamaError(w, http.StatusInternalServerError, err.Error())
		return
	}
	cut := -1
	if k, at := stopAt(plan.wordFunc(s.vocab, seed), target, stops); k > 0 && (!eos || k < target) {
		target, reason, cut, eos = k, "stop", at, false
	}
	sysTokens := 0
	if len(system) > 0 {
		sysTokens = len(templateIDs(system))
	}
	j := &job{
		id:       s.newID(),
		ids:      ids,
		prompt:   prompt,
		system:   sysTokens,
		useCache: s.opts.PrefixCache.reuse(), // the runner's cache slots
		target:   target,
		reason:   reason,
		seed:     seed,
		think:    plan,
		notify:   make(chan struct{}, 1),
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
		ollamaError(w, http.StatusInternalServerError, "an error was encountered while running the model: instance "+inst.id+" was deleted")
		return
	}
	or := &ollamaResponse{rs: &response{s: s, d: dialectOllama, j: j, inst: inst, model: req.Model, fault: fault, cut: cut},
		start: start, eos: eos}
	if req.Stream == nil || *req.Stream {
		or.stream(w, r)
	} else {
		or.whole(w, r)
	}
}

// ollamaResponse writes one /api/chat answer from the job's events.
type ollamaResponse struct {
	rs    *response // the job, its events (next) and the stop-string cut (clip)
	start time.Duration
	eos   bool // the last token is the end of sequence: counted, not sent
}

// text is the text of token e: none for the end of sequence.
func (or *ollamaResponse) text(e event) string {
	if or.eos && e.cumulative >= or.rs.j.target {
		return ""
	}
	return or.rs.clip(e.text)
}

// final is the last object, its durations from the request's schedule:
//
//	load_duration        = max(arrival, instance ready) − handler start
//	prompt_eval_duration = first token − max(arrival, instance ready): the
//	                       wait for a batch slot, the prefill and the decode
//	                       step that computes the first token (Ollama's
//	                       runner starts the clock when it creates the
//	                       sequence, before it waits for one of its
//	                       parallel slots: ollama/ollama@v0.6.5
//	                       runner/llamarunner/runner.go, NewSequence and
//	                       seqsSem.Acquire)
//	eval_duration        = last token − first token
//	total_duration       = now − handler start
func (or *ollamaResponse) final(st *finalStats, content string) ollamaChatResponse {
	s := or.rs.s
	loaded := max(st.arrival, or.rs.inst.readyAt)
	return ollamaChatResponse{
		Model: or.rs.model, CreatedAt: time.Now().UTC(),
		Message: ollamaMessage{Role: "assistant", Content: content}, DoneReason: st.reason, Done: true,
		TotalDuration:      max(s.elapsed()-or.start, 0),
		LoadDuration:       max(loaded-or.start, 0),
		PromptEvalCount:    st.promptTokens,
		PromptEvalDuration: max(st.first-loaded, 0),
		EvalCount:          st.generated,
		EvalDuration:       max(st.last-st.first, 0),
	}
}

// runError is the message Ollama's Completion gives a runner that failed.
func runError(err error) string {
	return "an error was encountered while running the model: " + err.Error()
}

// stream writes the NDJSON stream: one line per Options.StreamChunk
// tokens with text (one per token by default; more stand for the text
// Ollama's runner holds back), then the final object.
func (or *ollamaResponse) stream(w http.ResponseWriter, r *http.Request) {
	rs := or.rs
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	o := newOut(w, r, rs.s.closed, rs.fault)
	k := rs.s.opts.streamChunk()
	lines := 0
	var buf strings.Builder
	pending := 0
	// emit writes a line, firing the fault when its turn comes; it
	// reports whether the stream goes on.
	emit := func(b []byte) bool {
		if f := rs.fault; !rs.fired && f.Kind != FaultNone && lines >= f.after() {
			rs.fired = true
			switch f.Kind {
			case FaultResetMidStream:
				resetConn(w, true)
				return false
			case FaultCutWithoutDone:
				return false
			case FaultErrorEvent:
				o.write(ollamaLine(map[string]string{"error": runError(errors.New("simulated runner error (fault injection: error-event)"))}))
				return false
			case FaultMalformedChunk:
				if o.write([]byte(`{"model":"`+rs.model+`","created_at":"`+"\n")) != nil {
					return false
				}
			case FaultStall:
				if !wait(r.Context(), rs.s.closed, f.stall()) {
					return false
				}
			case FaultOversizedLine:
				big := ollamaChatResponse{Model: rs.model, CreatedAt: time.Now().UTC(),
					Message: ollamaMessage{Role: "assistant", Content: strings.Repeat("x", f.size())}}
				if o.write(ollamaLine(big)) != nil {
					return false
				}
			}
		}
		lines++
		return o.write(b) == nil
	}
	content := func(text string, kind tokenKind) []byte {
		m := ollamaMessage{Role: "assistant", Content: text}
		if kind == tokReasoning {
			m = ollamaMessage{Role: "assistant", Thinking: text}
		}
		return ollamaLine(ollamaChatResponse{Model: rs.model, CreatedAt: time.Now().UTC(), Message: m})
	}
	bufKind := tokAnswer
	for {
		evs, err := rs.next(r, nil)
		if err != nil {
			return
		}
		for _, e := range evs {
			switch e.kind {
			case evToken:
				// A line carries one kind; a thinking tag is sent by
				// no thinking parser.
				if t, kind := or.text(e), rs.kindAt(e.cumulative); t != "" && kind != tokMarker {
					if buf.Len() > 0 && kind != bufKind {
						if !emit(content(buf.String(), bufKind)) {
							return
						}
						buf.Reset()
						pending = 0
					}
					buf.WriteString(t)
					bufKind = kind
					pending++
				}
				if pending >= k && buf.Len() > 0 {
					if !emit(content(buf.String(), bufKind)) {
						return
					}
					buf.Reset()
					pending = 0
				}
			case evDone:
				if buf.Len() > 0 && !emit(content(buf.String(), bufKind)) {
					return
				}
				emit(ollamaLine(or.final(e.stats, "")))
				return
			case evError:
				o.write(ollamaLine(map[string]string{"error": runError(e.err)}))
				return
			}
		}
	}
}

// whole writes a non-streaming answer once the job is done.
func (or *ollamaResponse) whole(w http.ResponseWriter, r *http.Request) {
	rs := or.rs
	var text, thought strings.Builder
	for {
		evs, err := rs.next(r, nil)
		if err != nil {
			return
		}
		for _, e := range evs {
			switch e.kind {
			case evToken:
				switch t := or.text(e); rs.kindAt(e.cumulative) {
				case tokAnswer:
					text.WriteString(t)
				case tokReasoning:
					thought.WriteString(t)
				}
				if f := rs.fault; !rs.fired && f.Kind == FaultResetMidStream && e.cumulative >= f.after() {
					rs.fired = true
					w.Header().Set("Content-Type", "application/json; charset=utf-8")
					w.WriteHeader(http.StatusOK)
					io.WriteString(w, `{"model":"`+rs.model+`","created_at":"`)
					resetConn(w, true)
					return
				}
			case evError:
				ollamaError(w, http.StatusInternalServerError, runError(e.err))
				return
			case evDone:
				fin := or.final(e.stats, text.String())
				fin.Message.Thinking = thought.String()
				b, _ := json.Marshal(fin)
				or.wholeFault(w, r, b)
				return
			}
		}
	}
}

// wholeFault writes a non-streaming body b, applying the body faults.
func (or *ollamaResponse) wholeFault(w http.ResponseWriter, r *http.Request, b []byte) {
	f := or.rs.fault
	switch f.Kind {
	case FaultErrorEvent:
		ollamaError(w, http.StatusInternalServerError, runError(errors.New("simulated runner error (fault injection: error-event)")))
		return
	case FaultStall:
		if !wait(r.Context(), or.rs.s.closed, f.stall()) {
			return
		}
	case FaultMalformedChunk:
		b = append(b[:len(b)/2:len(b)/2], []byte(`,,"malformed":}`)...)
	case FaultCutWithoutDone:
		b = b[:len(b)/2]
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if f.Kind != FaultCutWithoutDone && f.Kind != FaultSlowDrip {
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	}
	w.WriteHeader(http.StatusOK)
	newOut(w, r, or.rs.s.closed, f).write(b)
}

// ollamaPreFault handles the faults that fire before any generation, in
// Ollama's shapes; it reports whether the response is done.
func (s *Server) ollamaPreFault(w http.ResponseWriter, r *http.Request, f Fault, model string) bool {
	if f.Kind != FaultNone {
		s.log.Debug("sim: injecting a fault", "fault", f.String(), "path", r.URL.Path)
	}
	switch f.Kind {
	case FaultStatus500:
		ollamaError(w, http.StatusInternalServerError, "simulated runner error (fault injection: 500)")
	case FaultStatus503:
		ollamaError(w, http.StatusServiceUnavailable, "server busy, please try again.  maximum pending requests exceeded")
	case FaultUnknownModel:
		ollamaError(w, http.StatusNotFound, fmt.Sprintf("model %q not found, try pulling it first", model))
	default:
		return writeFault(w, f.Kind, "<!doctype html><html><head><title>ollama (simulated)</title></head><body>proxy</body></html>\n", "application/json; charset=utf-8")
	}
	return true
}

// ollamaTagsModel is api.ListModelResponse.
type ollamaTagsModel struct {
	Name       string             `json:"name"`
	Model      string             `json:"model"`
	ModifiedAt time.Time          `json:"modified_at"`
	Size       int64              `json:"size"`
	Digest     string             `json:"digest"`
	Details    ollamaModelDetails `json:"details,omitempty"`
}

// ollamaModelDetails is api.ModelDetails.
type ollamaModelDetails struct {
	ParentModel       string   `json:"parent_model"`
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

// ollamaTags serves GET /ollama/api/tags: every model with an instance,
// named with Ollama's default tag, modified when the server started.
func (s *Server) ollamaTags(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	var ms []Model
	seen := map[string]bool{}
	for _, in := range s.instances {
		if !seen[in.model.ID] {
			seen[in.model.ID] = true
			ms = append(ms, in.model)
		}
	}
	s.mu.Unlock()
	out := []ollamaTagsModel{}
	for _, m := range ms {
		sum := sha256.Sum256([]byte(m.ID))
		name := m.ID + ":latest"
		out = append(out, ollamaTagsModel{
			Name: name, Model: name, ModifiedAt: s.epoch, Size: int64(m.WeightBytes()),
			Digest: hex.EncodeToString(sum[:]),
			Details: ollamaModelDetails{Format: "gguf", Family: m.Family, Families: []string{m.Family},
				ParameterSize: fmt.Sprintf("%.1fB", m.Params/1e9), QuantizationLevel: ollamaQuant(m.BitsPerWeight)},
		})
	}
	ollamaJSON(w, http.StatusOK, map[string]any{"models": out})
}

// ollamaQuant names a weight width as Ollama's GGUF file types do.
func ollamaQuant(bits float64) string {
	switch {
	case bits <= 4:
		return "Q4_K_M"
	case bits <= 8:
		return "Q8_0"
	}
	return "F16"
}

// ollamaVersion serves GET /ollama/api/version.
func (s *Server) ollamaVersion(w http.ResponseWriter, r *http.Request) {
	ollamaJSON(w, http.StatusOK, map[string]string{"version": OllamaVersion})
}

// OllamaURL returns the base URL of the Ollama dialect, URL + "/ollama"
// (append "/api/chat", "/api/tags", "/api/version").
func (s *Server) OllamaURL() string { return s.URL + "/ollama" }
