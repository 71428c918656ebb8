package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// A SharedPrefix generates the rows of a shared-prefix load, as SGLang's
// generated-shared-prefix dataset and vLLM's prefix_repetition do: Groups
// groups of prompts, every prompt of a group starting with the group's
// System tokens and going on with Question tokens of its own, Output
// tokens out. Its rows carry hash ids like a trace's, so a driver makes
// them of exact token blocks (benchkit.Trace): the prompts of a group share
// exactly System leading tokens and nothing after them, and prompts of
// different groups share nothing.
//
// The rows are untimed: the traffic (a rate, a burst) decides when they go.
type SharedPrefix struct {
	// Groups is the number of groups, PerGroup the prompts of each (SGLang's
	// gsp-num-groups and gsp-prompts-per-group).
	Groups, PerGroup int
	// System is the tokens every prompt of a group shares, Question the
	// tokens of each prompt's own, Output its max_tokens.
	System, Question, Output int
	// Zipf, when above 1, draws each of Requests requests' group from a
	// Zipf distribution of exponent Zipf over the groups (the first group
	// most often) instead of PerGroup prompts of each group in turn.
	Zipf     float64
	Requests int
	// Seed seeds the Zipf draws.
	Seed uint64
	// Ratio, when in (0, 1), sets System and Question from Input instead:
	// a prefix of Ratio of each prompt's Input tokens shared in its group
	// (a prefix ratio), the rest its own.
	Ratio float64
	Input int
}

// maxSharedRows bounds the rows a SharedPrefix makes.
const maxSharedRows = 1 << 24

// Rows returns the load's rows, in order (every group's first prompt, then
// every group's second, …; or the Zipf draws), and the block size of their
// hash ids: the largest divisor of System up to 64, so that the shared
// prefix is a whole number of blocks.
func (g SharedPrefix) Rows() (rows []Row, blockSize int, err error) {
	if g.Ratio != 0 {
		if !(g.Ratio > 0 && g.Ratio < 1) || g.Input < 2 {
			return nil, 0, fmt.Errorf("workload: a prefix ratio must be in (0, 1) of an Input of 2 tokens or more, got %g of %d", g.Ratio, g.Input)
		}
		g.System = min(max(int(float64(g.Input)*g.Ratio+0.5), 1), g.Input-1)
		g.Question = g.Input - g.System
	}
	n := g.Groups * g.PerGroup
	if g.Zipf > 1 {
		n = g.Requests
	}
	switch {
	case g.Groups < 1 || g.System < 1 || g.Question < 1 || g.Output < 1:
		return nil, 0, errors.New("workload: a shared-prefix load needs at least 1 group and 1 system, question and output token")
	case g.System+g.Question > MaxTokens || g.Output > MaxTokens:
		return nil, 0, fmt.Errorf("workload: prompts of %d tokens and outputs of %d exceed %d", g.System+g.Question, g.Output, MaxTokens)
	case g.Zipf != 0 && !(g.Zipf > 1):
		return nil, 0, fmt.Errorf("workload: the Zipf exponent must be above 1, got %g", g.Zipf)
	case n < 1 || n > maxSharedRows:
		return nil, 0, fmt.Errorf("workload: a shared-prefix load of %d requests; want 1 to %d", n, maxSharedRows)
	}
	blockSize = 1
	for b := min(64, g.System); b >= 1; b-- {
		if g.System%b == 0 {
			blockSize = b
			break
		}
	}
	sys, own := g.System/blockSize, (g.Question+blockSize-1)/blockSize
	var zipf *rand.Zipf
	if g.Zipf > 1 {
		zipf = rand.NewZipf(rand.New(rand.NewPCG(g.Seed, 0x7a697066)), g.Zipf, 1, uint64(g.Groups-1))
	}
	// Group k's ids are k·sys … k·sys+sys−1; request i's own ids follow
	// every group's, i·own on.
	next := int64(g.Groups) * int64(sys)
	rows = make([]Row, n)
	for i := range rows {
		grp := i % g.Groups
		if zipf != nil {
			grp = int(zipf.Uint64())
		}
		ids := make([]int64, 0, sys+own)
		for k := range sys {
			ids = append(ids, int64(grp)*int64(sys)+int64(k))
		}
		for range own {
			ids = append(ids, next)
			next++
		}
		rows[i] = Row{Line: i + 1, At: Untimed, Input: g.System + g.Question, Output: g.Output, HashIDs: ids,
			Session: fmt.Sprintf("group-%d", grp)}
	}
	return rows, blockSize, nil
}
