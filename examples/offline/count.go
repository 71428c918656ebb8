package main

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// replyKeeper keeps, by response id, the text of every reply that
// carried no usage (and no streamed chunks), so that countUnreported can
// count it after the run, outside the measured window. Offline sends
// through engine.Observe(client, keeper.keep).
type replyKeeper struct {
	mu    sync.Mutex
	texts map[string]string // response id → text of a reply without usage
	seen  map[string]int    // response id → replies that carried it
}

func newReplyKeeper() *replyKeeper {
	return &replyKeeper{texts: map[string]string{}, seen: map[string]int{}}
}

func (k *replyKeeper) keep(res engine.Result) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seen[res.ResponseID]++
	if res.Usage == nil && len(res.Trace.Chunks) == 0 && res.Text != "" {
		k.texts[res.ResponseID] = res.Text
	}
}

// warnCounted opens the row warning of a completion count the client
// made (code benchkit.WarnClientCounted), and the summary's.
const warnCounted = "client-counted completion_tokens"

// countUnreported gives every completed row whose reply carried no usage
// (no server count, completion_tokens null) the count of its text by
// counter, after the run: the row's completion_tokens become that count,
// the row and the summary say where it came from (source names the
// counter), and the summary is summarised again from the counted rows, so
// that its token totals, throughputs and warnings follow. A row whose
// response id is empty or shared by several replies cannot be matched to
// its text and stays null, and the summary says so.
func countUnreported(ctx context.Context, counter promptsize.Counter, source string, k *replyKeeper, run *benchkit.LoadRun) {
	if counter == nil {
		return
	}
	rows := run.Requests
	counted, unmatched := 0, 0
	var firstErr error
	for i := range rows {
		r := &rows[i]
		if r.Failed() || r.ServerPromptTokens != nil || r.CompletionTokens != nil {
			continue
		}
		k.mu.Lock()
		text, ok := k.texts[r.ResponseID]
		unique := k.seen[r.ResponseID] == 1
		k.mu.Unlock()
		if !ok {
			continue
		}
		if r.ResponseID == "" || !unique {
			unmatched++
			continue
		}
		n, err := countText(ctx, counter, text)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		r.CompletionTokens = &n
		// The short-generation check waits for a count: run it on this
		// one (the Load allowed no early stop).
		r.Warnings = slices.DeleteFunc(r.Warnings, func(w benchkit.Warning) bool { return w.Code == benchkit.WarnShortGeneration })
		if n < r.TGTarget {
			r.Warnings = append(r.Warnings, benchkit.Warning{Code: benchkit.WarnShortGeneration,
				Message: fmt.Sprintf("%d tokens generated, %d asked for", n, r.TGTarget)})
		}
		r.Warnings = append(r.Warnings, benchkit.Warning{Code: benchkit.WarnClientCounted,
			Message: fmt.Sprintf("%s: the reply carried no usage; %d tokens counted in its text by %s", warnCounted, n, source)})
		counted++
	}
	if counted == 0 && unmatched == 0 && firstErr == nil {
		return
	}
	run.Resummarize(timing.SLO{})
	s := &run.Summary
	if counted > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s: %d of %d completed replies carried no usage; their completion_tokens were counted in their text by %s after the run", warnCounted, counted, s.Completed, source))
	}
	if unmatched > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d replies carried no usage and a response id that is empty or not unique: their text could not be matched to a row, and their completion_tokens stay null", unmatched))
	}
	if firstErr != nil {
		s.Warnings = append(s.Warnings, fmt.Sprintf("counting the text of replies without usage failed: %v; their completion_tokens stay null", firstErr))
	}
}

// countText counts generated text with counter: through its token ends
// when it has them (plain text), else as the difference its chat template
// makes between an assistant message of text and an empty one.
func countText(ctx context.Context, counter promptsize.Counter, text string) (int, error) {
	if te, ok := counter.(promptsize.TokenEnder); ok {
		ends, err := te.TokenEnds(ctx, text, nil)
		return len(ends), err
	}
	base, err := counter.Count(ctx, []promptsize.Message{{Role: "assistant", Content: ""}})
	if err != nil {
		return 0, err
	}
	n, err := counter.Count(ctx, []promptsize.Message{{Role: "assistant", Content: text}})
	if err != nil {
		return 0, err
	}
	return max(0, n-base), nil
}
