package openai

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/adaptertest"
	"github.com/inferbench/inferbench/internal/testkit"
)

// reuseResult is one request of runUsers.
type reuseResult struct {
	res   engine.Result
	err   error
	hooks []time.Time
}

// runUsers sends users × each streamed requests to url, each user's one
// after another on one client, and returns every result.
func runUsers(t *testing.T, url string, users, each int) []reuseResult {
	t.Helper()
	c := newClient(t, url, &Options{MaxBurst: users})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := make([]reuseResult, users*each)
	var wg sync.WaitGroup
	for u := range users {
		wg.Go(func() {
			for i := range each {
				r := &out[u*each+i]
				hctx := engine.WithSendHook(ctx, func(at time.Time) { r.hooks = append(r.hooks, at) })
				r.res, r.err = c.Complete(hctx, engine.Request{Model: "closer", MaxTokens: 3, Stream: true,
					Messages: []engine.Message{{Role: "user", Content: "count"}}})
			}
		})
	}
	testkit.WaitWithin(t, &wg, testkit.Patience)
	return out
}

// TestStreamsOnClosedConnections: a server that closes the connection
// after every streamed answer while its headers say keep-alive (as
// llama.cpp's does) fails no request. Where the client reused such a
// connection (the server waits for the next request and drops it, so
// that every reuse fails before any byte of an answer), the request went
// out again on another connection, Result.Resent and a warning wrapping
// ErrResent say so, and Trace.Start (and the send hook, called once) is
// the attempt that carried it: after the dropped attempt reached the
// server, before the answered one did. A server that says it is
// llama.cpp has its streams' connections closed by the client, so none is
// reused once the client knows it (at most one a user in the first wave).
func TestStreamsOnClosedConnections(t *testing.T) {
	const users, each = 4, 10
	for _, tc := range []struct {
		name, server string
		linger       bool
		wantResent   bool // reuses happen, and each is resent
	}{
		{"linger, unknown server: resent", "", true, true},
		{"linger, llama.cpp: not reused", "llama.cpp", true, false},
		{"close at once, unknown server", "", false, false},
		{"close at once, llama.cpp", "llama.cpp", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := adaptertest.NewCloser(t, tc.server, tc.linger)
			results := runUsers(t, srv.URL, users, each)
			resent, attempts := 0, 0 // requests resent, times
			for i, r := range results {
				if r.err != nil {
					t.Errorf("request %d: %v, want no failure", i, r.err)
					continue
				}
				res := r.res
				if n := res.Trace.Tokens(); n != 3 || res.Text != "one two three" {
					t.Errorf("request %d: %d tokens, text %q; want the 3 of the stream", i, n, res.Text)
				}
				if len(r.hooks) != 1 || !r.hooks[0].Equal(res.Trace.Start) {
					t.Errorf("request %d: send hook %v, want once with Trace.Start %v", i, r.hooks, res.Trace.Start)
				}
				id := res.RequestID
				answered, dropped := srv.Answered(id), srv.Dropped(id)
				if len(answered) != 1 {
					t.Errorf("request %d (%s): answered %d times, want once", i, id, len(answered))
					continue
				}
				// A lingering server sees every attempt; one that closes at
				// once may close before an attempt reaches it, and a
				// connection the client closes itself fails unseen.
				if res.Resent < len(dropped) || tc.linger && tc.server == "" && res.Resent != len(dropped) {
					t.Errorf("request %d: Resent %d, the server dropped it %d times", i, res.Resent, len(dropped))
				}
				var warned bool
				for _, w := range res.Warnings {
					warned = warned || errors.Is(w, ErrResent)
				}
				if warned != (res.Resent > 0) {
					t.Errorf("request %d: Resent %d, ErrResent warning %v", i, res.Resent, warned)
				}
				// Where the server's close failed the attempt, the next
				// one started after the server had read it. (The client's
				// own close of a llama.cpp stream's connection may fail
				// an attempt before the server has read it.)
				for _, d := range dropped {
					if tc.server == "" && !res.Trace.Start.After(d) {
						t.Errorf("request %d: Trace.Start %v is not after its dropped attempt reached the server (%v)", i, res.Trace.Start, d)
					}
				}
				if res.Trace.Start.After(answered[0]) {
					t.Errorf("request %d: Trace.Start %v is after its answered attempt reached the server (%v)", i, res.Trace.Start, answered[0])
				}
				if res.Resent > 0 {
					resent++
				}
				attempts += res.Resent
			}
			_, dropped := srv.Counts()
			switch {
			case tc.wantResent && (dropped == 0 || attempts != dropped):
				// A user's second request takes its first one's
				// connection back from the pool: one drop at least.
				t.Errorf("%d requests resent %d times, the server dropped %d attempts: want as many, and at least one", resent, attempts, dropped)
			case tc.server != "" && (dropped > users || attempts > users):
				// Only a connection of the first wave, pooled in the moment
				// before the client closed it and before it knew the server
				// closes streams, can be taken again: one a user at most.
				t.Errorf("%d requests resent, %d dropped: a llama.cpp stream's connection should not be reused", resent, dropped)
			}
			t.Logf("%d of %d requests resent, %d attempts dropped", resent, len(results), dropped)
		})
	}
}
