package promptsize

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// DefaultAtoms are the atoms a Builder tries, in order, when Builder.Atoms is
// empty: exo's "a " first, then the alternatives exo's error message
// suggests. Each is also tried as a tail to repair an overshoot of another.
var DefaultAtoms = []string{"a ", " a", "0 ", "\n"}

// Fill says what a Builder fills the user message with.
type Fill int

const (
	// FillAtoms repeats an atom ("a a a …"), as exo's benchmark does. It is
	// the zero value.
	FillAtoms Fill = iota
	// FillCorpus cuts prose to the exact count: Builder.Corpus, or the
	// embedded default corpus (see Prose). Use it for engines whose
	// speculative or n-gram decoding a repeated atom would flatter.
	FillCorpus
)

func (f Fill) String() string {
	switch f {
	case FillAtoms:
		return "atoms"
	case FillCorpus:
		return "corpus"
	}
	return fmt.Sprintf("Fill(%d)", int(f))
}

// DefaultCacheSize is the number of built prompts a Builder keeps when
// Builder.CacheSize is 0.
const DefaultCacheSize = 256

// A Builder makes prompts of an exact token count: a chat request (an
// optional system message and one user message) that Counter counts as
// exactly the target, chat template and generation prompt included.
//
// Set the fields before the first Build and do not change them afterwards.
// Only Counter is required. A Builder is safe for concurrent use: it keeps
// built prompts by (target, salt) — the atoms or corpus being the Builder's
// own — and concurrent Builds of the same key do the work once. It also
// remembers the template overhead and the tokens per unit of each fill,
// which lets later Builds start their search next to the answer.
type Builder struct {
	// Counter counts requests as the engine will. Required.
	Counter Counter
	// System is the content of a system message sent before the user
	// message; "" sends none.
	System string
	// Fill chooses repeated atoms (the zero value) or a corpus.
	Fill Fill
	// Atoms are the atoms to fill with, in order of preference, and the
	// tails tried to repair an overshoot. Empty means DefaultAtoms.
	Atoms []string
	// Corpus is the text to cut prompts from when Fill is FillCorpus;
	// "" means the embedded default corpus (Prose). A corpus shorter than a
	// prompt needs is repeated, with a warning on the Prompt.
	Corpus string
	// CacheSize is the number of built prompts kept; 0 means
	// DefaultCacheSize and a negative value keeps none. The oldest is
	// dropped first.
	CacheSize int
	// Logger receives a debug record per build; nil logs nothing.
	Logger *slog.Logger

	mu       sync.Mutex
	cache    map[cacheKey]Prompt
	order    []cacheKey // insertion order, for eviction
	inflight map[cacheKey]*flight
	overhead int // template overhead; valid when haveOver
	haveOver bool
	overOnce *flight
	rates    map[string]float64 // tokens per unit, by source.rateKey()
	prose    string             // the default corpus generated so far
	calls    int64              // counter calls over the Builder's life
}

// A Prompt is a chat request of a verified token count.
type Prompt struct {
	// Target is the token count asked for.
	Target int
	// Tokens is the Counter's count of Messages: equal to Target. For a
	// prompt of TokenIDs it is their number.
	Tokens int
	// Content is the user message's text, salt included.
	Content string
	// Messages is the whole request: the system message, if any, then the
	// user message with Content.
	Messages []Message
	// TokenIDs is a prompt given as token ids instead of messages, for a
	// completions endpoint that takes them as they are (prompt: [ids]), with
	// no chat template and no re-tokenization. Only BlockBuilder in
	// BlockTokenIDs mode sets it; Content and Messages are then empty.
	TokenIDs []int
	// Salt is the salt this prompt was built with ("" for none); Content
	// starts with Salt followed by a newline.
	Salt string
	// Overhead is the count of the request with empty user content and no
	// salt: the chat template's tokens and the system message.
	Overhead int
	// Fill names what filled the content: `atom "a "`, or the corpus.
	Fill string
	// Units is the number of whole atoms or words of Fill in Content.
	Units int
	// Repair says how an overshoot was repaired ("" when none was needed):
	// a cut inside the last unit, or a tail of another atom.
	Repair string
	// Calls is the number of Counter calls the build took, the measurement
	// of the template overhead included if this build made it.
	Calls int
	// Cached reports that the prompt came from the Builder's cache or from a
	// concurrent Build of the same key; Calls is then that build's.
	Cached bool
	// Warnings note quality problems that do not make the prompt inexact,
	// such as a caller's corpus repeated to reach the target.
	Warnings []error
}

// ErrCorpusRepeated is the warning on a Prompt whose caller-given corpus was
// shorter than the prompt and had to be repeated.
var ErrCorpusRepeated = errors.New("promptsize: the corpus was repeated to reach the target")

type cacheKey struct {
	target int
	salt   string
}

// flight is one build in progress; done is closed when p and err are set.
type flight struct {
	done chan struct{}
	p    Prompt
	err  error
}

// Build returns a prompt of exactly target tokens, without a salt.
func (b *Builder) Build(ctx context.Context, target int) (Prompt, error) {
	return b.BuildSalted(ctx, target, "")
}

// BuildSalted returns a prompt of exactly target tokens whose user content
// starts with salt and a newline, the rest filled to the count. Give each
// concurrent request its own salt (see Salt) so that an engine that caches
// prefixes on its own (vLLM, SGLang) cannot serve one request's prefill from
// another's: the prompts then differ from the first token of the user
// message. The salt's tokens are part of the count. The system message and
// template tokens before it are still shared, which costs an engine at most
// a cache block of prefill.
//
// A target below the overhead (the request with empty content and the salt)
// gives an *OverheadError wrapping ErrBelowOverhead; a target that no fill
// and no repair reaches gives an *UnreachableError wrapping ErrUnreachable.
func (b *Builder) BuildSalted(ctx context.Context, target int, salt string) (Prompt, error) {
	if b.Counter == nil {
		return Prompt{}, errors.New("promptsize: Builder.Counter is nil; expected a Counter")
	}
	if target < 0 {
		return Prompt{}, fmt.Errorf("promptsize: target %d is negative; expected a token count >= 0", target)
	}
	k := cacheKey{target, salt}
	for {
		b.mu.Lock()
		if p, ok := b.cache[k]; ok {
			b.mu.Unlock()
			return p.clone(true), nil
		}
		if f, ok := b.inflight[k]; ok {
			b.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return Prompt{}, fmt.Errorf("promptsize: waiting for a concurrent build of pp=%d: %w", target, ctx.Err())
			}
			if f.err == nil {
				return f.p.clone(true), nil
			}
			if isContextErr(f.err) && ctx.Err() == nil {
				continue // that build's caller gave up, not ours: build again
			}
			return Prompt{}, f.err
		}
		f := &flight{done: make(chan struct{})}
		if b.inflight == nil {
			b.inflight = make(map[cacheKey]*flight)
		}
		b.inflight[k] = f
		b.mu.Unlock()

		func() {
			defer close(f.done)
			defer func() {
				b.mu.Lock()
				delete(b.inflight, k)
				if f.err == nil {
					b.store(k, f.p)
				}
				b.mu.Unlock()
			}()
			f.p, f.err = b.build(ctx, target, salt, nil, false)
		}()
		if f.err != nil {
			return Prompt{}, f.err
		}
		return f.p.clone(false), nil
	}
}

// Salt returns a short salt for request i of a burst: i in decimal and
// "#" ("0#", "1#", … "51#"). Any string unique per request will do, but
// one that starts with the part that differs keeps the prompts apart from
// their first content token: a cache that reuses any common token prefix
// (llama.cpp's per-slot cache) then reuses only the chat template's. In
// decimal, an index below 1,000 is one token to tokenizers that keep up
// to three digits together (Llama 3, DeepSeek V3, gpt-oss, the embedded
// engine's); those that split digits (Qwen 3, Gemma 3) share the leading
// digits of indices that begin alike ("1#" and "12#" share "1").
func Salt(i int) string {
	return strconv.Itoa(i) + "#"
}

// CounterCalls returns the number of Counter calls the Builder has made.
func (b *Builder) CounterCalls() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func (p Prompt) clone(cached bool) Prompt {
	p.Messages = slices.Clone(p.Messages)
	p.TokenIDs = slices.Clone(p.TokenIDs)
	p.Warnings = slices.Clone(p.Warnings)
	p.Cached = cached
	return p
}

// store keeps p under k, dropping the oldest entries past the cache size.
// b.mu is held.
func (b *Builder) store(k cacheKey, p Prompt) {
	size := b.CacheSize
	if size == 0 {
		size = DefaultCacheSize
	}
	if size < 0 {
		return
	}
	if b.cache == nil {
		b.cache = make(map[cacheKey]Prompt)
	}
	if _, ok := b.cache[k]; !ok {
		b.order = append(b.order, k)
	}
	b.cache[k] = p
	for len(b.order) > size {
		delete(b.cache, b.order[0])
		b.order = b.order[1:]
	}
}

// templateOverhead returns the count of the request with empty content,
// measuring it once per Builder.
func (b *Builder) templateOverhead(s *searcher) (int, error) {
	for {
		b.mu.Lock()
		if b.haveOver {
			o := b.overhead
			b.mu.Unlock()
			return o, nil
		}
		if f := b.overOnce; f != nil {
			b.mu.Unlock()
			select {
			case <-f.done:
			case <-s.ctx.Done():
				return 0, fmt.Errorf("promptsize: waiting for the template overhead: %w", s.ctx.Err())
			}
			if f.err != nil && !(isContextErr(f.err) && s.ctx.Err() == nil) {
				return 0, f.err
			}
			continue
		}
		f := &flight{done: make(chan struct{})}
		b.overOnce = f
		b.mu.Unlock()
		o, err := s.count("")
		b.mu.Lock()
		b.overOnce = nil
		if err == nil {
			b.overhead, b.haveOver = o, true
		}
		f.err = err
		b.mu.Unlock()
		close(f.done)
		return o, err
	}
}

func (b *Builder) atoms() []string {
	var out []string
	for _, a := range b.Atoms {
		if a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		out = slices.Clone(DefaultAtoms)
	}
	return out
}

// defaultProse returns at least minBytes of the default corpus, generating
// it once per Builder and growing it as prompts need more.
func (b *Builder) defaultProse(minBytes int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.prose) < minBytes {
		b.prose = Prose(max(minBytes, 2*len(b.prose)))
	}
	return b.prose
}

// sources returns what to fill from, in order of preference.
func (b *Builder) sources() ([]source, error) {
	switch b.Fill {
	case FillAtoms:
		var out []source
		for _, a := range b.atoms() {
			out = append(out, atomSource{a})
		}
		return out, nil
	case FillCorpus:
		name := "default corpus"
		more := b.defaultProse
		if b.Corpus != "" {
			if strings.TrimSpace(b.Corpus) == "" {
				return nil, errors.New("promptsize: Builder.Corpus has no words; expected text to cut prompts from")
			}
			name = "corpus"
			more = repeatCorpus(b.Corpus)
		}
		// The corpus from its start, then from the next two sentences, so
		// that an overshoot at one place can be avoided at another.
		head := more(4096)
		offsets := append([]int{0}, sentenceStarts(head, 2)...)
		var out []source
		for _, off := range offsets {
			out = append(out, &corpusSource{name: name, more: more, offset: off})
		}
		return out, nil
	}
	return nil, fmt.Errorf("promptsize: unknown Fill %d; expected FillAtoms or FillCorpus", int(b.Fill))
}

// BuildAfter returns a prompt of exactly target tokens made of history
// followed by one new user message: the next turn of a chat, whose
// earlier turns (a system message, user and assistant messages) are part
// of the count. The new message starts with salt and a newline when salt
// is not "" and is filled to the count as Build fills. Builder.System is
// not added: a system message belongs in history. Prompt.Content is the
// new message, Prompt.Overhead the count of history with an empty new
// message. Nothing is cached: each history is its own.
func (b *Builder) BuildAfter(ctx context.Context, history []Message, target int, salt string) (Prompt, error) {
	if b.Counter == nil {
		return Prompt{}, errors.New("promptsize: Builder.Counter is nil; expected a Counter")
	}
	if target < 0 {
		return Prompt{}, fmt.Errorf("promptsize: target %d is negative; expected a token count >= 0", target)
	}
	return b.build(ctx, target, salt, slices.Clone(history), true)
}

// build makes the prompt for (target, salt) with no regard to the cache;
// after builds the user message that follows head (BuildAfter).
func (b *Builder) build(ctx context.Context, target int, salt string, head []Message, after bool) (Prompt, error) {
	s := newSearcher(ctx, b.Counter, b.System)
	s.after, s.head = after, head
	defer func() {
		b.mu.Lock()
		b.calls += int64(s.calls)
		b.mu.Unlock()
	}()
	var overhead int
	var err error
	if after {
		overhead, err = s.count("")
	} else {
		overhead, err = b.templateOverhead(s)
	}
	if err != nil {
		return Prompt{}, err
	}
	if target < overhead {
		return Prompt{}, &OverheadError{Target: target, Overhead: overhead, Template: overhead}
	}
	pre, base := "", overhead
	if salt != "" {
		pre = salt + "\n"
		if base, err = s.count(pre); err != nil {
			return Prompt{}, err
		}
		if target < base {
			return Prompt{}, &OverheadError{Target: target, Overhead: base, Salt: salt, Template: overhead}
		}
	}
	srcs, err := b.sources()
	if err != nil {
		return Prompt{}, err
	}
	tails := b.atoms()
	var tried []string
	var spaced *outcome
	var spacedSrc source
	for _, src := range srcs {
		if err := ctx.Err(); err != nil {
			return Prompt{}, fmt.Errorf("promptsize: build of pp=%d stopped after %d counter calls: %w", target, s.calls, err)
		}
		b.mu.Lock()
		rate, ok := b.rates[src.rateKey()]
		b.mu.Unlock()
		if !ok {
			rate = 1
		}
		var srcTails []string
		for _, t := range tails {
			if a, isAtom := src.(atomSource); !isAtom || a.atom != t {
				srcTails = append(srcTails, t)
			}
		}
		out, err := s.solve(src, pre, target, base, rate, srcTails)
		if err != nil {
			return Prompt{}, err
		}
		if out.rate > 0 && out.units > 0 {
			b.mu.Lock()
			if b.rates == nil {
				b.rates = make(map[string]float64)
			}
			b.rates[src.rateKey()] = out.rate
			b.mu.Unlock()
		}
		if !out.found {
			tried = append(tried, out.note)
			continue
		}
		if out.spaced {
			// Exact, but ending in white space: the next source may
			// do without it.
			if spaced == nil {
				spaced, spacedSrc = &out, src
			}
			continue
		}
		return b.prompt(ctx, s, src, out, target, salt, pre, overhead), nil
	}
	if spaced != nil {
		return b.prompt(ctx, s, spacedSrc, *spaced, target, salt, pre, overhead), nil
	}
	return Prompt{}, &UnreachableError{Target: target, Tried: tried}
}

// prompt is the Prompt of what a source's search found.
func (b *Builder) prompt(ctx context.Context, s *searcher, src source, out outcome, target int, salt, pre string, overhead int) Prompt {
	{
		content := pre + out.content
		p := Prompt{
			Target:   target,
			Tokens:   target,
			Content:  content,
			Messages: s.messages(content),
			Salt:     salt,
			Overhead: overhead,
			Fill:     src.describe(),
			Units:    out.units,
			Repair:   out.repair,
			Calls:    s.calls,
		}
		if cs, ok := src.(*corpusSource); ok && b.Corpus != "" && cs.offset+len(out.content) > len(b.Corpus) {
			p.Warnings = append(p.Warnings, fmt.Errorf("%w: %d bytes of corpus for %d bytes of content",
				ErrCorpusRepeated, len(b.Corpus), len(out.content)))
		}
		if b.Logger != nil {
			b.Logger.LogAttrs(ctx, slog.LevelDebug, "promptsize: built prompt",
				slog.Int("target", target), slog.String("salt", salt), slog.String("fill", p.Fill),
				slog.Int("units", p.Units), slog.String("repair", p.Repair), slog.Int("calls", p.Calls))
		}
		return p
	}
}
