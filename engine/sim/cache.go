package sim

// Prefix cache hit kinds, as exo reports them in prefix_cache_hit.
const (
	HitNone    = "none"
	HitPartial = "partial"
	HitExact   = "exact"
)

// maxCacheEntries bounds an instance's prefix cache; the oldest entry goes
// first.
const maxCacheEntries = 32

// prefixCache follows exo's KVPrefixCache rules (exo-api.md §1.7). It is
// owned by one scheduler goroutine and needs no lock.
type prefixCache struct {
	entries []cacheEntry
}

type cacheEntry struct {
	ids  []int
	rate float64 // prompt_tps measured when the entry was created or updated
}

// lookup returns the entry with the longest common token prefix with ids
// (-1 when none shares a token), the common length and the hit kind:
// exact when common ≥ len(ids) − 1, partial when common > 0, else none.
func (c *prefixCache) lookup(ids []int) (idx, common int, kind string) {
	idx = -1
	for i, e := range c.entries {
		n := commonPrefix(e.ids, ids)
		if n > common {
			idx, common = i, n
		}
	}
	switch {
	case common == 0:
		return -1, 0, HitNone
	case common >= len(ids)-1:
		return idx, common, HitExact
	default:
		return idx, common, HitPartial
	}
}

// save records a prefilled prompt: the matched entry is updated in place
// when the hit covers at least max(1000, systemTokens) tokens and at least
// half the prompt; otherwise a new entry is added.
func (c *prefixCache) save(ids []int, idx, common, systemTokens int, rate float64) {
	e := cacheEntry{ids: append([]int(nil), ids...), rate: rate}
	if idx >= 0 && common >= max(1000, systemTokens) && 2*common >= len(ids) {
		c.entries[idx] = e
		return
	}
	if len(c.entries) >= maxCacheEntries {
		c.entries = append(c.entries[:0], c.entries[1:]...)
	}
	c.entries = append(c.entries, e)
}

func commonPrefix(a, b []int) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
