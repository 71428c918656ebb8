package hf_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/hf"
)

// A SentencePiece-style tokenizer small enough to read: spaces become "▁",
// and two merges build "▁hi".
const tokenizerJSON = `{
  "added_tokens": [{"id": 0, "content": "<s>", "special": true}],
  "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
  "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}]},
  "model": {
    "type": "BPE", "unk_token": "<unk>",
    "vocab": {"<s>": 0, "<unk>": 1, "▁": 2, "h": 3, "i": 4, "▁h": 5, "▁hi": 6, "!": 7},
    "merges": [["▁", "h"], ["▁h", "i"]]
  }
}`

const configJSON = `{
  "bos_token": "<s>",
  "chat_template": "{{ bos_token }}{% for m in messages %}{{ ' ' + m.content }}{% endfor %}{% if add_generation_prompt %}!{% endif %}"
}`

func Example() {
	tok, err := hf.New([]byte(tokenizerJSON), []byte(configJSON))
	if err != nil {
		fmt.Println(err)
		return
	}
	ids := tok.Encode(" hi!")
	fmt.Println(ids, tok.Decode(ids))

	msgs := []promptsize.Message{{Role: "user", Content: "hi"}}
	text, _ := tok.Render(msgs, hf.RenderOptions{AddGenerationPrompt: true})
	n, _ := tok.Count(context.Background(), msgs)
	fmt.Printf("%q is %d tokens: %v\n", text, n, tok.Encode(text))
	// Output:
	// [6 7]  hi!
	// "<s> hi!" is 3 tokens: [0 6 7]
}

// A model directory from the Hugging Face hub (tokenizer.json and
// tokenizer_config.json; testdata/tiny-model is a small one) loads with
// Load, and its chat template comes from tokenizer_config.json (or
// chat_template.jinja beside it).
func ExampleLoad() {
	tok, err := hf.Load("testdata/tiny-model")
	if err != nil {
		fmt.Println(err)
		return
	}
	msgs := []promptsize.Message{{Role: "user", Content: "Hello"}}
	text, err := tok.Render(msgs, hf.RenderOptions{AddGenerationPrompt: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	n, err := tok.Count(context.Background(), msgs)
	fmt.Printf("%q: %d tokens, err %v\n", text, n, err)
	// Output: "<s><|user|>Hello\n<|assistant|>": 9 tokens, err <nil>
}

// A model that ships its chat template as a separate file (gpt-oss does)
// gets it with WithChatTemplateFile, whose relative path is relative to
// the working directory, not to the model directory.
func ExampleWithChatTemplateFile() {
	dir, err := os.MkdirTemp("", "chat-template")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "template.jinja")
	src := "{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}<|end|>\n{% endfor %}" +
		"{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	tok, err := hf.Load("testdata/tiny-model", hf.WithChatTemplateFile(file))
	if err != nil {
		fmt.Println(err)
		return
	}
	msgs := []promptsize.Message{{Role: "user", Content: "Hello"}}
	text, err := tok.Render(msgs, hf.RenderOptions{AddGenerationPrompt: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	n, err := tok.Count(context.Background(), msgs)
	fmt.Printf("%q: %d tokens, err %v\n", text, n, err)
	// Output: "<|user|>\nHello<|end|>\n<|assistant|>\n": 17 tokens, err <nil>
}
