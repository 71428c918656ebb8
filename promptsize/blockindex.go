package promptsize

// siblingIndex records where each hash id was placed (the id before it in
// the row where it first appeared, its parent; and its stream) so that
// TokenBlocks can keep the first tokens of siblings apart and never moves
// an id it has used.
//
// Traces number their ids in order of first appearance, so that the new
// ids of a row are consecutive and above all earlier ones. The index keeps
// them as runs: a run [lo, hi) with parent p says that lo follows p and
// that every later id of the run follows the one before it (the run's
// implicit edges). Ids that arrive out of that order are kept one by one
// (loose). The first tokens of children are kept (firsts) only for edges
// that are not implicit: run starts, loose ids and ids met again under
// another parent. A prefix-chained trace numbered that way costs a few
// runs and edges per row, not an entry per id, and placing a row costs a
// binary search per run it touches.
type siblingIndex struct {
	runs   []idRun             // sorted by lo, disjoint
	loose  map[int64]placement // ids placed out of order
	firsts map[uint64]int64    // edgeKey(parent, first token) → child
	placed int                 // ids placed
}

type idRun struct {
	lo, hi int64
	parent int64  // of lo
	stream uint32 // of lo; the other ids of a run are on stream 0
}

type placement struct {
	parent int64
	stream uint32
}

// rootParent is the parent of a row's first id.
const rootParent = -1

// find returns where id was placed: its parent and stream, and the index
// of its run (-1 when it is loose); ok is false for an id never placed.
func (ix *siblingIndex) find(id int64) (parent int64, stream uint32, run int, ok bool) {
	n := len(ix.runs)
	if n == 0 || id >= ix.runs[n-1].hi {
		// Above every run, so never placed: a loose id was below the last
		// run's end when it was placed, and that end only grows.
		return 0, 0, -1, false
	}
	{
		// The last run with lo <= id.
		lo, hi := 0, n
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if ix.runs[m].lo <= id {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if i := lo - 1; i >= 0 && id < ix.runs[i].hi {
			r := &ix.runs[i]
			if id == r.lo {
				return r.parent, r.stream, i, true
			}
			return id - 1, 0, i, true
		}
	}
	if len(ix.loose) > 0 {
		if p, ok := ix.loose[id]; ok {
			return p.parent, p.stream, -1, true
		}
	}
	return 0, 0, -1, false
}

// place records a new id under parent with its stream and first token,
// and returns the index of its run (-1 when it is loose).
func (ix *siblingIndex) place(id, parent int64, stream uint32, first uint32) int {
	ix.placed++
	n := len(ix.runs)
	switch {
	case n > 0 && ix.runs[n-1].hi == id && parent == id-1 && stream == 0:
		ix.runs[n-1].hi++ // an implicit edge
		return n - 1
	case n == 0 || id >= ix.runs[n-1].hi:
		ix.runs = append(ix.runs, idRun{lo: id, hi: id + 1, parent: parent, stream: stream})
		ix.edge(parent, first, id)
		return n
	}
	if ix.loose == nil {
		ix.loose = make(map[int64]placement)
	}
	ix.loose[id] = placement{parent, stream}
	ix.edge(parent, first, id)
	return -1
}

func (ix *siblingIndex) edge(parent int64, first uint32, child int64) {
	if ix.firsts == nil {
		ix.firsts = make(map[uint64]int64)
	}
	ix.firsts[edgeKey(parent, first)] = child
}

// placeRow places the ids of a row, writes each id's stream base to bases
// and returns the collisions it met. tb.mu is held.
func (tb *TokenBlocks) placeRow(hashIDs []int64, bases []uint64) (collisions int) {
	ix := &tb.ix
	parent := int64(rootParent)
	run := -1          // the run of parent, when it is in one
	parentNew := false // parent was placed by this row: it has no other child
	for j, id := range hashIDs {
		if run >= 0 && id == parent+1 && id < ix.runs[run].hi {
			// id continues its parent's run: placed, and after parent.
			bases[j] = tb.streamBase(id, 0)
			parent, parentNew = id, false
			continue
		}
		p, stream, r, ok := ix.find(id)
		if ok {
			if p != parent {
				// Met under another parent than before (a trace that is
				// not prefix-chained): it cannot move, but it may collide.
				first := tb.draw(tb.streamBase(id, stream), 0)
				if tb.takenBy(parent, run, first, id) {
					collisions++
				} else {
					ix.edge(parent, first, id)
				}
			}
			bases[j] = tb.streamBase(id, stream)
			parent, run, parentNew = id, r, false
			continue
		}
		// A new id: give it the first of its streams whose first token no
		// sibling has. A parent placed by this row has no other child.
		first := tb.draw(tb.streamBase(id, 0), 0)
		if !parentNew && tb.takenBy(parent, run, first, id) {
			moved := false
			for s := uint32(1); s <= maxRedraws; s++ {
				f := tb.draw(tb.streamBase(id, s), 0)
				if !tb.takenBy(parent, run, f, id) {
					stream, first, moved = s, f, true
					break
				}
			}
			if moved {
				tb.stats.Redraws++
			} else {
				collisions++
			}
		}
		bases[j] = tb.streamBase(id, stream)
		run = ix.place(id, parent, stream, first)
		parent, parentNew = id, true
	}
	tb.stats.Collisions += int64(collisions)
	return collisions
}

// takenBy reports whether a child of parent other than self begins with
// the token first: an explicit edge, or the implicit child that continues
// parent's run (whose index is run, or -1).
func (tb *TokenBlocks) takenBy(parent int64, run int, first uint32, self int64) bool {
	if owner, ok := tb.ix.firsts[edgeKey(parent, first)]; ok && owner != self {
		return true
	}
	if run >= 0 && parent != rootParent {
		c := parent + 1
		if c < tb.ix.runs[run].hi && c != self && tb.draw(tb.streamBase(c, 0), 0) == first {
			return true
		}
	}
	return false
}
