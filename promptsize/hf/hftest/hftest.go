// Package hftest writes small, valid Hugging Face tokenizer directories for
// tests: a program that takes --tokenizer DIR can be tested with a real
// tokenizer.json and chat template, and with a corrupt one, without
// downloading anything. Load them with hf.Load.
package hftest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TinyOverhead is the chat template overhead of the tokenizer WriteTokenizer
// writes: "<|im_start|>" "user\n" "<|im_end|>" "\n" "<|im_start|>"
// "assistant\n", one token per byte and one per special token:
// 1 + 5 + 1 + 1 + 1 + 10.
const TinyOverhead = 19

// WriteTokenizer writes a small, valid Hugging Face tokenizer into a new
// directory and returns it: a byte-level BPE with no merges (one token per
// byte of text), two special tokens and a ChatML template.
func WriteTokenizer(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	// GPT-2's bytes_to_unicode: printable bytes stand for themselves, the
	// others for 256 + n in order.
	printable := func(b int) bool { return '!' <= b && b <= '~' || 0xA1 <= b && b <= 0xAC || 0xAE <= b && b <= 0xFF }
	vocab := map[string]int{}
	n := 0
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !printable(b) {
			r = rune(256 + n)
			n++
		}
		vocab[string(r)] = b
	}
	byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
	files := map[string]any{
		"tokenizer.json": map[string]any{
			"version": "1.0",
			"added_tokens": []any{
				map[string]any{"id": 256, "content": "<|im_start|>", "special": true},
				map[string]any{"id": 257, "content": "<|im_end|>", "special": true},
			},
			"pre_tokenizer": byteLevel, "decoder": byteLevel,
			"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": []any{}},
		},
		"tokenizer_config.json": map[string]any{
			"chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}" +
				"{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
		},
	}
	for name, v := range files {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// WriteCorruptTokenizer writes the tokenizer of WriteTokenizer with its
// tokenizer.json cut in half, as an interrupted download leaves it.
func WriteCorruptTokenizer(t testing.TB) string {
	t.Helper()
	dir := WriteTokenizer(t)
	p := filepath.Join(dir, "tokenizer.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
