package sim

import (
	"context"
	"strings"

	"github.com/inferbench/inferbench/promptsize"
)

// The LlamaCpp profile's chat template and tokenizer: the built-in
// tokenizer (Tokenize) with special tokens that llama.cpp's tokenizer
// parses whole (tokenize_mixed with parse_special, the default of
// /tokenize and of every prompt), and a ChatML template with a BOS:
//
//	<|begin_of_text|>                                  the template's BOS
//	<|im_start|>{role}<|im_sep|>{content}<|im_end|>\n  per message
//	<|im_start|>assistant<|im_sep|>                    the generation prompt
//
// Each piece between two special tokens is tokenized alone, so a message
// costs MessageOverheadTokens + CountText(content) tokens and the
// generation prompt GenerationPromptTokens, as the built-in Counter
// counts; the server adds the BOS, so a chat's prompt_tokens is the
// built-in count + 1.
//
// The BOS: as llama.cpp's common/chat.cpp does, the rendered template
// loses its leading BOS when the vocabulary adds one
// (tokenizer.ggml.add_bos_token = true, LlamaCppOptions.NoAddBOS false),
// and the server adds it back when it tokenizes the prompt with
// add_special (tools/server/server-context.cpp, tokenize_input_prompts).
// Without add_bos the template keeps its BOS text, which parse_special
// reads as the BOS token. Either way a chat's tokens are the BOS and the
// template's body; what differs is what /apply-template returns, and so
// what a client counts with /tokenize: with add_bos, /tokenize without
// add_special is one short.
const (
	lcBOSText     = "<|begin_of_text|>"
	lcIMStartText = "<|im_start|>"
	lcIMSepText   = "<|im_sep|>"
	lcIMEndText   = "<|im_end|>"
)

// Token ids of the profile's special tokens (the built-in tokenizer's
// ordinary ids start at 256).
const (
	tokBOS   = 3
	tokIMSep = 4
)

// lcSpecial are the special tokens parse_special recognises, with their
// ids.
var lcSpecial = []struct {
	text string
	id   int
}{
	{lcBOSText, tokBOS},
	{lcIMStartText, tokIMStart},
	{lcIMSepText, tokIMSep},
	{lcIMEndText, tokIMEnd},
}

// lcRender renders messages through the profile's chat template with the
// generation prompt, with the template's BOS text or without it.
func lcRender(msgs []promptsize.Message, bos bool) string {
	var b strings.Builder
	if bos {
		b.WriteString(lcBOSText)
	}
	for _, m := range msgs {
		b.WriteString(lcIMStartText)
		b.WriteString(m.Role)
		b.WriteString(lcIMSepText)
		b.WriteString(m.Content)
		b.WriteString(lcIMEndText)
		b.WriteString("\n")
	}
	b.WriteString(lcIMStartText)
	b.WriteString("assistant")
	b.WriteString(lcIMSepText)
	return b.String()
}

// lcTokenize tokenizes text as llama.cpp's tokenize_mixed does with the
// profile's vocabulary: a BOS first when addBOS (add_special with a
// vocabulary that adds one), then, with parseSpecial, each special token
// as its id and the text between them with the built-in tokenizer;
// without parseSpecial the special tokens are ordinary text.
func lcTokenize(text string, addBOS, parseSpecial bool) []int {
	var ids []int
	if addBOS {
		ids = append(ids, tokBOS)
	}
	plain := func(s string) {
		for _, t := range Tokenize(s) {
			ids = append(ids, tokenID(t))
		}
	}
	if !parseSpecial {
		plain(text)
		return ids
	}
	for len(text) > 0 {
		at, which := -1, -1
		for k, sp := range lcSpecial {
			if i := strings.Index(text, sp.text); i >= 0 && (at < 0 || i < at) {
				at, which = i, k
			}
		}
		if at < 0 {
			plain(text)
			break
		}
		plain(text[:at])
		ids = append(ids, lcSpecial[which].id)
		text = text[at+len(lcSpecial[which].text):]
	}
	return ids
}

// lcChatIDs returns the token ids of a chat as the profile's server
// prefills them: the template rendered as /apply-template renders it,
// then tokenized with add_special (the BOS added back when the vocabulary
// adds one).
func lcChatIDs(msgs []promptsize.Message, addBOS bool) []int {
	return lcTokenize(lcRender(msgs, !addBOS), addBOS, true)
}

// llamaCppCounter counts chat requests as the LlamaCpp profile's server
// does with its built-in tokenizer: the built-in Counter's count plus the
// BOS. It keeps the built-in Counter's vocabulary (promptsize.Vocabulary).
type llamaCppCounter struct{ Counter }

var _ promptsize.Counter = llamaCppCounter{}

// Count returns Counter{}.Count(msgs) + 1.
func (c llamaCppCounter) Count(ctx context.Context, msgs []promptsize.Message) (int, error) {
	n, err := c.Counter.Count(ctx, msgs)
	if err != nil {
		return 0, err
	}
	return n + 1, nil
}
