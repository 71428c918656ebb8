// Package remote provides promptsize Counters that ask the serving engine to
// count: the engine's own chat template and tokenizer are then the ones
// measured, whatever the model.
//
//   - VLLM posts the chat request to vLLM's (or SGLang's) /tokenize, which
//     applies the chat template with the generation prompt and returns the
//     count and the token ids.
//   - LlamaCpp renders the request with llama.cpp's /apply-template, then
//     counts the prompt with its /tokenize, with the BOS the server adds at
//     inference (add_special), so that the count is the server's
//     usage.prompt_tokens whether or not the model's vocabulary adds a BOS
//     (see LlamaCpp).
//
// Both take the chat template's variables a request makes the server
// render with (WithTemplateVars: chat_template_kwargs such as
// enable_thinking, or reasoning_effort), so that a prompt counted with a
// thinking control on or off is counted as the server renders it.
//
// A server without the endpoint gives an *EndpointError wrapping
// ErrNoEndpoint that names the endpoint and suggests another Counter. A
// /tokenize that answers 200 with no token for a chat (llama.cpp's, asked
// in vLLM's shape) gives an error wrapping ErrNoTokens that names the
// likely cause.
// Counters here are safe for concurrent use; each Count is one or two HTTP
// requests, each bounded by the Counter's Timeout (DefaultTimeout unless
// set) and by the caller's context.
//
// The credentials among a Counter's Header (Authorization and the like)
// are redacted from every error, in whatever escapes the server echoed
// them (see internal/httpsafe). Without a Client of the caller's, a
// redirect is followed only within the server's origin, so they never
// reach another.
package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/inferbench/inferbench/internal/httpsafe"
	"github.com/inferbench/inferbench/promptsize"
)

// DefaultTimeout bounds each request of a Counter whose Timeout is zero.
const DefaultTimeout = 60 * time.Second

// ErrNoEndpoint is the condition of a server that answered 404 or 405 for
// the endpoint a Counter needs. Errors for it are *EndpointError values.
var ErrNoEndpoint = errors.New("remote: the server has no such endpoint")

// ErrNoTokens is the condition of a /tokenize that answered 200 with no
// token for a chat or a text that has some: the server did not read the
// request as it was meant (llama.cpp's /tokenize answers {"tokens": []}
// to a body without "content", such as vLLM's shape).
var ErrNoTokens = errors.New("remote: the server counted no tokens")

// maxBody bounds the response bodies read: the token ids of a
// million-token prompt fit many times over.
const maxBody = 64 << 20

// An EndpointError reports a server without the endpoint a Counter needs.
type EndpointError struct {
	// Endpoint is the method and URL asked, e.g. "POST http://h:8000/tokenize".
	Endpoint string
	// Status is the HTTP status code (404 or 405).
	Status int
	// Suggest names a Counter that may work instead.
	Suggest string
}

func (e *EndpointError) Error() string {
	return fmt.Sprintf("%s answered %d %s: the server has no such endpoint; %s",
		e.Endpoint, e.Status, http.StatusText(e.Status), e.Suggest)
}

// Unwrap returns ErrNoEndpoint.
func (e *EndpointError) Unwrap() error { return ErrNoEndpoint }

// A StatusError reports an unsuccessful HTTP status other than the 404 or
// 405 of an EndpointError: the server has the endpoint but refused the
// request (a 400 for an unknown model, a 401 for a missing key, a 5xx).
// Get it with errors.As and branch on Status.
type StatusError struct {
	// Endpoint is the method and URL asked, e.g. "POST http://h:8000/tokenize".
	Endpoint string
	// Status is the HTTP status code the server answered.
	Status int
	// Body is the start of the response body (at most 300 bytes), with
	// the Counter's credentials redacted: the server's own explanation.
	Body string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s answered %d %s; expected 200: %s", e.Endpoint, e.Status, http.StatusText(e.Status), e.Body)
}

// VLLM is a Counter for vLLM and SGLang servers: it posts
//
//	{"model": Model, "messages": [...], "add_generation_prompt": true}
//
// to BaseURL+Path and reads "count" from the answer, or the length of
// "tokens" when there is no count. TemplateVars go with it as
// "chat_template_kwargs", which vLLM's TokenizeChatRequest passes to the
// chat template as a chat completion's are (vllm/entrypoints/serve/
// tokenize/protocol.py, build_chat_params; vLLM ≥ 0.6).
type VLLM struct {
	// BaseURL is the server's root, e.g. "http://127.0.0.1:8000".
	BaseURL string
	// Model is the served model's name; "" omits it (vLLM then uses its
	// only model).
	Model string
	// Path is the endpoint; "" means "/tokenize".
	Path string
	// Client sends the requests; nil means a client of
	// http.DefaultTransport that follows same-origin redirects only.
	Client *http.Client
	// Header is added to every request (e.g. Authorization: Bearer …).
	// Its credentials are redacted from errors.
	Header http.Header
	// Timeout bounds each request. Zero means DefaultTimeout; negative,
	// no bound beyond the context's.
	Timeout time.Duration
	// TemplateVars are the chat template's further variables, sent as
	// "chat_template_kwargs"; nil sends none.
	TemplateVars map[string]any
}

var _ promptsize.Counter = (*VLLM)(nil)

type vllmRequest struct {
	Model               string               `json:"model,omitempty"`
	Messages            []promptsize.Message `json:"messages"`
	AddGenerationPrompt bool                 `json:"add_generation_prompt"`
	ChatTemplateKwargs  map[string]any       `json:"chat_template_kwargs,omitempty"`
}

// WithTemplateVars returns a copy of c that also sends vars as
// chat_template_kwargs (over c's TemplateVars, a key of vars replacing
// one there): the server counts what it renders for a request carrying
// them. c is unchanged.
func (c *VLLM) WithTemplateVars(vars map[string]any) promptsize.Counter {
	d := *c
	d.TemplateVars = mergeVars(c.TemplateVars, vars)
	return &d
}

// mergeVars returns base with over's keys set, in a new map; base itself
// when over is empty.
func mergeVars(base, over map[string]any) map[string]any {
	if len(over) == 0 {
		return base
	}
	m := make(map[string]any, len(base)+len(over))
	maps.Copy(m, base)
	maps.Copy(m, over)
	return m
}

// Count returns the server's count of messages with the generation prompt.
func (c *VLLM) Count(ctx context.Context, messages []promptsize.Message) (int, error) {
	path := c.Path
	if path == "" {
		path = "/tokenize"
	}
	if messages == nil {
		messages = []promptsize.Message{}
	}
	body, endpoint, err := post(ctx, c.Client, c.Header, c.Timeout, c.BaseURL, path,
		vllmRequest{Model: c.Model, Messages: messages, AddGenerationPrompt: true, ChatTemplateKwargs: c.TemplateVars},
		"expected vLLM's or SGLang's /tokenize; for llama.cpp use remote.LlamaCpp, or count locally with promptsize/hf and the model's tokenizer.json")
	if err != nil {
		return 0, err
	}
	secrets := httpsafe.HeaderSecrets(c.Header)
	n, err := parseTokenize(body, httpsafe.RedactBytes(body, secrets...))
	if err != nil {
		return 0, httpsafe.RedactError(fmt.Errorf("remote: %s: %w", endpoint, err), secrets...)
	}
	if n == 0 && len(messages) > 0 {
		// A chat template writes its role markers whatever the content.
		return 0, fmt.Errorf("remote: %s answered 200 with no tokens for a chat of %d messages, where the chat template alone writes some: %w; "+
			"llama.cpp's server answers so to a body without \"content\" such as this one (count there with remote.LlamaCpp, /apply-template then /tokenize)",
			endpoint, len(messages), ErrNoTokens)
	}
	return n, nil
}

// LlamaCpp is a Counter for llama.cpp's server: it posts the messages to
// /apply-template, which renders the chat template with the generation
// prompt, then posts the rendered prompt to /tokenize with
//
//	{"content": prompt, "add_special": true, "parse_special": true}
//
// and reads the length of "tokens": the count the server's
// usage.prompt_tokens gives for the same chat. That is how the server
// itself tokenizes a chat request (llama.cpp's tools/server, read at
// ggml-org/llama.cpp of 2026-08):
//
//   - /apply-template answers the "prompt" of oaicompat_chat_params_parse
//     (tools/server/server-common.cpp), the same rendering a chat
//     completion gets (tools/server/server-context.cpp, post_apply_template:
//     "same with handle_chat_completions, but without inference part");
//   - the rendering (common/chat.cpp, common_chat_template_direct_apply)
//     strips the template's own leading BOS when the vocabulary adds one
//     (inputs.add_bos, which common_chat_templates_init sets from
//     llama_vocab_get_add_bos: the GGUF's tokenizer.ggml.add_bos_token,
//     true as llama.cpp's converter writes Llama 3 models), so that it is
//     not there twice;
//   - a completion then tokenizes that prompt with add_special and
//     parse_special true (handle_completions_impl in
//     tools/server/server-context.cpp: tokenize_input_prompts(vocab, mctx,
//     prompt, true, true)), which puts the BOS back; its Anthropic
//     count_tokens endpoint counts the same way (tokenize_mixed(vocab,
//     prompt, true, true)), while /tokenize defaults add_special to false;
//   - add_special adds only what the vocabulary says to add
//     (src/llama-vocab.cpp: the BOS when add_bos_token, the EOS when
//     add_eos_token), at /tokenize as at inference.
//
// So with add_bos_token true the count is the template's tokens without
// its BOS plus the BOS add_special puts back, one more than without
// add_special (1001 where a count without it says 1000, on a Llama 3.1
// GGUF); with add_bos_token false (as Ollama's converter writes) nothing
// was stripped and add_special adds nothing, and the count is the same
// either way. add_special true is right for both.
//
// TemplateVars go to /apply-template as "chat_template_kwargs", which
// oaicompat_chat_params_parse merges over the server's
// --chat-template-kwargs and hands to the template (enable_thinking also
// sets the server's own switch), as it does for a chat completion.
type LlamaCpp struct {
	// BaseURL is the server's root, e.g. "http://127.0.0.1:8080".
	BaseURL string
	// Client sends the requests; nil means a client of
	// http.DefaultTransport that follows same-origin redirects only.
	Client *http.Client
	// Header is added to every request. Its credentials are redacted
	// from errors.
	Header http.Header
	// Timeout bounds each request. Zero means DefaultTimeout; negative,
	// no bound beyond the context's.
	Timeout time.Duration
	// TemplateVars are the chat template's further variables, sent to
	// /apply-template as "chat_template_kwargs"; nil sends none.
	TemplateVars map[string]any
}

var _ promptsize.Counter = (*LlamaCpp)(nil)

type applyTemplateRequest struct {
	Messages            []promptsize.Message `json:"messages"`
	AddGenerationPrompt bool                 `json:"add_generation_prompt"`
	ChatTemplateKwargs  map[string]any       `json:"chat_template_kwargs,omitempty"`
}

// WithTemplateVars returns a copy of c that also sends vars as
// chat_template_kwargs to /apply-template (over c's TemplateVars, a key
// of vars replacing one there). c is unchanged.
func (c *LlamaCpp) WithTemplateVars(vars map[string]any) promptsize.Counter {
	d := *c
	d.TemplateVars = mergeVars(c.TemplateVars, vars)
	return &d
}

type llamaTokenizeRequest struct {
	Content      string `json:"content"`
	AddSpecial   bool   `json:"add_special"`
	ParseSpecial bool   `json:"parse_special"`
}

const llamaSuggest = "expected llama.cpp's server (build with /apply-template); for vLLM or SGLang use remote.VLLM, or count locally with promptsize/hf and the model's tokenizer.json"

// Count renders messages with the server's template and counts the result.
func (c *LlamaCpp) Count(ctx context.Context, messages []promptsize.Message) (int, error) {
	if messages == nil {
		messages = []promptsize.Message{}
	}
	secrets := httpsafe.HeaderSecrets(c.Header)
	body, endpoint, err := post(ctx, c.Client, c.Header, c.Timeout, c.BaseURL, "/apply-template",
		applyTemplateRequest{Messages: messages, AddGenerationPrompt: true, ChatTemplateKwargs: c.TemplateVars}, llamaSuggest)
	if err != nil {
		return 0, err
	}
	prompt, err := parseApplyTemplate(body, httpsafe.RedactBytes(body, secrets...))
	if err != nil {
		return 0, httpsafe.RedactError(fmt.Errorf("remote: %s: %w", endpoint, err), secrets...)
	}
	body, endpoint, err = post(ctx, c.Client, c.Header, c.Timeout, c.BaseURL, "/tokenize",
		llamaTokenizeRequest{Content: prompt, AddSpecial: true, ParseSpecial: true}, llamaSuggest)
	if err != nil {
		return 0, err
	}
	n, err := parseTokenize(body, httpsafe.RedactBytes(body, secrets...))
	if err != nil {
		return 0, httpsafe.RedactError(fmt.Errorf("remote: %s: %w", endpoint, err), secrets...)
	}
	if n == 0 && prompt != "" {
		return 0, fmt.Errorf("remote: %s answered 200 with no tokens for a rendered chat of %d bytes: %w; expected llama.cpp's /tokenize, which counts \"content\"",
			endpoint, len(prompt), ErrNoTokens)
	}
	return n, nil
}

// post sends v as JSON, within timeout (DefaultTimeout when zero, none
// when negative), and returns the body of a 200 answer. Its errors hold no
// credential of header.
func post(ctx context.Context, client *http.Client, header http.Header, timeout time.Duration, base, path string, v any, suggest string) ([]byte, string, error) {
	secrets := httpsafe.HeaderSecrets(header)
	body, endpoint, err := postRaw(ctx, client, header, timeout, base, path, v, suggest, secrets)
	return body, endpoint, httpsafe.RedactError(err, secrets...)
}

func postRaw(ctx context.Context, client *http.Client, header http.Header, timeout time.Duration, base, path string, v any, suggest string, secrets []string) ([]byte, string, error) {
	if client == nil {
		client = &http.Client{CheckRedirect: httpsafe.SameOrigin(secrets...)}
	}
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	url := strings.TrimSuffix(base, "/") + path
	endpoint := "POST " + url
	payload, err := json.Marshal(v)
	if err != nil {
		return nil, endpoint, fmt.Errorf("remote: encoding the request for %s: %w", endpoint, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return nil, endpoint, fmt.Errorf("remote: %s: %w", endpoint, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, endpoint, fmt.Errorf("remote: %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, endpoint, fmt.Errorf("remote: reading the answer of %s: %w", endpoint, err)
	}
	if len(body) > maxBody {
		return nil, endpoint, fmt.Errorf("remote: the answer of %s is over %d bytes; expected a token count", endpoint, maxBody)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed:
		return nil, endpoint, &EndpointError{Endpoint: endpoint, Status: resp.StatusCode, Suggest: suggest}
	case resp.StatusCode != http.StatusOK:
		// Redacted before it is cut (a cut could split a secret) and
		// after, so the excerpt holds no part of one.
		excerpt := string(httpsafe.RedactBytes(body, secrets...))
		if len(excerpt) > 300 {
			excerpt = strings.ToValidUTF8(excerpt[:300], "")
		}
		return nil, endpoint, &StatusError{Endpoint: endpoint, Status: resp.StatusCode, Body: httpsafe.Redact(excerpt, secrets...)}
	}
	return body, endpoint, nil
}

// ParseTokenizeResponse reads the token count from a /tokenize answer:
// "count" (vLLM, SGLang), or the length of "tokens" (llama.cpp, whose items
// are ids or {"id", "piece"} objects). When both are present they must
// agree.
func ParseTokenizeResponse(body []byte) (int, error) {
	return parseTokenize(body, body)
}

// parseTokenize is ParseTokenizeResponse, quoting shown (body redacted) in
// its errors.
func parseTokenize(body, shown []byte) (int, error) {
	var r struct {
		Count  *json.Number      `json:"count"`
		Tokens []json.RawMessage `json:"tokens"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		return 0, fmt.Errorf("decoding the /tokenize answer %.80q: %w; expected a JSON object with count or tokens", shown, err)
	}
	if r.Count == nil && r.Tokens == nil {
		return 0, fmt.Errorf("the /tokenize answer %.80q has neither count nor tokens", shown)
	}
	if r.Count == nil {
		return len(r.Tokens), nil
	}
	n, err := r.Count.Int64()
	if err != nil || n < 0 || n > 1<<40 {
		return 0, fmt.Errorf("the /tokenize answer has count %s; expected a whole number >= 0", r.Count.String())
	}
	if r.Tokens != nil && len(r.Tokens) != int(n) {
		return 0, fmt.Errorf("the /tokenize answer has count %d but %d tokens; expected them to agree", n, len(r.Tokens))
	}
	return int(n), nil
}

// ParseApplyTemplateResponse reads the rendered prompt from llama.cpp's
// /apply-template answer, {"prompt": "..."}.
func ParseApplyTemplateResponse(body []byte) (string, error) {
	return parseApplyTemplate(body, body)
}

// parseApplyTemplate is ParseApplyTemplateResponse, quoting shown (body
// redacted) in its errors.
func parseApplyTemplate(body, shown []byte) (string, error) {
	var r struct {
		Prompt *string `json:"prompt"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return "", fmt.Errorf("decoding the /apply-template answer %.80q: %w; expected {\"prompt\": ...}", shown, err)
	}
	if r.Prompt == nil {
		return "", fmt.Errorf("the /apply-template answer %.80q has no prompt string", shown)
	}
	return *r.Prompt, nil
}
