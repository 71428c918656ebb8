package hf

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// tiktoken-format vocabularies: a BPE rank file (one "base64(token) rank"
// line per token, the .tiktoken files of OpenAI's tiktoken and the
// tiktoken.model of Kimi K2), a split pattern and special tokens. The rank
// of a token is its id, and BPE merges the adjacent pair whose concatenation
// has the lowest rank, leftmost first, exactly as tiktoken's byte_pair_merge
// does; a piece that is a token as a whole is taken as it is.

// A TiktokenEncoding is what a tiktoken encoding declares besides its ranks:
// the split pattern, in tiktoken's syntax (Rust's regex crate, with
// fancy-regex's lookahead), and the special tokens with their ids.
// CL100KBase and O200KBase return OpenAI's two current encodings.
type TiktokenEncoding struct {
	// Pattern cuts text into the pieces BPE encodes one by one.
	Pattern string
	// SpecialTokens maps each special token's text to its id. Encode splits
	// them out of the text first (as tiktoken's encode with
	// allowed_special="all" does), leftmost-longest.
	SpecialTokens map[string]int
}

// Split patterns of well-known tiktoken encodings, in tiktoken's syntax.
const (
	// CL100KPattern is cl100k_base's split pattern (GPT-3.5, GPT-4; also
	// Llama 3's).
	CL100KPattern = llama3Pattern
	// O200KPattern is o200k_base's split pattern (GPT-4o, gpt-oss).
	O200KPattern = o200kPattern
	// KimiK2Pattern is the split pattern of Kimi K2's tokenizer class
	// (TikTokenTokenizer in tokenization_kimi.py): runs of Han characters
	// first, then o200k's alternatives with Han taken out of the letter
	// classes (written with the && intersection of Rust's regex crate).
	KimiK2Pattern = `[\p{Han}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// CL100KBase returns the pattern and special tokens of OpenAI's cl100k_base
// encoding; its ranks are cl100k_base.tiktoken.
func CL100KBase() TiktokenEncoding {
	return TiktokenEncoding{Pattern: CL100KPattern, SpecialTokens: map[string]int{
		"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
		"<|fim_suffix|>": 100260, "<|endofprompt|>": 100276,
	}}
}

// O200KBase returns the pattern and special tokens of OpenAI's o200k_base
// encoding; its ranks are o200k_base.tiktoken.
func O200KBase() TiktokenEncoding {
	return TiktokenEncoding{Pattern: O200KPattern, SpecialTokens: map[string]int{
		"<|endoftext|>": 199999, "<|endofprompt|>": 200018,
	}}
}

// TiktokenModelFile is the rank file LoadTiktoken reads from a model
// directory, as Kimi K2 ships it.
const TiktokenModelFile = "tiktoken.model"

// TiktokenReservedTokens is how many ids after the ranks Kimi K2's tokenizer
// class reserves for special tokens: the ids n, n+1, ..., n+255, where n is
// the number of ranks, named by tokenizer_config.json's
// added_tokens_decoder or else "<|reserved_token_ID|>".
const TiktokenReservedTokens = 256

// NewTiktoken builds a Tokenizer from the contents of a tiktoken rank file
// and an encoding's pattern and special tokens:
//
//	ranks, err := os.ReadFile("o200k_base.tiktoken")
//	tok, err := hf.NewTiktoken(ranks, hf.O200KBase())
//
// Encode then gives tiktoken's encode(text, allowed_special="all"). The
// options are those of Load: a chat template (there is none otherwise, and
// Count returns ErrNoChatTemplate), render options, the cache size.
func NewTiktoken(ranks []byte, enc TiktokenEncoding, opts ...Option) (*Tokenizer, error) {
	o := newOptions(opts)
	vocab, err := parseTiktokenRanks(ranks)
	if err != nil {
		return nil, err
	}
	e, err := newTiktokenEncoder(vocab, enc, o.cacheSize, false)
	if err != nil {
		return nil, err
	}
	return withTemplate(e, config{}, o)
}

// LoadTiktoken reads a model directory that ships its vocabulary in
// tiktoken format, in the layout of Kimi K2 (its TikTokenTokenizer class):
//
//   - tiktoken.model, the rank file (n ranks);
//   - tokenizer_config.json: the special tokens are the ids n to n+255,
//     named by added_tokens_decoder or else "<|reserved_token_ID|>", plus
//     any other entry of added_tokens_decoder; bos_token, eos_token and
//     chat_template as in Load;
//   - chat_template.jinja, when present, which takes precedence over the
//     config's template.
//
// pattern is the split pattern, which such a directory keeps in Python code
// rather than in a file: KimiK2Pattern for Kimi K2. As that class does, the
// text between special tokens is cut into pieces of at most 400,000
// characters and before the 25,001st character of every run of whitespace
// or of non-whitespace, and the pieces are encoded one by one.
func LoadTiktoken(dir, pattern string, opts ...Option) (*Tokenizer, error) {
	ranks, err := os.ReadFile(filepath.Join(dir, TiktokenModelFile))
	if err != nil {
		return nil, fmt.Errorf("hf: %w", err)
	}
	cfgData, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		return nil, fmt.Errorf("hf: %w", err)
	}
	o, err := dirOptions(dir, opts)
	if err != nil {
		return nil, err
	}
	vocab, err := parseTiktokenRanks(ranks)
	if err != nil {
		return nil, err
	}
	cfg, err := parseConfig(cfgData)
	if err != nil {
		return nil, err
	}
	special, err := reservedSpecialTokens(cfgData, len(vocab))
	if err != nil {
		return nil, err
	}
	e, err := newTiktokenEncoder(vocab, TiktokenEncoding{Pattern: pattern, SpecialTokens: special}, o.cacheSize, true)
	if err != nil {
		return nil, err
	}
	return withTemplate(e, cfg, o)
}

// withTemplate wraps an encoder into a Tokenizer with the chat template the
// options or the config give, as newTokenizer does for tokenizer.json.
func withTemplate(e *encoder, cfg config, o options) (*Tokenizer, error) {
	e.special = cfg.special
	t := &Tokenizer{encoder: e, countOpts: o.countOpts}
	if err := t.setTemplate(cfg, o, "no chat template was declared or given"); err != nil {
		return nil, err
	}
	return t, nil
}

// reservedSpecialTokens returns the special tokens of a Kimi K2 style
// directory with n ranks: see LoadTiktoken.
func reservedSpecialTokens(cfgData []byte, n int) (map[string]int, error) {
	var f struct {
		Added map[string]struct {
			Content    *string `json:"content"`
			Lstrip     bool    `json:"lstrip"`
			Rstrip     bool    `json:"rstrip"`
			SingleWord bool    `json:"single_word"`
		} `json:"added_tokens_decoder"`
	}
	if err := json.Unmarshal(cfgData, &f); err != nil {
		return nil, fmt.Errorf("hf: tokenizer_config.json: added_tokens_decoder: expected an object of id → {\"content\": ...}: %w", err)
	}
	byID := make(map[int]string, len(f.Added))
	for key, a := range f.Added {
		path := fmt.Sprintf("added_tokens_decoder[%q]", key)
		id, err := strconv.Atoi(key)
		switch {
		case err != nil || id < 0:
			return nil, fmt.Errorf("hf: tokenizer_config.json: %s: expected a non-negative integer id", path)
		case a.Content == nil || *a.Content == "":
			return nil, fmt.Errorf("hf: tokenizer_config.json: %s: expected a non-empty \"content\" string", path)
		case a.Lstrip || a.Rstrip || a.SingleWord:
			return nil, &UnsupportedError{File: "tokenizer_config.json", Path: path,
				Feature:   fmt.Sprintf("added token %q with lstrip, rstrip or single_word", *a.Content),
				Supported: "added tokens without lstrip, rstrip or single_word"}
		}
		byID[id] = *a.Content
	}
	special := make(map[string]int, TiktokenReservedTokens+len(byID))
	for id := n; id < n+TiktokenReservedTokens; id++ {
		if _, ok := byID[id]; !ok {
			special[fmt.Sprintf("<|reserved_token_%d|>", id)] = id
		}
	}
	for id, content := range byID {
		if prev, ok := special[content]; ok && prev != id {
			return nil, fmt.Errorf("hf: tokenizer_config.json: added_tokens_decoder: %q has two ids, %d and %d", content, prev, id)
		}
		special[content] = id
	}
	return special, nil
}

// maxTiktokenRank bounds ranks: ids are int32 inside, and a rank file with
// ranks far beyond its size is not a vocabulary.
const maxTiktokenRank = math.MaxInt32 - 1

// parseTiktokenRanks reads a tiktoken rank file: one "base64(token) rank"
// line per token (blank lines are skipped), as tiktoken's load_tiktoken_bpe
// reads it. It is stricter: standard base64 with padding, a decimal rank,
// no token or rank twice (tiktoken refuses duplicate ranks too).
func parseTiktokenRanks(data []byte) (map[string]int32, error) {
	vocab := make(map[string]int32, bytes.Count(data, []byte{'\n'})+1)
	ranks := make(map[int32]struct{}, len(vocab))
	line := 0
	for len(data) > 0 {
		line++
		var l []byte
		if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
			l = data[:i]
			if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			data = data[i+1:]
		} else {
			l, data = data, nil
		}
		fields := bytes.Fields(l)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("hf: tiktoken ranks: line %d: expected \"<base64 token> <rank>\", found %q", line, truncate(string(l), 80))
		}
		tok, err := base64.StdEncoding.DecodeString(string(fields[0]))
		if err != nil || len(tok) == 0 {
			return nil, fmt.Errorf("hf: tiktoken ranks: line %d: expected a non-empty token in standard base64, found %q", line, truncate(string(fields[0]), 80))
		}
		rank, err := parseRank(fields[1])
		if err != nil {
			return nil, fmt.Errorf("hf: tiktoken ranks: line %d: %w", line, err)
		}
		if _, dup := vocab[string(tok)]; dup {
			return nil, fmt.Errorf("hf: tiktoken ranks: line %d: token %q appears twice", line, tok)
		}
		if _, dup := ranks[rank]; dup {
			return nil, fmt.Errorf("hf: tiktoken ranks: line %d: rank %d appears twice", line, rank)
		}
		vocab[string(tok)] = rank
		ranks[rank] = struct{}{}
	}
	if len(vocab) == 0 {
		return nil, errors.New("hf: tiktoken ranks: expected at least one \"<base64 token> <rank>\" line, found none")
	}
	return vocab, nil
}

func parseRank(b []byte) (int32, error) {
	if len(b) == 0 || len(b) > 10 {
		return 0, fmt.Errorf("expected a decimal rank, found %q", truncate(string(b), 20))
	}
	n := int64(0)
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("expected a decimal rank, found %q", b)
		}
		n = n*10 + int64(c-'0')
	}
	if n > maxTiktokenRank {
		return 0, fmt.Errorf("expected a rank below %d, found %d", maxTiktokenRank, n)
	}
	return int32(n), nil
}

// newTiktokenEncoder builds the encoder of a tiktoken vocabulary: the
// special tokens as added tokens, one Isolated split with the pattern (after
// Kimi's run cutting when kimiChunks is set), and a byte-level BPE model
// whose merges are every split of a token into two tokens, ranked by the
// token's rank. The result merges exactly as tiktoken does.
func newTiktokenEncoder(vocab map[string]int32, enc TiktokenEncoding, cacheSize int, kimiChunks bool) (*encoder, error) {
	e := &encoder{cache: newPieceCache(cacheSize)}
	e.pool.New = func() any { return new(scratch) }
	// Ranks are nearly dense in real files; the bound keeps a corrupt rank
	// from allocating gigabytes of id-indexed tables.
	e.maxID = len(vocab) + len(enc.SpecialTokens) + 1024
	m := &e.model
	m.byteLevel, m.ignoreMerges, m.unk = true, true, -1
	m.vocab = vocab
	size := 0
	owner := make([]string, e.maxID) // the token of each rank
	for tok, id := range vocab {
		if int(id) >= e.maxID {
			return nil, fmt.Errorf("hf: tiktoken ranks: token %q: expected a rank below %d (ranks are dense), found %d", tok, e.maxID, id)
		}
		owner[id] = tok
		size = max(size, int(id)+1)
	}
	for b := 0; b < 256; b++ {
		id, ok := vocab[string([]byte{byte(b)})]
		if !ok {
			return nil, fmt.Errorf("hf: tiktoken ranks: expected a token for every single byte, found none for 0x%02X", b)
		}
		m.byteIDs[b] = id
	}
	m.merges = make(map[uint64]merge, len(vocab)*3)
	for tok, id := range vocab {
		for k := 1; k < len(tok); k++ {
			a, okA := vocab[tok[:k]]
			b, okB := vocab[tok[k:]]
			if okA && okB {
				m.merges[pairKey(a, b)] = merge{rank: id, id: id}
			}
		}
	}

	names := make([]string, 0, len(enc.SpecialTokens))
	for s := range enc.SpecialTokens {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		id := enc.SpecialTokens[s]
		switch {
		case s == "":
			return nil, errors.New("hf: tiktoken special tokens: expected non-empty token texts, found \"\"")
		case id < 0 || id >= e.maxID:
			return nil, fmt.Errorf("hf: tiktoken special tokens: %q: expected an id in [0, %d), found %d", s, e.maxID, id)
		}
		if owner[id] != "" {
			return nil, fmt.Errorf("hf: tiktoken special tokens: %q: id %d is already the rank of %q", s, id, owner[id])
		}
		e.added.add(s, int32(id))
		e.hasAdded = true
		size = max(size, id+1)
	}

	if kimiChunks {
		e.pre.steps = append(e.pre.steps, splitStep{fast: kimiChunkEnd, behavior: isolated})
	}
	st, err := tiktokenSplit(enc.Pattern)
	if err != nil {
		return nil, err
	}
	e.pre.steps = append(e.pre.steps, st)
	e.pre.byteLevel = true

	e.dec = decoder{text: make([]string, size)}
	for tok, id := range vocab {
		e.dec.text[id] = tok
	}
	for s, id := range enc.SpecialTokens {
		e.dec.text[id] = s
	}
	return e, nil
}

// tiktokenSplit compiles a tiktoken pattern into an Isolated split step, on
// a hand-written matcher when the pattern has one.
func tiktokenSplit(pattern string) (splitStep, error) {
	if pattern == "" {
		return splitStep{}, errors.New("hf: tiktoken pattern: expected a split pattern, found \"\"")
	}
	translated, err := translateTiktokenPattern(pattern)
	if err != nil {
		return splitStep{}, err
	}
	re, err := regexp2.Compile(translated, regexp2.None)
	if err != nil {
		return splitStep{}, fmt.Errorf("hf: tiktoken pattern: expected a regular expression regexp2 compiles, found %q: %w", pattern, err)
	}
	st := splitStep{re: re, fast: fastMatcherFor(pattern), behavior: isolated}
	if pattern == KimiK2Pattern {
		st.fast = matchKimi
	}
	return st, nil
}

// translateTiktokenPattern rewrites the class intersections of Rust's regex
// syntax that tiktoken patterns use, [A&&[^B]], into regexp2's class
// subtraction, [A-[B]]. Any other && inside a class is refused.
func translateTiktokenPattern(p string) (string, error) {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			b.WriteByte(c)
			b.WriteByte(p[i+1])
			i++
			continue
		case c == '[' && depth == 0:
			depth = 1
			// A ']' right after '[' or '[^' is a literal.
			b.WriteByte(c)
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				b.WriteByte(']')
				i++
			}
			continue
		case c == ']' && depth == 1:
			depth = 0
		case depth == 1 && strings.HasPrefix(p[i:], "&&[^"):
			// Copy the inner class up to its closing ']', which must also
			// close the outer class.
			j := i + len("&&[^")
			for j < len(p) && p[j] != ']' {
				if p[j] == '\\' {
					j++
				}
				j++
			}
			if j+1 >= len(p) || p[j+1] != ']' {
				return "", tiktokenPatternError(p, "a class intersection that is not [A&&[^B]]")
			}
			b.WriteString("-[")
			b.WriteString(p[i+len("&&[^") : j])
			b.WriteString("]]")
			i = j + 1
			depth = 0
			continue
		case depth == 1 && (c == '[' || strings.HasPrefix(p[i:], "&&") || strings.HasPrefix(p[i:], "--") || strings.HasPrefix(p[i:], "~~")):
			return "", tiktokenPatternError(p, "a nested class or class operation other than [A&&[^B]]")
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

func tiktokenPatternError(pattern, feature string) error {
	return &UnsupportedError{File: "tiktoken pattern", Path: truncate(pattern, 80), Feature: feature,
		Supported: "Rust regex syntax that regexp2 shares, and class intersections of the form [A&&[^B]]"}
}

// Kimi K2's tokenizer class hands tiktoken at most 400,000 characters at a
// time, and cuts every run of whitespace or of non-whitespace characters
// longer than 25,000 (whitespace as Python's str.isspace).
const (
	kimiMaxChars = 400_000
	kimiMaxRun   = 25_000
)

// kimiChunkEnd is a fastMatcher that cuts a stretch of text between special
// tokens as Kimi K2's encode does: it returns the end of the chunk that
// starts at i. Every position it is called at starts a chunk (a new run of
// length one), so the cut depends only on i and on the 400,000-character
// boundaries counted from the start of s.
func kimiChunkEnd(s string, i int) int {
	limit := len(s)
	if len(s) > kimiMaxChars {
		// Only a string of more than 400,000 bytes can have more than
		// 400,000 characters.
		left := kimiMaxChars - utf8.RuneCountInString(s[:i])%kimiMaxChars
		for j := i; j < len(s); left-- {
			if left == 0 {
				limit = j
				break
			}
			_, n := decode(s, j)
			j += n
		}
	}
	runLen, space := 0, false
	for j := i; j < limit; {
		r, n := decode(s, j)
		sp := pyIsSpace(r)
		if j == i || sp != space {
			runLen, space = 1, sp
		} else {
			runLen++
			if runLen > kimiMaxRun {
				return j
			}
		}
		j += n
	}
	return limit
}

// pyIsSpace is Python's str.isspace for one character: Unicode White_Space
// and the separators U+001C to U+001F.
func pyIsSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// matchKimi is the hand-written matcher of KimiK2Pattern: o200k's
// alternatives (without the '/' of its punctuation branch) after a first
// one for runs of Han characters, which the letter classes exclude.
func matchKimi(s string, i int) int {
	r, n := decode(s, i)
	if isHan(r) {
		return run(s, i, isHan)
	}
	return matchO200kWith(s, i, r, n, &kimiClasses)
}

func isHan(r rune) bool { return unicode.Is(unicode.Han, r) }

// kimiClasses are o200k's classes with Han taken out of the letters and
// without the '/' after punctuation.
var kimiClasses = o200kClasses{
	upper:     func(r rune) bool { return isUpperish(r) && !isHan(r) },
	lower:     func(r rune) bool { return isLowerish(r) && !isHan(r) },
	punctTail: isCRLF,
}
