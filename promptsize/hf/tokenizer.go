package hf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/inferbench/inferbench/promptsize"
)

// A Tokenizer encodes text exactly as Hugging Face's tokenizers library
// does for the tokenizer.json it was loaded from, and counts chat requests
// through the model's chat template. It is safe for concurrent use.
type Tokenizer struct {
	*encoder
	template  *ChatTemplate
	tmplErr   error // why there is no template
	countOpts RenderOptions
}

// encoder is the part of a Tokenizer that tokenizer.json defines; Tokenizers
// that differ only in their chat template share it.
type encoder struct {
	added    addedMatcher
	hasAdded bool
	norm     normalizer
	pre      preTokenizer
	model    bpeModel
	dec      decoder
	cache    *pieceCache
	pool     sync.Pool // *scratch
	special  SpecialTokens
	maxID    int // bound on ids: the tables indexed by id are this long at most
	tokenLensState
}

var _ promptsize.Counter = (*Tokenizer)(nil)

// DefaultCacheSize is the number of pre-tokenized pieces whose ids a
// Tokenizer remembers unless WithCacheSize says otherwise.
const DefaultCacheSize = 1 << 15

// An Option configures Load and New.
type Option func(*options)

type options struct {
	template     *string
	templateFile string
	countOpts    RenderOptions
	cacheSize    int
}

// WithChatTemplate uses source as the chat template instead of the one the
// model directory declares (gpt-oss, for one, ships none in
// tokenizer_config.json).
func WithChatTemplate(source string) Option {
	return func(o *options) { o.template = &source; o.templateFile = "" }
}

// WithChatTemplateFile reads the chat template from the file at path
// instead of the one the model directory declares. A relative path is
// relative to the process's working directory (as os.ReadFile takes it),
// not to the model directory: for a template inside the model directory,
// pass filepath.Join(dir, name).
func WithChatTemplateFile(path string) Option {
	return func(o *options) { o.templateFile = path; o.template = nil }
}

// WithRenderOptions sets the options Count renders with: tools, a fixed
// date, template variables. Count always adds the generation prompt,
// whatever AddGenerationPrompt says.
func WithRenderOptions(ro RenderOptions) Option {
	return func(o *options) { o.countOpts = ro }
}

// WithCacheSize bounds the cache of pre-tokenized pieces (DefaultCacheSize
// entries by default); n <= 0 turns the cache off.
func WithCacheSize(n int) Option {
	return func(o *options) { o.cacheSize = n }
}

// Load reads a model directory: tokenizer.json, tokenizer_config.json (the
// special tokens and chat_template, a string or the list of named
// templates) and, when present, chat_template.jinja, which takes precedence
// over the config's template. A model without a chat template loads: Encode
// and Decode work, and Render and Count return ErrNoChatTemplate.
func Load(dir string, opts ...Option) (*Tokenizer, error) {
	tj, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, fmt.Errorf("hf: %w", err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		return nil, fmt.Errorf("hf: %w", err)
	}
	o, err := dirOptions(dir, opts)
	if err != nil {
		return nil, err
	}
	return newTokenizer(tj, cfg, o)
}

// newOptions applies opts over the defaults.
func newOptions(opts []Option) options {
	o := options{cacheSize: DefaultCacheSize}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// dirOptions is newOptions for a tokenizer read from dir: when opts give no
// chat template, dir's chat_template.jinja, if there is one, is the template.
func dirOptions(dir string, opts []Option) (options, error) {
	o := newOptions(opts)
	if o.template == nil && o.templateFile == "" {
		src, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja"))
		switch {
		case err == nil:
			s := string(src)
			o.template = &s
		case !errors.Is(err, os.ErrNotExist):
			return options{}, fmt.Errorf("hf: %w", err)
		}
	}
	return o, nil
}

// New builds a Tokenizer from the contents of tokenizer.json and
// tokenizer_config.json (which may be nil: no special tokens, no template).
func New(tokenizerJSON, tokenizerConfig []byte, opts ...Option) (*Tokenizer, error) {
	return newTokenizer(tokenizerJSON, tokenizerConfig, newOptions(opts))
}

func newTokenizer(tj, cfgData []byte, o options) (*Tokenizer, error) {
	var f tokenizerFile
	if err := json.Unmarshal(tj, &f); err != nil {
		return nil, fmt.Errorf("hf: tokenizer.json: expected a JSON object: %w", err)
	}
	t := &Tokenizer{encoder: &encoder{cache: newPieceCache(o.cacheSize)}, countOpts: o.countOpts}
	t.pool.New = func() any { return new(scratch) }
	// Ids are dense in real files; a bound keeps a corrupt id from
	// allocating gigabytes of id-indexed tables.
	t.maxID = len(f.Model.Vocab) + len(f.AddedTokens) + 1024
	var err error
	if t.norm, err = parseNormalizer(f.Normalizer, "normalizer"); err != nil {
		return nil, err
	}
	if err := parsePreTokenizer(f.PreTokenizer, "pre_tokenizer", &t.pre); err != nil {
		return nil, err
	}
	mappedVocab, err := t.buildModel(&f.Model)
	if err != nil {
		return nil, err
	}
	if err := t.buildAdded(f.AddedTokens); err != nil {
		return nil, err
	}
	if t.dec, err = buildDecoder(f.Decoder, mappedVocab, f.AddedTokens, t.pre.byteLevel); err != nil {
		return nil, err
	}

	var cfg config
	if len(cfgData) > 0 {
		if cfg, err = parseConfig(cfgData); err != nil {
			return nil, err
		}
	}
	t.special = cfg.special
	if err := t.setTemplate(cfg, o, "tokenizer_config.json declares no chat_template and none was given"); err != nil {
		return nil, err
	}
	return t, nil
}

// setTemplate sets t.template to the chat template that the options give,
// or else the one cfg declares. With none, it sets t.tmplErr, which says
// none and wraps ErrNoChatTemplate. It returns an error only for a template
// that cannot be read or parsed.
func (t *Tokenizer) setTemplate(cfg config, o options, none string) error {
	var err error
	switch {
	case o.templateFile != "":
		src, err := os.ReadFile(o.templateFile)
		if err != nil {
			return fmt.Errorf("hf: chat template: %w", err)
		}
		t.template, err = ParseChatTemplate(string(src), cfg.special)
		return err
	case o.template != nil:
		t.template, err = ParseChatTemplate(*o.template, cfg.special)
	case cfg.templates != nil:
		t.template, err = cfg.chatTemplate()
	default:
		t.tmplErr = fmt.Errorf("hf: %s: %w", none, ErrNoChatTemplate)
	}
	return err
}

// buildModel reads the BPE model and returns its vocabulary as written in
// the file (byte-level stand-in characters included), for the decoder.
func (t *encoder) buildModel(ms *modelSpec) (map[string]int, error) {
	const supportedModel = "BPE without dropout, continuing_subword_prefix or end_of_word_suffix"
	switch {
	case ms.Type != "BPE":
		return nil, unsupported("model.type", fmt.Sprintf("model type %q", ms.Type), supportedModel)
	case ms.Dropout != nil && *ms.Dropout != 0:
		return nil, unsupported("model.dropout", fmt.Sprintf("BPE dropout %v", *ms.Dropout), supportedModel)
	case ms.ContinuingSubwordPrefix != nil && *ms.ContinuingSubwordPrefix != "":
		return nil, unsupported("model.continuing_subword_prefix", fmt.Sprintf("continuing_subword_prefix %q", *ms.ContinuingSubwordPrefix), supportedModel)
	case ms.EndOfWordSuffix != nil && *ms.EndOfWordSuffix != "":
		return nil, unsupported("model.end_of_word_suffix", fmt.Sprintf("end_of_word_suffix %q", *ms.EndOfWordSuffix), supportedModel)
	case len(ms.Vocab) == 0:
		return nil, errors.New("hf: tokenizer.json: model.vocab: expected a non-empty vocabulary, found none")
	}
	m := &t.model
	m.byteLevel = t.pre.byteLevel
	m.fuseUnk, m.byteFallback, m.ignoreMerges = ms.FuseUnk, ms.ByteFallback, ms.IgnoreMerges
	m.unk = -1
	if ms.UnkToken != nil {
		id, ok := ms.Vocab[*ms.UnkToken]
		if !ok {
			return nil, fmt.Errorf("hf: tokenizer.json: model.unk_token: expected a token of the vocabulary, found %q", *ms.UnkToken)
		}
		m.unk = int32(id)
	}
	for id := range ms.Vocab {
		if ms.Vocab[id] < 0 || ms.Vocab[id] >= t.maxID {
			return nil, fmt.Errorf("hf: tokenizer.json: model.vocab[%q]: expected an id in [0, %d) (ids are dense), found %d", id, t.maxID, ms.Vocab[id])
		}
	}
	for b := range m.byteIDs {
		m.byteIDs[b] = -1
	}
	if m.byteLevel {
		if m.byteFallback {
			return nil, unsupported("model.byte_fallback", "byte_fallback with a ByteLevel pre-tokenizer", supportedModel)
		}
		m.vocab = make(map[string]int32, len(ms.Vocab))
		for tok, id := range ms.Vocab {
			if raw, ok := byteLevelDecode(tok); ok {
				m.vocab[raw] = int32(id)
			}
		}
		for b := 0; b < 256; b++ {
			id, ok := ms.Vocab[string(byteToRune[b])]
			if !ok {
				return nil, fmt.Errorf("hf: tokenizer.json: model.vocab: a byte-level vocabulary needs a token for every byte, found none for 0x%02X (%q)", b, byteToRune[b])
			}
			m.byteIDs[b] = int32(id)
		}
	} else {
		m.vocab = make(map[string]int32, len(ms.Vocab))
		for tok, id := range ms.Vocab {
			m.vocab[tok] = int32(id)
		}
		if m.byteFallback {
			for b := 0; b < 256; b++ {
				if id, ok := ms.Vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
					m.byteIDs[b] = int32(id)
				}
			}
		}
	}
	merges, err := parseMerges(ms.Merges)
	if err != nil {
		return nil, err
	}
	m.merges = make(map[uint64]merge, len(merges))
	for rank, p := range merges {
		a, okA := ms.Vocab[p[0]]
		b, okB := ms.Vocab[p[1]]
		ab, okAB := ms.Vocab[p[0]+p[1]]
		if !okA || !okB || !okAB {
			return nil, fmt.Errorf("hf: tokenizer.json: model.merges[%d]: expected %q, %q and their merge to be in the vocabulary, found one missing", rank, p[0], p[1])
		}
		// A later duplicate overrides an earlier one, as in Hugging Face.
		m.merges[pairKey(int32(a), int32(b))] = merge{rank: int32(rank), id: int32(ab)}
	}
	return ms.Vocab, nil
}

func (t *encoder) buildAdded(added []addedTokenSpec) error {
	const supportedAdded = "added tokens without lstrip, rstrip or single_word; normalized ones only without a normalizer"
	for i, a := range added {
		path := fmt.Sprintf("added_tokens[%d]", i)
		switch {
		case a.Lstrip || a.Rstrip:
			return unsupported(path, fmt.Sprintf("added token %q with lstrip or rstrip", a.Content), supportedAdded)
		case a.SingleWord:
			return unsupported(path, fmt.Sprintf("added token %q with single_word", a.Content), supportedAdded)
		case a.Normalized && len(t.norm) > 0 && t.norm.apply(a.Content) != a.Content:
			// Hugging Face matches such a token in the normalized text.
			return unsupported(path, fmt.Sprintf("normalized added token %q that the normalizer changes", a.Content), supportedAdded)
		case a.ID < 0 || a.ID >= t.maxID:
			return fmt.Errorf("hf: tokenizer.json: %s: expected an id in [0, %d) (ids are dense), found %d", path, t.maxID, a.ID)
		}
		t.added.add(a.Content, int32(a.ID))
		t.hasAdded = true
	}
	return nil
}

// SpecialTokens returns the bos, eos, pad and unk tokens of
// tokenizer_config.json.
func (t *Tokenizer) SpecialTokens() SpecialTokens { return t.special }

// ChatTemplate returns the chat template, or nil and an error wrapping
// ErrNoChatTemplate when there is none.
func (t *Tokenizer) ChatTemplate() (*ChatTemplate, error) {
	if t.template == nil {
		return nil, t.tmplErr
	}
	return t.template, nil
}

// WithRendering returns a Tokenizer that shares t's tokenizer.json data
// (and cache) but renders with ct, and counts with the render options ro:
// one loaded tokenizer, several templates or dates.
func (t *Tokenizer) WithRendering(ct *ChatTemplate, ro RenderOptions) *Tokenizer {
	return &Tokenizer{encoder: t.encoder, template: ct, countOpts: ro}
}

// WithTemplateVars returns a Counter that counts as t does with vars added
// to the variables the chat template is rendered with (over those of
// WithRenderOptions, a key of vars replacing one there): what a server
// renders when a request carries them, e.g. chat_template_kwargs
// {"enable_thinking": false} or gpt-oss's reasoning_effort (see
// engine.Thinking.TemplateVars). Qwen3's template, for one, writes an
// empty <think>\n\n</think>\n\n into the generation prompt when
// enable_thinking is false: 4 tokens a count without the variable misses.
//
// The Counter is a *Tokenizer sharing t's tokenizer.json data and cache,
// so it is also a promptsize.TokenEnder, ContentLocator and Vocabulary as
// t is; t itself is unchanged. Nil or empty vars count as t does.
func (t *Tokenizer) WithTemplateVars(vars map[string]any) promptsize.Counter {
	c := *t
	if len(vars) > 0 {
		merged := make(map[string]any, len(t.countOpts.Vars)+len(vars))
		maps.Copy(merged, t.countOpts.Vars)
		maps.Copy(merged, vars)
		c.countOpts.Vars = merged
	}
	return &c
}

// Render renders messages through the chat template.
func (t *Tokenizer) Render(messages []promptsize.Message, opts RenderOptions) (string, error) {
	if t.template == nil {
		return "", t.tmplErr
	}
	return t.template.Render(messages, opts)
}

// Count returns the number of tokens of the chat request as a server
// counts it: the messages rendered through the chat template with the
// generation prompt (and the options of WithRenderOptions), then encoded
// without adding special tokens, since templates emit their own BOS.
func (t *Tokenizer) Count(ctx context.Context, messages []promptsize.Message) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s, err := t.renderForCount(ctx, messages)
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return t.countText(ctx, s)
}

// renderForCount renders messages as Count does: the chat template with
// the generation prompt and the options of WithRenderOptions.
func (t *Tokenizer) renderForCount(ctx context.Context, messages []promptsize.Message) (string, error) {
	if t.template == nil {
		return "", t.tmplErr
	}
	opts := t.countOpts
	opts.AddGenerationPrompt = true
	return t.template.RenderContext(ctx, messages, opts)
}

// countText is the number of tokens s encodes to, without special tokens
// added; it stops with ctx's error.
func (t *Tokenizer) countText(ctx context.Context, s string) (int, error) {
	sc := t.pool.Get().(*scratch)
	sc.ctx = ctx
	ids := t.encode(sc.ids[:0], s, sc)
	n, err := len(ids), sc.err
	sc.err, sc.ctx = nil, nil
	t.release(sc, ids)
	if err != nil {
		return 0, err
	}
	return n, nil
}

// ctxCheckEvery is how many pieces encodeSegment encodes between two looks
// at the context of a Count: a few microseconds of work each.
const ctxCheckEvery = 64

// stopped reports whether the Count sc belongs to has ended its context,
// recording the error in sc.err. Encode and CountText have no context.
func (sc *scratch) stopped() bool {
	if sc.err != nil {
		return true
	}
	if sc.ctx == nil {
		return false
	}
	if err := sc.ctx.Err(); err != nil {
		sc.err = fmt.Errorf("hf: encoding stopped: %w", err)
		return true
	}
	return false
}

// scratch holds the buffers of one Encode call, reused through a pool.
type scratch struct {
	runes         []rune
	offs          []int
	spans         []span
	pieces, other []string
	syms, ids     []int32
	pairs         []merge
	next, prev    []int32
	heap          []heapEntry
	err           error           // a pre-tokenizer match timeout or the context's end
	ctx           context.Context // of a Count; nil for Encode and CountText
}

// Encode returns the token ids of text as Hugging Face's
// encode(text, add_special_tokens=False) gives them:
//
//  1. added tokens (special or not) are split out first, leftmost-longest,
//     in the raw text;
//  2. each stretch between them is normalized, pre-tokenized (each Split
//     pattern in turn, on every piece the previous step left), and every
//     piece encoded by the BPE model.
//
// Nothing is added around the result: no BOS, no EOS.
func (t *Tokenizer) Encode(text string) []int {
	sc := t.pool.Get().(*scratch)
	ids := t.encode(sc.ids[:0], text, sc)
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	sc.err = nil // Encode cannot report it; Count does
	t.release(sc, ids)
	return out
}

// CountText returns len(t.Encode(text)) without building the result.
func (t *Tokenizer) CountText(text string) int {
	sc := t.pool.Get().(*scratch)
	ids := t.encode(sc.ids[:0], text, sc)
	n := len(ids)
	sc.err = nil
	t.release(sc, ids)
	return n
}

// maxPooledIDs bounds the id buffer a pooled scratch keeps.
const maxPooledIDs = 1 << 20

func (t *encoder) release(sc *scratch, ids []int32) {
	if cap(ids) <= maxPooledIDs {
		sc.ids = ids[:0]
	} else {
		sc.ids = nil
	}
	t.pool.Put(sc)
}

func (t *encoder) encode(dst []int32, text string, sc *scratch) []int32 {
	if !t.hasAdded {
		return t.encodeSegment(dst, text, sc)
	}
	for pos := 0; pos < len(text); {
		if sc.ctx != nil && sc.stopped() {
			return dst
		}
		start, end, id, ok := t.added.next(text, pos)
		if !ok {
			return t.encodeSegment(dst, text[pos:], sc)
		}
		if start > pos {
			dst = t.encodeSegment(dst, text[pos:start], sc)
		}
		dst = append(dst, id)
		pos = end
	}
	return dst
}

func (t *encoder) encodeSegment(dst []int32, seg string, sc *scratch) []int32 {
	seg = t.norm.apply(seg)
	if seg == "" {
		return dst
	}
	pieces := append(sc.pieces[:0], seg)
	for i := range t.pre.steps {
		if sc.ctx != nil && sc.stopped() {
			return dst
		}
		out := sc.other[:0]
		for _, p := range pieces {
			out = t.pre.steps[i].split(out, p, sc)
		}
		sc.other = pieces
		pieces = out
	}
	sc.pieces = pieces
	for i, p := range pieces {
		if sc.ctx != nil && i%ctxCheckEvery == 0 && sc.stopped() {
			break
		}
		cacheable := t.cache != nil && len(p) <= maxCachedPiece
		if cacheable {
			if ids, ok := t.cache.get(p); ok {
				dst = append(dst, ids...)
				continue
			}
		}
		start := len(dst)
		dst = t.model.encode(dst, p, sc)
		if cacheable {
			t.cache.put(p, dst[start:])
		}
	}
	// Drop references into the caller's text.
	clear(sc.pieces)
	clear(sc.other)
	return dst
}

// Decode returns the text of ids, special tokens included, as the model's
// decoder gives it. Ids outside the vocabulary are skipped. For a
// byte-level model the bytes are returned as they are, so a sequence cut in
// the middle of a character yields invalid UTF-8 (apply
// strings.ToValidUTF8 to display it), and Decode(Encode(s)) == s for every
// s that the normalizer leaves unchanged. ByteFallback bytes that do not
// form valid UTF-8 decode to one U+FFFD each, as in Hugging Face.
func (t *Tokenizer) Decode(ids []int) string { return t.dec.decode(ids) }
