package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// tinyByteLevel returns a small byte-level tokenizer.json: ids 0-255 are the
// bytes (id = byte value), then the merges "a a" -> 256 "aa", "aa a" -> 257
// "aaa", "Ġ a" -> 258 "Ġa", and the added tokens 259 "<|x|>",
// 260 "<|x|>y", 261 "<|".
func tinyByteLevel(mutate func(map[string]any)) []byte {
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(byteToRune[b])] = b
	}
	vocab["aa"], vocab["aaa"], vocab["Ġa"] = 256, 257, 258
	f := map[string]any{
		"version": "1.0",
		"added_tokens": []any{
			map[string]any{"id": 259, "content": "<|x|>", "special": true},
			map[string]any{"id": 260, "content": "<|x|>y", "special": true},
			map[string]any{"id": 261, "content": "<|", "special": false},
		},
		"normalizer": nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
		}},
		"post_processor": nil,
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab, "merges": []any{"a a", "aa a", "Ġ a"}},
	}
	if mutate != nil {
		mutate(f)
	}
	data, err := json.Marshal(f)
	if err != nil {
		panic(err)
	}
	return data
}

// tinySentencePiece returns a small SentencePiece-style tokenizer.json (as
// Gemma's): spaces become "▁", characters outside the vocabulary fall back
// to <0xNN> bytes. Ids: 0 "<unk>", 1-256 "<0x00>"-"<0xFF>", 257 "▁",
// 258 "a", 259 "b", 260 "▁a", 261 "ab", 262 "▁ab"; merges "▁ a", "a b", "▁a b".
func tinySentencePiece() []byte {
	vocab := map[string]int{"<unk>": 0}
	for b := 0; b < 256; b++ {
		vocab[fmt.Sprintf("<0x%02X>", b)] = 1 + b
	}
	for i, tok := range []string{"▁", "a", "b", "▁a", "ab", "▁ab"} {
		vocab[tok] = 257 + i
	}
	f := map[string]any{
		"added_tokens":  []any{map[string]any{"id": 0, "content": "<unk>", "special": true}},
		"normalizer":    map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
		"pre_tokenizer": map[string]any{"type": "Split", "pattern": map[string]any{"String": " "}, "behavior": "MergedWithPrevious", "invert": false},
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"},
			map[string]any{"type": "Fuse"},
		}},
		"model": map[string]any{"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
			"vocab": vocab, "merges": [][2]string{{"▁", "a"}, {"a", "b"}, {"▁a", "b"}}},
	}
	data, err := json.Marshal(f)
	if err != nil {
		panic(err)
	}
	return data
}

func TestEncodeTinyByteLevel(t *testing.T) {
	tok, err := New(tinyByteLevel(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text string
		want []int
		why  string
	}{
		{"", []int{}, "nothing"},
		{"a", []int{97}, "one byte"},
		{"aa", []int{256}, "one merge"},
		{"aaa", []int{257}, "aa then aa+a"},
		{"aaaa", []int{256, 256}, "ties go to the leftmost pair: (aa)(aa), not a(aa)a"},
		{"aaaaa", []int{256, 257}, "a+a (rank 0) at 0 then at 2, then aa+a (rank 1) at 2: (aa)(aaa)"},
		{" a", []int{258}, "Ġa"},
		{"a a", []int{97, 258}, "two pieces"},
		{"<|x|>y", []int{260}, "longest added token wins"},
		{"<|x|>", []int{259}, "added token"},
		{"a<|z", []int{97, 261, 122}, "a non-special added token also splits"},
		{"é", []int{0xC3, 0xA9}, "bytes of a character outside the merges"},
	} {
		if got := tok.Encode(tc.text); diffIDs(got, tc.want) != "" {
			t.Errorf("Encode(%q) = %v, want %v (%s)", tc.text, got, tc.want, tc.why)
		}
	}
}

func TestEncodeTinySentencePiece(t *testing.T) {
	tok, err := New(tinySentencePiece(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text string
		want []int
	}{
		{"ab", []int{261}},
		{" ab", []int{262}},                // ▁ a b: "▁ a" (rank 0) first, then "▁a b"
		{"a é", []int{258, 257, 196, 170}}, // é = C3 A9 -> <0xC3> <0xA9>
		{"<unk>b", []int{0, 259}},
	} {
		got := tok.Encode(tc.text)
		if d := diffIDs(got, tc.want); d != "" {
			t.Errorf("Encode(%q): %s", tc.text, d)
		}
		if back := tok.Decode(got); back != tc.text {
			t.Errorf("Decode(Encode(%q)) = %q", tc.text, back)
		}
	}
	// An invalid byte run decodes to one U+FFFD per byte, as ByteFallback does.
	if got, want := tok.Decode([]int{1 + 0xC3, 258}), "\uFFFDa"; got != want {
		t.Errorf("Decode(<0xC3> a) = %q, want %q", got, want)
	}
}

func TestUnsupportedFeatures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(map[string]any)
		feature string
	}{
		{"model type", func(f map[string]any) { f["model"].(map[string]any)["type"] = "WordPiece" }, `"WordPiece"`},
		{"dropout", func(f map[string]any) { f["model"].(map[string]any)["dropout"] = 0.1 }, "dropout"},
		{"subword prefix", func(f map[string]any) { f["model"].(map[string]any)["continuing_subword_prefix"] = "##" }, "continuing_subword_prefix"},
		{"normalizer", func(f map[string]any) { f["normalizer"] = map[string]any{"type": "Lowercase"} }, `"Lowercase"`},
		{"pre-tokenizer", func(f map[string]any) { f["pre_tokenizer"] = map[string]any{"type": "Metaspace"} }, `"Metaspace"`},
		{"prefix space", func(f map[string]any) {
			f["pre_tokenizer"] = map[string]any{"type": "ByteLevel", "add_prefix_space": true}
		}, "add_prefix_space"},
		{"lstrip", func(f map[string]any) {
			f["added_tokens"] = []any{map[string]any{"id": 259, "content": "<m>", "lstrip": true}}
		}, "lstrip"},
		{"decoder", func(f map[string]any) { f["decoder"] = map[string]any{"type": "WordPiece"} }, `"WordPiece"`},
	} {
		_, err := New(tinyByteLevel(tc.mutate), nil)
		var ue *UnsupportedError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.feature) {
			t.Errorf("%s: got error %v, want an *UnsupportedError naming %s", tc.name, err, tc.feature)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(map[string]any)
		want   string
	}{
		{"merge outside vocab", func(f map[string]any) { f["model"].(map[string]any)["merges"] = []any{"a q"} }, "merges[0]"},
		{"missing byte", func(f map[string]any) { delete(f["model"].(map[string]any)["vocab"].(map[string]int), "Ġ") }, "0x20"},
		{"bad regex", func(f map[string]any) {
			f["pre_tokenizer"] = map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "("}, "behavior": "Isolated"}
		}, "regular expression"},
	} {
		if _, err := New(tinyByteLevel(tc.mutate), nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
	if _, err := New([]byte("{"), nil); err == nil {
		t.Error("truncated JSON loaded")
	}
}
