package hf

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The structs below mirror the parts of tokenizer.json that this package
// reads. Polymorphic parts stay raw until the component that reads them
// knows their "type".

type tokenizerFile struct {
	AddedTokens   []addedTokenSpec `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	PostProcessor json.RawMessage  `json:"post_processor"`
	Decoder       json.RawMessage  `json:"decoder"`
	Model         modelSpec        `json:"model"`
}

type addedTokenSpec struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	Lstrip     bool   `json:"lstrip"`
	Rstrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type modelSpec struct {
	Type                    string          `json:"type"`
	Dropout                 *float64        `json:"dropout"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Vocab                   map[string]int  `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
}

// patternSpec is a Split or Replace pattern: exactly one of String and Regex.
type patternSpec struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

type componentSpec struct {
	Type           string            `json:"type"`
	Normalizers    []json.RawMessage `json:"normalizers"`
	PreTokenizers  []json.RawMessage `json:"pretokenizers"`
	Decoders       []json.RawMessage `json:"decoders"`
	Pattern        *patternSpec      `json:"pattern"`
	Content        *string           `json:"content"`
	Prepend        *string           `json:"prepend"`
	Behavior       string            `json:"behavior"`
	Invert         bool              `json:"invert"`
	AddPrefixSpace bool              `json:"add_prefix_space"`
	UseRegex       bool              `json:"use_regex"`
}

// isNull reports whether a raw JSON value is absent or null.
func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

func parseComponent(raw json.RawMessage, path string) (componentSpec, error) {
	var c componentSpec
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("hf: tokenizer.json: %s: expected an object with a \"type\": %w", path, err)
	}
	return c, nil
}

// parseMerges reads the model's merges in either of the two forms
// tokenizer.json uses: "a b" strings (older files) or ["a", "b"] pairs.
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	// Look at the first element to pick the form, so that the list is
	// decoded once.
	inner := strings.TrimPrefix(strings.TrimSpace(string(raw)), "[")
	inner = strings.TrimLeft(inner, " \t\r\n")
	if strings.HasPrefix(inner, "[") || strings.HasPrefix(inner, "]") {
		var pairs [][2]string
		if err := json.Unmarshal(raw, &pairs); err != nil {
			return nil, fmt.Errorf("hf: tokenizer.json: model.merges: expected a list of [a, b] pairs: %w", err)
		}
		return pairs, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err != nil {
		return nil, fmt.Errorf("hf: tokenizer.json: model.merges: expected a list of \"a b\" strings or of [a, b] pairs: %w", err)
	}
	pairs := make([][2]string, len(strs))
	for i, s := range strs {
		a, b, ok := strings.Cut(s, " ")
		if !ok || strings.Contains(b, " ") {
			return nil, fmt.Errorf("hf: tokenizer.json: model.merges[%d]: expected two tokens separated by one space, found %q", i, s)
		}
		pairs[i] = [2]string{a, b}
	}
	return pairs, nil
}
