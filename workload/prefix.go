package workload

// PrefixHitRate returns the theoretical prefix-cache hit rate of rows
// sent in order to a server whose prefix cache holds every block it has
// seen (no eviction, no capacity bound) in blocks of blockSize tokens:
//
//	rate = Σ_r hit(r) / Σ_r Input(r)
//
// For a row r with hash ids h₀ … hₙ₋₁, let k be the length of its leading
// run of ids that each appeared in an earlier row (in any position). The
// ids are prefix-chained, so those k blocks are a cached prefix, and
//
//	hit(r) = Σ_{j<k} size_j,   size_j = blockSize for j < n−1,
//	                           size_{n−1} = Input − (n−1)·blockSize
//
// that is k·blockSize, or Input when every block hits (the last block
// counts its real size). A row's own ids count only for the rows after
// it. Rows without hash ids are left out of both sums. It returns the
// rate with its numerator and denominator in tokens; the rate is 0 when
// the denominator is. It is the figure of AIPerf's analyze-trace (shared
// prefix blocks × B over input tokens) with the last block at its real
// size, and the ceiling of what a server's measured hit rate can reach.
//
// blockSize must be the rows' block size (Reader.BlockSize); it panics if
// it is below 1.
func PrefixHitRate(rows []Row, blockSize int) (rate float64, hit, input int64) {
	if blockSize < 1 {
		panic("workload: PrefixHitRate block size must be at least 1")
	}
	seen := map[int64]struct{}{}
	for _, r := range rows {
		if len(r.HashIDs) == 0 {
			continue
		}
		k := 0
		for k < len(r.HashIDs) {
			if _, ok := seen[r.HashIDs[k]]; !ok {
				break
			}
			k++
		}
		hit += min(int64(k)*int64(blockSize), int64(r.Input))
		input += int64(r.Input)
		for _, id := range r.HashIDs {
			seen[id] = struct{}{}
		}
	}
	if input > 0 {
		rate = float64(hit) / float64(input)
	}
	return rate, hit, input
}

// LinkSessions names the Session of each row that has none by its chain
// of Parent links, the way Bailian traces encode conversations: a root
// (Parent "") with an ID starts a session named by its ID, and a row whose
// Parent is the ID of an earlier row joins that row's session. A row whose
// parent is not among the earlier rows (cut off by a window or a Limit, or
// later in the slice) starts a session of its own, named by its own ID;
// LinkSessions returns how many did. Rows that have a Session keep it, and
// rows with neither ID nor Parent are left alone.
func LinkSessions(rows []Row) (orphans int) {
	session := make(map[string]string, len(rows))
	for i := range rows {
		r := &rows[i]
		if r.Session == "" {
			switch s, ok := session[r.Parent]; {
			case r.Parent == "":
				r.Session = r.ID
			case ok:
				r.Session = s
			default:
				r.Session = r.ID
				orphans++
			}
		}
		if r.ID != "" {
			session[r.ID] = r.Session
		}
	}
	return orphans
}
