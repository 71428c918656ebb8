// Package hf is a pure-Go Hugging Face tokenizer and chat-template Counter:
// it loads a model directory (tokenizer.json, tokenizer_config.json,
// optional chat_template.jinja), encodes text exactly as Hugging Face's
// tokenizers library does, and counts chat requests as a serving engine
// does — messages rendered through the chat template with the generation
// prompt, then tokenized without adding special tokens.
//
// *Tokenizer implements promptsize.Counter.
package hf
