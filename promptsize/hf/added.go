package hf

// addedMatcher finds added tokens in raw text, leftmost-longest: at the
// first position where any added token starts, the longest one that
// matches there. It is a byte trie whose root is a direct table, so
// positions that start no added token cost one lookup.
type addedMatcher struct {
	root  [256]int32 // node index of the child for each first byte; 0 when none
	nodes []trieNode // nodes[0] is unused
}

type trieNode struct {
	id    int32 // added token ending here, or -1
	edges []trieEdge
}

type trieEdge struct {
	b    byte
	node int32
}

func (am *addedMatcher) add(content string, id int32) {
	if content == "" {
		return
	}
	if len(am.nodes) == 0 {
		am.nodes = append(am.nodes, trieNode{id: -1})
	}
	n := am.root[content[0]]
	if n == 0 {
		n = int32(len(am.nodes))
		am.nodes = append(am.nodes, trieNode{id: -1})
		am.root[content[0]] = n
	}
	for i := 1; i < len(content); i++ {
		c := content[i]
		found := int32(0)
		for _, e := range am.nodes[n].edges {
			if e.b == c {
				found = e.node
				break
			}
		}
		if found == 0 {
			found = int32(len(am.nodes))
			am.nodes = append(am.nodes, trieNode{id: -1})
			am.nodes[n].edges = append(am.nodes[n].edges, trieEdge{c, found})
		}
		n = found
	}
	am.nodes[n].id = id
}

// next returns the leftmost-longest added token in s at or after from:
// its byte offsets and id, or ok == false when there is none.
func (am *addedMatcher) next(s string, from int) (start, end int, id int32, ok bool) {
	for i := from; i < len(s); i++ {
		n := am.root[s[i]]
		if n == 0 {
			continue
		}
		bestEnd, bestID := -1, int32(-1)
		for j := i + 1; ; j++ {
			if t := am.nodes[n].id; t >= 0 {
				bestEnd, bestID = j, t
			}
			if j >= len(s) {
				break
			}
			c, child := s[j], int32(0)
			for _, e := range am.nodes[n].edges {
				if e.b == c {
					child = e.node
					break
				}
			}
			if child == 0 {
				break
			}
			n = child
		}
		if bestEnd >= 0 {
			return i, bestEnd, bestID, true
		}
	}
	return 0, 0, -1, false
}
