package hf

import (
	"hash/maphash"
	"math"
	"sync"
	"unicode/utf8"
)

// bpeModel is a BPE model of tokenizer.json. It works in one of two modes:
//
//   - byte-level (GPT-2 style, a ByteLevel pre-tokenizer): the symbols of a
//     piece are its bytes, each mapped to the vocabulary entry of its
//     printable stand-in character; vocab is keyed by raw bytes;
//   - character level (SentencePiece style, e.g. Gemma 3): the symbols are
//     the piece's characters; a character missing from the vocabulary becomes
//     its UTF-8 bytes as <0xNN> tokens when byte_fallback is set, else the
//     unknown token (consecutive ones fused when fuse_unk is set).
//
// Merging then follows Hugging Face's BPE exactly: repeatedly merge the
// adjacent pair whose merge comes first in the merges list (lowest rank),
// and among equal ranks the leftmost pair, until no adjacent pair has a merge.
type bpeModel struct {
	byteLevel    bool
	vocab        map[string]int32
	byteIDs      [256]int32 // byte-level: id of each byte; otherwise the <0xNN> ids; -1 when absent
	merges       map[uint64]merge
	unk          int32 // -1 when the model has no unknown token
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
}

// merge is what one adjacent pair becomes: the merged token, and the rank
// of the merge (its index in the merges list) that orders merges.
type merge struct {
	rank int32
	id   int32
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// heapThreshold is the symbol count above which the merge loop switches
// from a linear scan of the pair ranks (cheapest for words) to a heap
// (O(n log n) for long runs such as whitespace or Gemma's whole lines).
const heapThreshold = 48

// encode appends the ids of one pre-tokenized piece to dst.
func (m *bpeModel) encode(dst []int32, piece string, sc *scratch) []int32 {
	if piece == "" {
		return dst
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[piece]; ok {
			return append(dst, id)
		}
	}
	syms := m.initialSymbols(sc.syms[:0], piece)
	if len(syms) > heapThreshold {
		syms = m.mergeHeap(syms, sc)
	} else {
		syms = m.mergeLinear(syms, sc)
	}
	sc.syms = syms
	return append(dst, syms...)
}

// initialSymbols appends to syms the symbols a piece starts from, before
// any merge: its bytes for a byte-level model; otherwise its characters,
// with byte fallback or the unknown token for those outside the vocabulary.
func (m *bpeModel) initialSymbols(syms []int32, piece string) []int32 {
	if m.byteLevel {
		for i := 0; i < len(piece); i++ {
			syms = append(syms, m.byteIDs[piece[i]])
		}
	} else {
		lastUnk := false
		for i := 0; i < len(piece); {
			_, size := utf8.DecodeRuneInString(piece[i:])
			ch := piece[i : i+size]
			i += size
			if id, ok := m.vocab[ch]; ok {
				syms = append(syms, id)
				lastUnk = false
				continue
			}
			if m.byteFallback && m.hasBytes(ch) {
				for j := 0; j < len(ch); j++ {
					syms = append(syms, m.byteIDs[ch[j]])
				}
				lastUnk = false
				continue
			}
			if m.unk < 0 {
				// Hugging Face drops a character it can represent in no way.
				continue
			}
			if !(m.fuseUnk && lastUnk) {
				syms = append(syms, m.unk)
			}
			lastUnk = true
		}
	}
	return syms
}

func (m *bpeModel) hasBytes(ch string) bool {
	for j := 0; j < len(ch); j++ {
		if m.byteIDs[ch[j]] < 0 {
			return false
		}
	}
	return true
}

// mergeLinear merges syms in place: it keeps the rank of every adjacent
// pair and, after each merge, looks up only the two pairs that changed.
func (m *bpeModel) mergeLinear(syms []int32, sc *scratch) []int32 {
	n := len(syms)
	if n < 2 {
		return syms
	}
	pairs := sc.pairs[:0]
	for i := 0; i+1 < n; i++ {
		pairs = append(pairs, m.lookup(syms[i], syms[i+1]))
	}
	for {
		best, bestRank := -1, int32(math.MaxInt32)
		for i, p := range pairs {
			if p.rank < bestRank {
				best, bestRank = i, p.rank
			}
		}
		if best < 0 {
			break
		}
		syms[best] = pairs[best].id
		syms = append(syms[:best+1], syms[best+2:]...)
		pairs = append(pairs[:best], pairs[best+1:]...)
		if best > 0 {
			pairs[best-1] = m.lookup(syms[best-1], syms[best])
		}
		if best < len(pairs) {
			pairs[best] = m.lookup(syms[best], syms[best+1])
		}
	}
	sc.pairs = pairs
	return syms
}

var noMerge = merge{rank: math.MaxInt32, id: -1}

func (m *bpeModel) lookup(a, b int32) merge {
	if v, ok := m.merges[pairKey(a, b)]; ok {
		return v
	}
	return noMerge
}

// heapEntry is a candidate merge of the pair (a, b) starting at symbol pos.
// Entries go stale when a neighbour merges first; they are checked when
// popped rather than removed.
type heapEntry struct {
	rank, pos int32
	a, b      int32
	id        int32
}

func (e heapEntry) less(f heapEntry) bool {
	return e.rank < f.rank || (e.rank == f.rank && e.pos < f.pos)
}

// mergeHeap merges syms with a doubly linked list of symbols and a binary
// heap of candidate merges ordered by (rank, position): the same order as
// mergeLinear, in O(n log n).
func (m *bpeModel) mergeHeap(syms []int32, sc *scratch) []int32 {
	n := int32(len(syms))
	if n < 2 {
		return syms
	}
	next, prev := sc.next[:0], sc.prev[:0]
	for i := int32(0); i < n; i++ {
		next = append(next, i+1)
		prev = append(prev, i-1)
	}
	next[n-1] = -1
	h := sc.heap[:0]
	push := func(pos, a, b int32) {
		v, ok := m.merges[pairKey(a, b)]
		if !ok {
			return
		}
		h = append(h, heapEntry{rank: v.rank, pos: pos, a: a, b: b, id: v.id})
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if !h[i].less(h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
	}
	pop := func() heapEntry {
		top := h[0]
		last := len(h) - 1
		h[0] = h[last]
		h = h[:last]
		for i := 0; ; {
			l, r, s := 2*i+1, 2*i+2, i
			if l < last && h[l].less(h[s]) {
				s = l
			}
			if r < last && h[r].less(h[s]) {
				s = r
			}
			if s == i {
				break
			}
			h[i], h[s] = h[s], h[i]
			i = s
		}
		return top
	}
	const dead = -2
	for i := int32(0); i+1 < n; i++ {
		push(i, syms[i], syms[i+1])
	}
	for len(h) > 0 {
		e := pop()
		j := next[e.pos]
		if next[e.pos] == dead || j < 0 || syms[e.pos] != e.a || syms[j] != e.b {
			continue
		}
		syms[e.pos] = e.id
		k := next[j]
		next[e.pos] = k
		if k >= 0 {
			prev[k] = e.pos
		}
		next[j] = dead
		if p := prev[e.pos]; p >= 0 {
			push(p, syms[p], e.id)
		}
		if k >= 0 {
			push(e.pos, e.id, syms[k])
		}
	}
	out := syms[:0]
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, syms[i])
	}
	sc.next, sc.prev, sc.heap = next, prev, h
	return out
}

// pieceCache remembers the ids of short pieces. It is bounded (a shard that
// fills up is emptied) and safe for concurrent use.
type pieceCache struct {
	seed     maphash.Seed
	perShard int
	shards   [16]cacheShard
}

type cacheShard struct {
	mu sync.RWMutex
	m  map[string][]int32
}

// maxCachedPiece is the longest piece, in bytes, that is cached.
const maxCachedPiece = 256

func newPieceCache(entries int) *pieceCache {
	if entries <= 0 {
		return nil
	}
	c := &pieceCache{seed: maphash.MakeSeed(), perShard: max(1, entries/16)}
	return c
}

func (c *pieceCache) shard(piece string) *cacheShard {
	return &c.shards[maphash.String(c.seed, piece)%uint64(len(c.shards))]
}

func (c *pieceCache) get(piece string) ([]int32, bool) {
	s := c.shard(piece)
	s.mu.RLock()
	ids, ok := s.m[piece]
	s.mu.RUnlock()
	return ids, ok
}

func (c *pieceCache) put(piece string, ids []int32) {
	s := c.shard(piece)
	key, val := string([]byte(piece)), append([]int32(nil), ids...)
	s.mu.Lock()
	if s.m == nil || len(s.m) >= c.perShard {
		s.m = make(map[string][]int32, min(c.perShard, 1024))
	}
	s.m[key] = val
	s.mu.Unlock()
}
