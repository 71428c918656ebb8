package sim

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/internal/testkit"
)

// RequestOverhead delays every generation request by itself before the
// scheduler, in every profile, and the requests wait it side by side:
// four at once take well under four times it.
func TestRequestOverhead(t *testing.T) {
	const d = 150 * time.Millisecond
	for _, prof := range []Profile{ProfileSim, LlamaCpp} {
		s := newFast(t, Options{Profile: prof, RequestOverhead: d})
		start := time.Now()
		var wg sync.WaitGroup
		took := make([]time.Duration, 4)
		for i := range took {
			wg.Go(func() {
				t0 := time.Now()
				resp := post(t, s.URL+"/v1/chat/completions", chatBody(s.Model(), prompt(8), 2, ""))
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("profile %v: status %d", prof, resp.StatusCode)
				}
				took[i] = time.Since(t0)
			})
		}
		testkit.WaitWithin(t, &wg, testkit.Patience)
		for i, x := range took {
			if x < d {
				t.Errorf("profile %v request %d took %v, less than the overhead %v", prof, i, x, d)
			}
		}
		if all := time.Since(start); all >= 4*d {
			t.Errorf("profile %v: four requests took %v together: they waited the overhead in turn, not side by side", prof, all)
		}
	}
}

// TestRequestOverheadCountsTheHandler: the overhead runs from the
// request's arrival at the server, so the time its handler already spent
// counts toward it: a request that arrived 900 ms before admit waits
// about 100 ms of a 1 s overhead, not all of it, and one that arrived
// longer ago than the overhead waits nothing.
func TestRequestOverheadCountsTheHandler(t *testing.T) {
	s := &Server{opts: Options{RequestOverhead: time.Second}}
	for _, c := range []struct {
		ago      time.Duration
		min, max time.Duration
	}{{900 * time.Millisecond, 50 * time.Millisecond, 800 * time.Millisecond}, {2 * time.Second, 0, 800 * time.Millisecond}} {
		ctx := context.WithValue(context.Background(), arrivedKey{}, time.Now().Add(-c.ago))
		start := time.Now()
		if !s.admit(ctx) {
			t.Fatal("admit refused a live request")
		}
		if took := time.Since(start); took < c.min || took > c.max {
			t.Errorf("arrived %v ago: admit waited %v, want within [%v, %v]", c.ago, took, c.min, c.max)
		}
	}
}
