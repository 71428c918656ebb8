//go:build hftokenizers

package hfcgo

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/daulet/tokenizers"

	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/hf"
)

// A Counter counts chat requests with Hugging Face's Rust tokenizer: the
// messages rendered through hf's ChatTemplate with the generation prompt,
// then encoded without adding special tokens. It is safe for concurrent
// use until Close.
type Counter struct {
	mu       sync.RWMutex // guards tk against Close
	tk       *tokenizers.Tokenizer
	template *hf.ChatTemplate
	opts     hf.RenderOptions
}

var _ promptsize.Counter = (*Counter)(nil)

// ErrClosed is returned by Count after Close.
var ErrClosed = errors.New("hfcgo: counter is closed")

// An Option configures Load.
type Option func(*Counter)

// WithChatTemplate renders with ct instead of the model directory's
// template (see hf.ParseChatTemplate and hf.LoadChatTemplate).
func WithChatTemplate(ct *hf.ChatTemplate) Option {
	return func(c *Counter) { c.template = ct }
}

// WithRenderOptions sets the options Count renders with (tools, a fixed
// date, variables); the generation prompt is always added.
func WithRenderOptions(ro hf.RenderOptions) Option {
	return func(c *Counter) { c.opts = ro }
}

// Load reads dir/tokenizer.json with the Rust library and the chat template
// with hf.LoadChatTemplate (unless WithChatTemplate gives one). A directory
// without a template loads; Count then returns an error wrapping
// hf.ErrNoChatTemplate.
func Load(dir string, opts ...Option) (*Counter, error) {
	c := &Counter{}
	for _, opt := range opts {
		opt(c)
	}
	if c.template == nil {
		ct, err := hf.LoadChatTemplate(dir)
		if err != nil && !errors.Is(err, hf.ErrNoChatTemplate) {
			return nil, err
		}
		c.template = ct
	}
	tk, err := tokenizers.FromFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, fmt.Errorf("hfcgo: loading %s: %w", filepath.Join(dir, "tokenizer.json"), err)
	}
	c.tk = tk
	return c, nil
}

// Encode returns the ids of text without added special tokens.
func (c *Counter) Encode(text string) []int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.tk == nil {
		return nil
	}
	ids, _ := c.tk.Encode(text, false)
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

// Decode returns the text of ids, special tokens included.
func (c *Counter) Decode(ids []int) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.tk == nil {
		return ""
	}
	u := make([]uint32, len(ids))
	for i, id := range ids {
		u[i] = uint32(id)
	}
	return c.tk.Decode(u, false)
}

// Render renders messages through the chat template.
func (c *Counter) Render(messages []promptsize.Message, opts hf.RenderOptions) (string, error) {
	if c.template == nil {
		return "", fmt.Errorf("hfcgo: the model directory declares no chat template: %w", hf.ErrNoChatTemplate)
	}
	return c.template.Render(messages, opts)
}

// Count renders messages with the generation prompt and counts the tokens.
func (c *Counter) Count(ctx context.Context, messages []promptsize.Message) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	opts := c.opts
	opts.AddGenerationPrompt = true
	s, err := c.Render(messages, opts)
	if err != nil {
		return 0, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.tk == nil {
		return 0, ErrClosed
	}
	ids, _ := c.tk.Encode(s, false)
	return len(ids), nil
}

// Close releases the native tokenizer. Count fails with ErrClosed after it.
func (c *Counter) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tk == nil {
		return nil
	}
	err := c.tk.Close()
	c.tk = nil
	return err
}
