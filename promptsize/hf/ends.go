package hf

import (
	"context"
	"strings"
	"sync"
	"unsafe"

	"github.com/inferbench/inferbench/promptsize"
)

var _ promptsize.TokenEnder = (*Tokenizer)(nil)

// TokenEnds implements promptsize.TokenEnder: it encodes text as Encode
// does and appends to dst, for each token, the byte offset in text just
// past it. A token's bytes come from the vocabulary entry (raw bytes for a
// byte-level model, one byte for a <0xNN> fallback); where a piece's tokens
// do not add up to the piece (an unknown token), every token of the piece
// ends at the piece's end. Text a normalizer rewrote is traced back
// through Replace, Prepend and the Unicode normal forms; a token ending
// inside a replaced stretch (a replacement, a normalized segment) ends at
// that stretch's end. One call costs one encode: linear in the text.
func (t *Tokenizer) TokenEnds(ctx context.Context, text string, dst []int) ([]int, error) {
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	t.lensOnce.Do(t.buildTokenLens)
	sc := t.pool.Get().(*scratch)
	sc.ctx = ctx
	if !t.hasAdded {
		dst = t.segmentEnds(dst, text, 0, sc)
	} else {
		for pos := 0; pos < len(text); {
			if sc.stopped() {
				break
			}
			start, end, _, ok := t.added.next(text, pos)
			if !ok {
				dst = t.segmentEnds(dst, text[pos:], pos, sc)
				break
			}
			if start > pos {
				dst = t.segmentEnds(dst, text[pos:start], pos, sc)
			}
			dst = append(dst, end)
			pos = end
		}
	}
	err := sc.err
	sc.err, sc.ctx = nil, nil
	t.release(sc, sc.ids[:0])
	return dst, err
}

// buildTokenLens fills tokenLens: the bytes of text each id stands for, −1
// when that is not fixed (the unknown token).
func (t *encoder) buildTokenLens() {
	m := &t.model
	t.tokenLens = make([]int32, t.maxID)
	for i := range t.tokenLens {
		t.tokenLens[i] = -1
	}
	for tok, id := range m.vocab {
		if int(id) < len(t.tokenLens) {
			t.tokenLens[id] = int32(len(tok))
		}
	}
	if !m.byteLevel {
		for _, id := range m.byteIDs {
			if id >= 0 && int(id) < len(t.tokenLens) {
				t.tokenLens[id] = 1
			}
		}
	}
	if m.unk >= 0 && int(m.unk) < len(t.tokenLens) {
		t.tokenLens[m.unk] = -1
	}
}

// segmentEnds appends the token ends of one stretch between added tokens,
// seg, which starts at base in the caller's text.
func (t *encoder) segmentEnds(dst []int, seg string, base int, sc *scratch) []int {
	ns, orig := t.norm.applyMapped(seg)
	if ns == "" {
		return dst
	}
	pieces := append(sc.pieces[:0], ns)
	for i := range t.pre.steps {
		if sc.stopped() {
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
	at := func(n int) int {
		if orig != nil {
			n = orig[n]
		}
		return base + n
	}
	nsStart := uintptr(unsafe.Pointer(unsafe.StringData(ns)))
	for i, p := range pieces {
		if i%ctxCheckEvery == 0 && sc.stopped() {
			break
		}
		// Every piece is a substring of ns: the pre-tokenizer only cuts.
		off := int(uintptr(unsafe.Pointer(unsafe.StringData(p))) - nsStart)
		ids, ok := []int32(nil), false
		if t.cache != nil && len(p) <= maxCachedPiece {
			ids, ok = t.cache.get(p)
		}
		if !ok {
			sc.ids = t.model.encode(sc.ids[:0], p, sc)
			ids = sc.ids
		}
		sum, exact := 0, true
		for _, id := range ids {
			l := t.tokenLens[id]
			if l < 0 {
				exact = false
				break
			}
			sum += int(l)
		}
		if !exact || sum != len(p) {
			for range ids {
				dst = append(dst, at(off+len(p)))
			}
			continue
		}
		e := off
		for _, id := range ids {
			e += int(t.tokenLens[id])
			dst = append(dst, at(e))
		}
	}
	clear(sc.pieces)
	clear(sc.other)
	return dst
}

// applyMapped returns s normalized and, when that changed s, orig: for
// every byte offset j of the result (and its end), the offset in s it
// comes from. An offset inside text a step put in (a replacement, a
// prefix, a normalized segment of a Unicode normal form) maps to the end
// of what that text replaced.
func (n normalizer) applyMapped(s string) (string, []int) {
	var orig []int // nil: the identity
	cur := s
	for _, st := range n {
		var next string
		var step []int // offset in next → offset in cur
		switch {
		case st.useForm:
			if st.form.IsNormalString(cur) {
				continue
			}
			// Normalize segment by segment (each starts at a boundary of
			// the form, where normalization does not reach across), so
			// that offsets stay exact between segments.
			var nb strings.Builder
			step = make([]int, 0, len(cur)+1)
			for i := 0; i < len(cur); {
				k := st.form.NextBoundaryInString(cur[i:], true)
				if k <= 0 {
					k = len(cur) - i
				}
				seg := st.form.String(cur[i : i+k])
				if seg == cur[i:i+k] {
					for j := range k {
						step = append(step, i+j)
					}
				} else {
					step = append(step, i)
					for range len(seg) - 1 {
						step = append(step, i+k)
					}
				}
				nb.WriteString(seg)
				i += k
			}
			next = nb.String()
			step = append(step, len(cur))
			if len(step) != len(next)+1 || next != st.form.String(cur) {
				next = st.form.String(cur)
				step = make([]int, len(next)+1)
				for j := 1; j <= len(next); j++ {
					step[j] = len(cur)
				}
			}
		case st.from != "":
			if !strings.Contains(cur, st.from) {
				continue
			}
			var b strings.Builder
			step = make([]int, 0, len(cur)+1)
			for i := 0; i < len(cur); {
				if strings.HasPrefix(cur[i:], st.from) {
					step = append(step, i)
					for range len(st.to) - 1 {
						step = append(step, i+len(st.from))
					}
					if len(st.to) == 0 {
						step = step[:len(step)-1]
					}
					b.WriteString(st.to)
					i += len(st.from)
					continue
				}
				step = append(step, i)
				b.WriteByte(cur[i])
				i++
			}
			next = b.String()
			step = append(step, len(cur))
		case st.prepend != "":
			if cur == "" {
				continue
			}
			next = st.prepend + cur
			step = make([]int, len(next)+1)
			for j := len(st.prepend); j <= len(next); j++ {
				step[j] = j - len(st.prepend)
			}
		default:
			continue
		}
		if orig != nil {
			for j, k := range step {
				step[j] = orig[k]
			}
		}
		orig, cur = step, next
	}
	return cur, orig
}

// tokenLensState is the part of an encoder TokenEnds builds on first use.
type tokenLensState struct {
	lensOnce  sync.Once
	tokenLens []int32
}
