package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"

	"github.com/inferbench/inferbench/promptsize"
)

// The reasoning mode: the served model thinks before it answers. See the
// package documentation's Reasoning section.

// Defaults of the reasoning mode's drawn thinking length.
const (
	// DefaultThinkingMin is the shortest drawn thinking, in tokens.
	DefaultThinkingMin = 64
	// DefaultThinkingMax is the longest drawn thinking, in tokens.
	DefaultThinkingMax = 256
)

// EmptyThinkTokens is the number of tokens of the empty thinking block
// the built-in chat template writes after the generation prompt when a
// request turns thinking off (enable_thinking or thinking false), as
// Qwen3's template does: <think> "\n\n" </think> "\n\n", the two tags
// being special tokens of the built-in vocabulary.
const EmptyThinkTokens = 4

// The reasoning markers a model generates around its thinking.
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// Token ids of the thinking tags in the built-in vocabulary (the ordinary
// ids start at 256).
const (
	tokThink    = 5
	tokThinkEnd = 6
)

// A ReasoningAPI names whose reasoning shape the OpenAI-compatible API at
// Server.VLLMURL speaks in the reasoning mode.
type ReasoningAPI string

// The reasoning shapes of the OpenAI-compatible API.
const (
	// ReasoningVLLM is vLLM's: delta.reasoning_content before 0.11,
	// delta.reasoning from 0.11 (ReasoningOptions.VLLMVersion), and
	// usage.completion_tokens_details.reasoning_tokens from
	// VLLMReasoningTokensVersion; a budget is thinking_token_budget.
	ReasoningVLLM ReasoningAPI = "vllm"
	// ReasoningSGLang is SGLang's: delta.reasoning_content and
	// usage.reasoning_tokens (at the top of usage, as SGLang's UsageInfo
	// has it); a budget is custom_params.thinking_budget.
	ReasoningSGLang ReasoningAPI = "sglang"
	// ReasoningOllama is Ollama's OpenAI-compatible API's: delta.reasoning,
	// reasoning_effort (or reasoning.effort) for think, no budget and no
	// reasoning count in usage.
	ReasoningOllama ReasoningAPI = "ollama"
)

// ParseReasoningAPI reads a reasoning shape as a flag gives it: "" (the
// default: SGLang's with MetricsSGLang, vLLM's otherwise), "vllm",
// "sglang" or "ollama".
func ParseReasoningAPI(s string) (ReasoningAPI, error) {
	switch a := ReasoningAPI(strings.ToLower(strings.TrimSpace(s))); a {
	case "", ReasoningVLLM, ReasoningSGLang, ReasoningOllama:
		return a, nil
	}
	return "", fmt.Errorf("sim: reasoning API %q: expected vllm, sglang, ollama, or empty for the metrics mode's", s)
}

// VLLMReasoningVersion is the first vLLM release whose stream names the
// reasoning delta "reasoning" (vllm-project/vllm#27752 renamed
// reasoning_content; docs of 0.11.2 name only reasoning).
const VLLMReasoningVersion = "0.11"

// VLLMReasoningTokensVersion is the first vLLM release taken to report
// usage.completion_tokens_details.reasoning_tokens: vllm-project/vllm#45802
// (merged 2026-06) counts the reasoning parser's tokens, boundary tokens
// excluded, while vllm-project/vllm#50895 found 0.25 without it.
const VLLMReasoningTokensVersion = "0.26"

// ReasoningOptions configure the reasoning mode. The zero value is off:
// the server answers at once, as it always has.
type ReasoningOptions struct {
	// Enabled turns the mode on: every chat request thinks first, unless
	// it turns thinking off.
	Enabled bool
	// MinTokens and MaxTokens bound the thinking length drawn for each
	// request, in tokens (0 means DefaultThinkingMin and
	// DefaultThinkingMax). The draw is a function of the prompt's token
	// identities, the request's seed and Seed, as a request's natural
	// length is.
	MinTokens, MaxTokens int
	// Seed salts the draw of thinking lengths.
	Seed uint64
	// API is the reasoning shape of the OpenAI-compatible API at VLLMURL:
	// ReasoningVLLM, ReasoningSGLang or ReasoningOllama; empty means
	// SGLang's with MetricsSGLang, vLLM's otherwise.
	API ReasoningAPI
	// VLLMVersion is the vLLM release ReasoningVLLM imitates, "0.10.2"
	// or "0.11" (major.minor[.patch]); empty means the newest.
	VLLMVersion string
	// HiddenMarkers frames the thinking with <think> and </think>, one
	// generated token each: they take decode steps and count in
	// completion_tokens (Ollama's eval_count, llama.cpp's predicted_n) but
	// no reasoning parser sends them (vLLM's and SGLang's parsers, exo's
	// parse_thinking_models and Ollama's thinking parser all swallow
	// them), so a stream carries two tokens fewer than its usage. exo's
	// bench path, which runs no parser, sends them as content. Off, the
	// thinking is its reasoning tokens alone and every generated token is
	// sent.
	HiddenMarkers bool
}

func (o ReasoningOptions) bounds() (lo, hi int) {
	return orDefault(o.MinTokens, DefaultThinkingMin), orDefault(o.MaxTokens, DefaultThinkingMax)
}

// check reports options no server can run with.
func (o ReasoningOptions) check() error {
	if o.MinTokens < 0 || o.MaxTokens < 0 {
		return fmt.Errorf("sim: Reasoning MinTokens=%d, MaxTokens=%d: expected both ≥ 0", o.MinTokens, o.MaxTokens)
	}
	if lo, hi := o.bounds(); lo > hi {
		return fmt.Errorf("sim: Reasoning thinking range %d..%d: expected MinTokens ≤ MaxTokens", lo, hi)
	}
	if _, err := ParseReasoningAPI(string(o.API)); err != nil {
		return err
	}
	if o.VLLMVersion != "" {
		if _, err := parseVersion(o.VLLMVersion); err != nil {
			return err
		}
	}
	return nil
}

// parseVersion reads "major.minor[.patch...]" (a leading "v" allowed) as
// major·1000 + minor, for comparing releases.
func parseVersion(s string) (int, error) {
	parts := strings.Split(strings.TrimPrefix(strings.TrimSpace(s), "v"), ".")
	if len(parts) < 2 {
		return 0, fmt.Errorf("sim: vLLM version %q: expected major.minor, e.g. 0.10.2", s)
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || major < 0 || minor < 0 || minor >= 1000 {
		return 0, fmt.Errorf("sim: vLLM version %q: expected major.minor, e.g. 0.10.2", s)
	}
	return major*1000 + minor, nil
}

// versionAtLeast reports whether the configured vLLM release is v or
// later; the newest (no version) is later than any.
func (o ReasoningOptions) versionAtLeast(v string) bool {
	if o.VLLMVersion == "" {
		return true
	}
	have, _ := parseVersion(o.VLLMVersion)
	want, _ := parseVersion(v)
	return have >= want
}

// reasoningAPI is the shape of the OpenAI-compatible API.
func (s *Server) reasoningAPI() ReasoningAPI {
	switch {
	case s.opts.Reasoning.API != "":
		return s.opts.Reasoning.API
	case s.opts.Metrics == MetricsSGLang:
		return ReasoningSGLang
	}
	return ReasoningVLLM
}

// reasoningField is the delta (and message) field of the OpenAI API's
// reasoning text.
func (s *Server) reasoningField() string {
	switch s.reasoningAPI() {
	case ReasoningSGLang:
		return "reasoning_content"
	case ReasoningOllama:
		return "reasoning"
	}
	if s.opts.Reasoning.versionAtLeast(VLLMReasoningVersion) {
		return "reasoning"
	}
	return "reasoning_content"
}

// effortScale scales the drawn thinking length by reasoning effort
// ("medium", or none given, keeps it).
var effortScale = map[string]float64{
	"minimal": 0.125,
	"low":     0.25,
	"medium":  1,
	"high":    2,
	"xhigh":   4,
	"max":     4,
}

// validEffort reports whether e is an effort the server knows ("none"
// turns thinking off).
func validEffort(e string) bool {
	_, ok := effortScale[e]
	return ok || e == "none"
}

const effortList = "none, minimal, low, medium, high, xhigh or max"

// thinkControl is what a request asks of the thinking, in any dialect.
type thinkControl struct {
	off    bool           // thinking turned off
	effort string         // "" or a key of effortScale
	budget int            // the most reasoning tokens; -1: no bound
	vars   map[string]any // the chat template variables the server renders with
}

func noControl() thinkControl { return thinkControl{budget: -1} }

// setVar records a template variable.
func (c *thinkControl) setVar(k string, v any) {
	if c.vars == nil {
		c.vars = map[string]any{}
	}
	c.vars[k] = v
}

// falseVar reports whether v is the boolean false.
func falseVar(v any) bool {
	b, ok := v.(bool)
	return ok && !b
}

// thinkingOffVars reports whether template variables turn thinking off:
// enable_thinking false (Qwen3, GLM) or thinking false (DeepSeek V3.1,
// Kimi, Granite).
func thinkingOffVars(vars map[string]any) bool {
	return falseVar(vars["enable_thinking"]) || falseVar(vars["thinking"])
}

// present reports whether a raw JSON field was given and not null.
func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && string(raw) != "null"
}

// parseEffort reads a reasoning_effort value: a string the server knows,
// or null.
func parseEffort(raw json.RawMessage) (string, error) {
	if !present(raw) {
		return "", nil
	}
	var e string
	if err := json.Unmarshal(raw, &e); err != nil || !validEffort(e) {
		return "", fmt.Errorf("reasoning_effort: expected %s, found %.40s", effortList, raw)
	}
	return e, nil
}

// parseBudget reads a budget: an integer, or null; a negative one is no
// bound.
func parseBudget(name string, raw json.RawMessage) (int, error) {
	if !present(raw) {
		return -1, nil
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		return -1, fmt.Errorf("%s: expected an integer number of tokens, found %.40s", name, raw)
	}
	if n < 0 {
		return -1, nil
	}
	return int(min(n, math.MaxInt32)), nil
}

// applyEffort folds an effort into c: "none" turns thinking off, as
// SGLang, Ollama and exo read it (SGLang and exo then render the template
// with the switch off).
func (c *thinkControl) applyEffort(e string) {
	if e == "" {
		return
	}
	c.effort = e
	c.setVar("reasoning_effort", e)
	if e == "none" {
		c.off = true
		for _, k := range []string{"enable_thinking", "thinking"} {
			if _, set := c.vars[k]; !set {
				c.setVar(k, false)
			}
		}
	}
}

// reasoningFields are the request fields of the thinking controls, in
// every dialect's spelling.
type reasoningFields struct {
	ChatTemplateKwargs  json.RawMessage `json:"chat_template_kwargs"`
	ReasoningEffort     json.RawMessage `json:"reasoning_effort"`
	Reasoning           json.RawMessage `json:"reasoning"`
	EnableThinking      json.RawMessage `json:"enable_thinking"`
	ThinkingTokenBudget json.RawMessage `json:"thinking_token_budget"`
	ThinkingBudgetToks  json.RawMessage `json:"thinking_budget_tokens"`
	CustomParams        json.RawMessage `json:"custom_params"`
}

// kwargs reads chat_template_kwargs: an object, or null.
func (f reasoningFields) kwargs() (map[string]any, error) {
	if !present(f.ChatTemplateKwargs) {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(f.ChatTemplateKwargs, &m); err != nil {
		return nil, fmt.Errorf("chat_template_kwargs: expected an object, found %.40s", f.ChatTemplateKwargs)
	}
	return m, nil
}

// openAIControl reads the controls of the OpenAI-compatible API at
// VLLMURL, as the shape api takes them: vLLM's chat_template_kwargs,
// reasoning_effort and thinking_token_budget; SGLang's
// chat_template_kwargs, reasoning_effort (or reasoning.effort) and
// custom_params.thinking_budget; Ollama's reasoning_effort (or
// reasoning.effort).
func openAIControl(api ReasoningAPI, f reasoningFields) (thinkControl, error) {
	c := noControl()
	if api != ReasoningOllama {
		kw, err := f.kwargs()
		if err != nil {
			return c, err
		}
		for k, v := range kw {
			c.setVar(k, v)
		}
		c.off = thinkingOffVars(kw)
	}
	effort, err := parseEffort(f.ReasoningEffort)
	if err != nil {
		return c, err
	}
	if api != ReasoningVLLM && present(f.Reasoning) {
		var r struct {
			Effort json.RawMessage `json:"effort"`
		}
		if json.Unmarshal(f.Reasoning, &r) == nil && present(r.Effort) {
			if effort, err = parseEffort(r.Effort); err != nil {
				return c, err
			}
		}
	}
	c.applyEffort(effort)
	switch api {
	case ReasoningVLLM:
		c.budget, err = parseBudget("thinking_token_budget", f.ThinkingTokenBudget)
	case ReasoningSGLang:
		if present(f.CustomParams) {
			var cp struct {
				ThinkingBudget json.RawMessage `json:"thinking_budget"`
			}
			if json.Unmarshal(f.CustomParams, &cp) != nil {
				return c, fmt.Errorf("custom_params: expected an object, found %.40s", f.CustomParams)
			}
			c.budget, err = parseBudget("custom_params.thinking_budget", cp.ThinkingBudget)
		}
	}
	return c, err
}

// exoControl reads exo's controls, enable_thinking and reasoning_effort,
// resolved as exo's resolve_reasoning_params does: enable_thinking alone
// means effort medium (true) or none (false), an effort alone means
// thinking unless it is none; the template gets enable_thinking,
// thinking and reasoning_effort (utils_mlx.apply_chat_template).
func exoControl(f reasoningFields) (thinkControl, error) {
	c := noControl()
	var enabled *bool
	if present(f.EnableThinking) {
		var b bool
		if err := json.Unmarshal(f.EnableThinking, &b); err != nil {
			return c, fmt.Errorf("enable_thinking: expected a boolean, found %.40s", f.EnableThinking)
		}
		enabled = &b
	}
	effort, err := parseEffort(f.ReasoningEffort)
	if err != nil {
		return c, err
	}
	switch {
	case effort == "" && enabled != nil && *enabled:
		effort = "medium"
	case effort == "" && enabled != nil:
		effort = "none"
	case effort != "" && enabled == nil:
		on := effort != "none"
		enabled = &on
	}
	if enabled != nil {
		c.setVar("enable_thinking", *enabled)
		c.setVar("thinking", *enabled)
		c.off = !*enabled
	}
	if effort != "" {
		c.effort = effort
		c.setVar("reasoning_effort", effort)
	}
	return c, nil
}

// llamaCppControl reads llama.cpp's: chat_template_kwargs and
// thinking_budget_tokens (-1, the default, no bound).
func llamaCppControl(f reasoningFields) (thinkControl, error) {
	c := noControl()
	kw, err := f.kwargs()
	if err != nil {
		return c, err
	}
	for k, v := range kw {
		c.setVar(k, v)
	}
	c.off = thinkingOffVars(kw)
	c.budget, err = parseBudget("thinking_budget_tokens", f.ThinkingBudgetToks)
	return c, err
}

// ollamaThink is api.ThinkValue: true, false, or a level.
type ollamaThink struct{ value any }

// UnmarshalJSON reads a think value as Ollama's ThinkValue does, with its
// error messages.
func (t *ollamaThink) UnmarshalJSON(data []byte) error {
	var b bool
	if err := json.Unmarshal(data, &b); err == nil {
		t.value = b
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		if s != "high" && s != "medium" && s != "low" && s != "max" {
			return fmt.Errorf("invalid think value: %q (must be \"high\", \"medium\", \"low\", \"max\", true, or false)", s)
		}
		t.value = s
		return nil
	}
	return fmt.Errorf("think must be a boolean or string (\"high\", \"medium\", \"low\", \"max\", true, or false)")
}

// ollamaControl reads Ollama's think: false turns thinking off, true (or
// none given: Ollama thinks by default with a thinking model) leaves it
// on, a level is an effort ("max" is "high", as ChatHandler maps it).
func ollamaControl(t *ollamaThink) thinkControl {
	c := noControl()
	if t == nil {
		return c
	}
	switch v := t.value.(type) {
	case bool:
		c.setVar("enable_thinking", v)
		c.setVar("thinking", v)
		c.off = !v
	case string:
		if v == "max" {
			v = "high"
		}
		c.effort = v
		c.setVar("reasoning_effort", v)
	}
	return c
}

// thinkPlan is where a request's thinking falls among its generated
// tokens: with markers, <think> first and </think> after the n reasoning
// tokens; the answer after. The zero plan has no thinking.
type thinkPlan struct {
	on      bool // a thinking phase
	n       int  // reasoning tokens, markers excluded
	markers bool
}

// span is the thinking phase's tokens, markers included.
func (p thinkPlan) span() int {
	if !p.on {
		return 0
	}
	if p.markers {
		return p.n + 2
	}
	return p.n
}

// tokenKind is what a generated token is to a stream.
type tokenKind uint8

const (
	tokAnswer tokenKind = iota
	tokReasoning
	tokMarker // <think> or </think>: generated, counted, sent by no parser
)

// kind is the kind of the i-th generated token (from 0).
func (p thinkPlan) kind(i int) tokenKind {
	switch {
	case !p.on || i >= p.span():
		return tokAnswer
	case p.markers && (i == 0 || i == p.n+1):
		return tokMarker
	}
	return tokReasoning
}

// word is the text of the i-th generated token of a request with seed:
// the thinking tags where they fall, a generated word otherwise.
func (p thinkPlan) word(vocab []string, seed uint64, i int) string {
	if p.kind(i) == tokMarker {
		if i == 0 {
			return thinkOpen
		}
		return thinkClose
	}
	return generatedWord(vocab, seed, i)
}

// wordFunc is word for one request.
func (p thinkPlan) wordFunc(vocab []string, seed uint64) func(int) string {
	return func(i int) string { return p.word(vocab, seed, i) }
}

// promptHash is FNV-1a over a prompt's token identities.
func promptHash(ids []int) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, id := range ids {
		for i := range b {
			b[i] = byte(id >> (8 * i))
		}
		h.Write(b[:])
	}
	return h.Sum64()
}

// thinkSalt keeps the thinking draw apart from the natural length's.
const thinkSalt = 0x7468696e6b696e67 // "thinking"

// plan draws a request's thinking: none when the mode is off or the
// request turned thinking off; else
//
//	n₀ = MinTokens + splitmix64(FNV-1a(prompt ids) xor seed xor splitmix64(Seed xor salt)) mod (MaxTokens − MinTokens + 1)
//	n  = min(max(1, round(n₀ · scale(effort))), budget)
//
// with scale minimal 1/8, low 1/4, medium 1, high 2, xhigh and max 4.
func (o ReasoningOptions) plan(c thinkControl, ids []int, seed uint64) thinkPlan {
	if !o.Enabled || c.off {
		return thinkPlan{}
	}
	lo, hi := o.bounds()
	n := lo + int(mix(promptHash(ids)^seed^mix(o.Seed^thinkSalt))%uint64(hi-lo+1))
	if f, ok := effortScale[c.effort]; ok && f != 1 {
		n = max(1, int(math.Round(float64(n)*f)))
	}
	if c.budget >= 0 {
		n = min(n, c.budget)
	}
	return thinkPlan{on: true, n: n, markers: o.HiddenMarkers}
}

// templateVarser is a Counter that renders its chat template with extra
// variables (the promptsize/hf Tokenizer and the built-in Counter are).
type templateVarser interface {
	WithTemplateVars(vars map[string]any) promptsize.Counter
}

// counterFor is the server's Counter for a request whose template
// variables are vars.
func (s *Server) counterFor(vars map[string]any) promptsize.Counter {
	if len(vars) > 0 {
		if tv, ok := s.counter.(templateVarser); ok {
			return tv.WithTemplateVars(vars)
		}
	}
	return s.counter
}

// countChat counts a chat's prompt tokens as the server renders it with
// the request's template variables.
func (s *Server) countChat(ctx context.Context, msgs []promptsize.Message, vars map[string]any) (int, error) {
	return s.counterFor(vars).Count(ctx, msgs)
}

// emptyThinkIDs are the built-in ids of the empty thinking block.
func emptyThinkIDs() []int {
	nl2 := tokenID("\n\n")
	return []int{tokThink, nl2, tokThinkEnd, nl2}
}

// chatIDs are a chat's token identities under the built-in template
// rendered with vars: the empty thinking block after the generation
// prompt when they turn thinking off.
func chatIDs(msgs []promptsize.Message, vars map[string]any) []int {
	ids := templateIDs(msgs)
	if thinkingOffVars(vars) {
		ids = append(ids, emptyThinkIDs()...)
	}
	return ids
}

// WithTemplateVars returns the Counter that renders the built-in chat
// template with vars, as a server does with a request's
// chat_template_kwargs: when enable_thinking or thinking is false the
// template writes the empty thinking block, EmptyThinkTokens tokens,
// after the generation prompt; other variables change nothing. The result
// keeps every method of Counter.
func (c Counter) WithTemplateVars(vars map[string]any) promptsize.Counter {
	return Counter{thinkOff: thinkingOffVars(vars)}
}

// WithTemplateVars is Counter.WithTemplateVars with the LlamaCpp
// profile's BOS.
func (c llamaCppCounter) WithTemplateVars(vars map[string]any) promptsize.Counter {
	return llamaCppCounter{Counter{thinkOff: thinkingOffVars(vars)}}
}

var (
	_ templateVarser = Counter{}
	_ templateVarser = llamaCppCounter{}
)

// kindAt is the kind the dialect sends the n-th generated token (from 1)
// as: exo's bench path runs no output parser, so its thinking is content
// and its tags are visible text; exo's parse_thinking_models sends the
// token that carries the finish reason as content whatever it is.
func (rs *response) kindAt(n int) tokenKind {
	p := rs.j.think
	if !p.on || rs.bench {
		return tokAnswer
	}
	if rs.d == dialectExo && n >= rs.j.target {
		return tokAnswer
	}
	return p.kind(n - 1)
}

// reasoningSent counts the first generated tokens the dialect sends as
// reasoning: what the servers that report it count (markers excluded).
func (rs *response) reasoningSent(generated int) int {
	k := 0
	for n := 1; n <= generated; n++ {
		if rs.kindAt(n) == tokReasoning {
			k++
		}
	}
	return k
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// reasoningKey is the dialect's field of a reasoning delta or message:
// exo's reasoning_content (chat_completions.py, chunk_to_response), the
// OpenAI API's by its shape.
func (rs *response) reasoningKey() string {
	if rs.d == dialectExo {
		return "reasoning_content"
	}
	return rs.s.reasoningField()
}

// reasoningUsage adds to a final usage what the dialect reports of the
// reasoning, generated tokens in: exo's completion_tokens_details (its
// count_reasoning_tokens), vLLM's completion_tokens_details from
// VLLMReasoningTokensVersion, SGLang's usage.reasoning_tokens; Ollama's
// OpenAI API reports none.
func (rs *response) reasoningUsage(u map[string]any, generated int) {
	if rs.completion {
		return
	}
	n := rs.reasoningSent(generated)
	switch {
	case rs.d == dialectExo:
		if d, ok := u["completion_tokens_details"].(map[string]int); ok {
			d["reasoning_tokens"] = n
		}
	case rs.s.reasoningAPI() == ReasoningSGLang:
		u["reasoning_tokens"] = n
	case rs.s.reasoningAPI() == ReasoningVLLM && rs.s.opts.Reasoning.versionAtLeast(VLLMReasoningTokensVersion):
		u["completion_tokens_details"] = map[string]int{"reasoning_tokens": n}
	}
}
