package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/inferbench/inferbench/promptsize"
)

// DefaultCompletionMaxTokens is max_tokens of a /v1/completions request
// that leaves it out or null: vLLM's CompletionRequest default.
const DefaultCompletionMaxTokens = 16

// completionRequest is the part of vLLM's CompletionRequest the sim reads.
// Unknown fields are ignored, as vLLM does (with a warning in its log).
type completionRequest struct {
	Model         *string         `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`
	MaxTokens     *int            `json:"max_tokens"`
	Stream        bool            `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options"`
	Seed          *int64          `json:"seed"`
	IgnoreEOS     bool            `json:"ignore_eos"`
	MinTokens     int             `json:"min_tokens"`
	Stop          json.RawMessage `json:"stop"`
	CacheSalt     *string         `json:"cache_salt"`
}

// errNoPrompt is vLLM's answer to a missing or empty prompt, word for word
// (CompletionRequest.validate_prompt_and_prompt_embeds).
const errNoPrompt messageError = "Either prompt or prompt_embeds must be provided and non-empty."

// A messageError is an error whose text is a server's message as it is.
type messageError string

func (e messageError) Error() string { return string(e) }

// A completionPrompt is a parsed prompt: token ids, or text.
type completionPrompt struct {
	ids    []int
	text   string
	isText bool
}

// parsePrompt reads the prompt field as vLLM's CompletionRequest types it:
// a string, a list of token ids (each ≥ 0), a list of strings or a list of
// lists of ids. The sim serves one prompt a request, so a list of prompts
// must hold exactly one.
func parsePrompt(raw json.RawMessage) (completionPrompt, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return completionPrompt{}, errNoPrompt
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		if text == "" {
			return completionPrompt{}, errNoPrompt
		}
		return completionPrompt{text: text, isText: true}, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return completionPrompt{}, fmt.Errorf("prompt: expected a string, a list of token ids, a list of strings or a list of lists of token ids, found %.40s", raw)
	}
	if len(list) == 0 {
		return completionPrompt{}, errors.New("prompt: expected a non-empty prompt, found an empty list")
	}
	if first := bytes.TrimSpace(list[0]); len(first) > 0 && (first[0] == '"' || first[0] == '[') {
		if len(list) != 1 {
			return completionPrompt{}, fmt.Errorf("prompt: a list of %d prompts; the simulated server serves one prompt per request (vLLM answers one choice per prompt)", len(list))
		}
		return parsePrompt(first)
	}
	ids := make([]int, len(list))
	for i, e := range list {
		var id int64
		if err := json.Unmarshal(e, &id); err != nil || id < 0 || id > 1<<31-1 {
			return completionPrompt{}, fmt.Errorf("prompt[%d]: expected a token id (an integer ≥ 0), found %.40s", i, e)
		}
		ids[i] = int(id)
	}
	return completionPrompt{ids: ids}, nil
}

// count returns the prompt's token identities and prompt_tokens: a list of
// ids is exactly its length and its own identities, with no
// re-tokenization; text is counted by the server's tokenizer, the
// built-in one, or a caller's Counter that is a promptsize.TokenEnder
// (its tokens of the text, no chat template), with the built-in ids as
// identities.
func (s *Server) countPrompt(r *http.Request, p completionPrompt) ([]int, int, error) {
	if !p.isText {
		return p.ids, len(p.ids), nil
	}
	pieces := Tokenize(p.text)
	ids := make([]int, len(pieces))
	for i, t := range pieces {
		ids[i] = tokenID(t)
	}
	switch c := s.counter.(type) {
	case Counter:
		return ids, len(ids), nil
	case promptsize.TokenEnder:
		ends, err := c.TokenEnds(r.Context(), p.text, nil)
		if err != nil {
			return nil, 0, fmt.Errorf("counting the prompt's tokens: %w", err)
		}
		return ids, len(ends), nil
	}
	return nil, 0, errors.New("a text prompt needs the built-in tokenizer or a Counter that is a promptsize.TokenEnder; this server counts with a chat Counter (send token ids)")
}

// completions serves the vLLM API's POST /v1/completions: the chat path's
// scheduler, cost model and prefix cache, with vLLM's text_completion
// shapes (serving_completion.py).
func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	d := dialectVLLM
	var req completionRequest
	if !readRequest(d, w, r, &req, &req.Model) {
		return
	}
	if req.StreamOptions != nil && !req.Stream {
		d.fail(w, http.StatusBadRequest, "Stream options can only be defined when `stream=True`.")
		return
	}
	p, err := parsePrompt(req.Prompt)
	if err != nil {
		d.fail(w, http.StatusBadRequest, err.Error())
		return
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
		d.fail(w, http.StatusServiceUnavailable, fmt.Sprintf("every instance of model %s is prefill-only", *req.Model))
		return
	case inst == nil:
		vllmError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist.", *req.Model))
		return
	}
	ids, prompt, err := s.countPrompt(r, p)
	if err != nil {
		d.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	maxTok := DefaultCompletionMaxTokens
	if req.MaxTokens != nil {
		maxTok = *req.MaxTokens
	}
	g := generation{
		model: *req.Model, ids: ids, prompt: prompt, completion: true,
		maxTokens: maxTok, ignoreEOS: req.IgnoreEOS, minTokens: req.MinTokens,
		seed: req.Seed, stop: req.Stop, stream: req.Stream, streamOptions: req.StreamOptions, fault: fault,
	}
	if req.CacheSalt != nil {
		g.salt = *req.CacheSalt
	}
	s.generate(w, r, d, inst, g)
}

// The text_completion shapes, fields in vLLM's order
// (entrypoints/openai/completion/protocol.py).

// completionChoice is CompletionResponseStreamChoice, dumped with
// exclude_unset: every field serving_completion.py passes, null ones too.
type completionChoice struct {
	Index          int     `json:"index"`
	Text           string  `json:"text"`
	Logprobs       any     `json:"logprobs"`
	FinishReason   *string `json:"finish_reason"`
	StopReason     any     `json:"stop_reason"`
	PromptTokenIDs any     `json:"prompt_token_ids"`
	TokenIDs       any     `json:"token_ids"`
}

// completionChunk is CompletionStreamResponse: usage only with
// continuous_usage_stats on a token chunk; on the final usage chunk
// (exclude_none) choices is [] and usage carries prompt_tokens_details.
type completionChunk struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *vllmUsage         `json:"usage,omitempty"`
}

// vllmUsage is UsageInfo in its field order. Details is omitted when nil
// (a streamed chunk) unless nullDetails marshals it as null (a
// model_dump of a whole response).
type vllmUsage struct {
	PromptTokens     int            `json:"prompt_tokens"`
	TotalTokens      int            `json:"total_tokens"`
	CompletionTokens int            `json:"completion_tokens"`
	Details          *promptDetails `json:"prompt_tokens_details,omitempty"`
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// wholeUsage is vllmUsage as a model_dump writes it: a null
// prompt_tokens_details.
type wholeUsage struct {
	PromptTokens     int            `json:"prompt_tokens"`
	TotalTokens      int            `json:"total_tokens"`
	CompletionTokens int            `json:"completion_tokens"`
	Details          *promptDetails `json:"prompt_tokens_details"`
}

// wholeChoice is CompletionResponseChoice as model_dump writes it.
type wholeChoice struct {
	Index          int     `json:"index"`
	Text           string  `json:"text"`
	Logprobs       any     `json:"logprobs"`
	FinishReason   *string `json:"finish_reason"`
	StopReason     any     `json:"stop_reason"`
	TokenIDs       any     `json:"token_ids"`
	PromptLogprobs any     `json:"prompt_logprobs"`
	PromptTokenIDs any     `json:"prompt_token_ids"`
	RoutedExperts  any     `json:"routed_experts"`
}

// wholeCompletion is CompletionResponse as model_dump writes it, with the
// sim's block.
type wholeCompletion struct {
	ID                string         `json:"id"`
	Object            string         `json:"object"`
	Created           int64          `json:"created"`
	Model             string         `json:"model"`
	Choices           []wholeChoice  `json:"choices"`
	ServiceTier       any            `json:"service_tier"`
	SystemFingerprint any            `json:"system_fingerprint"`
	Usage             wholeUsage     `json:"usage"`
	KVTransferParams  any            `json:"kv_transfer_params"`
	ECTransferParams  any            `json:"ec_transfer_params"`
	Metrics           any            `json:"metrics"`
	Sim               map[string]any `json:"sim,omitempty"`
}

// vllmUsageOf returns the usage of the job so far; final adds
// prompt_tokens_details as vLLM does with --enable-prompt-tokens-details:
// on a completion always (serving_completion.py tests num_cached_tokens
// is not None), on a chat only when something was cached
// (serving.py of chat tests its truth).
func (rs *response) vllmUsageOf(st *finalStats, generated int) *vllmUsage {
	p := rs.j.prompt
	u := &vllmUsage{PromptTokens: p, TotalTokens: p + generated, CompletionTokens: generated}
	if st != nil && !rs.s.opts.NoPromptTokensDetails && (rs.completion || st.cached > 0) {
		u.Details = &promptDetails{CachedTokens: st.cached}
	}
	return u
}

func (rs *response) completionID() string { return "cmpl-" + rs.j.id }

// completionData renders one streamed text_completion chunk.
func (rs *response) completionData(text, finish string, usage *vllmUsage) []byte {
	ch := completionChoice{Text: text}
	if finish != "" {
		ch.FinishReason = &finish
	}
	b, _ := json.Marshal(completionChunk{ID: rs.completionID(), Object: "text_completion", Created: rs.created,
		Model: rs.model, Choices: []completionChoice{ch}, Usage: usage})
	return append(append([]byte("data: "), b...), '\n', '\n')
}

// completionUsageData renders the final usage chunk.
func (rs *response) completionUsageData(st *finalStats) []byte {
	b, _ := json.Marshal(completionChunk{ID: rs.completionID(), Object: "text_completion", Created: rs.created,
		Model: rs.model, Choices: []completionChoice{}, Usage: rs.vllmUsageOf(st, st.generated)})
	return append(append([]byte("data: "), b...), '\n', '\n')
}

// completionBody renders a whole text_completion response.
func (rs *response) completionBody(text string, st *finalStats, generated int) ([]byte, error) {
	finish := "stop"
	if st != nil {
		finish = st.reason
	}
	u := rs.vllmUsageOf(st, generated)
	resp := wholeCompletion{ID: rs.completionID(), Object: "text_completion", Created: rs.created, Model: rs.model,
		Choices: []wholeChoice{{Text: text, FinishReason: &finish}},
		Usage:   wholeUsage{PromptTokens: u.PromptTokens, TotalTokens: u.TotalTokens, CompletionTokens: u.CompletionTokens, Details: u.Details}}
	if st != nil {
		resp.Sim = rs.simInfo(st)
	}
	return json.Marshal(resp)
}
