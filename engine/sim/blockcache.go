package sim

import (
	"container/list"
	"fmt"
	"strings"
	"sync/atomic"
)

// DefaultBlockSize is the number of tokens in one KV cache block of the
// vLLM API's prefix cache: vLLM's default --block-size.
const DefaultBlockSize = 16

// KVMemoryFraction is the share of an instance's memory the default KV
// budget may fill, weights included: vLLM's default
// --gpu-memory-utilization.
const KVMemoryFraction = 0.9

// A PrefixCacheMode says whether the sim reuses the KV cache of earlier
// prompts. The zero value is PrefixCacheRadix.
type PrefixCacheMode string

// The prefix cache modes, as the seed's ablation names them.
const (
	// PrefixCacheRadix reuses cached prefixes: the vLLM API's block cache
	// (vLLM's automatic prefix caching, on by default in vLLM's v1 engine,
	// as SGLang's radix cache is in SGLang) and exo's KVPrefixCache on
	// exo's API, under exo's rules. It is the default.
	PrefixCacheRadix PrefixCacheMode = "radix"
	// PrefixCacheNaive reuses nothing: every request prefills its whole
	// prompt, on both APIs (exo's use_prefix_cache is then ignored).
	PrefixCacheNaive PrefixCacheMode = "naive"
)

// ParsePrefixCacheMode reads a mode as a flag gives it: "radix" (or "on",
// or empty) and "naive" (or "off").
func ParsePrefixCacheMode(s string) (PrefixCacheMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "radix", "on":
		return PrefixCacheRadix, nil
	case "naive", "off":
		return PrefixCacheNaive, nil
	}
	return "", fmt.Errorf("sim: prefix cache mode %q: expected radix (or on) or naive (or off)", s)
}

// reuse reports whether m reuses cached prefixes.
func (m PrefixCacheMode) reuse() bool { return m != PrefixCacheNaive }

// A kvBlock is one cached block: its chained hash, the running requests
// holding it, and its place in the eviction order while none does.
type kvBlock struct {
	hash uint64
	refs int
	free *list.Element // in blockCache.free while refs == 0
}

// blockCache is an instance's KV cache for the vLLM API, in blocks of size
// tokens, as vLLM's automatic prefix caching keeps it (vllm/v1/core:
// block_pool.py, kv_cache_manager.py). A full block is identified by the
// hash of its parent block's hash and its own token ids, so equal hashes
// mean equal prefixes: the map of hashes is the tree of cached prefixes,
// a radix tree whose edges are blocks. A block is held (reference counted)
// by the running requests whose KV it is; a block no request holds stays
// cached, in least-recently-freed order, until the budget needs its
// memory. Only full blocks are cached; a request's last, partial block is
// its own. The budget counts every block in memory: held, private or
// cached. It is owned by one scheduler goroutine and needs no lock.
type blockCache struct {
	size   int  // tokens per block
	budget int  // blocks the KV memory holds
	reuse  bool // PrefixCacheRadix: full blocks are hashed and shared
	byHash map[uint64]*kvBlock
	free   list.List // cached blocks no request holds, the next to evict first
	inUse  int       // blocks in memory: hashed ones (held or free) and private ones
	stats  *cacheCounters
	gauge  atomic.Int64 // inUse, for readers on other goroutines
	used   atomic.Int64 // blocks held by running requests (inUse less the evictable), likewise
}

func newBlockCache(size, budget int, reuse bool, stats *cacheCounters) *blockCache {
	return &blockCache{size: size, budget: max(budget, 1), reuse: reuse, byHash: map[uint64]*kvBlock{}, stats: stats}
}

// blockSeq is one request's view of the block cache: its token identities
// (the prompt's, then each generated token's) and the blocks it holds.
type blockSeq struct {
	ids     []int
	prompt  int      // len(ids) before any generated token
	salt    uint64   // the first block's parent hash (cache_salt)
	hashes  []uint64 // chained hashes of the full blocks of ids, as far as computed
	held    []*kvBlock
	private int         // blocks held that are not shared: the partial one, or all in naive mode
	owner   *blockCache // the cache the blocks are held in; nil when none
}

// saltHash is the parent hash of a sequence's first block: vLLM adds the
// request's cache_salt to the first block's hash, so that only requests
// with the same salt share blocks.
func saltHash(salt string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(salt); i++ {
		h = (h ^ uint64(salt[i])) * fnvPrime
	}
	return h
}

const (
	fnvOffset = 0xcbf29ce484222325
	fnvPrime  = 0x100000001b3
)

// hash returns the chained hash of full block i of q.ids, computing the
// hashes before it as needed: FNV-1a (64 bit) over the parent's hash and
// the block's ids, 8 bytes each.
func (q *blockSeq) hash(i, size int) uint64 {
	for len(q.hashes) <= i {
		k := len(q.hashes)
		h := q.salt
		if k > 0 {
			h = q.hashes[k-1]
		}
		x := uint64(fnvOffset)
		mix := func(v uint64) {
			for b := 0; b < 8; b++ {
				x = (x ^ (v & 0xff)) * fnvPrime
				v >>= 8
			}
		}
		mix(h)
		for _, id := range q.ids[k*size : (k+1)*size] {
			mix(uint64(id))
		}
		q.hashes = append(q.hashes, x)
	}
	return q.hashes[i]
}

// lookup finds the longest run of q's prompt blocks, from the first, that
// is cached, holds them for q, and returns its length in tokens. As vLLM
// does, the hit stops short of the prompt's last token, which must be
// computed to give the first token's logits: at most
// ⌊(prompt − 1) / size⌋ blocks. q must hold nothing yet.
func (c *blockCache) lookup(q *blockSeq) int {
	if !c.reuse {
		return 0
	}
	n := 0
	for limit := (q.prompt - 1) / c.size; n < limit; n++ {
		b, ok := c.byHash[q.hash(n, c.size)]
		if !ok {
			break
		}
		c.hold(q, b)
	}
	q.owner = c
	c.publish()
	return n * c.size
}

// hold adds a reference of q to b, taking it out of the eviction order.
func (c *blockCache) hold(q *blockSeq, b *kvBlock) {
	if b.refs == 0 && b.free != nil {
		c.free.Remove(b.free)
		b.free = nil
	}
	b.refs++
	q.held = append(q.held, b)
}

// grow records that the KV of q.ids[:kv] is computed and present: each
// full block among them is cached (or, when another request computed the
// same block first, shared), the partial one is q's own. Blocks beyond
// the budget are evicted, least recently freed first; held blocks never
// are, so running requests whose KV alone exceeds the budget overcommit
// it (the sim models no preemption).
func (c *blockCache) grow(q *blockSeq, kv int) {
	q.owner = c
	full := kv / c.size
	if c.reuse {
		for i := len(q.held); i < full; i++ {
			h := q.hash(i, c.size)
			b, ok := c.byHash[h]
			if !ok {
				b = &kvBlock{hash: h}
				c.byHash[h] = b
				c.inUse++
			}
			c.hold(q, b)
		}
	}
	private := (kv + c.size - 1) / c.size
	if c.reuse {
		private -= len(q.held)
	}
	c.inUse += private - q.private
	q.private = private
	c.evict()
}

// release drops q's blocks, last first, so that a request's tail blocks
// are evicted before its head (vLLM frees in reverse order for the same
// reason); the blocks stay cached until the budget needs them.
func (c *blockCache) release(q *blockSeq) {
	for i := len(q.held) - 1; i >= 0; i-- {
		b := q.held[i]
		b.refs--
		if b.refs == 0 {
			b.free = c.free.PushBack(b)
		}
	}
	c.inUse -= q.private
	q.held, q.private, q.owner = nil, 0, nil
	c.evict()
}

// drop releases q's blocks in the cache that holds them, if any. Only that
// cache's scheduler may call it.
func (q *blockSeq) drop() {
	if q.owner != nil {
		q.owner.release(q)
	}
}

// evict frees cached blocks no request holds until the blocks in memory
// fit the budget.
func (c *blockCache) evict() {
	for c.inUse > c.budget {
		e := c.free.Front()
		if e == nil {
			return
		}
		b := c.free.Remove(e).(*kvBlock)
		b.free = nil
		delete(c.byHash, b.hash)
		c.inUse--
		c.stats.evicted.Add(1)
	}
	c.publish()
}

// publish stores the block counts for readers on other goroutines.
func (c *blockCache) publish() {
	c.gauge.Store(int64(c.inUse))
	c.used.Store(int64(c.inUse - c.free.Len()))
}
