package benchkit

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
)

// warmup sends the Load's Warmup requests before a run's schedule and
// drops them: built by the run's workload as its first requests are, but
// each salted with a warm-up salt of its own (even under NoSalt, and with
// no shared prefix), so that no warm-up shares a prefix beyond the chat
// template with a measured request; at most the run's cap (its users for
// a closed loop) at once, all at once without one. It returns how many
// went out and a warning when any failed; a failure never ends the run.
func (l *Load) warmup(ctx context.Context, r *loadRun, w Workload) (int, string) {
	total := l.Warmup
	if total <= 0 {
		return 0, ""
	}
	nonce := l.Nonce
	if nonce == "" {
		nonce = promptsize.NewNonce(nil)
	}
	n := len(r.sched)
	var items []Item
	// Rounds of at most n: a plan of n requests has n distinct
	// requests to build, and each round's salts are its own.
	for round := 0; len(items) < total; round++ {
		k := min(total-len(items), n)
		own := make([]int, k)
		for j := range own {
			own[j] = j
		}
		tag := nonce + "-warmup" + strconv.Itoa(round)
		got, err := w.Requests(ctx, r.builder, n, own, func(i int) string { return promptsize.RunSalt(tag, r.runIdx, i) })
		if err == nil && len(got) != k {
			err = fmt.Errorf("benchkit: the workload gave %d requests for %d", len(got), k)
		}
		if err != nil {
			return 0, fmt.Sprintf("warm-up: none sent: building its requests: %v", err)
		}
		items = append(items, got...)
	}
	limit := len(items)
	switch {
	case r.traffic.Users > 0:
		limit = min(limit, r.traffic.Users)
	case r.traffic.MaxConcurrency > 0:
		limit = min(limit, r.traffic.MaxConcurrency)
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed int
	var first error
	for _, it := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			p, err := engine.Prepare(ctx, l.Engine, l.request(it.Prompt, it.MaxTokens))
			if err == nil {
				_, err = sendWithin(ctx, p, l.RequestTimeout)
			}
			if err != nil {
				mu.Lock()
				failed++
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait() // bounded: each request by RequestTimeout or ctx
	if failed > 0 {
		return len(items), fmt.Sprintf("warm-up: %d of %d requests failed (the first: %v); the run went on", failed, len(items), first)
	}
	return len(items), ""
}
