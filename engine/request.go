package engine

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/inferbench/inferbench/promptsize"
)

// A Message is one turn of a chat request: Role ("system", "user",
// "assistant" or "tool") and Content. It is promptsize.Message itself, so
// the messages of a built prompt (promptsize.Prompt.Messages) go into a
// Request as they are, and an engine's token counter takes what a
// promptsize.Counter takes.
type Message = promptsize.Message

// A Request is one completion to send: a chat completion of Messages, or,
// when Prompt is set, a text completion of a prompt that is not chat
// messages. The zero value of every optional field means "not set": the
// adapter leaves it out of the request body and the server applies its own
// default.
type Request struct {
	// Model is the model id exactly as the engine expects it (for exo the
	// full Hugging Face id of a running instance's model).
	Model string
	// Messages are the chat turns, in order. They must be empty when
	// Prompt is set.
	Messages []Message
	// Prompt, when not nil, makes the request a text completion (the
	// OpenAI /v1/completions endpoint): the server applies no chat template
	// and counts the prompt as it is. Nil means a chat completion of
	// Messages. An adapter whose server has no completions endpoint (exo)
	// refuses such a request before sending anything.
	Prompt *Prompt
	// MaxTokens bounds the number of generated tokens (max_tokens). Zero
	// leaves it to the server; exo then generates up to 32168 tokens on the
	// bench path, where end-of-sequence is banned.
	MaxTokens int
	// Stream asks for a Server-Sent Events response, which gives the client
	// per-chunk arrival times (TTFT, ITL). Without it the trace has a start,
	// headers and an end, but no chunks.
	Stream bool
	// UsePrefixCache lets the engine reuse a cached prefix of the prompt
	// (exo's use_prefix_cache on the bench path, which is off by default).
	// Engines that cache prefixes automatically ignore it; use a per-request
	// salt in the prompt to defeat them.
	UsePrefixCache bool
	// IgnoreEOS asks for bench semantics: end-of-sequence is banned, so the
	// request generates exactly MaxTokens tokens unless a Stop string
	// matches. The exo adapter sends such requests to /bench/chat/completions;
	// OpenAI-compatible adapters send ignore_eos (vLLM, SGLang, llama.cpp).
	IgnoreEOS bool
	// MinTokens asks the server to generate at least this many tokens
	// before it may stop (vLLM's min_tokens). Zero leaves it out.
	MinTokens int

	// Temperature, TopP, TopK and Seed are sampling parameters. Nil leaves
	// them to the server's defaults (exo: the model card's, then 0.7, 1.0,
	// 0 and seed 42).
	Temperature *float64
	TopP        *float64
	TopK        *int
	Seed        *int64
	// Stop are stop strings; a match ends generation early, even on exo's
	// bench path.
	Stop []string

	// Thinking controls a reasoning model's thinking; nil sends no
	// control, leaving it to the server and the template's defaults.
	Thinking *Thinking

	// Extra holds request body fields this type does not name. Adapters
	// marshal each value with encoding/json and add it to the body; a key
	// that names a field the adapter already writes replaces that field.
	Extra map[string]any
	// Header holds request-scoped HTTP headers, sent in addition to the
	// adapter's own (for example engine/sim's fault-injection header).
	Header http.Header
}

// Thinking is the control of a reasoning model's thinking, as a request
// carries it. Each adapter sends what its server takes (see its package
// doc): the chat template's switch (chat_template_kwargs enable_thinking
// and thinking), gpt-oss's reasoning_effort, a thinking-token budget where
// the server has one, Ollama's think. The prompt Builder renders the chat
// template with TemplateVars, the variables the request makes the server
// render with, so that a prompt's count stays exact whatever the switch.
type Thinking struct {
	// Enabled turns thinking on or off where the template or the server
	// has a switch; nil leaves the default.
	Enabled *bool
	// Effort is the reasoning effort, "low", "medium" or "high"
	// (gpt-oss's reasoning_effort, Ollama's think level); empty leaves
	// the default.
	Effort string
	// Budget bounds the reasoning tokens where the server takes a bound;
	// 0 sets none.
	Budget int
}

// TemplateVars returns the chat template variables t makes a server render
// with: enable_thinking and thinking (Qwen3, DeepSeek V3.1, GLM and the
// like) when Enabled is set, reasoning_effort (gpt-oss) when Effort is. A
// nil t, or one with neither, returns nil.
func (t *Thinking) TemplateVars() map[string]any {
	if t == nil || (t.Enabled == nil && t.Effort == "") {
		return nil
	}
	v := map[string]any{}
	if t.Enabled != nil {
		v["enable_thinking"], v["thinking"] = *t.Enabled, *t.Enabled
	}
	if t.Effort != "" {
		v["reasoning_effort"] = t.Effort
	}
	return v
}

// A Prompt is the prompt of a text completion: token ids or raw text,
// exactly one of them. Token ids are what a workload of exact token blocks
// sends: the server takes them as they are, so the prompt is exactly
// len(Tokens) tokens and two prompts share a prefix exactly where their
// ids do. Text is tokenized by the server without a chat template.
type Prompt struct {
	// Tokens are the prompt's token ids, sent as a JSON array of integers.
	Tokens []int
	// Text is the prompt as text, sent as a JSON string.
	Text string
}

// Check reports a prompt that cannot be sent: neither or both of Tokens
// and Text, or a negative token id. The error says what was found.
func (p *Prompt) Check() error {
	switch {
	case p == nil:
		return nil
	case len(p.Tokens) == 0 && p.Text == "":
		return errors.New("engine: the completion prompt is empty: want Tokens or Text")
	case len(p.Tokens) > 0 && p.Text != "":
		return fmt.Errorf("engine: the completion prompt has %d token ids and %d bytes of text: want one of them", len(p.Tokens), len(p.Text))
	}
	for i, id := range p.Tokens {
		if id < 0 {
			return fmt.Errorf("engine: the completion prompt's token id %d (at %d) is negative: want ids ≥ 0", id, i)
		}
	}
	return nil
}
